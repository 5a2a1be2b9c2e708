//! The Savina micro and concurrency workloads (`troupe_bench_contract::savina`) on ractor.
//!
//! One file per workload, each mapping Savina's protocol onto ractor's idiom: `Actor` impls
//! with their state in `State`, `cast` for Savina's one-way messages, an `RpcReplyPort` in
//! the message (`call!` from the asker) where the contract says "reply", and
//! `call_and_forward` where an actor must not stop handling messages while it waits for a
//! reply (banking). Where Savina's message carries its sender, the ractor message carries
//! the sender's `ActorRef` (ractor has no implicit sender). Actors are spawned before the
//! measured phase (except in `savina_fjcreate`) and stopped, their `JoinHandle`s awaited,
//! before the next round. The driver learns that a run ended over a tokio `oneshot`, as the
//! other ractor workloads do.

mod banking;
mod barber;
mod big;
mod bndbuffer;
mod chameneos;
mod concdict;
mod count;
mod fjcreate;
mod fjthrput;
mod philosopher;
mod pingpong;
mod threadring;

use ractor::{Actor, ActorRef};
use tokio::sync::oneshot;
use troupe_bench_contract::{fail, savina, Args, Reporter};

use crate::Res;

/// Runs one round of the Savina workload `name`.
pub async fn run(rep: &Reporter, w: &Args, name: &str) {
    match name {
        "savina_pingpong" => pingpong::run(rep, w).await,
        "savina_count" => count::run(rep, w).await,
        "savina_fjthrput" => fjthrput::run(rep, w).await,
        "savina_fjcreate" => fjcreate::run(rep, w).await,
        "savina_threadring" => threadring::run(rep, w).await,
        "savina_chameneos" => chameneos::run(rep, w).await,
        "savina_big" => big::run(rep, w).await,
        "savina_concdict" => concdict::run(rep, w).await,
        "savina_bndbuffer" => bndbuffer::run(rep, w).await,
        "savina_philosopher" => philosopher::run(rep, w).await,
        "savina_barber" => barber::run(rep, w).await,
        "savina_banking" => banking::run(rep, w).await,
        other => rep.unsupported(other, "not a Savina workload this peer knows"),
    }
}

/// Prints one sample: the measured phase took `secs`; the rate is its milliseconds.
fn report(rep: &Reporter, w: &Args, secs: f64, extras: &[(&str, f64)]) {
    rep.figure(
        w.name(),
        &w.params(),
        secs,
        secs * 1e3,
        savina::UNIT,
        extras,
    );
}

/// Awaits the end of a run reported on `rx`.
async fn finished<T>(rx: oneshot::Receiver<T>, what: &str) -> T {
    rx.await
        .unwrap_or_else(|_| fail(format!("{what}: the run never finished")))
}

/// Savina's sink: counts `expected` reports, sums the numbers they carry, and hands
/// `(reports, sum)` to the driver when the last one arrives.
struct Sink;

struct SinkState {
    reports: u64,
    expected: u64,
    sum: u64,
    done: Option<oneshot::Sender<(u64, u64)>>,
}

impl Actor for Sink {
    type Msg = u64;
    type State = SinkState;
    type Arguments = (u64, oneshot::Sender<(u64, u64)>);

    async fn pre_start(
        &self,
        _: ActorRef<u64>,
        (expected, done): (u64, oneshot::Sender<(u64, u64)>),
    ) -> Res<SinkState> {
        Ok(SinkState {
            reports: 0,
            expected,
            sum: 0,
            done: Some(done),
        })
    }

    async fn handle(&self, _: ActorRef<u64>, n: u64, st: &mut SinkState) -> Res<()> {
        st.reports += 1;
        st.sum += n;
        if st.reports == st.expected {
            if let Some(done) = st.done.take() {
                let _ = done.send((st.reports, st.sum));
            }
        }
        Ok(())
    }
}
