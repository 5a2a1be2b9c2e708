//! `persist_recovery`: `troupe-persistence-bench --only recovery
//! --json-rounds -`. One entity holding `--events` events is spawned and
//! answers its first command: its whole journal replayed (`full replay`)
//! against a recovery from a snapshot taken after the last event (`from a
//! snapshot`), op `recover`; each round checks the recovered state.

use super::program::{self, rounds};
use super::samples;
use crate::run::Workload;
use troupe_bench_contract::spec::{ParamSpec, Spec};

/// `persist_recovery` (Troupe; needs nats-server).
pub const WORKLOAD: Workload = Workload {
    spec: &Spec {
        name: "persist_recovery",
        about: "cluster: recovery of one entity's events, full replay beside a snapshot; \
                needs nats-server",
        params: &[ParamSpec::count(
            "events",
            "persist_events, persist_recovery: events per round",
            "10000",
            "2000",
        )],
    },
    peers: false,
    run: |cfg, a| {
        let args = [
            "--events".to_string(),
            a.u64("events").to_string(),
            "--rounds".to_string(),
            rounds(cfg).to_string(),
            "--only".to_string(),
            "recovery".to_string(),
            "--json-rounds".to_string(),
            "-".to_string(),
        ];
        let out = program::PERSISTENCE.run(&args)?;
        samples::figures("persist_recovery", &out, cfg.warmup as u64, cfg.samples)
    },
    plot: None,
};
