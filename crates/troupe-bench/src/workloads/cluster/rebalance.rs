//! `rebalance`: `troupe-sharding-bench rebalance ENTITIES RUNS --json`. Per
//! run, a fresh nats-server and 3 nodes activate `--entities` entities; a
//! fourth node joins. Figures: the time until all of them answer an ask
//! again (8 asking threads) against the same ask sweep timed before the join
//! with nothing moving (op `answer all`, entities/s, `ms` in each sample),
//! and the time until placement settles on all four (op `settle`, one per
//! run). No warm-up: every run is a fresh cluster, `--samples` runs.

use super::{program, samples};
use crate::run::Workload;
use troupe_bench_contract::spec::{ParamSpec, Spec};

/// `rebalance` (Troupe; needs nats-server).
pub const WORKLOAD: Workload = Workload {
    spec: &Spec {
        name: "rebalance",
        about: "cluster: a fourth node joins 3 holding --entities entities: time until all \
                answer again, beside the same sweep with nothing moving; needs nats-server",
        params: &[ParamSpec::count(
            "entities",
            "rebalance: entities active before the fourth node joins",
            "10000",
            "1000",
        )],
    },
    peers: false,
    run: |cfg, a| {
        let args = [
            "rebalance".to_string(),
            a.u64("entities").to_string(),
            cfg.samples.to_string(),
            "--json".to_string(),
        ];
        let out = program::SHARDING.run(&args)?;
        samples::figures("rebalance", &out, 0, cfg.samples)
    },
    plot: None,
};
