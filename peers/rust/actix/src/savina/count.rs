//! `savina_count` on actix: the producer actor `do_send`s N `Increment`s to the counter (on
//! another arbiter), then asks for the total with `send`, returned as a `ResponseFuture` to
//! the driver's own ask, so nothing waits on a thread.

use actix::prelude::*;
use std::time::Instant;
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{lifecycle, on, ready, report, stop_all};

struct Counter {
    total: u64,
}

struct Producer {
    counter: Addr<Counter>,
    increments: u64,
}

impl Actor for Counter {
    type Context = Context<Self>;
}

impl Actor for Producer {
    type Context = Context<Self>;
}

lifecycle!(Counter, Producer);

#[derive(Message)]
#[rtype(result = "()")]
struct Increment;

#[derive(Message)]
#[rtype(result = "u64")]
struct Total;

/// Runs the producer; answered with the counter's total.
#[derive(Message)]
#[rtype(result = "Result<u64, MailboxError>")]
struct Go;

impl Handler<Increment> for Counter {
    type Result = ();

    fn handle(&mut self, _: Increment, _: &mut Context<Self>) {
        self.total += 1;
    }
}

impl Handler<Total> for Counter {
    type Result = u64;

    fn handle(&mut self, _: Total, _: &mut Context<Self>) -> u64 {
        self.total
    }
}

impl Handler<Go> for Producer {
    type Result = ResponseFuture<Result<u64, MailboxError>>;

    fn handle(&mut self, _: Go, _: &mut Context<Self>) -> Self::Result {
        for _ in 0..self.increments {
            self.counter.do_send(Increment);
        }
        Box::pin(self.counter.send(Total))
    }
}

pub async fn run(rep: &Reporter, w: &Args, arbs: &[ArbiterHandle]) {
    let increments = w.u64("increments");
    let counter = Counter::start_in_arbiter(on(arbs, 1), |_| Counter { total: 0 });
    let producer_counter = counter.clone();
    let producer = Producer::start_in_arbiter(on(arbs, 0), move |_| Producer {
        counter: producer_counter,
        increments,
    });
    ready(std::slice::from_ref(&counter)).await;
    ready(std::slice::from_ref(&producer)).await;
    let start = Instant::now();
    let total = match producer.send(Go).await {
        Ok(Ok(total)) => total,
        _ => fail("savina_count: the producer or the counter died"),
    };
    let secs = seconds_since(start);
    if total != increments {
        fail(format!(
            "savina_count: total {total}, expected {increments}"
        ));
    }
    report(rep, w, secs, &[]);
    stop_all(&[producer]).await;
    stop_all(&[counter]).await;
}
