//! `ring` (seed 002): R rings of N actors; in each ring a token counting down
//! from N*L is forwarded actor to actor; at 0 the ring reports done. Rings run
//! concurrently; creation is timed apart.

use super::{params, verify, RunCfg};
use super::{rate_bars, PlotCtx, Plotted, Workload};
use crate::stats::{Figure, Sample};
use crossbeam_channel::{bounded, Sender};
use serde_json::json;
use std::time::Instant;
use troupe::{Actor, ActorRef, Context};
use troupe_bench_contract::spec;

/// R rings of N actors, L laps (also the shape `schedulers` runs).
#[derive(Clone, Copy)]
pub struct Params {
    pub rings: usize,
    pub actors: usize,
    pub laps: usize,
}

impl Params {
    /// The values of the `rings`, `actors` and `laps` flags.
    pub fn from_args(a: &spec::Args) -> Params {
        Params {
            rings: a.usize("rings"),
            actors: a.usize("actors"),
            laps: a.usize("laps"),
        }
    }
}

pub enum RingMsg {
    Link(ActorRef<Node>),
    Token(u64),
}

pub struct Node {
    index: usize,
    next: Option<ActorRef<Node>>,
    done: Sender<usize>,
}

impl Actor for Node {
    type Msg = RingMsg;
    #[inline]
    fn handle(&mut self, msg: RingMsg, _ctx: &mut Context<'_, Self>) {
        match msg {
            RingMsg::Token(0) => {
                let _ = self.done.send(self.index);
            }
            RingMsg::Token(t) => {
                // The ring is linked before the token starts, and no actor
                // stops while the token runs.
                if let Some(next) = &self.next {
                    let _ = next.tell(RingMsg::Token(t - 1));
                }
            }
            RingMsg::Link(next) => self.next = Some(next),
        }
    }
}

/// One sample on a fresh system; returns (hops/s sample, creation seconds).
pub fn sample(system: &troupe::SystemHandle, p: &Params) -> Result<Sample, String> {
    sample_with(system, p, &troupe::SpawnOptions::new)
}

/// As [`sample`], spawning every ring actor with `options()` (its dispatcher).
pub fn sample_with(
    system: &troupe::SystemHandle,
    p: &Params,
    options: &dyn Fn() -> troupe::SpawnOptions,
) -> Result<Sample, String> {
    let (done_tx, done_rx) = bounded(p.rings);
    let t_create = Instant::now();
    let mut firsts = Vec::with_capacity(p.rings);
    for _ in 0..p.rings {
        let nodes: Vec<ActorRef<Node>> = (0..p.actors)
            .map(|index| {
                system.spawn_with(
                    Node {
                        index,
                        next: None,
                        done: done_tx.clone(),
                    },
                    options(),
                )
            })
            .collect();
        for i in 0..p.actors {
            nodes[i]
                .tell(RingMsg::Link(nodes[(i + 1) % p.actors].clone()))
                .map_err(|e| e.to_string())?;
        }
        firsts.push(nodes[0].clone());
    }
    let creation = t_create.elapsed().as_secs_f64();
    // Make sure every Link was handled before timing the token run.
    for f in &firsts {
        while f.mailbox_len() > 0 {
            std::thread::yield_now();
        }
    }
    let hops = (p.actors * p.laps) as u64;
    let t0 = Instant::now();
    for f in &firsts {
        f.tell(RingMsg::Token(hops)).map_err(|e| e.to_string())?;
    }
    let mut ends = Vec::with_capacity(p.rings);
    for _ in 0..p.rings {
        ends.push(done_rx.recv().map_err(|e| e.to_string())?);
    }
    let seconds = t0.elapsed().as_secs_f64();
    // A token of value N*L, decremented once per hop, reaches 0 after N*L hops
    // at the actor N*L mod N places after the first.
    let expected = (p.actors * p.laps) % p.actors;
    verify(ends.iter().all(|&e| e == expected), || {
        format!("ring: tokens ended at actors {ends:?}, expected all at {expected}")
    })?;
    Ok(Sample::new(seconds, (hops * p.rings as u64) as f64).with("creation_seconds", creation))
}

pub fn run(cfg: &RunCfg, p: &Params) -> Result<Vec<Figure>, String> {
    let name = format!("ring {}x{}x{}", p.rings, p.actors, p.laps);
    let fig = cfg.measure(
        "troupe",
        "ring",
        name,
        params(&[
            ("rings", json!(p.rings)),
            ("actors", json!(p.actors)),
            ("laps", json!(p.laps)),
        ]),
        "hops/s",
        || {
            let system = cfg.system();
            let s = sample(&system, p);
            system.shutdown();
            s
        },
    )?;
    Ok(vec![fig])
}

/// `ring`: the contract's parameters; `--plot` draws hops/s on the default dispatcher.
pub const WORKLOAD: Workload = Workload {
    spec: &spec::RING,
    peers: true,
    run: |cfg, a| run(cfg, &Params::from_args(a)),
    plot: Some(plot),
};

fn plot(c: &PlotCtx<'_>) -> Result<Plotted, String> {
    rate_bars(
        c,
        "ring_dispatchers",
        "ring: hops/s on the default dispatcher (`schedulers` plots every kind)",
        |f| (f.framework == "troupe").then(|| "default work-stealing".to_string()),
    )
}
