//! `savina_concdict` on actix: a dictionary actor (arbiter 0) holding a `HashMap`, W workers
//! round robin on the arbiters. A worker asks (`send`) `Get` or `Put` and awaits the answer in
//! a future spawned on its own context (`ctx.spawn(.. .into_actor(self).map(..))`), whose
//! continuation checks it and asks the next, so one request is in flight per worker and no
//! thread waits.

use actix::prelude::*;
use std::collections::HashMap;
use std::time::Instant;
use tokio::sync::mpsc;
use troupe_bench_contract::savina::{Rng, CONCDICT_KEYS};
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{lifecycle, on, ready, report, stop_all};

struct Dict {
    map: HashMap<u64, u64>,
}

struct Worker {
    dict: Addr<Dict>,
    rng: Rng,
    left: usize,
    write_percent: u64,
    replies: u64,
    done: mpsc::UnboundedSender<u64>,
}

impl Actor for Dict {
    type Context = Context<Self>;
}

impl Actor for Worker {
    type Context = Context<Self>;
}

lifecycle!(Dict, Worker);

#[derive(Message)]
#[rtype(result = "Option<u64>")]
struct Get(u64);

/// Answered with `()`, the acknowledgement.
#[derive(Message)]
#[rtype(result = "()")]
struct Put(u64, u64);

#[derive(Message)]
#[rtype(result = "()")]
struct Start;

impl Handler<Get> for Dict {
    type Result = Option<u64>;

    fn handle(&mut self, Get(key): Get, _: &mut Context<Self>) -> Option<u64> {
        self.map.get(&key).copied()
    }
}

impl Handler<Put> for Dict {
    type Result = ();

    fn handle(&mut self, Put(key, value): Put, _: &mut Context<Self>) {
        self.map.insert(key, value);
    }
}

impl Worker {
    fn next(&mut self, ctx: &mut Context<Self>) {
        if self.left == 0 {
            let _ = self.done.send(self.replies);
            return;
        }
        self.left -= 1;
        let key = self.rng.below(CONCDICT_KEYS);
        if self.rng.below(100) < self.write_percent {
            let ack = self.dict.send(Put(key, key));
            ctx.spawn(ack.into_actor(self).map(|reply, act, ctx| {
                if reply.is_err() {
                    fail("savina_concdict: the dictionary died");
                }
                act.replies += 1;
                act.next(ctx);
            }));
        } else {
            let value = self.dict.send(Get(key));
            ctx.spawn(value.into_actor(self).map(move |reply, act, ctx| {
                match reply {
                    Ok(Some(v)) if v == key => {}
                    other => fail(format!("savina_concdict: read {key} returned {other:?}")),
                }
                act.replies += 1;
                act.next(ctx);
            }));
        }
    }
}

impl Handler<Start> for Worker {
    type Result = ();

    fn handle(&mut self, _: Start, ctx: &mut Context<Self>) {
        self.next(ctx);
    }
}

pub async fn run(rep: &Reporter, w: &Args, arbs: &[ArbiterHandle]) {
    let workers = w.usize("workers");
    let requests = w.usize("requests");
    let write_percent = w.u64("write-percent");
    let dict = Dict::start_in_arbiter(&arbs[0], |_| Dict {
        map: (0..CONCDICT_KEYS).map(|k| (k, k)).collect(),
    });
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let all: Vec<_> = (0..workers)
        .map(|i| {
            let dict = dict.clone();
            let done = done_tx.clone();
            Worker::start_in_arbiter(on(arbs, i), move |_| Worker {
                dict,
                rng: Rng::new(i as u64 + 1),
                left: requests,
                write_percent,
                replies: 0,
                done,
            })
        })
        .collect();
    ready(std::slice::from_ref(&dict)).await;
    ready(&all).await;
    let start = Instant::now();
    for worker in &all {
        worker.do_send(Start);
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
