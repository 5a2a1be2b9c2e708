//! The Savina micro and concurrency workloads (see `troupe_bench_contract::savina` for the
//! protocols and checks) on kameo, one file per workload.
//!
//! As in the rest of this peer, the actors run on the one tokio runtime with `--threads`
//! workers and the driver is a task on it. Actors are structs with one `impl Message<M>` per
//! message, spawned with `Spawn::spawn` (kameo's default bounded mailbox of 64, so a `tell` to a
//! full mailbox waits) where the protocol cannot make two actors wait on each other's full
//! mailbox; `savina_big` and `savina_barber`, whose actors send to each other in cycles (and the
//! barber's factory to itself), use `mailbox::unbounded()` as kameo's docs advise for such
//! protocols. Tell is `tell(..).await`, ask is `ask(..).await` (awaited in the asking actor's
//! handler, which suspends that actor but no thread); an actor whose answer depends on another
//! actor's answer (a banking account's debit) answers with `Context::spawn` (a
//! `DelegatedReply`), so it keeps handling messages meanwhile. The driver waits until every
//! actor has started (`wait_for_startup`) before the clock starts and until every actor is gone
//! (`wait_for_shutdown`) before the next round.

use kameo::prelude::*;
use troupe_bench_contract::{savina, Args, Reporter};

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

/// Runs one round of the Savina workload `name`.
pub async fn run(name: &str, rep: &Reporter, w: &Args) {
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

/// Prints a Savina figure: the measured phase took `secs`; the rate is its milliseconds.
pub(crate) fn report(rep: &Reporter, w: &Args, secs: f64, extras: &[(&str, f64)]) {
    rep.figure(
        w.name(),
        &w.params(),
        secs,
        secs * 1e3,
        savina::UNIT,
        extras,
    );
}

/// Waits until every actor has run `on_start`.
pub(crate) async fn started<A: Actor>(actors: &[ActorRef<A>]) {
    for actor in actors {
        actor.wait_for_startup().await;
    }
}

/// Stops actors (after the messages already queued) and waits until they are gone.
pub(crate) async fn stop_all<A: Actor>(actors: &[ActorRef<A>]) {
    for actor in actors {
        // An actor that already stopped answers Err.
        let _ = actor.stop_gracefully().await;
    }
    gone(actors).await;
}

/// Waits until actors are gone.
pub(crate) async fn gone<A: Actor>(actors: &[ActorRef<A>]) {
    for actor in actors {
        actor.wait_for_shutdown().await;
    }
}

/// Fails the run when a tell or an ask could not be delivered.
pub(crate) fn sent<T, E>(result: Result<T, E>, what: &str) -> T {
    result.unwrap_or_else(|_| troupe_bench_contract::fail(format!("{what}: an actor is gone")))
}
