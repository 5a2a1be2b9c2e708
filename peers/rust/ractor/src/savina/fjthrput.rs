//! `savina_fjthrput`: Savina's Fork-Join throughput. The driver (Savina's main thread) casts
//! N `Work` messages to each of A worker actors, interleaved; a worker casts its count to a
//! sink actor after its N-th. After the measured phase the driver asks each worker for its
//! count (`call!`) to check that none got more than N.

use std::time::Instant;

use ractor::{call, Actor, ActorRef, RpcReplyPort};
use tokio::sync::oneshot;
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{finished, report, Sink};
use crate::{spawn, stop_all, Res};

struct Worker;

enum WorkerMsg {
    Work,
    Count(RpcReplyPort<u64>),
}

struct WorkerState {
    count: u64,
    messages: u64,
    sink: ActorRef<u64>,
}

impl Actor for Worker {
    type Msg = WorkerMsg;
    type State = WorkerState;
    type Arguments = WorkerState;

    async fn pre_start(&self, _: ActorRef<WorkerMsg>, args: WorkerState) -> Res<WorkerState> {
        Ok(args)
    }

    async fn handle(
        &self,
        _: ActorRef<WorkerMsg>,
        msg: WorkerMsg,
        st: &mut WorkerState,
    ) -> Res<()> {
        match msg {
            WorkerMsg::Work => {
                st.count += 1;
                if st.count == st.messages {
                    st.sink.cast(st.count)?;
                }
            }
            WorkerMsg::Count(reply) => {
                let _ = reply.send(st.count);
            }
        }
        Ok(())
    }
}

pub async fn run(rep: &Reporter, w: &Args) {
    let messages = w.u64("messages");
    let actors = w.usize("actors");
    let (done_tx, done_rx) = oneshot::channel();
    let sink = spawn(Sink, (actors as u64, done_tx)).await;
    let mut workers = Vec::with_capacity(actors);
    for _ in 0..actors {
        let state = WorkerState {
            count: 0,
            messages,
            sink: sink.0.clone(),
        };
        workers.push(spawn(Worker, state).await);
    }
    let start = Instant::now();
    for _ in 0..messages {
        for (worker, _) in &workers {
            worker
                .cast(WorkerMsg::Work)
                .unwrap_or_else(|_| fail("savina_fjthrput: worker died"));
        }
    }
    let (reports, sum) = finished(done_rx, "savina_fjthrput").await;
    let secs = seconds_since(start);
    if reports != actors as u64 || sum != actors as u64 * messages {
        fail(format!(
            "savina_fjthrput: {reports} reports counting {sum}, expected {actors} x {messages}"
        ));
    }
    for (i, (worker, _)) in workers.iter().enumerate() {
        match call!(worker, WorkerMsg::Count) {
            Ok(n) if n == messages => {}
            Ok(n) => fail(format!(
                "savina_fjthrput: worker {i} counted {n}, expected {messages}"
            )),
            Err(e) => fail(format!("savina_fjthrput: worker {i}: {e}")),
        }
    }
    report(rep, w, secs, &[]);
    stop_all(workers).await;
    stop_all(vec![sink]).await;
}
