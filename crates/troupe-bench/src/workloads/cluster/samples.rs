//! The cluster programs' sample lines turned into the suite's figures.
//!
//! `troupe-sharding-bench --json` and `troupe-persistence-bench
//! --json-rounds` print one JSON object per measured quantity and round:
//!
//! ```text
//! {"framework","workload","label","params":{..,"op"},"round","seconds","ops","unit",..extras}
//! ```
//!
//! The lines of one `(framework, label)` are the samples of one figure, in
//! the order they first appear. Rounds below `warmup` are the warm-up and
//! are dropped; a quantity measured once has no `round` and is kept. Every
//! numeric field beyond the known ones is an extra of its sample (the
//! figure carries the median sample's, as the suite's own figures do),
//! except the `ratio…` fields, which become the median over the kept
//! rounds. `window_s` and `other_cpu_s` are the sample's interference
//! window as the program measured it (the machine's busy CPU time less the
//! program's and its nats-server's): a disturbed sample is dropped as the
//! suite drops its own ([`crate::stats::undisturbed`]); a line without them
//! counts as undisturbed. Lines that do not open with `{"framework"` are the programs'
//! text output and are skipped; a sample line that is malformed, a count
//! that does not add up (`delivered + refused != sent`) or a figure with
//! another number of rounds than asked for fails the workload.

use crate::stats::{Figure, Sample};
use serde_json::{Map, Value};

/// The fields of a sample line that are not extras.
const KNOWN: &[&str] = &[
    "framework",
    "workload",
    "label",
    "params",
    "round",
    "seconds",
    "ops",
    "unit",
    "rss_mb",
    "threads",
    "window_s",
    "other_cpu_s",
];

/// One parsed sample line.
struct Line {
    framework: String,
    label: String,
    params: Map<String, Value>,
    unit: String,
    round: Option<u64>,
    sample: Sample,
    rss_mb: f64,
    threads: usize,
}

/// Parses one sample line of `workload`; `Ok(None)` for a line of another
/// workload.
fn parse(workload: &str, text: &str) -> Result<Option<Line>, String> {
    let bad = |why: &str| format!("bad sample line ({why}): `{text}`");
    let v: Value = serde_json::from_str(text).map_err(|e| bad(&e.to_string()))?;
    let obj = v.as_object().ok_or_else(|| bad("not an object"))?;
    let str_of = |k: &str| obj.get(k).and_then(Value::as_str);
    let num_of = |k: &str| obj.get(k).and_then(Value::as_f64);
    if str_of("workload") != Some(workload) {
        return Ok(None);
    }
    let seconds = num_of("seconds")
        .filter(|s| s.is_finite() && *s > 0.0)
        .ok_or_else(|| bad("no positive `seconds`"))?;
    let ops = num_of("ops")
        .filter(|o| o.is_finite() && *o >= 0.0)
        .ok_or_else(|| bad("no `ops`"))?;
    let mut sample = Sample::new(seconds, ops);
    sample.window_s = num_of("window_s").unwrap_or(0.0);
    sample.other_cpu_s = num_of("other_cpu_s").unwrap_or(0.0);
    for (k, v) in obj {
        if !KNOWN.contains(&k.as_str()) {
            sample.extra.insert(k.clone(), v.clone());
        }
    }
    if let (Some(sent), Some(delivered), Some(refused)) = (
        sample.extra.get("sent").and_then(Value::as_u64),
        sample.extra.get("delivered").and_then(Value::as_u64),
        sample.extra.get("refused").and_then(Value::as_u64),
    ) {
        if delivered.checked_add(refused) != Some(sent) {
            return Err(format!(
                "tells lost: delivered {delivered} + refused {refused} != sent {sent} in `{text}`"
            ));
        }
    }
    Ok(Some(Line {
        framework: str_of("framework")
            .ok_or_else(|| bad("no `framework`"))?
            .to_string(),
        label: str_of("label")
            .ok_or_else(|| bad("no `label`"))?
            .to_string(),
        params: obj
            .get("params")
            .and_then(Value::as_object)
            .cloned()
            .ok_or_else(|| bad("no `params` object"))?,
        unit: str_of("unit").ok_or_else(|| bad("no `unit`"))?.to_string(),
        round: obj.get("round").and_then(Value::as_u64),
        sample,
        rss_mb: num_of("rss_mb").unwrap_or(0.0),
        threads: obj.get("threads").and_then(Value::as_u64).unwrap_or(1) as usize,
    }))
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => None,
        n if n % 2 == 1 => Some(v[n / 2]),
        n => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// The figures of `workload` in a program's `stdout`: rounds below
/// `warmup` dropped, and every figure measured per round holding exactly
/// `rounds` kept samples.
pub fn figures(
    workload: &str,
    stdout: &str,
    warmup: u64,
    rounds: usize,
) -> Result<Vec<Figure>, String> {
    let mut groups: Vec<Vec<Line>> = Vec::new();
    for text in stdout.lines().map(str::trim) {
        if !text.starts_with("{\"framework\"") {
            continue;
        }
        let Some(line) = parse(workload, text)? else {
            continue;
        };
        if line.round.is_some_and(|r| r < warmup) {
            continue;
        }
        match groups
            .iter_mut()
            .find(|g| g[0].framework == line.framework && g[0].label == line.label)
        {
            Some(g) => g.push(line),
            None => groups.push(vec![line]),
        }
    }
    if groups.is_empty() {
        return Err(format!("no sample lines of `{workload}` in the output"));
    }
    groups
        .into_iter()
        .map(|g| figure(workload, g, rounds))
        .collect()
}

/// One figure from the lines of its samples.
fn figure(workload: &str, lines: Vec<Line>, rounds: usize) -> Result<Figure, String> {
    let first = &lines[0];
    if first.round.is_some() && lines.len() != rounds {
        return Err(format!(
            "{workload}: `{}` ({}) has {} rounds, {rounds} asked for",
            first.label,
            first.framework,
            lines.len()
        ));
    }
    let all: Vec<Sample> = lines.iter().map(|l| l.sample.clone()).collect();
    // The samples the figure is computed from, for the ratios' medians.
    let samples: Vec<Sample> =
        crate::stats::undisturbed(&all, |s: &Sample| (s.window_s, s.other_cpu_s))
            .into_iter()
            .cloned()
            .collect();
    let mut fig = Figure::from_samples(
        &first.framework,
        workload,
        first.label.clone(),
        first.params.clone(),
        &first.unit,
        first.threads,
        &all,
    );
    fig.rss_mb = lines.iter().map(|l| l.rss_mb).fold(0.0, f64::max);
    let ratio_keys: Vec<String> = fig
        .extra
        .keys()
        .filter(|k| k.starts_with("ratio"))
        .cloned()
        .collect();
    for k in ratio_keys {
        let values = samples
            .iter()
            .filter_map(|s| s.extra.get(&k).and_then(Value::as_f64))
            .collect();
        if let Some(m) = median(values) {
            fig.extra.insert(k, Value::from(m));
        }
    }
    Ok(fig)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TELLS: &str = r#"tells: 1000 per run, 64 entities on node 3
  sent at 5000/s, arrived at 4000/s, 900 ns of CPU per tell; delivered 1000 + refused 0 == sent 1000
{"framework":"troupe-remote","workload":"entity_tell","label":"remote tell, 1 actor","params":{"tells":1000,"actors":1,"op":"tell 1"},"round":0,"seconds":1.0,"ops":1000,"unit":"tells/s","cpu_ns_per_tell":900.0,"sent":1000,"delivered":1000,"refused":0}
{"framework":"troupe","workload":"entity_tell","label":"entity tell, 1 entity","params":{"tells":1000,"actors":1,"op":"tell 1"},"round":0,"seconds":9.0,"ops":1000,"unit":"tells/s","sent":1000,"delivered":1000,"refused":0}
{"framework":"troupe-remote","workload":"entity_tell","label":"remote tell, 1 actor","params":{"tells":1000,"actors":1,"op":"tell 1"},"round":1,"seconds":0.5,"ops":1000,"unit":"tells/s","cpu_ns_per_tell":800.0,"sent":1000,"delivered":1000,"refused":0}
{"framework":"troupe","workload":"entity_tell","label":"entity tell, 1 entity","params":{"tells":1000,"actors":1,"op":"tell 1"},"round":1,"seconds":1.0,"ops":1000,"unit":"tells/s","sent":1000,"delivered":999,"refused":1}
{"framework":"troupe-remote","workload":"entity_tell","label":"remote tell, 1 actor","params":{"tells":1000,"actors":1,"op":"tell 1"},"round":2,"seconds":0.25,"ops":1000,"unit":"tells/s","cpu_ns_per_tell":700.0,"sent":1000,"delivered":1000,"refused":0}
{"framework":"troupe","workload":"entity_tell","label":"entity tell, 1 entity","params":{"tells":1000,"actors":1,"op":"tell 1"},"round":2,"seconds":1.0,"ops":1000,"unit":"tells/s","sent":1000,"delivered":1000,"refused":0}
{"framework":"troupe","workload":"entity_tell","label":"entity ask, round-robin","params":{"asks":2000,"op":"ask"},"seconds":2.0,"ops":2000,"unit":"asks/s"}
{"figure":"rebalance_ms","run":0}
"#;

    #[test]
    fn sample_lines_become_figures_without_the_warmup() {
        let figs = figures("entity_tell", TELLS, 1, 2).unwrap();
        let names: Vec<(&str, &str)> = figs
            .iter()
            .map(|f| (f.framework.as_str(), f.name.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("troupe-remote", "remote tell, 1 actor"),
                ("troupe", "entity tell, 1 entity"),
                ("troupe", "entity ask, round-robin"),
            ]
        );
        let remote = &figs[0];
        // Round 0 (9 s for the entity) is the warm-up: rounds 1 and 2 only.
        assert_eq!(remote.samples, 2);
        assert_eq!(remote.unit, "tells/s");
        assert_eq!(remote.params["op"], "tell 1");
        assert!((remote.ns_per_op_mean - 375_000.0).abs() < 1_000.0);
        let entity = &figs[1];
        assert_eq!(entity.samples, 2);
        assert!((entity.rate - 1000.0).abs() < 1e-6, "{}", entity.rate);
        assert!((entity.ns_per_op_median - 1_000_000.0).abs() < 1_000.0);
        // The asks are measured once, with no round: kept.
        assert_eq!(figs[2].samples, 1);
        assert!((figs[2].rate - 1000.0).abs() < 1e-6);
    }

    #[test]
    fn ratios_are_the_median_of_the_rounds() {
        let line = |round: u32, ratio: f64| {
            format!(
                r#"{{"framework":"troupe","workload":"persist_events","label":"1 entities","params":{{"events":10,"op":"persist 1"}},"round":{round},"seconds":1.0,"ops":10,"unit":"events/s","ratio":{ratio}}}"#
            )
        };
        let text = [line(0, 9.0), line(1, 0.5), line(2, 0.7), line(3, 0.6)].join("\n");
        let figs = figures("persist_events", &text, 1, 3).unwrap();
        assert_eq!(figs.len(), 1);
        assert_eq!(figs[0].extra["ratio"], 0.6);
    }

    #[test]
    fn disturbed_rounds_are_dropped_with_their_ratios() {
        let line = |round: u32, seconds: f64, other: f64, ratio: f64| {
            format!(
                r#"{{"framework":"troupe","workload":"persist_recovery","label":"full replay","params":{{"op":"recover"}},"round":{round},"seconds":{seconds},"ops":100,"unit":"events/s","window_s":{seconds},"other_cpu_s":{other},"ratio":{ratio}}}"#
            )
        };
        // Round 1 ran beside another process's 0.5 s of CPU in its 1 s.
        let text = [
            line(0, 1.0, 0.0, 1.0),
            line(1, 4.0, 2.0, 9.0),
            line(2, 1.2, 0.0, 2.0),
        ]
        .join("\n");
        let figs = figures("persist_recovery", &text, 0, 3).unwrap();
        let f = &figs[0];
        assert_eq!(f.samples, 2);
        assert_eq!(f.extra["samples_total"], 3);
        assert_eq!(f.extra["samples_disturbed"], 1);
        assert!(f.ns_per_op_p99 < 13_000_000.0, "{}", f.ns_per_op_p99);
        assert_eq!(f.extra["ratio"], 1.5);
        assert!(!f.extra.contains_key("window_s"));
    }

    #[test]
    fn lost_tells_missing_rounds_and_bad_lines_fail() {
        let lost = TELLS.replace("\"delivered\":999", "\"delivered\":998");
        assert!(figures("entity_tell", &lost, 1, 2)
            .unwrap_err()
            .contains("tells lost"));
        assert!(figures("entity_tell", TELLS, 0, 2)
            .unwrap_err()
            .contains("3 rounds, 2 asked for"));
        assert!(figures("rebalance", TELLS, 0, 3)
            .unwrap_err()
            .contains("no sample lines"));
        let bad = r#"{"framework":"troupe","workload":"rebalance","label":"x","params":{},"seconds":0,"ops":1,"unit":"runs/s"}"#;
        assert!(figures("rebalance", bad, 0, 1)
            .unwrap_err()
            .contains("no positive `seconds`"));
    }
}
