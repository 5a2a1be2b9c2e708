//! The Savina actor benchmark suite (Imam & Sarkar, AGERE 2014) on Troupe.
//!
//! Micro and concurrency groups: the contract's workloads
//! (`troupe_bench_contract::savina`), which the peers run too, one file each
//! with its protocol mapped to Troupe. Parallel group (trapezoid, recmatmul,
//! quicksort, sieve, nqueenk): Troupe only, declared here with Savina's
//! defaults.
//!
//! Every figure is Savina's: the wall time of the measured phase in
//! milliseconds (`unit: "ms"`, `rate` = milliseconds, lower is better). The
//! samples are recorded with one operation each, so the report's `average`
//! and `median` columns are that time too. Each figure's JSON line also
//! carries `savina_group` (`micro`, `concurrency` or `parallel`).

pub mod banking;
pub mod barber;
pub mod big;
pub mod bndbuffer;
pub mod chameneos;
pub mod concdict;
pub mod count;
pub mod fjcreate;
pub mod fjthrput;
pub mod nqueenk;
pub mod philosopher;
pub mod pingpong;
pub mod quicksort;
pub mod recmatmul;
pub mod report;
pub mod sieve;
pub mod threadring;
pub mod trapezoid;

use super::{PlotCtx, Plotted, RunCfg, Workload};
use crate::stats::{Figure, Sample};
use serde_json::{Map, Value};
use std::time::Instant;
use troupe::ActorSystem;
use troupe_bench_contract::savina::UNIT;
use troupe_bench_contract::spec::Args;

/// The micro group, in report order.
pub const MICRO: &[&Workload] = &[
    &pingpong::WORKLOAD,
    &count::WORKLOAD,
    &fjthrput::WORKLOAD,
    &fjcreate::WORKLOAD,
    &threadring::WORKLOAD,
    &chameneos::WORKLOAD,
    &big::WORKLOAD,
];

/// The concurrency group, in report order.
pub const CONCURRENCY: &[&Workload] = &[
    &concdict::WORKLOAD,
    &bndbuffer::WORKLOAD,
    &philosopher::WORKLOAD,
    &barber::WORKLOAD,
    &banking::WORKLOAD,
];

/// The parallel group (Troupe only), in report order.
pub const PARALLEL: &[&Workload] = &[
    &trapezoid::WORKLOAD,
    &recmatmul::WORKLOAD,
    &quicksort::WORKLOAD,
    &sieve::WORKLOAD,
    &nqueenk::WORKLOAD,
];

/// The groups a workload-name argument can select: `savina` (all three),
/// `savina-micro`, `savina-concurrency`, `savina-parallel`.
pub fn group(name: &str) -> Option<Vec<&'static Workload>> {
    let v: Vec<&'static Workload> = match name {
        "savina" => MICRO
            .iter()
            .chain(CONCURRENCY)
            .chain(PARALLEL)
            .copied()
            .collect(),
        "savina-micro" => MICRO.to_vec(),
        "savina-concurrency" => CONCURRENCY.to_vec(),
        "savina-parallel" => PARALLEL.to_vec(),
        _ => return None,
    };
    Some(v)
}

/// The group names, for messages.
pub const GROUPS: &[&str] = &[
    "savina",
    "savina-micro",
    "savina-concurrency",
    "savina-parallel",
];

/// The group (`micro`, `concurrency`, `parallel`) of a Savina workload.
pub fn group_of(workload: &str) -> Option<&'static str> {
    let is = |g: &[&Workload]| g.iter().any(|w| w.spec.name == workload);
    if is(MICRO) {
        Some("micro")
    } else if is(CONCURRENCY) {
        Some("concurrency")
    } else if is(PARALLEL) {
        Some("parallel")
    } else {
        None
    }
}

/// The parameters as a JSON `params` object, the way the peers print them.
pub fn params_of(args: &Args) -> Map<String, Value> {
    serde_json::from_str(&args.to_json()).expect("Args::to_json is a JSON object")
}

/// The figure's label: the workload and its `key=value` parameters, as the
/// peers' figures are named.
pub fn label(args: &Args) -> String {
    let compact: Vec<String> = params_of(args)
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!("{} {}", args.spec().name, compact.join(" "))
}

/// A Savina sample: the measured phase took `seconds`; one operation, so the
/// figure's time columns are the phase's time.
pub fn sample(seconds: f64) -> Sample {
    Sample::new(seconds, 1.0)
}

/// Times the measured phase: from `start` (which sends the first message)
/// until `wait` returns the run's result.
pub fn timed<T>(
    start: impl FnOnce() -> Result<(), String>,
    wait: impl FnOnce() -> Result<T, String>,
) -> Result<(f64, T), String> {
    let t0 = Instant::now();
    start()?;
    let r = wait()?;
    Ok((t0.elapsed().as_secs_f64(), r))
}

/// Measures one Savina workload: `once` runs one sample on a fresh system
/// (which is shut down after it, outside the measured phase) and verifies it.
/// The figure's `rate` is the median sample's time in milliseconds.
pub fn measure(
    cfg: &RunCfg,
    args: &Args,
    mut once: impl FnMut(&ActorSystem) -> Result<Sample, String>,
) -> Result<Vec<Figure>, String> {
    let name = args.spec().name;
    let mut fig = cfg.measure("troupe", name, label(args), params_of(args), UNIT, || {
        let system = cfg.system();
        let s = once(&system);
        system.shutdown();
        s
    })?;
    fig.rate = fig.seconds * 1e3;
    if let Some(g) = group_of(name) {
        fig.extra.insert("savina_group".into(), Value::from(g));
    }
    Ok(vec![fig])
}

/// A crossbeam receive that gives up after a minute instead of hanging when
/// a protocol loses a message.
pub fn recv<T>(rx: &crossbeam_channel::Receiver<T>) -> Result<T, String> {
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .map_err(|e| format!("no result: {e}"))
}

/// `--plot` for the parallel group: the workload's time at 1, 2 and 4
/// threads (re-measured at each), as an SVG line chart + CSV.
pub fn plot_threads(c: &PlotCtx<'_>) -> Result<Plotted, String> {
    let name = c.args.spec().name;
    let w = PARALLEL
        .iter()
        .find(|w| w.spec.name == name)
        .ok_or_else(|| format!("{name} is not a Savina parallel workload"))?;
    let mut points = Vec::new();
    let mut extra = Vec::new();
    for threads in [1usize, 2, 4] {
        let figs = match c.figs.iter().find(|f| f.threads == threads) {
            Some(f) => vec![f.clone()],
            None => {
                let cfg = RunCfg {
                    threads,
                    ..c.cfg.clone()
                };
                let mut figs = (w.run)(&cfg, c.args)?;
                // Named apart from the run's own figure (`--baseline` keys).
                for f in &mut figs {
                    f.name = format!("{} at {threads} threads", f.name);
                }
                extra.extend(figs.iter().cloned());
                figs
            }
        };
        if let Some(f) = figs.first() {
            points.push((threads as f64, f.rate));
        }
    }
    let (svg, csv) = crate::plot::line_chart(
        c.dir,
        &format!("{name}_threads"),
        &format!("{name}: ms vs worker threads (lower is better)"),
        "threads",
        "ms",
        &points,
    )?;
    let mut text = format!("plot: {} ({})\n", svg.display(), csv.display());
    for (t, ms) in &points {
        text.push_str(&format!("  {name} at {t} threads: {ms:.2} ms\n"));
    }
    Ok((text, extra))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tiny parameters for each Savina workload (flag -> value).
    fn tiny(name: &str) -> &'static [(&'static str, &'static str)] {
        match name {
            "savina_pingpong" => &[("pings", "500")],
            "savina_count" => &[("increments", "2000")],
            "savina_fjthrput" => &[("messages", "200"), ("actors", "8")],
            "savina_fjcreate" => &[("actors", "500")],
            "savina_threadring" => &[("actors", "10"), ("passes", "500")],
            "savina_chameneos" => &[("chameneos", "7"), ("meetings", "300")],
            "savina_big" => &[("actors", "10"), ("pings", "100")],
            "savina_concdict" => &[("workers", "4"), ("requests", "200")],
            "savina_bndbuffer" => &[
                ("buffer", "5"),
                ("producers", "4"),
                ("consumers", "3"),
                ("items", "50"),
                ("cost", "5"),
            ],
            "savina_philosopher" => &[("philosophers", "5"), ("rounds", "50")],
            "savina_barber" => &[
                ("haircuts", "100"),
                ("seats", "5"),
                ("arrival-cost", "50"),
                ("haircut-cost", "100"),
            ],
            "savina_banking" => &[("accounts", "20"), ("transfers", "500")],
            "savina_trapezoid" => &[("pieces", "20000"), ("workers", "7")],
            "savina_recmatmul" => &[("size", "64"), ("block-area", "256"), ("workers", "4")],
            "savina_quicksort" => &[("values", "5000"), ("sequential", "64")],
            "savina_sieve" => &[("limit", "5000"), ("primes-per-actor", "20")],
            "savina_nqueenk" => &[
                ("queens", "7"),
                ("solutions", "1500000"),
                ("threshold", "3"),
                ("workers", "4"),
            ],
            other => panic!("no tiny parameters for {other}"),
        }
    }

    #[test]
    fn every_savina_workload_verifies_at_tiny_parameters() {
        let cfg = RunCfg {
            threads: 2,
            warmup: 0,
            samples: 1,
        };
        let all = group("savina").unwrap();
        assert_eq!(all.len(), 17);
        for w in all {
            let given = tiny(w.spec.name);
            let args = w
                .spec
                .resolve(true, |flag| {
                    given
                        .iter()
                        .find(|(f, _)| *f == flag)
                        .map(|(_, v)| v.to_string())
                })
                .unwrap();
            let figs =
                (w.run)(&cfg, &args).unwrap_or_else(|e| panic!("{} failed: {e}", w.spec.name));
            assert_eq!(figs.len(), 1, "{}", w.spec.name);
            let f = &figs[0];
            assert_eq!(f.unit, "ms");
            assert!(f.rate > 0.0 && (f.rate - f.seconds * 1e3).abs() < 1e-9);
            assert!(group_of(w.spec.name).is_some());
        }
    }

    #[test]
    fn groups_partition_the_suite() {
        for g in GROUPS {
            assert!(group(g).is_some());
        }
        assert_eq!(MICRO.len() + CONCURRENCY.len(), 12);
        assert_eq!(PARALLEL.len(), 5);
        assert!(MICRO.iter().chain(CONCURRENCY).all(|w| w.peers));
        assert!(PARALLEL.iter().all(|w| !w.peers));
    }
}
