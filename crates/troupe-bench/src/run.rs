//! How the suite measures, below every workload: [`Workload`] (what each
//! workload file declares), [`RunCfg`] (threads, warm-up runs, samples) and
//! its [`RunCfg::measure`] loop, what a `--plot` function gets and gives,
//! and the small helpers every workload uses (`params`, `verify`,
//! `windowed`).
//!
//! Floors (`.ci/layers.py`): the tools (`stats`, `plot`, `compare`,
//! `programs`) < this module < `workloads/` < `peers` (and `main.rs`, the
//! root). A workload names this module and the tools, never the registry
//! in `workloads/mod.rs` or the peers' report.

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
    /// The workload drawn (to measure it again at other thread counts).
    pub workload: &'a Workload,
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
