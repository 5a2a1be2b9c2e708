//! `savina_concdict` on kameo: a dictionary actor holding a `HashMap` and W worker actors. A
//! worker's `Start` handler makes its M requests in turn, each an `ask` (`Get` answered with
//! the value, `Put` with `()`, the acknowledgement) awaited before the next, which suspends the
//! worker (it has nothing else to do) but no thread; then it reports to the driver.

use kameo::prelude::*;
use std::collections::HashMap;
use std::time::Instant;
use tokio::sync::mpsc;
use troupe_bench_contract::savina::{Rng, CONCDICT_KEYS};
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{report, sent, started, stop_all};

#[derive(Actor)]
struct Dict {
    map: HashMap<u64, u64>,
}

#[derive(Actor)]
struct Worker {
    dict: ActorRef<Dict>,
    rng: Rng,
    requests: usize,
    write_percent: u64,
    done: mpsc::UnboundedSender<u64>,
}

struct Get(u64);
struct Put(u64, u64);
struct Start;

const WHAT: &str = "savina_concdict";

impl Message<Get> for Dict {
    type Reply = Option<u64>;

    async fn handle(&mut self, Get(key): Get, _: &mut Context<Self, Self::Reply>) -> Option<u64> {
        self.map.get(&key).copied()
    }
}

impl Message<Put> for Dict {
    type Reply = ();

    async fn handle(&mut self, Put(key, value): Put, _: &mut Context<Self, ()>) {
        self.map.insert(key, value);
    }
}

impl Message<Start> for Worker {
    type Reply = ();

    async fn handle(&mut self, _: Start, _: &mut Context<Self, ()>) {
        let mut replies = 0;
        for _ in 0..self.requests {
            let key = self.rng.below(CONCDICT_KEYS);
            if self.rng.below(100) < self.write_percent {
                sent(self.dict.ask(Put(key, key)).await, WHAT);
            } else {
                let value = sent(self.dict.ask(Get(key)).await, WHAT);
                if value != Some(key) {
                    fail(format!("savina_concdict: read {key} returned {value:?}"));
                }
            }
            replies += 1;
        }
        let _ = self.done.send(replies);
    }
}

pub async fn run(rep: &Reporter, w: &Args) {
    let workers = w.usize("workers");
    let requests = w.usize("requests");
    let write_percent = w.u64("write-percent");
    let dict = Dict::spawn(Dict {
        map: (0..CONCDICT_KEYS).map(|k| (k, k)).collect(),
    });
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let all: Vec<_> = (0..workers)
        .map(|i| {
            Worker::spawn(Worker {
                dict: dict.clone(),
                rng: Rng::new(i as u64 + 1),
                requests,
                write_percent,
                done: done_tx.clone(),
            })
        })
        .collect();
    started(std::slice::from_ref(&dict)).await;
    started(&all).await;
    let start = Instant::now();
    for worker in &all {
        sent(worker.tell(Start).await, WHAT);
    }
    let mut replies = 0;
    for _ in 0..workers {
        replies += done_rx
            .recv()
            .await
            .unwrap_or_else(|| fail("savina_concdict: done channel closed"));
    }
    let secs = seconds_since(start);
    let expected = (workers * requests) as u64;
    if replies != expected {
        fail(format!(
            "savina_concdict: {replies} replies, expected {expected}"
        ));
    }
    report(rep, w, secs, &[]);
    stop_all(&all).await;
    stop_all(&[dict]).await;
}
