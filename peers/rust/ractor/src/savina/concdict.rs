//! `savina_concdict`: Savina's Concurrent Dictionary. A dictionary actor owns a `HashMap`;
//! W worker actors each run their M requests from one `Run` message, every request a
//! `call!` (an `RpcReplyPort` in `Write`/`Read`) awaited before the next, as the protocol
//! says. A worker has nothing else to handle, so awaiting the call in its handler is ractor's
//! ordinary ask; it hands `(replies, bad reads)` to the driver.

use std::collections::HashMap;
use std::time::Instant;

use ractor::{call, Actor, ActorRef, RpcReplyPort};
use tokio::sync::oneshot;
use troupe_bench_contract::savina::{Rng, CONCDICT_KEYS};
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{finished, report};
use crate::{spawn, stop_all, Res};

struct Dictionary;
struct Worker;

enum DictMsg {
    Write(u64, u64, RpcReplyPort<()>),
    Read(u64, RpcReplyPort<Option<u64>>),
}

impl Actor for Dictionary {
    type Msg = DictMsg;
    type State = HashMap<u64, u64>;
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<DictMsg>, _: ()) -> Res<HashMap<u64, u64>> {
        Ok((0..CONCDICT_KEYS).map(|k| (k, k)).collect())
    }

    async fn handle(
        &self,
        _: ActorRef<DictMsg>,
        msg: DictMsg,
        map: &mut HashMap<u64, u64>,
    ) -> Res<()> {
        match msg {
            DictMsg::Write(key, value, reply) => {
                map.insert(key, value);
                let _ = reply.send(());
            }
            DictMsg::Read(key, reply) => {
                let _ = reply.send(map.get(&key).copied());
            }
        }
        Ok(())
    }
}

/// Runs the worker's requests; `(replies, bad reads)` goes to the driver.
struct Run(oneshot::Sender<(u64, u64)>);

struct WorkerState {
    rng: Rng,
    dict: ActorRef<DictMsg>,
    requests: u64,
    write_percent: u64,
}

impl Actor for Worker {
    type Msg = Run;
    type State = WorkerState;
    type Arguments = WorkerState;

    async fn pre_start(&self, _: ActorRef<Run>, args: WorkerState) -> Res<WorkerState> {
        Ok(args)
    }

    async fn handle(&self, _: ActorRef<Run>, Run(done): Run, st: &mut WorkerState) -> Res<()> {
        let (mut replies, mut bad) = (0, 0);
        for _ in 0..st.requests {
            let key = st.rng.below(CONCDICT_KEYS);
            if st.rng.below(100) < st.write_percent {
                call!(st.dict, DictMsg::Write, key, key)?;
            } else if call!(st.dict, DictMsg::Read, key)? != Some(key) {
                bad += 1;
            }
            replies += 1;
        }
        let _ = done.send((replies, bad));
        Ok(())
    }
}

pub async fn run(rep: &Reporter, w: &Args) {
    let workers = w.usize("workers");
    let requests = w.u64("requests");
    let write_percent = w.u64("write-percent");
    let dict = spawn(Dictionary, ()).await;
    let mut all = Vec::with_capacity(workers);
    for i in 0..workers {
        let state = WorkerState {
            rng: Rng::new(i as u64 + 1),
            dict: dict.0.clone(),
            requests,
            write_percent,
        };
        all.push(spawn(Worker, state).await);
    }
    let start = Instant::now();
    let mut waits = Vec::with_capacity(workers);
    for (worker, _) in &all {
        let (tx, rx) = oneshot::channel();
        worker
            .cast(Run(tx))
            .unwrap_or_else(|_| fail("savina_concdict: worker died"));
        waits.push(rx);
    }
    let (mut replies, mut bad) = (0, 0);
    for rx in waits {
        let (r, b) = finished(rx, "savina_concdict").await;
        replies += r;
        bad += b;
    }
    let secs = seconds_since(start);
    if replies != workers as u64 * requests || bad != 0 {
        fail(format!(
            "savina_concdict: {replies} replies ({bad} wrong reads), expected {}",
            workers as u64 * requests
        ));
    }
    report(rep, w, secs, &[]);
    stop_all(all).await;
    stop_all(vec![dict]).await;
}
