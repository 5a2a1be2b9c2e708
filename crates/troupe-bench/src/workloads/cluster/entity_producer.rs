//! `entity_producer`: `troupe-sharding-bench producer MESSAGES ROUNDS
//! --json`. Three nodes and a JetStream nats-server in one child process;
//! from node 1 to entities owned by node 3: messages through the
//! at-least-once producer (window 100) against plain entity tells, to 64
//! entities and to 1 (op `64 entities`, `1 entity`; the producer's figure
//! runs to its last confirmation and its count must be exact), then
//! `tell_confirmed` with 100 receipts outstanding against asks of the same
//! size with 100 outstanding (op `confirmed`), and 2,000 of each one at a
//! time, interleaved, with p50/p99 (op `confirmed latency`, measured once).

use super::program::{self, rounds};
use super::samples;
use crate::run::Workload;
use troupe_bench_contract::spec::{ParamSpec, Spec};

/// `entity_producer` (Troupe; needs nats-server).
pub const WORKLOAD: Workload = Workload {
    spec: &Spec {
        name: "entity_producer",
        about: "cluster: the at-least-once producer (window 100) beside plain entity tells, \
                and tell_confirmed beside asks of the same size; needs nats-server",
        params: &[ParamSpec::count(
            "produced",
            "entity_producer: messages per shape and round (producer and baselines)",
            "200000",
            "20000",
        )],
    },
    peers: false,
    run: |cfg, a| {
        let rounds = rounds(cfg);
        let args = [
            "producer".to_string(),
            a.u64("produced").to_string(),
            rounds.to_string(),
            "--json".to_string(),
        ];
        let out = program::SHARDING.run(&args)?;
        samples::figures("entity_producer", &out, cfg.warmup as u64, cfg.samples)
    },
    plot: None,
};
