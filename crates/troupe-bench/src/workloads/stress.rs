//! `stress` (Troupe only): `--messages` numbered messages (default 10^8)
//! from `--senders` threads (default 16) into one actor, which checks each
//! sender's sequence; the figure is the rate, and the workload fails unless
//! 0 were lost and 0 duplicated. The count is the runtime's own
//! `soak::stress` (`crates/troupe/examples/soak/mod.rs`, also behind the
//! `stress` example and `tests/chaos.rs`). It runs once: a count to check,
//! so `--warmup` and `--samples` do not repeat it.

use super::{params, soak, verify, RunCfg, Workload};
use crate::stats::{Figure, Sample};
use serde_json::json;
use troupe_bench_contract::spec::{ParamSpec, Spec};

pub struct Params {
    pub senders: u64,
    pub messages: u64,
}

/// Fails unless every one of `total` messages arrived exactly once.
pub fn check(total: u64, received: u64, lost: u64, duplicated: u64) -> Result<(), String> {
    verify(lost == 0 && duplicated == 0 && received == total, || {
        format!(
            "stress: {total} sent, {received} received, {lost} lost, {duplicated} duplicated \
             (want {total} received, 0 lost, 0 duplicated)"
        )
    })
}

pub fn run(cfg: &RunCfg, p: &Params) -> Result<Vec<Figure>, String> {
    let senders = p.senders.max(1);
    let per = (p.messages / senders).max(1);
    let total = per * senders;
    crate::stats::progress(&format!("stress: {total} messages from {senders} threads"));
    let s = super::windowed(|| {
        // Counted (`--contention`) with the system's start and shutdown.
        let (received, lost, duplicated, secs) = crate::contention::window("stress", total, || {
            soak::stress(senders as usize, per, cfg.threads)
        });
        check(total, received, lost, duplicated)?;
        Ok(Sample::new(secs.max(1e-9), total as f64)
            .with("received", received)
            .with("lost", lost)
            .with("duplicated", duplicated))
    })?;
    Ok(vec![Figure::from_samples(
        "troupe",
        "stress",
        format!("stress {total} messages from {senders} senders"),
        params(&[("senders", json!(senders)), ("messages", json!(total))]),
        "msgs/s",
        cfg.threads,
        &[s],
    )])
}

/// `stress` (Troupe only): the lost/duplicated count at a rate; no plot.
pub const WORKLOAD: Workload = Workload {
    spec: &Spec {
        name: "stress",
        about: "--messages numbered messages from --senders threads into one actor, run once; \
                msgs/s, fails unless 0 lost and 0 duplicated",
        params: &[
            ParamSpec::count("senders", "stress: sender threads", "16", "16"),
            ParamSpec::count(
                "messages",
                "stress: messages in all",
                "100000000",
                "1000000",
            ),
        ],
    },
    peers: false,
    run: |cfg, a| {
        run(
            cfg,
            &Params {
                senders: a.u64("senders"),
                messages: a.u64("messages"),
            },
        )
    },
    plot: None,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_arrives_once() {
        let cfg = RunCfg {
            threads: 2,
            warmup: 3,
            samples: 3,
        };
        let figs = run(
            &cfg,
            &Params {
                senders: 16,
                messages: 160_000,
            },
        )
        .unwrap();
        assert_eq!(figs.len(), 1);
        let f = &figs[0];
        assert_eq!(f.extra["received"], json!(160_000));
        assert_eq!(
            (f.extra["lost"].clone(), f.extra["duplicated"].clone()),
            (json!(0), json!(0))
        );
        assert_eq!(f.extra["samples_total"], json!(1), "runs once");
        assert!(f.rate > 0.0);
    }

    #[test]
    fn a_lost_or_duplicated_message_fails() {
        assert!(check(100, 100, 0, 0).is_ok());
        assert!(check(100, 99, 1, 0).unwrap_err().contains("1 lost"));
        assert!(check(100, 101, 0, 1).unwrap_err().contains("1 duplicated"));
        assert!(check(100, 99, 0, 0).is_err(), "short without a gap seen");
    }
}
