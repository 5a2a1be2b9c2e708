//! `spawn_and_await` (CAF micro-benchmark, seed 004): spawn an actor that
//! stops at once, wait until it has stopped; C times in sequence. The waiting
//! is done by a driver actor that spawns each child monitored
//! (`Context::spawn_monitored`), as the Erlang peer does with `spawn_monitor`
//! and the CAF peer with `spawn<monitored>`. A second, Troupe-only figure
//! takes the two-step form (`spawn`, then `watch`), which costs one more
//! pass through the child's exit-record lock.

use super::Workload;
use super::{params, verify, RunCfg};
use crate::stats::{Figure, Sample};
use crossbeam_channel::{bounded, Sender};
use serde_json::json;
use std::time::Instant;
use troupe::{Actor, ActorId, Context, StopReason};
use troupe_bench_contract::spec;

pub struct Params {
    pub count: u64,
}

pub struct Quitter;

impl Actor for Quitter {
    type Msg = ();
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        ctx.stop();
    }
    fn handle(&mut self, _: (), _ctx: &mut Context<'_, Self>) {}
}

pub enum DriverMsg {
    Go,
    Down(#[allow(dead_code)] ActorId, StopReason),
}

pub struct Driver {
    left: u64,
    normal: u64,
    done: Sender<u64>,
    /// `spawn_monitored` (the main figure), or `spawn` then `watch`.
    monitored: bool,
}

impl Driver {
    fn next(&mut self, ctx: &mut Context<'_, Self>) {
        if self.monitored {
            ctx.spawn_monitored(Quitter, |d| DriverMsg::Down(d.id, d.reason));
        } else {
            let child = ctx.spawn(Quitter);
            ctx.watch(&child, |d| DriverMsg::Down(d.id, d.reason));
        }
    }
}

impl Actor for Driver {
    type Msg = DriverMsg;
    fn handle(&mut self, msg: DriverMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            DriverMsg::Go => self.next(ctx),
            DriverMsg::Down(_, reason) => {
                if reason == StopReason::Normal {
                    self.normal += 1;
                }
                self.left -= 1;
                if self.left == 0 {
                    let _ = self.done.send(self.normal);
                    ctx.stop();
                } else {
                    self.next(ctx);
                }
            }
        }
    }
}

pub fn run(cfg: &RunCfg, p: &Params) -> Result<Vec<Figure>, String> {
    let c = p.count;
    let monitored = measure(cfg, c, true)?;
    let two_step = measure(cfg, c, false)?;
    Ok(vec![monitored, two_step])
}

fn measure(cfg: &RunCfg, c: u64, monitored: bool) -> Result<Figure, String> {
    let (label, ps) = if monitored {
        (
            format!("spawn_and_await {c}"),
            params(&[("count", json!(c))]),
        )
    } else {
        (
            format!("spawn_and_await {c} (spawn, then watch)"),
            params(&[("count", json!(c)), ("form", json!("spawn, then watch"))]),
        )
    };
    cfg.measure("troupe", "spawn_and_await", label, ps, "ops/s", || {
        let system = cfg.system();
        let (tx, rx) = bounded(1);
        let driver = system.spawn(Driver {
            left: c,
            normal: 0,
            done: tx,
            monitored,
        });
        let t0 = Instant::now();
        driver.tell(DriverMsg::Go).map_err(|e| e.to_string())?;
        let normal = rx.recv().map_err(|e| e.to_string())?;
        let seconds = t0.elapsed().as_secs_f64();
        verify(normal == c, || {
            format!("spawn_and_await: {normal} of {c} children stopped normally")
        })?;
        let report = system.shutdown();
        verify(report.actors_stopped == c + 1, || {
            format!("spawn_and_await: {} actors stopped", report.actors_stopped)
        })?;
        Ok(Sample::new(seconds, c as f64).with("ns_per_op", seconds * 1e9 / c as f64))
    })
}

/// `spawn_and_await`: the contract's parameters; no plot.
pub const WORKLOAD: Workload = Workload {
    spec: &spec::SPAWN_AND_AWAIT,
    peers: true,
    run: |cfg, a| {
        run(
            cfg,
            &Params {
                count: a.u64("count"),
            },
        )
    },
    plot: None,
};
