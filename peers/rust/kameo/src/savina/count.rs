//! `savina_count` on kameo: the producer actor `tell`s N `Increment`s to the counter (waiting
//! when its bounded mailbox is full, kameo's backpressure), then `ask`s it for the total and
//! answers the driver's own ask with it.

use kameo::prelude::*;
use std::time::Instant;
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{report, sent, started, stop_all};

#[derive(Actor)]
struct Counter {
    total: u64,
}

#[derive(Actor)]
struct Producer {
    counter: ActorRef<Counter>,
    increments: u64,
}

struct Increment;
struct Total;
/// Runs the producer; answered with the counter's total.
struct Go;

impl Message<Increment> for Counter {
    type Reply = ();

    async fn handle(&mut self, _: Increment, _: &mut Context<Self, ()>) {
        self.total += 1;
    }
}

impl Message<Total> for Counter {
    type Reply = u64;

    async fn handle(&mut self, _: Total, _: &mut Context<Self, u64>) -> u64 {
        self.total
    }
}

impl Message<Go> for Producer {
    type Reply = u64;

    async fn handle(&mut self, _: Go, _: &mut Context<Self, u64>) -> u64 {
        for _ in 0..self.increments {
            sent(self.counter.tell(Increment).await, "savina_count");
        }
        sent(self.counter.ask(Total).await, "savina_count")
    }
}

pub async fn run(rep: &Reporter, w: &Args) {
    let increments = w.u64("increments");
    let counter = Counter::spawn(Counter { total: 0 });
    let producer = Producer::spawn(Producer {
        counter: counter.clone(),
        increments,
    });
    started(std::slice::from_ref(&counter)).await;
    started(std::slice::from_ref(&producer)).await;
    let start = Instant::now();
    let total = sent(producer.ask(Go).await, "savina_count");
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
