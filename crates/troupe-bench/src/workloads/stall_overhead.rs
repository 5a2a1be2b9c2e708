//! `stall_overhead` (Troupe only): what stall detection costs, beside
//! `metrics_overhead`. The suite's `ring` and `pingpong` run on a system
//! without stall detection and on one with it
//! (`SystemBuilder::stall_threshold`, `--threshold-ms`, long enough that
//! nothing stalls), alternating off, on, off, on, ... in the same run; the
//! "on" figure carries `on_off_ratio` and `on_off_ratio_min` as in
//! `metrics_overhead`. `--side 1` runs only the "off" system and
//! `--side 2` only the "on" one, for instruction counts under callgrind
//! (one worker thread's `Ir` per run); `--side 3`, the default, both.

use super::metrics_overhead::measure_switch;
use super::ring::{self, Params as RingParams};
use super::{params, pingpong, verify, RunCfg, Workload};
use crate::stats::{Figure, Sample};
use serde_json::json;
use std::time::Duration;
use troupe::SpawnOptions;
use troupe_bench_contract::spec::{Args, ParamSpec, Spec};

pub struct Params {
    pub ring: RingParams,
    pub round_trips: u64,
    /// The "on" system's stall threshold.
    pub threshold: Duration,
    /// 1: "off" only; 2: "on" only; 3: both sides, alternating.
    pub side: u64,
}

impl Params {
    fn from_args(a: &Args) -> Params {
        Params {
            ring: RingParams::from_args(a),
            round_trips: a.u64("round-trips"),
            threshold: Duration::from_millis(a.u64("threshold-ms")),
            side: a.u64("side"),
        }
    }
}

/// The run's system, with stall detection if `on`.
fn system(cfg: &RunCfg, p: &Params, on: bool) -> troupe::ActorSystem {
    let b = troupe::ActorSystem::builder().threads(cfg.threads);
    if on {
        b.stall_threshold(p.threshold)
    } else {
        b
    }
    .build()
}

/// Checks that the system watches its workers exactly when `on`, and that
/// nothing stalled.
fn check(system: &troupe::SystemHandle, on: bool, threads: usize) -> Result<(), String> {
    let watched = system.workers().len();
    verify(watched == if on { threads } else { 0 }, || {
        format!("stall_overhead: {watched} workers watched, stall detection on: {on}")
    })?;
    let stalls = system.stalls().detected;
    verify(stalls == 0, || {
        format!("stall_overhead: {stalls} stalls under the benchmark")
    })
}

/// One side only (`--side 1|2`): `cfg.samples` samples, no warm-up pairs.
fn one_side(
    cfg: &RunCfg,
    name: &str,
    ps: &serde_json::Map<String, serde_json::Value>,
    unit: &str,
    on: bool,
    mut f: impl FnMut(bool) -> Result<Sample, String>,
) -> Result<Figure, String> {
    let mut samples = Vec::new();
    for _ in 0..cfg.samples.max(1) {
        samples.push(super::windowed(|| f(on))?);
    }
    let mut p = ps.clone();
    p.insert("stall".into(), json!(on));
    Ok(Figure::from_samples(
        "troupe",
        "stall_overhead",
        format!("{name}, stall {}", if on { "on" } else { "off" }),
        p,
        unit,
        cfg.threads,
        &samples,
    ))
}

fn measure(
    cfg: &RunCfg,
    p: &Params,
    name: &str,
    ps: &serde_json::Map<String, serde_json::Value>,
    unit: &str,
    f: impl FnMut(bool) -> Result<Sample, String>,
) -> Result<Vec<Figure>, String> {
    match p.side {
        1 => Ok(vec![one_side(cfg, name, ps, unit, false, f)?]),
        2 => Ok(vec![one_side(cfg, name, ps, unit, true, f)?]),
        _ => {
            let (off, on) = measure_switch(cfg, "stall_overhead", "stall", name, ps, unit, f)?;
            Ok(vec![off, on])
        }
    }
}

pub fn run(cfg: &RunCfg, p: &Params) -> Result<Vec<Figure>, String> {
    let r = p.ring;
    let k = p.round_trips;
    let threshold_ms = p.threshold.as_millis() as u64;
    let ring_params = params(&[
        ("rings", json!(r.rings)),
        ("actors", json!(r.actors)),
        ("laps", json!(r.laps)),
        ("threshold_ms", json!(threshold_ms)),
    ]);
    let ring_name = format!("ring {}x{}x{}", r.rings, r.actors, r.laps);
    let mut figs = measure(cfg, p, &ring_name, &ring_params, "hops/s", |on| {
        let system = system(cfg, p, on);
        let s = ring::sample_with(&system, &r, &SpawnOptions::new);
        let checked = s.and_then(|s| check(&system, on, cfg.threads).map(|()| s));
        system.shutdown();
        checked
    })?;
    let pp_params = params(&[
        ("round_trips", json!(k)),
        ("threshold_ms", json!(threshold_ms)),
    ]);
    figs.extend(measure(
        cfg,
        p,
        &format!("pingpong {k}"),
        &pp_params,
        "round-trips/s",
        |on| {
            let system = system(cfg, p, on);
            let s = pingpong::sample_with(&system, k, &SpawnOptions::new);
            let checked = s.and_then(|s| check(&system, on, cfg.threads).map(|()| s));
            system.shutdown();
            checked
        },
    )?);
    Ok(figs)
}

/// `stall_overhead` (Troupe only): ring and pingpong with stall detection
/// off and on, alternating in one run; no plot.
pub const WORKLOAD: Workload = Workload {
    spec: &Spec {
        name: "stall_overhead",
        about: "ring (--rings, --actors, --laps) and pingpong (--round-trips) with stall \
                detection off and on (--threshold-ms), alternating; on/off ratio \
                (--side 1 or 2: one side only, for callgrind; 3, the default: both)",
        params: &[
            ParamSpec::count("rings", "ring: rings (R)", "4", "2"),
            ParamSpec::count("actors", "ring: actors per ring (N)", "500", "100"),
            ParamSpec::count("laps", "ring: laps (L)", "1000", "20"),
            ParamSpec::count("round-trips", "pingpong: round trips", "1000000", "10000"),
            ParamSpec::count(
                "threshold-ms",
                "stall_overhead: the stall threshold of the \"on\" system (ms)",
                "1000",
                "1000",
            ),
            ParamSpec::count(
                "side",
                "stall_overhead: 1 off only; 2 on only; 3 both, alternating",
                "3",
                "3",
            )
            .at_most(3),
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
    fn off_and_on_side_by_side_and_one_side_alone() {
        let cfg = RunCfg {
            threads: 2,
            warmup: 1,
            samples: 2,
        };
        let mut p = Params {
            ring: RingParams {
                rings: 2,
                actors: 10,
                laps: 5,
            },
            round_trips: 500,
            threshold: Duration::from_secs(1),
            side: 3,
        };
        let figs = run(&cfg, &p).unwrap();
        let names: Vec<&str> = figs.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "ring 2x10x5, stall off",
                "ring 2x10x5, stall on",
                "pingpong 500, stall off",
                "pingpong 500, stall on"
            ]
        );
        for pair in figs.chunks(2) {
            assert_eq!(pair[0].params["stall"], json!(false));
            assert_eq!(pair[1].params["stall"], json!(true));
            assert!(pair[1].extra["on_off_ratio"].as_f64().unwrap() > 0.0);
        }
        p.side = 2;
        let figs = run(&cfg, &p).unwrap();
        let names: Vec<&str> = figs.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["ring 2x10x5, stall on", "pingpong 500, stall on"]);
    }
}
