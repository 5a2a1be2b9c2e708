//! `--peers`: runs the peer programs (peers/README.md) on the same workload
//! and parameters, parses their JSON lines, and puts them beside Troupe.
//!
//! Contract: `<peer> <workload> [--threads N] [--samples K] [params]`, one JSON
//! line per figure and sample on stdout; a line with an `unsupported` field
//! means the peer cannot express the workload. troupe-bench installs nothing:
//! a missing program is reported as not installed.

use crate::compare::higher_is_better;
use crate::programs::{program, run_with_timeout};
pub use crate::programs::{repo_root, PEERS};
use crate::run::RunCfg;
use crate::stats::{fmt_ns, fmt_rate, interference_extras, undisturbed, Figure};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What running one peer on one workload gave.
#[derive(Debug)]
pub enum PeerOutcome {
    Figures(Vec<Figure>),
    Unsupported(String),
    Failed(String),
    NotInstalled(PathBuf),
}

/// Turns a peer's JSON lines into figures: the lines of one (params, unit)
/// are the samples of one figure.
pub fn parse_output(peer: &str, workload: &str, stdout: &str) -> PeerOutcome {
    let mut groups: Vec<(String, Vec<Map<String, Value>>)> = Vec::new();
    for line in stdout.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let v: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => return PeerOutcome::Failed(format!("bad JSON line `{line}`: {e}")),
        };
        let Some(obj) = v.as_object() else {
            return PeerOutcome::Failed(format!("not a JSON object: `{line}`"));
        };
        if let Some(why) = obj.get("unsupported") {
            return PeerOutcome::Unsupported(why.as_str().unwrap_or("unsupported").to_string());
        }
        if obj.get("rate").and_then(Value::as_f64).is_none() {
            return PeerOutcome::Failed(format!("no rate in `{line}`"));
        }
        let k = format!(
            "{}|{}",
            obj.get("params").cloned().unwrap_or(Value::Null),
            obj.get("unit").and_then(Value::as_str).unwrap_or("")
        );
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, v)) => v.push(obj.clone()),
            None => groups.push((k, vec![obj.clone()])),
        }
    }
    if groups.is_empty() {
        return PeerOutcome::Failed("no output".into());
    }
    PeerOutcome::Figures(
        groups
            .into_iter()
            .map(|(_, lines)| figure_of(peer, workload, &lines))
            .collect(),
    )
}

/// One figure from the lines of its samples; like Troupe's figures, from the
/// undisturbed samples when there are any.
fn figure_of(peer: &str, workload: &str, all: &[Map<String, Value>]) -> Figure {
    let num = |l: &Map<String, Value>, k: &str| l.get(k).and_then(Value::as_f64).unwrap_or(0.0);
    let lines: Vec<Map<String, Value>> =
        undisturbed(all, |l| (num(l, "window_s"), num(l, "other_cpu_s")))
            .into_iter()
            .cloned()
            .collect();
    let lines = &lines[..];
    let first = &lines[0];
    let unit = first
        .get("unit")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let framework = first
        .get("framework")
        .and_then(Value::as_str)
        .unwrap_or(peer)
        .to_string();
    let params = first
        .get("params")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let rate_of = |l: &Map<String, Value>| l.get("rate").and_then(Value::as_f64).unwrap_or(0.0);
    let scale = time_unit_ns(&unit);
    let ns_of = |l: &Map<String, Value>| {
        let r = rate_of(l);
        if higher_is_better(&unit) {
            1e9 / r.max(1e-300)
        } else {
            r * scale
        }
    };
    let mut ns: Vec<f64> = lines.iter().map(ns_of).collect();
    ns.sort_by(f64::total_cmp);
    let median = ns[ns.len() / 2];
    let mean = ns.iter().sum::<f64>() / ns.len() as f64;
    let var = ns.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / ns.len() as f64;
    let p99 = ns[((ns.len() as f64 * 0.99).ceil() as usize).clamp(1, ns.len()) - 1];
    // The sample at the median gives seconds, rate and extras.
    let mid = lines
        .iter()
        .min_by(|a, b| {
            (ns_of(a) - median)
                .abs()
                .total_cmp(&(ns_of(b) - median).abs())
        })
        .expect("non-empty");
    let known = [
        "framework",
        "workload",
        "params",
        "seconds",
        "rate",
        "unit",
        "rss_mb",
        "threads",
        "other_cpu_s",
        "window_s",
    ];
    let mut extra: Map<String, Value> = mid
        .iter()
        .filter(|(k, _)| !known.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    interference_extras(
        &mut extra,
        all.iter()
            .map(|l| (num(l, "seconds"), num(l, "other_cpu_s"))),
    );
    let compact: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    Figure {
        framework,
        workload: workload.to_string(),
        name: format!("{workload} {}", compact.join(" ")).replace('"', ""),
        params,
        seconds: mid.get("seconds").and_then(Value::as_f64).unwrap_or(0.0),
        rate: rate_of(mid),
        unit,
        rss_mb: lines
            .iter()
            .filter_map(|l| l.get("rss_mb").and_then(Value::as_f64))
            .fold(0.0, f64::max),
        threads: mid.get("threads").and_then(Value::as_u64).unwrap_or(0) as usize,
        samples: lines.len(),
        ns_per_op_mean: mean,
        ns_per_op_stddev: var.sqrt(),
        ns_per_op_median: median,
        ns_per_op_p99: p99,
        extra,
    }
}

/// Nanoseconds in one of a time unit (`ms` is a Savina figure's time: 1e6;
/// `ns/op`: 1), so peers' times per operation are in nanoseconds as Troupe's.
pub fn time_unit_ns(unit: &str) -> f64 {
    let head = unit.split('/').next().unwrap_or("");
    match head {
        "s" => 1e9,
        "ms" => 1e6,
        "µs" | "us" => 1e3,
        _ => 1.0,
    }
}

/// Runs one peer on a workload.
/// The peer gets the same threads, warm-up runs and samples as Troupe.
pub fn run_peer(
    peer: &str,
    root: &Path,
    workload: &str,
    flags: &[String],
    cfg: &RunCfg,
    timeout: Duration,
) -> PeerOutcome {
    let prog = program(peer, root);
    if !prog.is_file() {
        return PeerOutcome::NotInstalled(prog);
    }
    let mut args = vec![
        workload.to_string(),
        "--threads".into(),
        cfg.threads.to_string(),
        "--samples".into(),
        cfg.samples.to_string(),
        "--warmup".into(),
        cfg.warmup.to_string(),
    ];
    args.extend(flags.iter().cloned());
    match run_with_timeout(&prog, &args, timeout) {
        Ok(out) => parse_output(peer, workload, &out),
        Err(e) => PeerOutcome::Failed(e),
    }
}

/// Troupe's speed relative to a peer figure, as text.
/// Figures with the same parameters compare by time per operation even when
/// their rate units are worded differently (`finds/s` against `ns/op`).
pub fn ratio_text(troupe: Option<&Figure>, peer: &Figure) -> String {
    let Some(t) = troupe else {
        return "n/a".into();
    };
    let same_figure = t.params == peer.params || t.unit == peer.unit;
    if !same_figure || t.ns_per_op_median <= 0.0 || peer.ns_per_op_median <= 0.0 {
        return "n/a".into();
    }
    let r = peer.ns_per_op_median / t.ns_per_op_median;
    // Every sample of one side ran beside other load: say so next to the ratio.
    let flag = if t.disturbed() || peer.disturbed() {
        " [disturbed]"
    } else {
        ""
    };
    if r >= 1.0 {
        format!("troupe {r:.1}x faster{flag}")
    } else {
        format!("troupe {r:.2}x (slower){flag}")
    }
}

/// The table for one workload: Troupe's figures, then each peer's.
pub fn render_table(workload: &str, troupe: &[&Figure], peers: &[(String, PeerOutcome)]) -> String {
    let mut rows: Vec<[String; 6]> = Vec::new();
    for t in troupe {
        rows.push([
            "troupe".into(),
            t.name.clone(),
            fmt_rate(t.rate),
            t.unit.clone(),
            fmt_ns(t.ns_per_op_median),
            "-".into(),
        ]);
    }
    if troupe.is_empty() {
        rows.push([
            "troupe".into(),
            "-".into(),
            "n/a".into(),
            "".into(),
            "".into(),
            "".into(),
        ]);
    }
    for (peer, outcome) in peers {
        match outcome {
            PeerOutcome::Figures(figs) => {
                for f in figs {
                    let matching = troupe
                        .iter()
                        .find(|t| t.params == f.params)
                        .or_else(|| troupe.iter().find(|t| t.unit == f.unit))
                        .copied();
                    rows.push([
                        f.framework.clone(),
                        f.name.clone(),
                        fmt_rate(f.rate),
                        f.unit.clone(),
                        fmt_ns(f.ns_per_op_median),
                        ratio_text(matching, f),
                    ]);
                }
            }
            PeerOutcome::Unsupported(why) => rows.push([
                peer.clone(),
                format!("n/a: {why}"),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ]),
            PeerOutcome::Failed(why) => rows.push([
                peer.clone(),
                format!("failed: {why}"),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ]),
            PeerOutcome::NotInstalled(p) => rows.push([
                peer.clone(),
                format!("not installed (run peers/setup.sh): {}", p.display()),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ]),
        }
    }
    let w0 = rows.iter().map(|r| r[0].len()).max().unwrap_or(9).max(9) + 2;
    let w1 = rows
        .iter()
        .filter(|r| !r[2].is_empty())
        .map(|r| r[1].chars().count())
        .max()
        .unwrap_or(6)
        .max(6)
        + 2;
    let mut out = format!("\n== peers: {workload}\n");
    out.push_str(&format!(
        "{:<w0$}{:<w1$}{:>12}  {:<16}{:>12}   {}\n",
        "Framework", "Figure", "rate", "unit", "ns/op", "Troupe vs it"
    ));
    for r in rows {
        if r[2].is_empty() {
            out.push_str(&format!("{:<w0$}{}\n", r[0], r[1]));
        } else {
            out.push_str(&format!(
                "{:<w0$}{:<w1$}{:>12}  {:<16}{:>12}   {}\n",
                r[0], r[1], r[2], r[3], r[4], r[5]
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_samples_into_one_figure() {
        let out = "{\"framework\":\"ractor\",\"workload\":\"pingpong\",\"params\":{\"round_trips\":1000},\"seconds\":0.001,\"rate\":1000000.0,\"unit\":\"round-trips/s\",\"rss_mb\":3.0,\"threads\":2,\"ns_per_op\":1000.0}\n\
                   {\"framework\":\"ractor\",\"workload\":\"pingpong\",\"params\":{\"round_trips\":1000},\"seconds\":0.002,\"rate\":500000.0,\"unit\":\"round-trips/s\",\"rss_mb\":4.0,\"threads\":2,\"ns_per_op\":2000.0}\n\
                   {\"framework\":\"ractor\",\"workload\":\"pingpong\",\"params\":{\"round_trips\":1000},\"seconds\":0.0015,\"rate\":666666.7,\"unit\":\"round-trips/s\",\"rss_mb\":4.0,\"threads\":2,\"ns_per_op\":1500.0}\n";
        let PeerOutcome::Figures(figs) = parse_output("ractor", "pingpong", out) else {
            panic!("figures expected");
        };
        assert_eq!(figs.len(), 1);
        let f = &figs[0];
        assert_eq!(f.samples, 3);
        assert_eq!(f.framework, "ractor");
        assert!((f.ns_per_op_median - 1500.0).abs() < 0.01);
        assert!((f.seconds - 0.0015).abs() < 1e-12);
        assert_eq!(f.rss_mb, 4.0);
        assert_eq!(f.extra["ns_per_op"], 1500.0);
    }

    #[test]
    fn unsupported_and_bad_output() {
        let u =
            "{\"framework\":\"actix\",\"workload\":\"registry\",\"unsupported\":\"no registry\"}";
        assert!(
            matches!(parse_output("actix", "registry", u), PeerOutcome::Unsupported(w) if w == "no registry")
        );
        assert!(matches!(
            parse_output("x", "ring", "garbage"),
            PeerOutcome::Failed(_)
        ));
        assert!(matches!(
            parse_output("x", "ring", ""),
            PeerOutcome::Failed(_)
        ));
    }

    #[test]
    fn time_unit_lines_group_per_params() {
        let out = "{\"framework\":\"ractor\",\"workload\":\"registry\",\"params\":{\"size\":10,\"op\":\"find\"},\"seconds\":0.01,\"rate\":92.0,\"unit\":\"ns/op\"}\n\
                   {\"framework\":\"ractor\",\"workload\":\"registry\",\"params\":{\"size\":100,\"op\":\"find\"},\"seconds\":0.01,\"rate\":95.0,\"unit\":\"ns/op\"}\n";
        let PeerOutcome::Figures(figs) = parse_output("ractor", "registry", out) else {
            panic!()
        };
        assert_eq!(figs.len(), 2);
        assert!((figs[0].ns_per_op_median - 92.0).abs() < 1e-9);
    }

    #[test]
    fn ratio_wording() {
        let PeerOutcome::Figures(p) = parse_output(
            "p",
            "pingpong",
            "{\"framework\":\"p\",\"params\":{},\"seconds\":1,\"rate\":100.0,\"unit\":\"x/s\"}",
        ) else {
            panic!()
        };
        let PeerOutcome::Figures(t) = parse_output(
            "troupe",
            "pingpong",
            "{\"framework\":\"troupe\",\"params\":{},\"seconds\":1,\"rate\":320.0,\"unit\":\"x/s\"}",
        ) else {
            panic!()
        };
        assert_eq!(ratio_text(Some(&t[0]), &p[0]), "troupe 3.2x faster");
        assert_eq!(ratio_text(Some(&p[0]), &t[0]), "troupe 0.31x (slower)");
        assert_eq!(ratio_text(None, &p[0]), "n/a");
        // The same figure (parameters) in other words: compared by ns/op.
        let fig = |fw: &str, op: &str, line: &str| {
            let out = format!(
                "{{\"framework\":\"{fw}\",\"params\":{{\"size\":10,\"op\":\"{op}\"}},{line}}}"
            );
            match parse_output(fw, "registry", &out) {
                PeerOutcome::Figures(f) => f.into_iter().next().unwrap(),
                _ => panic!(),
            }
        };
        let t = fig(
            "troupe",
            "find",
            "\"seconds\":1,\"rate\":1e8,\"unit\":\"finds/s\"",
        );
        let p = fig(
            "ractor",
            "find",
            "\"seconds\":1,\"rate\":90.0,\"unit\":\"ns/op\"",
        );
        let other = fig(
            "ractor",
            "dispatch",
            "\"seconds\":1,\"rate\":9.0,\"unit\":\"ns/op\"",
        );
        assert_eq!(ratio_text(Some(&t), &p), "troupe 9.0x faster");
        assert_eq!(ratio_text(Some(&t), &other), "n/a");
    }

    #[test]
    fn savina_ms_lines_compare_with_troupe() {
        let line = |fw: &str, ms: f64| {
            format!("{{\"framework\":\"{fw}\",\"workload\":\"savina_count\",\"params\":{{\"increments\":1000}},\"seconds\":{},\"rate\":{ms},\"unit\":\"ms\"}}", ms / 1e3)
        };
        let PeerOutcome::Figures(p) = parse_output("kameo", "savina_count", &line("kameo", 20.0))
        else {
            panic!()
        };
        assert!((p[0].ns_per_op_median - 20e6).abs() < 1.0);
        let PeerOutcome::Figures(t) = parse_output("troupe", "savina_count", &line("troupe", 10.0))
        else {
            panic!()
        };
        assert_eq!(ratio_text(Some(&t[0]), &p[0]), "troupe 2.0x faster");
        let u =
            "{\"framework\":\"xtra\",\"workload\":\"savina_count\",\"unsupported\":\"no Savina\"}";
        assert!(matches!(
            parse_output("xtra", "savina_count", u),
            PeerOutcome::Unsupported(_)
        ));
    }
}
