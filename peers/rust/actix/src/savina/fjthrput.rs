//! `savina_fjthrput` on actix: A actors round robin on the arbiters; the driver `do_send`s N
//! messages to each, interleaved (message i to actors 0..A, then i + 1). Each actor reports to
//! the driver's channel after its N-th; afterwards each is asked for its count as it stops.

use actix::prelude::*;
use std::time::Instant;
use tokio::sync::mpsc;
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{gone, lifecycle, on, ready, report};

struct Worker {
    count: u64,
    messages: u64,
    done: mpsc::UnboundedSender<()>,
}

impl Actor for Worker {
    type Context = Context<Self>;
}

lifecycle!(Worker);

#[derive(Message)]
#[rtype(result = "()")]
struct Msg;

/// Stops the worker; answered with its count.
#[derive(Message)]
#[rtype(result = "u64")]
struct Finish;

impl Handler<Msg> for Worker {
    type Result = ();

    fn handle(&mut self, _: Msg, _: &mut Context<Self>) {
        self.count += 1;
        if self.count == self.messages {
            let _ = self.done.send(());
        }
    }
}

impl Handler<Finish> for Worker {
    type Result = u64;

    fn handle(&mut self, _: Finish, ctx: &mut Context<Self>) -> u64 {
        ctx.stop();
        self.count
    }
}

pub async fn run(rep: &Reporter, w: &Args, arbs: &[ArbiterHandle]) {
    let messages = w.u64("messages");
    let actors = w.usize("actors");
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let workers: Vec<_> = (0..actors)
        .map(|i| {
            let done = done_tx.clone();
            Worker::start_in_arbiter(on(arbs, i), move |_| Worker {
                count: 0,
                messages,
                done,
            })
        })
        .collect();
    ready(&workers).await;
    let start = Instant::now();
    for _ in 0..messages {
        for worker in &workers {
            worker.do_send(Msg);
        }
    }
    for _ in 0..actors {
        done_rx
            .recv()
            .await
            .unwrap_or_else(|| fail("savina_fjthrput: done channel closed"));
    }
    let secs = seconds_since(start);
    for worker in &workers {
        match worker.send(Finish).await {
            Ok(n) if n == messages => {}
            Ok(n) => fail(format!(
                "savina_fjthrput: an actor counted {n}, expected {messages}"
            )),
            Err(_) => fail("savina_fjthrput: an actor died"),
        }
    }
    report(rep, w, secs, &[]);
    gone(&workers).await;
}
