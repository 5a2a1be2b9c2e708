//! The workloads of `shared/BENCHMARKS.md`, on Troupe, one file each, plus the
//! plain-Rust baselines they are compared with in the same run.
//!
//! Each workload file ends with its [`Workload`] declaration: its parameters
//! (a [`Spec`]: flags, defaults, quick values; for the workloads the peers run
//! too, the contract's spec from `troupe-bench-contract`), whether the peers
//! run it, how to run it from resolved [`Args`], and what `--plot` draws.
//! [`ALL`] lists them in report order; the command line, the help text and the
//! flags passed to the peers are all derived from these declarations.

pub mod actor_creation;
pub mod async_actors;
pub mod baseline;
pub mod channels;
pub mod chaos;
pub mod cluster;
pub mod mailbox_performance;
pub mod max_throughput;
pub mod message;
pub mod metrics_overhead;
pub mod mixed_case;
pub mod pingpong;
pub mod reader_db;
pub mod registry;
pub mod ring;
pub mod savina;
pub mod schedulers;
pub mod spawn_and_await;
pub mod stress;

/// The runtime's chaos soak and stress count, shared with its `chaos` and
/// `stress` examples and `tests/chaos.rs` (the same file, not a copy; its
/// lints are the runtime crate's business, which lints it as an example).
#[allow(clippy::manual_is_multiple_of)]
#[path = "../../../troupe/examples/soak/mod.rs"]
mod soak;

use crate::stats::{Figure, Sample};
use serde_json::{Map, Value};
use std::path::Path;
use troupe::ActorSystem;
use troupe_bench_contract::probe::CpuWindow;
use troupe_bench_contract::spec::{Args, Spec};

/// One workload of the suite, declared in its own file.
pub struct Workload {
    /// Name and parameters.
    pub spec: &'static Spec,
    /// Whether the peer programs run it (its spec is the contract's).
    pub peers: bool,
    /// Runs it on Troupe (and its baselines) with resolved parameters.
    pub run: fn(&RunCfg, &Args) -> Result<Vec<Figure>, String>,
    /// What `--plot DIR` draws for it, if anything.
    pub plot: Option<PlotFn>,
}

/// Draws a workload's `--plot` figures.
pub type PlotFn = fn(&PlotCtx<'_>) -> Result<Plotted, String>;

/// What a plot function gets: where to draw, how the run was measured, the
/// parameters, and the figures the run gave.
pub struct PlotCtx<'a> {
    /// The `--plot` directory.
    pub dir: &'a Path,
    /// Threads, warm-up and samples of the run.
    pub cfg: &'a RunCfg,
    /// The workload's resolved parameters.
    pub args: &'a Args,
    /// The figures of the run.
    pub figs: &'a [Figure],
}

/// What a plot function gave: report lines, and figures it had to measure
/// in addition (e.g. at other thread counts).
pub type Plotted = (String, Vec<Figure>);

/// A `--plot` bar chart of the figures' rates in hops/s, one bar per figure
/// that `label` names.
pub fn rate_bars(
    c: &PlotCtx<'_>,
    file: &str,
    title: &str,
    label: impl Fn(&Figure) -> Option<String>,
) -> Result<Plotted, String> {
    let bars: Vec<(String, f64)> = c
        .figs
        .iter()
        .filter_map(|f| Some((label(f)?, f.rate)))
        .collect();
    let (svg, csv) = crate::plot::bar_chart(c.dir, file, title, "hops/s", &bars)?;
    Ok((
        format!("plot: {} ({})\n", svg.display(), csv.display()),
        Vec::new(),
    ))
}

/// Every workload, in report order (BENCHMARKS.md's table).
pub const ALL: &[&Workload] = &[
    &ring::WORKLOAD,
    &pingpong::WORKLOAD,
    &mailbox_performance::WORKLOAD,
    &actor_creation::WORKLOAD,
    &mixed_case::WORKLOAD,
    &spawn_and_await::WORKLOAD,
    &message::WORKLOAD,
    &registry::WORKLOAD,
    &reader_db::WORKLOAD,
    &max_throughput::WORKLOAD,
    &schedulers::WORKLOAD,
    &channels::WORKLOAD,
    &metrics_overhead::WORKLOAD,
    &chaos::WORKLOAD,
    &stress::WORKLOAD,
    &async_actors::PINGPONG,
    &async_actors::ASK_CHAIN,
    &async_actors::IO,
    // Savina (Imam & Sarkar, AGERE 2014): micro, concurrency, parallel.
    &savina::pingpong::WORKLOAD,
    &savina::count::WORKLOAD,
    &savina::fjthrput::WORKLOAD,
    &savina::fjcreate::WORKLOAD,
    &savina::threadring::WORKLOAD,
    &savina::chameneos::WORKLOAD,
    &savina::big::WORKLOAD,
    &savina::concdict::WORKLOAD,
    &savina::bndbuffer::WORKLOAD,
    &savina::philosopher::WORKLOAD,
    &savina::barber::WORKLOAD,
    &savina::banking::WORKLOAD,
    &savina::trapezoid::WORKLOAD,
    &savina::recmatmul::WORKLOAD,
    &savina::quicksort::WORKLOAD,
    &savina::sieve::WORKLOAD,
    &savina::nqueenk::WORKLOAD,
    // The distributed benchmarks (need nats-server; not in the quick suite).
    &cluster::entity_tell::WORKLOAD,
    &cluster::persist_events::WORKLOAD,
    &cluster::persist_recovery::WORKLOAD,
    &cluster::rebalance::WORKLOAD,
];

/// The workloads a name argument selects: a workload, a Savina group
/// (`savina`, `savina-micro`, `savina-concurrency`, `savina-parallel`), or
/// the `cluster` group.
pub fn select(name: &str) -> Option<Vec<&'static Workload>> {
    find(name)
        .map(|w| vec![w])
        .or_else(|| savina::group(name))
        .or_else(|| cluster::group(name))
}

/// The quick suite (no workload named): every workload but the cluster
/// group's.
pub fn quick_suite() -> Vec<&'static Workload> {
    ALL.iter()
        .copied()
        .filter(|w| !cluster::is_member(w))
        .collect()
}

/// The workload called `name`.
pub fn find(name: &str) -> Option<&'static Workload> {
    ALL.iter().copied().find(|w| w.spec.name == name)
}

/// How to measure: threads, warm-up runs, samples, progress output.
#[derive(Clone, Debug)]
pub struct RunCfg {
    pub threads: usize,
    pub warmup: usize,
    pub samples: usize,
}

impl RunCfg {
    /// A Troupe system with the configured worker count.
    pub fn system(&self) -> ActorSystem {
        ActorSystem::builder().threads(self.threads).build()
    }

    /// Runs `f` `warmup` times unrecorded, then `samples` times, and builds
    /// the figure. `f` must verify its own result and return `Err` if wrong.
    pub fn measure(
        &self,
        framework: &str,
        workload: &str,
        name: String,
        params: Map<String, Value>,
        unit: &str,
        mut f: impl FnMut() -> Result<Sample, String>,
    ) -> Result<Figure, String> {
        for i in 0..self.warmup {
            crate::stats::progress(&format!("{name}: warm-up {}/{}", i + 1, self.warmup));
            f()?;
        }
        let mut samples = Vec::with_capacity(self.samples);
        for i in 0..self.samples {
            crate::stats::progress(&format!("{name}: sample {}/{}", i + 1, self.samples));
            samples.push(windowed(&mut f)?);
        }
        Ok(Figure::from_samples(
            framework,
            workload,
            name,
            params,
            unit,
            self.threads,
            &samples,
        ))
    }
}

/// Runs one recorded sample, noting the CPU other processes used meanwhile
/// (`other_cpu_s` over `window_s`: the interference fields of every sample).
pub fn windowed(f: impl FnOnce() -> Result<Sample, String>) -> Result<Sample, String> {
    let window = CpuWindow::open();
    let mut s = f()?;
    s.other_cpu_s = window.other_cpu_seconds();
    s.window_s = window.wall_seconds();
    Ok(s)
}

/// Builds a params map from (name, value) pairs.
pub fn params(pairs: &[(&str, Value)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// Fails with a clear message unless `ok`.
pub fn verify(ok: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_bench_contract::spec;

    #[test]
    fn declarations_are_consistent() {
        for (i, w) in ALL.iter().enumerate() {
            assert!(
                ALL[..i].iter().all(|o| o.spec.name != w.spec.name),
                "{} declared twice",
                w.spec.name
            );
            // The peers run exactly the workloads whose spec is the contract's.
            let contract = spec::contract(w.spec.name)
                .or_else(|| troupe_bench_contract::savina::spec(w.spec.name));
            assert_eq!(
                w.peers,
                contract.is_some_and(|c| c == w.spec),
                "{}: peers flag and contract disagree",
                w.spec.name
            );
            // Defaults and quick values are valid values.
            w.spec.resolve(false, |_| None).unwrap();
            w.spec.resolve(true, |_| None).unwrap();
            assert!(find(w.spec.name).is_some());
        }
        assert_eq!(
            ALL.iter().filter(|w| w.peers).count(),
            spec::CONTRACT.len() + troupe_bench_contract::savina::PEER_RUN.len()
        );
        // Every Savina workload is in ALL and in its group.
        let savina = select("savina").unwrap();
        assert_eq!(savina.len(), 17);
        assert!(savina
            .iter()
            .all(|s| ALL.iter().any(|w| w.spec.name == s.spec.name)));
        assert_eq!(select("ring").map(|v| v.len()), Some(1));
        // The cluster group: in ALL, not in the quick suite.
        let cluster = select("cluster").unwrap();
        assert_eq!(cluster.len(), 4);
        assert!(cluster
            .iter()
            .all(|c| ALL.iter().any(|w| w.spec.name == c.spec.name)));
        let quick = quick_suite();
        assert_eq!(quick.len(), ALL.len() - 4);
        assert!(!quick.iter().any(|w| cluster::is_member(w)));
        assert!(select("savina-nothing").is_none());
    }
}
