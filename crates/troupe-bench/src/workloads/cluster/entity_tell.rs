//! `entity_tell`: `troupe-sharding-bench bench TELLS ROUNDS --json`. Three
//! nodes and a JetStream nats-server in one child process; from node 1,
//! `--tells` tells per round to one entity owned by node 3 against one plain
//! actor exposed on node 3 (told through a `RemoteRef`), and round-robin to
//! up to 64 entities against as many plain actors (op `tell 1`, `tell 64`:
//! each side beside its baseline); then 2,000 sequential asks each way (op
//! `ask`, measured once). Each tell sample carries its CPU per tell (the
//! process and the nats-server) and its account, which must add up:
//! delivered + refused == sent.

use super::program::{self, rounds};
use super::samples;
use crate::run::Workload;
use troupe_bench_contract::spec::{ParamSpec, Spec};

/// `entity_tell` (Troupe and troupe-remote; needs nats-server).
pub const WORKLOAD: Workload = Workload {
    spec: &Spec {
        name: "entity_tell",
        about: "cluster: tells to sharded entities across 3 nodes beside plain remote tells \
                to the same node (1 and 64 actors), and asks; needs nats-server",
        // 1,000,000 tells a round (0.12 to 0.2 s at 5 to 8 M/s): a
        // throughput. Rounds of 200,000 (30 ms) measure the ramp of a burst
        // as much as the rate (bench/results/2026-11-26-sharding).
        params: &[ParamSpec::count(
            "tells",
            "entity_tell: tells per shape and round",
            "1000000",
            "50000",
        )],
    },
    peers: false,
    run: |cfg, a| {
        let rounds = rounds(cfg);
        let args = [
            "bench".to_string(),
            a.u64("tells").to_string(),
            rounds.to_string(),
            "--json".to_string(),
        ];
        let out = program::SHARDING.run(&args)?;
        samples::figures("entity_tell", &out, cfg.warmup as u64, cfg.samples)
    },
    plot: None,
};
