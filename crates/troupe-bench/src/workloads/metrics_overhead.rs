//! `metrics_overhead` (Troupe only): what per-actor metrics cost. The suite's
//! `ring` and `pingpong` run with every actor spawned with metrics off and
//! with metrics on (`SpawnOptions::metrics`), in the same run: the warm-up
//! runs and the samples alternate off, on, off, on, ... so that both sides
//! see the same machine. The "on" figure carries `on_off_ratio` (its median
//! ns per op over the "off" median) and `on_off_ratio_min` (fastest sample
//! over fastest sample). Ported from `crates/troupe/examples/metrics_overhead.rs`,
//! with 10x its laps and round trips by default so that a sample lasts tens
//! of milliseconds rather than a few.

use super::ring::{self, Params as RingParams};
use super::{params, pingpong, verify, RunCfg, Workload};
use crate::stats::{Figure, Sample};
use serde_json::{json, Map, Value};
use troupe::SpawnOptions;
use troupe_bench_contract::spec::{Args, ParamSpec, Spec};

pub struct Params {
    pub ring: RingParams,
    pub round_trips: u64,
    /// Timings sample one message in this many (`metrics_sample_every`).
    pub sample_every: u64,
}

impl Params {
    fn from_args(a: &Args) -> Params {
        Params {
            ring: RingParams::from_args(a),
            round_trips: a.u64("round-trips"),
            sample_every: a.u64("sample-every"),
        }
    }
}

/// Runs `f(false)` and `f(true)` alternately: `cfg.warmup` unrecorded pairs,
/// then `cfg.samples` recorded pairs; returns the (off, on) figures, the on
/// figure with `on_off_ratio` and `overhead_pct` (median against median)
/// and `on_off_ratio_min` (fastest sample against fastest sample).
fn measure_off_on(
    cfg: &RunCfg,
    name: &str,
    ps: &Map<String, Value>,
    unit: &str,
    f: impl FnMut(bool) -> Result<Sample, String>,
) -> Result<(Figure, Figure), String> {
    measure_switch(cfg, "metrics_overhead", "metrics", name, ps, unit, f)
}

/// [`measure_off_on`] for workload `workload`, whose figures are named
/// `"{name}, {switch} off"` and `"{name}, {switch} on"` with the param
/// `switch` (`stall_overhead` shares it).
pub(super) fn measure_switch(
    cfg: &RunCfg,
    workload: &str,
    switch: &str,
    name: &str,
    ps: &Map<String, Value>,
    unit: &str,
    mut f: impl FnMut(bool) -> Result<Sample, String>,
) -> Result<(Figure, Figure), String> {
    for i in 0..cfg.warmup {
        crate::stats::progress(&format!("{name}: warm-up {}/{}", i + 1, cfg.warmup));
        f(false)?;
        f(true)?;
    }
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for i in 0..cfg.samples {
        crate::stats::progress(&format!("{name}: sample {}/{}", i + 1, cfg.samples));
        for (metrics, into) in [(false, &mut off), (true, &mut on)] {
            into.push(super::windowed(|| f(metrics))?);
        }
    }
    let figure = |metrics: bool, samples: &[Sample]| {
        let mut p = ps.clone();
        p.insert(switch.into(), json!(metrics));
        Figure::from_samples(
            "troupe",
            workload,
            format!("{name}, {switch} {}", if metrics { "on" } else { "off" }),
            p,
            unit,
            cfg.threads,
            samples,
        )
    };
    // The fastest samples too: interference only ever adds time, so on a
    // shared machine they are the better estimate of the cost itself.
    let fastest = |v: &[Sample]| {
        v.iter()
            .map(|s| s.seconds / s.ops.max(1.0))
            .fold(f64::INFINITY, f64::min)
    };
    let ratio_min = fastest(&on) / fastest(&off).max(1e-18);
    let off = figure(false, &off);
    let mut on = figure(true, &on);
    let ratio = on.ns_per_op_median / off.ns_per_op_median.max(1e-12);
    on.extra.insert("on_off_ratio".into(), json!(ratio));
    on.extra
        .insert("overhead_pct".into(), json!((ratio - 1.0) * 100.0));
    on.extra.insert("on_off_ratio_min".into(), json!(ratio_min));
    Ok((off, on))
}

/// Checks that the system meters exactly `expected` actors.
fn check_metered(system: &troupe::SystemHandle, expected: usize, what: &str) -> Result<(), String> {
    let metered = system.metrics().actors.len();
    verify(metered == expected, || {
        format!("metrics_overhead: {what}: {metered} actors metered, expected {expected}")
    })
}

/// The run's system, sampling timings at `p.sample_every`.
fn system(cfg: &RunCfg, p: &Params) -> troupe::ActorSystem {
    troupe::ActorSystem::builder()
        .threads(cfg.threads)
        .metrics_sample_every(p.sample_every)
        .build()
}

pub fn run(cfg: &RunCfg, p: &Params) -> Result<Vec<Figure>, String> {
    let r = p.ring;
    let k = p.round_trips;
    let ring_name = format!("ring {}x{}x{}", r.rings, r.actors, r.laps);
    let ring_params = params(&[
        ("rings", json!(r.rings)),
        ("actors", json!(r.actors)),
        ("laps", json!(r.laps)),
        ("sample_every", json!(p.sample_every)),
    ]);
    let (ring_off, ring_on) = measure_off_on(cfg, &ring_name, &ring_params, "hops/s", |on| {
        let system = system(cfg, p);
        let s = ring::sample_with(&system, &r, &|| SpawnOptions::new().metrics(on));
        let checked = s.and_then(|s| {
            check_metered(&system, if on { r.rings * r.actors } else { 0 }, "ring")?;
            Ok(s)
        });
        system.shutdown();
        checked
    })?;
    let pp_params = params(&[
        ("round_trips", json!(k)),
        ("sample_every", json!(p.sample_every)),
    ]);
    let (pp_off, pp_on) = measure_off_on(
        cfg,
        &format!("pingpong {k}"),
        &pp_params,
        "round-trips/s",
        |on| {
            let system = system(cfg, p);
            let s = pingpong::sample_with(&system, k, &|| SpawnOptions::new().metrics(on));
            let checked = s.and_then(|s| {
                check_metered(&system, if on { 2 } else { 0 }, "pingpong")?;
                Ok(s)
            });
            system.shutdown();
            checked
        },
    )?;
    Ok(vec![ring_off, ring_on, pp_off, pp_on])
}

/// `metrics_overhead` (Troupe only): ring and pingpong with per-actor metrics
/// off and on, alternating in one run; no plot.
pub const WORKLOAD: Workload = Workload {
    spec: &Spec {
        name: "metrics_overhead",
        about: "ring (--rings, --actors, --laps) and pingpong (--round-trips) with per-actor \
                metrics off and on, alternating; on/off ratio",
        params: &[
            ParamSpec::count("rings", "ring: rings (R)", "4", "2"),
            ParamSpec::count("actors", "ring: actors per ring (N)", "500", "100"),
            ParamSpec::count("laps", "ring: laps (L)", "1000", "20"),
            ParamSpec::count("round-trips", "pingpong: round trips", "1000000", "10000"),
            ParamSpec::count(
                "sample-every",
                "metrics_overhead: time one message in this many (a power of two)",
                "1024",
                "1024",
            ),
        ],
    },
    peers: false,
    run: |cfg, a| run(cfg, &Params::from_args(a)),
    plot: None,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_and_on_side_by_side_with_ratio() {
        let cfg = RunCfg {
            threads: 2,
            warmup: 1,
            samples: 2,
        };
        let p = Params {
            ring: RingParams {
                rings: 2,
                actors: 10,
                laps: 5,
            },
            round_trips: 500,
            sample_every: 16,
        };
        let figs = run(&cfg, &p).unwrap();
        let names: Vec<&str> = figs.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "ring 2x10x5, metrics off",
                "ring 2x10x5, metrics on",
                "pingpong 500, metrics off",
                "pingpong 500, metrics on"
            ]
        );
        for pair in figs.chunks(2) {
            let (off, on) = (&pair[0], &pair[1]);
            assert_eq!(off.params["metrics"], json!(false));
            assert_eq!(on.params["metrics"], json!(true));
            assert_eq!(off.extra["samples_total"], json!(2));
            assert_eq!(on.extra["samples_total"], json!(2));
            let ratio = on.extra["on_off_ratio"].as_f64().unwrap();
            let want = on.ns_per_op_median / off.ns_per_op_median;
            assert!((ratio - want).abs() < 1e-9 && ratio > 0.0);
            assert!(on.extra["on_off_ratio_min"].as_f64().unwrap() > 0.0);
            assert!(!off.extra.contains_key("on_off_ratio"));
        }
    }
}
