//! `savina_fjcreate`: Savina's Fork-Join actor creation. N times the driver spawns a worker
//! actor (`Actor::spawn`, which returns once `pre_start` ran) and casts it one message; the
//! worker casts a report to a sink actor and stops itself (`myself.stop(None)`). Creation is
//! inside the measured phase; the workers' `JoinHandle`s are awaited after it.

use std::time::Instant;

use ractor::{Actor, ActorRef};
use tokio::sync::oneshot;
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{finished, report, Sink};
use crate::{spawn, stop_all, Res};

struct Worker;

struct Work;

impl Actor for Worker {
    type Msg = Work;
    type State = ActorRef<u64>;
    type Arguments = ActorRef<u64>;

    async fn pre_start(&self, _: ActorRef<Work>, sink: ActorRef<u64>) -> Res<ActorRef<u64>> {
        Ok(sink)
    }

    async fn handle(&self, me: ActorRef<Work>, _: Work, sink: &mut ActorRef<u64>) -> Res<()> {
        sink.cast(1)?;
        me.stop(None);
        Ok(())
    }
}

pub async fn run(rep: &Reporter, w: &Args) {
    let actors = w.usize("actors");
    let (done_tx, done_rx) = oneshot::channel();
    let sink = spawn(Sink, (actors as u64, done_tx)).await;
    let mut handles = Vec::with_capacity(actors);
    let start = Instant::now();
    for _ in 0..actors {
        let (worker, handle) = spawn(Worker, sink.0.clone()).await;
        worker
            .cast(Work)
            .unwrap_or_else(|_| fail("savina_fjcreate: worker died"));
        handles.push(handle);
    }
    let (reports, _) = finished(done_rx, "savina_fjcreate").await;
    let secs = seconds_since(start);
    if reports != actors as u64 {
        fail(format!(
            "savina_fjcreate: {reports} reports, expected {actors}"
        ));
    }
    report(rep, w, secs, &[]);
    for handle in handles {
        let _ = handle.await;
    }
    stop_all(vec![sink]).await;
}
