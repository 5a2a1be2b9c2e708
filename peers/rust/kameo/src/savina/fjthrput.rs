//! `savina_fjthrput` on kameo: A actors; the driver `tell`s N messages to each, interleaved
//! (message i to actors 0..A, then i + 1), waiting on a full mailbox as kameo's default bounded
//! mailbox makes it. Each actor reports to the driver's channel after its N-th; afterwards each
//! is asked for its count as it stops.

use kameo::prelude::*;
use std::time::Instant;
use tokio::sync::mpsc;
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{gone, report, sent, started};

#[derive(Actor)]
struct Worker {
    count: u64,
    messages: u64,
    done: mpsc::UnboundedSender<()>,
}

struct Msg;
/// Stops the worker; answered with its count.
struct Finish;

impl Message<Msg> for Worker {
    type Reply = ();

    async fn handle(&mut self, _: Msg, _: &mut Context<Self, ()>) {
        self.count += 1;
        if self.count == self.messages {
            let _ = self.done.send(());
        }
    }
}

impl Message<Finish> for Worker {
    type Reply = u64;

    async fn handle(&mut self, _: Finish, ctx: &mut Context<Self, u64>) -> u64 {
        ctx.stop();
        self.count
    }
}

pub async fn run(rep: &Reporter, w: &Args) {
    let messages = w.u64("messages");
    let actors = w.usize("actors");
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let workers: Vec<_> = (0..actors)
        .map(|_| {
            Worker::spawn(Worker {
                count: 0,
                messages,
                done: done_tx.clone(),
            })
        })
        .collect();
    started(&workers).await;
    let start = Instant::now();
    for _ in 0..messages {
        for worker in &workers {
            sent(worker.tell(Msg).await, "savina_fjthrput");
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
        let n = sent(worker.ask(Finish).await, "savina_fjthrput");
        if n != messages {
            fail(format!(
                "savina_fjthrput: an actor counted {n}, expected {messages}"
            ));
        }
    }
    report(rep, w, secs, &[]);
    gone(&workers).await;
}
