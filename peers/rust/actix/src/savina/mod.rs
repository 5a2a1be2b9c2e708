//! The Savina micro and concurrency workloads (see `troupe_bench_contract::savina` for the
//! protocols and checks) on actix, one file per workload.
//!
//! As in the rest of this peer, the actors live on the `--threads` arbiters (one thread and
//! event loop each), placed with `Actor::start_in_arbiter`: a workload's coordinator (mall,
//! manager, arbitrator, dictionary, teller) on arbiter 0 and its many actors round robin;
//! actors that only talk to each other in turn (ping and pong, the one ring of threadring)
//! share an arbiter, as actix's docs place chatty actors. Tell is `do_send`, ask is `send`
//! (a future of the handler's result, awaited in a future on the asker's context or in a
//! `ResponseFuture`, never blocking a thread). The System's thread only drives: it creates the
//! actors, waits until each has answered a `Ready` ask (so all exist before the clock starts),
//! times the measured phase and stops the actors afterwards.

use actix::prelude::*;
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
pub async fn run(name: &str, rep: &Reporter, w: &Args, arbs: &[ArbiterHandle]) {
    match name {
        "savina_pingpong" => pingpong::run(rep, w, arbs).await,
        "savina_count" => count::run(rep, w, arbs).await,
        "savina_fjthrput" => fjthrput::run(rep, w, arbs).await,
        "savina_fjcreate" => fjcreate::run(rep, w, arbs).await,
        "savina_threadring" => threadring::run(rep, w, arbs).await,
        "savina_chameneos" => chameneos::run(rep, w, arbs).await,
        "savina_big" => big::run(rep, w, arbs).await,
        "savina_concdict" => concdict::run(rep, w, arbs).await,
        "savina_bndbuffer" => bndbuffer::run(rep, w, arbs).await,
        "savina_philosopher" => philosopher::run(rep, w, arbs).await,
        "savina_barber" => barber::run(rep, w, arbs).await,
        "savina_banking" => banking::run(rep, w, arbs).await,
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

/// The arbiter for the `i`-th actor of a round-robin placement.
pub(crate) fn on(arbs: &[ArbiterHandle], i: usize) -> &ArbiterHandle {
    &arbs[i % arbs.len()]
}

/// Asks an actor to stop itself.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Stop;

/// Answered once the actor runs (asked before the measured phase).
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Ready;

/// Implements [`Stop`] and [`Ready`] for actor types.
macro_rules! lifecycle {
    ($($actor:ty),* $(,)?) => {$(
        impl actix::Handler<$crate::savina::Stop> for $actor {
            type Result = ();

            fn handle(&mut self, _: $crate::savina::Stop, ctx: &mut actix::Context<Self>) {
                actix::ActorContext::stop(ctx);
            }
        }

        impl actix::Handler<$crate::savina::Ready> for $actor {
            type Result = ();

            fn handle(&mut self, _: $crate::savina::Ready, _: &mut actix::Context<Self>) {}
        }
    )*};
}
pub(crate) use lifecycle;

/// Waits until every actor has started (answered [`Ready`]).
pub(crate) async fn ready<A>(actors: &[Addr<A>])
where
    A: Actor<Context = Context<A>> + Handler<Ready>,
{
    for actor in actors {
        if actor.send(Ready).await.is_err() {
            troupe_bench_contract::fail("an actor died before the measured phase");
        }
    }
}

/// Stops actors and waits until they are gone.
pub(crate) async fn stop_all<A>(actors: &[Addr<A>])
where
    A: Actor<Context = Context<A>> + Handler<Stop>,
{
    for actor in actors {
        // `send` resolves once the actor handled it; an actor that already stopped answers Err.
        let _ = actor.send(Stop).await;
    }
    gone(actors).await;
}

/// Waits until actors that stop by themselves are gone (their mailboxes closed).
pub(crate) async fn gone<A: Actor>(actors: &[Addr<A>]) {
    for actor in actors {
        while actor.connected() {
            actix::clock::sleep(std::time::Duration::from_micros(100)).await;
        }
    }
}
