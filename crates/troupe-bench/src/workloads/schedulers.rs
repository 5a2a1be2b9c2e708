//! `schedulers` (seed 002): the ring under every dispatcher Troupe offers,
//! each permutation run automatically, as the Scala post's framework did for
//! its schedulers. A dedicated thread per actor cannot host 10,000 actors, so
//! that row runs a ring of 2 x 16 actors (named in the row).

use super::ring::{sample_with, Params};
use super::{params, RunCfg};
use super::{rate_bars, PlotCtx, Plotted, Workload};
use crate::stats::Figure;
use serde_json::json;
use troupe::dispatcher::Dispatcher;
use troupe::{ActorSystem, SpawnOptions, SystemHandle};
use troupe_bench_contract::spec::{ParamSpec, Spec};

const DEFAULT: &str = "default work-stealing";

/// A dispatcher under test: name, and how to make it on a fresh system.
type Make = fn(&SystemHandle, usize) -> Option<Dispatcher>;

fn kinds() -> Vec<(&'static str, Make)> {
    vec![
        (DEFAULT, |_, _| None),
        ("work-stealing pool", |s, n| {
            Some(s.work_stealing_pool("ws", n))
        }),
        ("shared-queue pool", |s, n| {
            Some(s.shared_queue_pool("sq", n))
        }),
        ("pinned pool", |s, n| {
            let cpus: Vec<usize> = (0..n).collect();
            Some(s.pinned_pool("pin", &cpus))
        }),
        ("blocking pool", |s, n| Some(s.blocking_pool("io", n))),
        ("one thread", |s, _| Some(s.one_thread("one"))),
    ]
}

pub fn run(cfg: &RunCfg, p: &Params) -> Result<Vec<Figure>, String> {
    let mut figs = Vec::new();
    let ring = *p;
    for (kind, make) in kinds() {
        let fig = cfg.measure(
            "troupe",
            "schedulers",
            format!("ring {}x{}x{} on {kind}", p.rings, p.actors, p.laps),
            params(&[
                ("dispatcher", json!(kind)),
                ("rings", json!(p.rings)),
                ("actors", json!(p.actors)),
                ("laps", json!(p.laps)),
            ]),
            "hops/s",
            || {
                // The default pool gets the workers when it is under test;
                // otherwise it keeps one idle worker and the pool gets them.
                let default_threads = if kind == DEFAULT { cfg.threads } else { 1 };
                let system = ActorSystem::builder().threads(default_threads).build();
                let d = make(&system, cfg.threads);
                let opts = || match &d {
                    Some(d) => SpawnOptions::new().dispatcher(d),
                    None => SpawnOptions::new(),
                };
                let s = sample_with(&system, &ring, &opts);
                system.shutdown();
                s
            },
        )?;
        figs.push(fig);
    }
    let small = Params {
        rings: 2,
        actors: 16,
        laps: p.laps.min(100),
    };
    figs.push(cfg.measure(
        "troupe",
        "schedulers",
        format!(
            "ring {}x{}x{} on dedicated threads",
            small.rings, small.actors, small.laps
        ),
        params(&[
            ("dispatcher", json!("dedicated thread per actor")),
            ("rings", json!(small.rings)),
            ("actors", json!(small.actors)),
            ("laps", json!(small.laps)),
        ]),
        "hops/s",
        || {
            let system = ActorSystem::builder().threads(1).build();
            let s = sample_with(&system, &small, &|| SpawnOptions::new().dedicated_thread());
            system.shutdown();
            s
        },
    )?);
    Ok(figs)
}

/// `schedulers` (Troupe only): the ring on every dispatcher kind; `--plot`
/// draws hops/s per dispatcher.
pub const WORKLOAD: Workload = Workload {
    spec: &Spec {
        name: "schedulers",
        about: "the ring (--rings, --actors, --laps) under each dispatcher kind; hops/s",
        params: &[
            ParamSpec::count("rings", "ring: rings (R)", "10", "10"),
            ParamSpec::count("actors", "ring: actors per ring (N)", "1000", "500"),
            ParamSpec::count("laps", "ring: laps (L)", "100", "20"),
        ],
    },
    peers: false,
    run: |cfg, a| run(cfg, &Params::from_args(a)),
    plot: Some(plot),
};

fn plot(c: &PlotCtx<'_>) -> Result<Plotted, String> {
    rate_bars(
        c,
        "ring_dispatchers_all",
        "ring: hops/s per dispatcher",
        |f| {
            let kind = f.params.get("dispatcher").and_then(|v| v.as_str());
            Some(kind.unwrap_or("?").to_string())
        },
    )
}
