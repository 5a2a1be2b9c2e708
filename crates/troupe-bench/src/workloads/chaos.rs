//! `chaos` (Troupe only): the runtime's chaos soak with its invariant
//! checker, `soak::chaos` (`crates/troupe/examples/soak/mod.rs`, also behind
//! the `chaos` example and `tests/chaos.rs`): `--drivers` threads spawn,
//! tell, ask, stop, kill and panic actors (bounded and unbounded mailboxes,
//! a restarting supervisor, registry churn) for `--seconds`, on `--threads`
//! workers. The workload reports the counts and fails if an invariant broke:
//! tells accepted = handled + dropped, every ask resolved, panics injected =
//! caught, no actor left, no worker lost. It runs once: a soak to check, so
//! `--warmup` and `--samples` do not repeat it. The figure is tells accepted
//! per second of the soak.

use super::{params, soak, RunCfg, Workload};
use crate::stats::{Figure, Sample};
use serde_json::json;
use std::time::{Duration, Instant};
use troupe_bench_contract::spec::{ParamSpec, Spec};

pub struct Params {
    pub seconds: u64,
    pub drivers: usize,
    pub seed: u64,
}

const INJECTED: &str = "chaos: injected panic";

/// Runs the soak with the injected panics' messages silenced (one line each
/// would drown the report); any other panic still reaches the previous hook.
fn quiet_chaos(cfg: &soak::Config) -> Result<soak::Report, String> {
    let previous = std::sync::Arc::new(std::panic::take_hook());
    let chained = previous.clone();
    std::panic::set_hook(Box::new(move |info| {
        if info.payload().downcast_ref::<&str>() != Some(&INJECTED) {
            chained(info);
        }
    }));
    let result = soak::chaos(cfg);
    let _ = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| previous(info)));
    result
}

pub fn run(cfg: &RunCfg, p: &Params) -> Result<Vec<Figure>, String> {
    let soak_cfg = soak::Config {
        duration: Duration::from_secs(p.seconds),
        threads: cfg.threads,
        drivers: p.drivers.max(1),
        seed: p.seed,
    };
    crate::stats::progress(&format!(
        "chaos: {} s, {} drivers, {} threads",
        p.seconds, soak_cfg.drivers, soak_cfg.threads
    ));
    let s = super::windowed(|| {
        let t0 = Instant::now();
        let r = quiet_chaos(&soak_cfg).map_err(|e| format!("chaos: invariant broken: {e}"))?;
        Ok(Sample::new(t0.elapsed().as_secs_f64(), r.accepted as f64)
            .with("actors_spawned", r.spawned)
            .with("tells_accepted", r.accepted)
            .with("tells_refused", r.refused)
            .with("handled", r.handled)
            .with("dropped", r.dropped)
            .with("runtime_dropped", r.runtime_dropped)
            .with("asks", r.asks)
            .with("asks_resolved", r.asks_ok + r.asks_failed)
            .with("asks_failed_fast", r.asks_failed)
            // `soak::chaos` fails while any ask is pending, any actor is left
            // or any worker is lost, so an `Ok` means these are 0.
            .with("asks_pending", 0)
            .with("panics_injected", r.panics_injected)
            .with("panics_caught", r.panics_caught)
            .with("kills", r.kills)
            .with("stops", r.stops)
            .with("registry_ops", r.registry_ops)
            .with("supervisor_restarts", r.supervisor_restarts)
            .with("actors_left", 0)
            .with("workers_lost", 0))
    })?;
    Ok(vec![Figure::from_samples(
        "troupe",
        "chaos",
        format!(
            "chaos {} s, {} drivers, seed {}",
            p.seconds, soak_cfg.drivers, p.seed
        ),
        params(&[
            ("seconds", json!(p.seconds)),
            ("drivers", json!(soak_cfg.drivers)),
            ("seed", json!(p.seed)),
        ]),
        "tells/s",
        cfg.threads,
        &[s],
    )])
}

/// `chaos` (Troupe only): the soak and its invariants; no plot.
pub const WORKLOAD: Workload = Workload {
    spec: &Spec {
        name: "chaos",
        about: "chaos soak for --seconds (spawn/tell/ask/stop/kill/panic, supervisor, registry), \
                run once; fails if an invariant breaks",
        params: &[
            ParamSpec::count("seconds", "chaos: seconds the drivers run", "10", "1"),
            ParamSpec::count("drivers", "chaos: driver threads", "4", "4").at_most(1024),
            ParamSpec::count("seed", "chaos: random seed", "1", "1"),
        ],
    },
    peers: false,
    run: |cfg, a| {
        run(
            cfg,
            &Params {
                seconds: a.u64("seconds"),
                drivers: a.usize("drivers"),
                seed: a.u64("seed"),
            },
        )
    },
    plot: None,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_second_keeps_every_invariant() {
        let cfg = RunCfg {
            threads: 2,
            warmup: 2,
            samples: 2,
        };
        let figs = run(
            &cfg,
            &Params {
                seconds: 1,
                drivers: 4,
                seed: 7,
            },
        )
        .unwrap();
        assert_eq!(figs.len(), 1);
        let x = |k: &str| figs[0].extra[k].as_u64().unwrap();
        assert_eq!(x("samples_total"), 1, "runs once");
        assert!(x("actors_spawned") > 0 && x("tells_accepted") > 0);
        assert_eq!(x("tells_accepted"), x("handled") + x("dropped"));
        assert_eq!(x("asks"), x("asks_resolved"));
        assert_eq!(x("panics_injected"), x("panics_caught"));
        assert!(x("panics_injected") > 0, "the soak injects panics");
    }
}
