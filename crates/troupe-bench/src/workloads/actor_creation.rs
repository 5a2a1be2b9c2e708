//! `actor_creation` (CAF, seed 004): actor(x) spawns two children actor(x-1)
//! and replies 1 + the sum of their replies; actor(1) replies 1; the root
//! actor(P) must answer 2^P - 1. Also measures the memory of idle actors.

use super::{params, verify, RunCfg};
use crate::stats::{reset_peak_rss, rss_bytes, Figure, Sample};
use crossbeam_channel::{bounded, Sender};
use serde_json::json;
use std::time::Instant;
use troupe::{Actor, ActorRef, Context};

pub struct Params {
    pub pow: u32,
}

enum Parent {
    Actor(ActorRef<Node>),
    Root(Sender<u64>),
}

pub struct Node {
    x: u32,
    parent: Parent,
    pending: u8,
    sum: u64,
}

impl Node {
    fn answer(&self, value: u64) {
        match &self.parent {
            Parent::Actor(p) => {
                let _ = p.tell(value);
            }
            Parent::Root(tx) => {
                let _ = tx.send(value);
            }
        }
    }
}

impl Actor for Node {
    type Msg = u64;
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        if self.x <= 1 {
            self.answer(1);
            ctx.stop();
            return;
        }
        let me = ctx.myself();
        for _ in 0..2 {
            ctx.spawn(Node {
                x: self.x - 1,
                parent: Parent::Actor(me.clone()),
                pending: 0,
                sum: 0,
            });
        }
        self.pending = 2;
    }

    fn handle(&mut self, reply: u64, ctx: &mut Context<'_, Self>) {
        self.sum += reply;
        self.pending -= 1;
        if self.pending == 0 {
            self.answer(1 + self.sum);
            ctx.stop();
        }
    }
}

/// An actor that does nothing: what an idle actor costs.
pub struct Idle;

impl Actor for Idle {
    type Msg = u64;
    fn handle(&mut self, _: u64, _ctx: &mut Context<'_, Self>) {}
}

pub fn run(cfg: &RunCfg, p: &Params) -> Result<Vec<Figure>, String> {
    let actors = (1u64 << p.pow) - 1;
    let creation = cfg.measure(
        "troupe",
        "actor_creation",
        format!("actor_creation 2^{}", p.pow),
        params(&[("pow", json!(p.pow))]),
        "actors/s",
        || {
            let system = cfg.system();
            let (tx, rx) = bounded(1);
            reset_peak_rss();
            let before = rss_bytes();
            let t0 = Instant::now();
            system.spawn(Node {
                x: p.pow,
                parent: Parent::Root(tx),
                pending: 0,
                sum: 0,
            });
            let answer = rx.recv().map_err(|e| e.to_string())?;
            let seconds = t0.elapsed().as_secs_f64();
            let peak = (crate::stats::peak_rss_mb() * 1024.0 * 1024.0) as u64;
            verify(answer == actors, || {
                format!("actor_creation: root answered {answer}, expected {actors}")
            })?;
            system.shutdown();
            Ok(Sample::new(seconds, actors as f64)
                .with("peak_rss_growth_bytes", peak.saturating_sub(before))
                .with(
                    "bytes_per_actor",
                    peak.saturating_sub(before) as f64 / actors as f64,
                ))
        },
    )?;
    // Idle actors: spawn K that stay alive, measure resident memory growth.
    let k = (actors as usize).clamp(10_000, 1_000_000);
    let idle =
        cfg.measure(
            "troupe",
            "actor_creation",
            format!("idle actors {k}"),
            params(&[("idle_actors", json!(k))]),
            "actors/s",
            || {
                let system = cfg.system();
                let before = rss_bytes();
                let t0 = Instant::now();
                let refs: Vec<ActorRef<Idle>> = (0..k).map(|_| system.spawn(Idle)).collect();
                // Wait until every actor has run its start (a turn) and is idle.
                while refs.last().map(|r| r.mailbox_len()).unwrap_or(0) > 0 {
                    std::thread::yield_now();
                }
                let seconds = t0.elapsed().as_secs_f64();
                std::thread::sleep(std::time::Duration::from_millis(20));
                // The handles themselves (8 bytes each) are not the actors' cost.
                let grown = rss_bytes()
                    .saturating_sub(before)
                    .saturating_sub((k * 8) as u64);
                verify(system.live_actors() == k, || {
                    format!("idle actors: {} alive, expected {k}", system.live_actors())
                })?;
                drop(refs);
                system.shutdown();
                Ok(Sample::new(seconds, k as f64)
                    .with("bytes_per_idle_actor", grown as f64 / k as f64))
            },
        )?;
    Ok(vec![creation, idle])
}
