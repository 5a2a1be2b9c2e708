//! What every Savina workload file uses: the sample of one measured phase,
//! its timing, the measuring loop that turns samples into Savina's figure
//! (milliseconds, tagged with its group), a receive that cannot hang, and
//! the parallel group's `--plot`. Below the group lists in `mod.rs`, which
//! name every workload file; so the group of a figure comes from the
//! contract's lists here (the rest of the suite's Savina workloads are the
//! parallel group), and `mod.rs`'s tests check that both agree.

use crate::run::{PlotCtx, Plotted, RunCfg};
use crate::stats::{Figure, Sample};
use serde_json::{Map, Value};
use std::time::Instant;
use troupe::ActorSystem;
use troupe_bench_contract::savina::{self as contract, UNIT};
use troupe_bench_contract::spec::Args;

/// The group (`micro`, `concurrency`, `parallel`) of a Savina workload's
/// figure: the contract's micro and concurrency lists, else `parallel` for
/// a `savina_` name (the Troupe-only group); `None` for any other name.
pub fn group_of(workload: &str) -> Option<&'static str> {
    let is = |g: &[&troupe_bench_contract::spec::Spec]| g.iter().any(|s| s.name == workload);
    if is(contract::MICRO) {
        Some("micro")
    } else if is(contract::CONCURRENCY) {
        Some("concurrency")
    } else if workload.starts_with("savina_") {
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
                let mut figs = (c.workload.run)(&cfg, c.args)?;
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
