//! `persist_events`: `troupe-persistence-bench --only events --json-rounds -`.
//! `--events` events per round through persistent actors (`1 entities`, ...,
//! one per `--entity-counts` value) against raw async-nats JetStream
//! publishing with the same acknowledgement settings (`nats-raw`: in place,
//! across threads, on the store's I/O runtime), and the same actors on an I/O
//! dispatcher; all sides of one entity count share op `persist N`. The
//! persisted figures carry `ratio` (raw time / persisted time) and
//! `ratio_across_threads`, medians over the rounds.

use super::program::{self, rounds};
use super::samples;
use crate::run::Workload;
use troupe_bench_contract::spec::{ParamSpec, Spec};

/// `persist_events` (Troupe and raw JetStream; needs nats-server).
pub const WORKLOAD: Workload = Workload {
    spec: &Spec {
        name: "persist_events",
        about: "cluster: persisted events/s beside raw JetStream publishing with the same \
                acknowledgements; needs nats-server",
        params: &[
            ParamSpec::count(
                "events",
                "persist_events, persist_recovery: events per round",
                "10000",
                "2000",
            ),
            ParamSpec::list(
                "entity-counts",
                "persist_events: persistent actors sharing the events, one figure each",
                "1,16",
                "1,16",
            ),
        ],
    },
    peers: false,
    run: |cfg, a| {
        let counts: Vec<String> = a
            .list("entity-counts")
            .iter()
            .map(usize::to_string)
            .collect();
        let args = [
            "--events".to_string(),
            a.u64("events").to_string(),
            "--rounds".to_string(),
            rounds(cfg).to_string(),
            "--entities".to_string(),
            counts.join(","),
            "--only".to_string(),
            "events".to_string(),
            "--json-rounds".to_string(),
            "-".to_string(),
        ];
        let out = program::PERSISTENCE.run(&args)?;
        samples::figures("persist_events", &out, cfg.warmup as u64, cfg.samples)
    },
    plot: None,
};
