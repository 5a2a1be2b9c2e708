//! Samples, statistics and the benchee-style report rows.
//!
//! A *figure* is one measured quantity (a workload at given parameters on one
//! framework). It is measured `warmup` times unrecorded, then `samples` times;
//! each sample gives a time per operation, recorded in an HDR histogram (in
//! picoseconds, 3 significant digits) from which the row's average, deviation,
//! median and 99th percentile come.

use hdrhistogram::Histogram;
use serde::Serialize;
use serde_json::{Map, Value};
use std::io::{IsTerminal, Write};
use troupe_bench_contract::probe::is_disturbed;

/// A progress line on stderr, overwritten in place; only when stderr is a
/// terminal (piped or redirected output gets no escape codes).
pub fn progress(msg: &str) {
    let mut e = std::io::stderr().lock();
    if e.is_terminal() {
        let _ = write!(e, "\r\x1b[2K[troupe-bench] {msg}");
        let _ = e.flush();
    }
}

/// Clears the progress line, if there is one.
pub fn clear_progress() {
    let mut e = std::io::stderr().lock();
    if e.is_terminal() {
        let _ = write!(e, "\r\x1b[2K");
    }
}

/// One run of a workload's measured phase.
#[derive(Clone, Debug)]
pub struct Sample {
    /// Wall time of the measured phase.
    pub seconds: f64,
    /// Operations done in it (hops, messages, actors, reads...).
    pub ops: f64,
    /// Workload-specific extra fields (e.g. creation_seconds, bytes_per_actor).
    pub extra: Map<String, Value>,
    /// CPU seconds other processes used during the sample (setup included).
    pub other_cpu_s: f64,
    /// Wall seconds of the window `other_cpu_s` was measured over.
    pub window_s: f64,
}

impl Sample {
    /// A sample of `ops` operations in `seconds`.
    pub fn new(seconds: f64, ops: f64) -> Self {
        Sample {
            seconds,
            ops,
            extra: Map::new(),
            other_cpu_s: 0.0,
            window_s: 0.0,
        }
    }

    /// Adds an extra field.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_string(), value.into());
        self
    }
}

/// A measured figure, as printed and as written to JSON lines.
#[derive(Clone, Debug, Serialize)]
pub struct Figure {
    pub framework: String,
    pub workload: String,
    /// Row label in the report (e.g. "ring 10x10000x100").
    pub name: String,
    pub params: Map<String, Value>,
    /// Median sample's wall time of the measured phase.
    pub seconds: f64,
    /// Operations per second at the median.
    pub rate: f64,
    pub unit: String,
    pub rss_mb: f64,
    pub threads: usize,
    pub samples: usize,
    /// Nanoseconds per operation: mean, standard deviation, median, p99.
    pub ns_per_op_mean: f64,
    pub ns_per_op_stddev: f64,
    pub ns_per_op_median: f64,
    pub ns_per_op_p99: f64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Figure {
    pub fn from_samples(
        framework: &str,
        workload: &str,
        name: String,
        params: Map<String, Value>,
        unit: &str,
        threads: usize,
        samples: &[Sample],
    ) -> Figure {
        let all = samples;
        let kept = undisturbed(all, |s| (s.window_s, s.other_cpu_s));
        let samples: Vec<Sample> = kept.iter().map(|s| (*s).clone()).collect();
        let samples = &samples[..];
        let mut hist = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000_000, 3)
            .expect("histogram bounds");
        let mut per_op: Vec<f64> = Vec::with_capacity(samples.len());
        for s in samples {
            let ns = s.seconds * 1e9 / s.ops.max(1.0);
            per_op.push(ns);
            let _ = hist.record(((ns * 1000.0).round() as u64).max(1));
        }
        let mean = hist.mean() / 1000.0;
        let stddev = hist.stdev() / 1000.0;
        let median = hist.value_at_quantile(0.5) as f64 / 1000.0;
        let p99 = hist.value_at_quantile(0.99) as f64 / 1000.0;
        // The sample closest to the median gives seconds and the extras.
        let mid = samples
            .iter()
            .zip(&per_op)
            .min_by(|a, b| (a.1 - median).abs().total_cmp(&(b.1 - median).abs()))
            .map(|(s, _)| s.clone())
            .unwrap_or_else(|| Sample::new(0.0, 0.0));
        let mut extra = mid.extra;
        interference_extras(&mut extra, all.iter().map(|s| (s.window_s, s.other_cpu_s)));
        Figure {
            framework: framework.into(),
            workload: workload.into(),
            name,
            params,
            seconds: mid.seconds,
            rate: mid.ops / mid.seconds.max(1e-12),
            unit: unit.into(),
            rss_mb: peak_rss_mb(),
            threads,
            samples: samples.len(),
            ns_per_op_mean: mean,
            ns_per_op_stddev: stddev,
            ns_per_op_median: median,
            ns_per_op_p99: p99,
            extra,
        }
    }

    /// What the comparison block ranks against each other: figures of the
    /// same unit and the same operation (`params.op`).
    pub fn kind(&self) -> String {
        let op = self.params.get("op").and_then(Value::as_str).unwrap_or("");
        format!("{}|{op}", self.unit)
    }

    /// Whether every sample of this figure was disturbed by other processes.
    pub fn disturbed(&self) -> bool {
        self.extra.get("all_samples_disturbed") == Some(&Value::Bool(true))
    }
}

/// The samples to compute a figure from (`seconds_other` gives a sample's
/// window wall time and others' CPU time in it): the undisturbed ones
/// ([`troupe_bench_contract::probe::is_disturbed`]) when there are any,
/// else all of them (the figure is then marked disturbed).
pub fn undisturbed<T>(samples: &[T], seconds_other: impl Fn(&T) -> (f64, f64)) -> Vec<&T> {
    let quiet: Vec<&T> = samples
        .iter()
        .filter(|s| {
            let (secs, other) = seconds_other(s);
            !is_disturbed(secs, other)
        })
        .collect();
    if quiet.is_empty() {
        samples.iter().collect()
    } else {
        quiet
    }
}

/// Records the interference of a figure's samples: how many there were
/// (`samples` counts only those the figure was computed from), how many were disturbed,
/// whether all were, and the most CPU time others used in one sample.
pub fn interference_extras(
    extra: &mut Map<String, Value>,
    samples: impl Iterator<Item = (f64, f64)>,
) {
    let (mut n, mut disturbed, mut worst) = (0usize, 0usize, 0.0f64);
    for (secs, other) in samples {
        n += 1;
        disturbed += usize::from(is_disturbed(secs, other));
        worst = worst.max(other);
    }
    extra.insert("samples_total".into(), Value::from(n));
    extra.insert("samples_disturbed".into(), Value::from(disturbed));
    extra.insert(
        "all_samples_disturbed".into(),
        Value::Bool(n > 0 && disturbed == n),
    );
    extra.insert("other_cpu_s_max".into(), Value::from(worst));
}

/// Peak resident set of this process in MB (VmHWM).
pub fn peak_rss_mb() -> f64 {
    proc_status_kb("VmHWM:") as f64 / 1024.0
}

/// Current resident set in bytes (VmRSS).
#[allow(dead_code)]
pub fn rss_bytes() -> u64 {
    proc_status_kb("VmRSS:") * 1024
}

/// Resets the peak-RSS watermark (Linux `clear_refs` 5), so a workload's peak
/// is its own.
#[allow(dead_code)]
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn proc_status_kb(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Formats a duration given in nanoseconds the way benchee does.
pub fn fmt_ns(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{:.2} ns", ns)
    }
}

/// Formats a rate with K/M/G suffixes.
pub fn fmt_rate(r: f64) -> String {
    if r >= 1e9 {
        format!("{:.2} G", r / 1e9)
    } else if r >= 1e6 {
        format!("{:.2} M", r / 1e6)
    } else if r >= 1e3 {
        format!("{:.2} K", r / 1e3)
    } else {
        format!("{:.2}", r)
    }
}

/// The benchee-style block for a set of rows: the table, then the comparison
/// ranked fastest first ("N.NNx slower +X").
pub fn render_block(title: &str, figures: &[&Figure]) -> String {
    let mut out = String::new();
    out.push_str(&format!("\n{title}\n"));
    let w = figures
        .iter()
        .map(|f| f.name.len())
        .max()
        .unwrap_or(4)
        .max(4)
        + 2;
    out.push_str(&format!(
        "{:<w$}{:>12}{:>14}{:>12}{:>14}{:>14}   {}\n",
        "Name", "ips", "average", "deviation", "median", "99th %", "unit"
    ));
    for f in figures {
        let dev = if f.ns_per_op_mean > 0.0 {
            100.0 * f.ns_per_op_stddev / f.ns_per_op_mean
        } else {
            0.0
        };
        out.push_str(&format!(
            "{:<w$}{:>12}{:>14}{:>11.2}%{:>14}{:>14}   {} ({} samples{})\n",
            f.name,
            fmt_rate(1e9 / f.ns_per_op_mean.max(1e-9)),
            fmt_ns(f.ns_per_op_mean),
            dev,
            fmt_ns(f.ns_per_op_median),
            fmt_ns(f.ns_per_op_p99),
            f.unit,
            f.samples,
            match f.extra.get("samples_disturbed").and_then(Value::as_u64) {
                Some(d) if d > 0 && f.disturbed() => format!(", all {d} disturbed"),
                Some(d) if d > 0 => format!(", {d} disturbed dropped"),
                _ => String::new(),
            },
        ));
    }
    let mut kinds: Vec<String> = figures.iter().map(|f| f.kind()).collect();
    kinds.sort();
    kinds.dedup();
    for kind in kinds {
        let mut ranked: Vec<&&Figure> = figures.iter().filter(|f| f.kind() == kind).collect();
        // Only times (rates) are ranked; a memory figure is not a speed.
        if ranked.len() < 2 || !ranked[0].unit.ends_with("/s") {
            continue;
        }
        ranked.sort_by(|a, b| a.ns_per_op_mean.total_cmp(&b.ns_per_op_mean));
        let best = ranked[0];
        out.push_str("\nComparison:\n");
        out.push_str(&format!(
            "{:<w$}{:>12}\n",
            best.name,
            fmt_rate(1e9 / best.ns_per_op_mean.max(1e-9))
        ));
        for f in &ranked[1..] {
            out.push_str(&format!(
                "{:<w$}{:>12} - {:.2}x slower +{}\n",
                f.name,
                fmt_rate(1e9 / f.ns_per_op_mean.max(1e-9)),
                f.ns_per_op_mean / best.ns_per_op_mean.max(1e-12),
                fmt_ns(f.ns_per_op_mean - best.ns_per_op_mean),
            ));
        }
    }
    out
}

/// The per-figure summary lines under a block.
pub fn summary_lines(figs: &[Figure]) -> String {
    let mut out = String::new();
    for f in figs {
        let extras: Vec<String> = f
            .extra
            .iter()
            .map(|(k, v)| match v.as_f64() {
                Some(x) if x.fract() != 0.0 => format!("{k}={x:.3}"),
                _ => format!("{k}={v}"),
            })
            .collect();
        out.push_str(&format!(
            "  {}: {} {} (median sample {:.3} s){}\n",
            f.name,
            fmt_rate(f.rate),
            f.unit,
            f.seconds,
            if extras.is_empty() {
                String::new()
            } else {
                format!("; {}", extras.join(", "))
            }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(name: &str, unit: &str, op: Option<&str>, ns: f64) -> Figure {
        let mut params = Map::new();
        if let Some(op) = op {
            params.insert("op".into(), Value::from(op));
        }
        let mut f = Figure::from_samples(
            "troupe",
            "w",
            name.into(),
            params,
            unit,
            2,
            &[Sample::new(ns * 1e-9, 1.0)],
        );
        f.ns_per_op_mean = ns;
        f
    }

    #[test]
    fn comparison_ranks_only_figures_of_one_kind() {
        let a = fig("timer schedule", "timers/s", Some("schedule"), 10.0);
        let b = fig("timer fire", "timers/s", Some("fire"), 20.0);
        let c = fig("publish 1", "deliveries/s", Some("publish"), 30.0);
        let d = fig("publish 10", "deliveries/s", Some("publish"), 60.0);
        let m = fig("memory a", "bytes/entry", Some("memory"), 1.0);
        let n = fig("memory b", "bytes/entry", Some("memory"), 2.0);
        let out = render_block("== t", &[&a, &b, &c, &d, &m, &n]);
        // Schedule and fire are different operations, memory is not a speed: only
        // the two publish figures are ranked.
        assert_eq!(out.matches("Comparison:").count(), 1, "{out}");
        let ranked = &out[out.find("Comparison:").unwrap()..];
        assert!(
            ranked.contains("publish 10") && ranked.contains("2.00x slower"),
            "{out}"
        );
        assert!(
            !ranked.contains("timer") && !ranked.contains("memory"),
            "{out}"
        );
    }

    #[test]
    fn disturbed_samples_are_dropped_unless_all_are() {
        let quiet = Sample::new(1.0, 1.0);
        let mut loud = Sample::new(2.0, 1.0);
        loud.other_cpu_s = 1.0;
        loud.window_s = 2.0;
        let f = Figure::from_samples(
            "troupe",
            "w",
            "x".into(),
            Map::new(),
            "x/s",
            2,
            &[quiet.clone(), loud.clone()],
        );
        assert_eq!(f.samples, 1);
        assert!((f.seconds - 1.0).abs() < 1e-9);
        assert_eq!(f.extra["samples_disturbed"], 1);
        assert!(!f.disturbed());
        let g = Figure::from_samples("troupe", "w", "x".into(), Map::new(), "x/s", 2, &[loud]);
        assert_eq!(g.samples, 1);
        assert!(g.disturbed());
    }
}
