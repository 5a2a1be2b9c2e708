//! `pingpong`: two actors bounce an integer K round trips.

use super::Workload;
use super::{params, verify, RunCfg};
use crate::stats::{Figure, Sample};
use crossbeam_channel::{bounded, Sender};
use serde_json::json;
use std::time::Instant;
use troupe::{Actor, ActorRef, Context};
use troupe_bench_contract::spec;

pub struct Params {
    pub round_trips: u64,
}

/// Answers each ball with the next one.
pub struct Ponger {
    peer: Option<ActorRef<Pinger>>,
}

pub enum PongMsg {
    Meet(ActorRef<Pinger>),
    Ball(u64),
}

impl Actor for Ponger {
    type Msg = PongMsg;
    #[inline]
    fn handle(&mut self, msg: PongMsg, _ctx: &mut Context<'_, Self>) {
        match msg {
            PongMsg::Ball(n) => {
                if let Some(peer) = &self.peer {
                    let _ = peer.tell(PingMsg::Ball(n));
                }
            }
            PongMsg::Meet(p) => self.peer = Some(p),
        }
    }
}

pub enum PingMsg {
    Start(ActorRef<Ponger>),
    Ball(u64),
}

/// Serves, counts round trips, reports when done.
pub struct Pinger {
    peer: Option<ActorRef<Ponger>>,
    target: u64,
    done: Sender<u64>,
}

impl Actor for Pinger {
    type Msg = PingMsg;
    #[inline]
    fn handle(&mut self, msg: PingMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            PingMsg::Start(peer) => {
                let _ = peer.tell(PongMsg::Meet(ctx.myself()));
                let _ = peer.tell(PongMsg::Ball(1));
                self.peer = Some(peer);
            }
            PingMsg::Ball(n) if n == self.target => {
                let _ = self.done.send(n);
            }
            PingMsg::Ball(n) => {
                if let Some(peer) = &self.peer {
                    let _ = peer.tell(PongMsg::Ball(n + 1));
                }
            }
        }
    }
}

/// One sample on `system`: `k` round trips between a pinger and a ponger
/// spawned with `options()`.
pub fn sample_with(
    system: &troupe::SystemHandle,
    k: u64,
    options: &dyn Fn() -> troupe::SpawnOptions,
) -> Result<Sample, String> {
    let (tx, rx) = bounded(1);
    let ponger = system.spawn_with(Ponger { peer: None }, options());
    let pinger = system.spawn_with(
        Pinger {
            peer: None,
            target: k,
            done: tx,
        },
        options(),
    );
    let t0 = Instant::now();
    pinger
        .tell(PingMsg::Start(ponger))
        .map_err(|e| e.to_string())?;
    let n = rx.recv().map_err(|e| e.to_string())?;
    let seconds = t0.elapsed().as_secs_f64();
    verify(n == k, || {
        format!("pingpong: finished at {n}, expected {k}")
    })?;
    Ok(Sample::new(seconds, k as f64).with("ns_per_op", seconds * 1e9 / k as f64))
}

pub fn run(cfg: &RunCfg, p: &Params) -> Result<Vec<Figure>, String> {
    let k = p.round_trips;
    let mut figs = vec![cfg.measure(
        "troupe",
        "pingpong",
        format!("pingpong {k}"),
        params(&[("round_trips", json!(k))]),
        "round-trips/s",
        || {
            let system = cfg.system();
            let s = sample_with(&system, k, &troupe::SpawnOptions::new);
            system.shutdown();
            s
        },
    )?];
    figs.push(super::baseline::thread_pingpong(cfg, k.min(200_000))?);
    Ok(figs)
}

/// `pingpong`: the contract's parameters; no plot.
pub const WORKLOAD: Workload = Workload {
    spec: &spec::PINGPONG,
    peers: true,
    run: |cfg, a| {
        run(
            cfg,
            &Params {
                round_trips: a.u64("round-trips"),
            },
        )
    },
    plot: None,
};
