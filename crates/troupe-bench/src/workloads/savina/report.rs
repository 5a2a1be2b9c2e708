//! The Savina summary under `--peers`: per workload Troupe's time against the
//! fastest peer's, per group (micro, concurrency) the geometric mean of
//! Troupe's ratios, and per peer the geometric mean of its times over
//! Troupe's.
//!
//! Ratios are `troupe ms / best peer ms` (below 1: Troupe faster); a group's
//! mean is over the workloads where at least one peer ran; a peer's mean,
//! `peer ms / troupe ms` (above 1: Troupe faster), is over the workloads it
//! ran.

use super::{CONCURRENCY, MICRO};
use crate::programs::PEERS;
use crate::stats::Figure;
use troupe_bench_contract::savina::UNIT;

/// Why a peer gave no figure for a workload: (workload, peer, short reason).
pub type Note = (String, String, String);

/// The geometric mean of positive values (`None` when there are none).
pub fn geomean(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| *v <= 0.0) {
        return None;
    }
    Some((values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp())
}

fn ms_of<'a>(figs: &'a [Figure], workload: &str, framework: &str) -> Option<&'a Figure> {
    figs.iter()
        .find(|f| f.workload == workload && f.framework == framework && f.unit == UNIT)
}

fn faster(r: f64) -> &'static str {
    if r < 1.0 {
        "Troupe faster"
    } else if r > 1.0 {
        "Troupe slower"
    } else {
        "even"
    }
}

/// The summary, or `None` when no micro or concurrency workload ran on Troupe.
pub fn summary(figs: &[Figure], notes: &[Note]) -> Option<String> {
    let groups = [("micro", MICRO), ("concurrency", CONCURRENCY)];
    let ran = |name: &str| ms_of(figs, name, "troupe").is_some();
    if !groups
        .iter()
        .any(|(_, g)| g.iter().any(|w| ran(w.spec.name)))
    {
        return None;
    }
    let mut out = String::from(
        "\n== Savina summary: ms of the measured phase (median), lower is better; \
         troupe/best = Troupe's time over the fastest peer's (below 1: Troupe faster)\n",
    );
    let w0 = 20;
    out.push_str(&format!("{:<w0$}{:>10}", "Workload", "troupe"));
    for p in PEERS {
        out.push_str(&format!("{:>12}", p));
    }
    out.push_str(&format!("{:>12}{:>12}\n", "best peer", "troupe/best"));
    for (gname, group) in groups {
        let mut ratios = Vec::new();
        let mut per_peer: Vec<Vec<f64>> = vec![Vec::new(); PEERS.len()];
        let mut shown = 0;
        for w in group.iter().filter(|w| ran(w.spec.name)) {
            let name = w.spec.name;
            let t = ms_of(figs, name, "troupe").map(|f| f.rate).unwrap_or(0.0);
            shown += 1;
            out.push_str(&format!("{:<w0$}{:>10.2}", name, t));
            let mut best: Option<(&str, f64)> = None;
            for (i, p) in PEERS.iter().enumerate() {
                let cell = match ms_of(figs, name, p) {
                    Some(f) => {
                        if best.is_none_or(|(_, b)| f.rate < b) {
                            best = Some((p, f.rate));
                        }
                        if t > 0.0 {
                            per_peer[i].push(f.rate / t);
                        }
                        format!("{:.2}", f.rate)
                    }
                    None => notes
                        .iter()
                        .find(|(wl, pe, _)| wl == name && pe == p)
                        .map(|(_, _, why)| why.clone())
                        .unwrap_or_else(|| "-".into()),
                };
                out.push_str(&format!("{:>12}", cell));
            }
            match best {
                Some((p, b)) if t > 0.0 => {
                    ratios.push(t / b);
                    out.push_str(&format!("{:>12}{:>12.2}\n", p, t / b));
                }
                _ => out.push_str(&format!("{:>12}{:>12}\n", "none", "n/a")),
            }
        }
        if shown == 0 {
            continue;
        }
        match geomean(&ratios) {
            Some(g) => out.push_str(&format!(
                "{gname}: geometric mean of troupe/best over {} of {shown} workloads (those with a peer): {g:.2} ({})\n",
                ratios.len(),
                faster(g)
            )),
            None => out.push_str(&format!("{gname}: no peer ran any of its workloads\n")),
        }
        let per: Vec<String> = PEERS
            .iter()
            .zip(&per_peer)
            .map(|(p, v)| match geomean(v) {
                Some(g) => format!("{p} {g:.2} ({} of {shown})", v.len()),
                None => format!("{p} none"),
            })
            .collect();
        out.push_str(&format!(
            "{gname}: per peer, geometric mean of peer ms / troupe ms (above 1: Troupe faster): {}\n",
            per.join(", ")
        ));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;

    fn fig(framework: &str, workload: &str, ms: f64) -> Figure {
        let mut f = Figure::from_samples(
            framework,
            workload,
            workload.into(),
            Map::new(),
            UNIT,
            2,
            &[super::super::sample(ms / 1e3)],
        );
        f.rate = ms;
        f
    }

    #[test]
    fn ratios_and_geometric_means() {
        assert!((geomean(&[2.0, 8.0]).unwrap() - 4.0).abs() < 1e-12);
        assert_eq!(geomean(&[]), None);
        let figs = vec![
            fig("troupe", "savina_pingpong", 10.0),
            fig("actix", "savina_pingpong", 20.0),
            fig("ractor", "savina_pingpong", 40.0),
            fig("troupe", "savina_count", 10.0),
            fig("actix", "savina_count", 5.0),
            fig("troupe", "savina_big", 10.0),
        ];
        let notes = vec![(
            "savina_pingpong".to_string(),
            "xtra".to_string(),
            "unsupported".to_string(),
        )];
        let s = summary(&figs, &notes).unwrap();
        // pingpong: best actix 20 -> 0.5; count: best actix 5 -> 2; big: no peer.
        assert!(
            s.contains("over 2 of 3 workloads (those with a peer): 1.00"),
            "{s}"
        );
        // actix: 20/10 and 5/10 -> 1.0; ractor: 40/10 -> 4.
        assert!(s.contains("actix 1.00 (2 of 3)"), "{s}");
        assert!(s.contains("ractor 4.00 (1 of 3)"), "{s}");
        assert!(s.contains("unsupported"), "{s}");
        assert!(s.contains("xtra none"), "{s}");
        assert!(summary(&[fig("troupe", "ring", 1.0)], &[]).is_none());
    }
}
