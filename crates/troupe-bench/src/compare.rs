//! `--baseline FILE`: compare this run's figures with a saved JSON-lines run.
//!
//! Figures match by framework + workload + name + params. A figure regressed
//! when its rate moved the wrong way by more than the threshold: down for a
//! rate (`ops/s`, `hops/s`...), up for a time per operation (`ns/op`).

use crate::stats::{fmt_rate, Figure};
use serde_json::{Map, Value};

/// A figure of the saved run.
#[derive(Clone, Debug, PartialEq)]
pub struct Saved {
    pub key: String,
    pub rate: f64,
    pub unit: String,
}

/// One figure's comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    pub label: String,
    pub unit: String,
    pub old: Option<f64>,
    pub new: f64,
    /// (new - old) / old in percent.
    pub change_pct: Option<f64>,
    pub regression: bool,
}

/// Whether a larger value of `unit` is better (a rate) or worse (a time).
pub fn higher_is_better(unit: &str) -> bool {
    !(unit.starts_with("ns/")
        || unit.starts_with("µs/")
        || unit.starts_with("us/")
        || unit.starts_with("ms/")
        || unit.starts_with("s/")
        || unit == "s"
        || unit == "ms"
        || unit == "µs"
        || unit == "us"
        || unit == "ns")
}

/// The matching key of a figure.
pub fn key(framework: &str, workload: &str, name: &str, params: &Map<String, Value>) -> String {
    // serde_json's Map keeps keys sorted, so this is canonical.
    format!(
        "{framework}|{workload}|{name}|{}",
        Value::Object(params.clone())
    )
}

/// Parses a JSON-lines file's text; lines that are not figures (no rate,
/// e.g. `unsupported` lines) are skipped.
pub fn parse_saved(text: &str) -> Result<Vec<Saved>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).map_err(|e| format!("line {}: {e}", i + 1))?;
        let (Some(rate), Some(unit)) = (v["rate"].as_f64(), v["unit"].as_str()) else {
            continue;
        };
        let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
        let params = v["params"].as_object().cloned().unwrap_or_default();
        out.push(Saved {
            key: key(&s("framework"), &s("workload"), &s("name"), &params),
            rate,
            unit: unit.to_string(),
        });
    }
    Ok(out)
}

/// Compares every new figure with its saved counterpart.
pub fn compare(saved: &[Saved], figures: &[Figure], threshold_pct: f64) -> Vec<Comparison> {
    figures
        .iter()
        .map(|f| {
            let k = key(&f.framework, &f.workload, &f.name, &f.params);
            let old = saved.iter().rev().find(|s| s.key == k).map(|s| s.rate);
            let change_pct = old.filter(|o| *o > 0.0).map(|o| (f.rate - o) / o * 100.0);
            let regression = match change_pct {
                Some(c) if higher_is_better(&f.unit) => c < -threshold_pct,
                Some(c) => c > threshold_pct,
                None => false,
            };
            Comparison {
                label: format!("{} {}", f.framework, f.name),
                unit: f.unit.clone(),
                old,
                new: f.rate,
                change_pct,
                regression,
            }
        })
        .collect()
}

/// The comparison table.
pub fn render(rows: &[Comparison], baseline: &str, threshold_pct: f64) -> String {
    let mut out =
        format!("\n== baseline {baseline} (regression: worse by more than {threshold_pct}%)\n");
    let w = rows.iter().map(|r| r.label.len()).max().unwrap_or(4).max(6) + 2;
    out.push_str(&format!(
        "{:<w$}{:>12}{:>12}{:>10}   {}\n",
        "Figure", "old", "new", "change", "unit"
    ));
    for r in rows {
        out.push_str(&format!(
            "{:<w$}{:>12}{:>12}{:>10}   {}{}\n",
            r.label,
            r.old.map(fmt_rate).unwrap_or_else(|| "-".into()),
            fmt_rate(r.new),
            r.change_pct
                .map(|c| format!("{c:+.1}%"))
                .unwrap_or_else(|| "new".into()),
            r.unit,
            if r.regression { "  REGRESSION" } else { "" }
        ));
    }
    let n = rows.iter().filter(|r| r.regression).count();
    out.push_str(&format!(
        "{n} regression(s) among {} figure(s), {} not in the baseline\n",
        rows.len(),
        rows.iter().filter(|r| r.old.is_none()).count()
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fig(framework: &str, name: &str, rate: f64, unit: &str) -> Figure {
        let mut params = Map::new();
        params.insert("round_trips".into(), json!(1000));
        Figure {
            framework: framework.into(),
            workload: "pingpong".into(),
            name: name.into(),
            params,
            seconds: 1.0,
            rate,
            unit: unit.into(),
            rss_mb: 1.0,
            threads: 2,
            samples: 1,
            ns_per_op_mean: 1.0,
            ns_per_op_stddev: 0.0,
            ns_per_op_median: 1.0,
            ns_per_op_p99: 1.0,
            extra: Map::new(),
        }
    }

    fn saved_of(figs: &[Figure]) -> Vec<Saved> {
        let text: String = figs
            .iter()
            .map(|f| serde_json::to_string(f).unwrap() + "\n")
            .collect();
        parse_saved(&text).unwrap()
    }

    #[test]
    fn flags_a_drop_beyond_the_threshold_only() {
        let old = saved_of(&[
            fig("troupe", "a", 1000.0, "ops/s"),
            fig("troupe", "b", 1000.0, "ops/s"),
            fig("troupe", "c", 1000.0, "ops/s"),
        ]);
        let new = [
            fig("troupe", "a", 850.0, "ops/s"),  // -15%: regression
            fig("troupe", "b", 950.0, "ops/s"),  // -5%: within 10%
            fig("troupe", "c", 1500.0, "ops/s"), // +50%: better
            fig("troupe", "d", 10.0, "ops/s"),   // not in the baseline
        ];
        let rows = compare(&old, &new, 10.0);
        assert!(rows[0].regression);
        assert!((rows[0].change_pct.unwrap() + 15.0).abs() < 1e-9);
        assert!(!rows[1].regression);
        assert!(!rows[2].regression);
        assert!((rows[2].change_pct.unwrap() - 50.0).abs() < 1e-9);
        assert_eq!(rows[3].old, None);
        assert!(!rows[3].regression);
        let text = render(&rows, "old.jsonl", 10.0);
        assert!(text.contains("REGRESSION"));
        assert!(text.contains("1 regression(s) among 4 figure(s), 1 not in the baseline"));
        // A tighter threshold flags b too.
        assert_eq!(
            compare(&old, &new, 4.0)
                .iter()
                .filter(|r| r.regression)
                .count(),
            2
        );
    }

    #[test]
    fn matches_on_framework_and_params() {
        let old = saved_of(&[fig("ractor", "a", 1000.0, "ops/s")]);
        let rows = compare(&old, &[fig("troupe", "a", 100.0, "ops/s")], 10.0);
        assert_eq!(rows[0].old, None);
        let mut other = fig("ractor", "a", 100.0, "ops/s");
        other.params.insert("round_trips".into(), json!(2000));
        assert_eq!(compare(&old, &[other], 10.0)[0].old, None);
    }

    #[test]
    fn time_units_regress_upwards() {
        let old = saved_of(&[fig("ractor", "find", 100.0, "ns/op")]);
        assert!(compare(&old, &[fig("ractor", "find", 120.0, "ns/op")], 10.0)[0].regression);
        assert!(!compare(&old, &[fig("ractor", "find", 80.0, "ns/op")], 10.0)[0].regression);
    }

    #[test]
    fn milliseconds_are_lower_is_better() {
        assert!(!higher_is_better("ms"));
        assert!(!higher_is_better("ns/op"));
        assert!(higher_is_better("msgs/s"));
        let old = saved_of(&[fig("troupe", "savina_count", 10.0, "ms")]);
        assert!(compare(&old, &[fig("troupe", "savina_count", 12.0, "ms")], 10.0)[0].regression);
        assert!(!compare(&old, &[fig("troupe", "savina_count", 8.0, "ms")], 10.0)[0].regression);
    }

    #[test]
    fn skips_unsupported_lines() {
        let text = "{\"framework\":\"actix\",\"workload\":\"registry\",\"unsupported\":\"no\"}\n\n";
        assert!(parse_saved(text).unwrap().is_empty());
        assert!(parse_saved("not json").is_err());
    }
}
