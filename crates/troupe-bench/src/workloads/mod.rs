//! The workloads of `shared/BENCHMARKS.md`, on Troupe, one file each, plus the
//! plain-Rust baselines they are compared with in the same run.
//!
//! Each workload file ends with its [`Workload`] declaration: its parameters
//! (a `Spec`: flags, defaults, quick values; for the workloads the peers run
//! too, the contract's spec from `troupe-bench-contract`), whether the peers
//! run it, how to run it from resolved `Args`, and what `--plot` draws.
//! [`ALL`] lists them in report order; the command line, the help text and the
//! flags passed to the peers are all derived from these declarations.

pub mod actor_creation;
pub mod async_actors;
pub mod baseline;
pub mod channels;
pub mod chaos;
pub mod cluster;
pub mod mailbox_performance;
pub mod max_throughput;
pub mod message;
pub mod metrics_overhead;
pub mod mixed_case;
pub mod pingpong;
pub mod reader_db;
pub mod registry;
pub mod ring;
pub mod savina;
pub mod schedulers;
pub mod spawn_and_await;
pub mod stall_overhead;
pub mod stress;

/// The runtime's chaos soak and stress count, shared with its `chaos` and
/// `stress` examples and `tests/chaos.rs` (the same file, not a copy; its
/// lints are the runtime crate's business, which lints it as an example).
#[allow(clippy::manual_is_multiple_of)]
#[path = "../../../troupe/examples/soak/mod.rs"]
mod soak;

// The workloads' shared vocabulary lives a floor below (`crate::run`); the
// workload files reach it through `super::` as they always did.
pub use crate::run::{params, rate_bars, verify, windowed, PlotCtx, Plotted, RunCfg, Workload};

/// Every workload, in report order (BENCHMARKS.md's table).
pub const ALL: &[&Workload] = &[
    &ring::WORKLOAD,
    &pingpong::WORKLOAD,
    &mailbox_performance::WORKLOAD,
    &actor_creation::WORKLOAD,
    &mixed_case::WORKLOAD,
    &spawn_and_await::WORKLOAD,
    &message::WORKLOAD,
    &registry::WORKLOAD,
    &reader_db::WORKLOAD,
    &max_throughput::WORKLOAD,
    &schedulers::WORKLOAD,
    &channels::WORKLOAD,
    &metrics_overhead::WORKLOAD,
    &stall_overhead::WORKLOAD,
    &chaos::WORKLOAD,
    &stress::WORKLOAD,
    &async_actors::PINGPONG,
    &async_actors::ASK_CHAIN,
    &async_actors::IO,
    // Savina (Imam & Sarkar, AGERE 2014): micro, concurrency, parallel.
    &savina::pingpong::WORKLOAD,
    &savina::count::WORKLOAD,
    &savina::fjthrput::WORKLOAD,
    &savina::fjcreate::WORKLOAD,
    &savina::threadring::WORKLOAD,
    &savina::chameneos::WORKLOAD,
    &savina::big::WORKLOAD,
    &savina::concdict::WORKLOAD,
    &savina::bndbuffer::WORKLOAD,
    &savina::philosopher::WORKLOAD,
    &savina::barber::WORKLOAD,
    &savina::banking::WORKLOAD,
    &savina::trapezoid::WORKLOAD,
    &savina::recmatmul::WORKLOAD,
    &savina::quicksort::WORKLOAD,
    &savina::sieve::WORKLOAD,
    &savina::nqueenk::WORKLOAD,
    // The distributed benchmarks (need nats-server; not in the quick suite).
    &cluster::entity_tell::WORKLOAD,
    &cluster::entity_producer::WORKLOAD,
    &cluster::persist_events::WORKLOAD,
    &cluster::persist_recovery::WORKLOAD,
    &cluster::rebalance::WORKLOAD,
];

/// The workloads a name argument selects: a workload, a Savina group
/// (`savina`, `savina-micro`, `savina-concurrency`, `savina-parallel`), or
/// the `cluster` group.
pub fn select(name: &str) -> Option<Vec<&'static Workload>> {
    find(name)
        .map(|w| vec![w])
        .or_else(|| savina::group(name))
        .or_else(|| cluster::group(name))
}

/// The quick suite (no workload named): every workload but the cluster
/// group's.
pub fn quick_suite() -> Vec<&'static Workload> {
    ALL.iter()
        .copied()
        .filter(|w| !cluster::is_member(w))
        .collect()
}

/// The workload called `name`.
pub fn find(name: &str) -> Option<&'static Workload> {
    ALL.iter().copied().find(|w| w.spec.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_bench_contract::spec;

    #[test]
    fn declarations_are_consistent() {
        for (i, w) in ALL.iter().enumerate() {
            assert!(
                ALL[..i].iter().all(|o| o.spec.name != w.spec.name),
                "{} declared twice",
                w.spec.name
            );
            // The peers run exactly the workloads whose spec is the contract's.
            let contract = spec::contract(w.spec.name)
                .or_else(|| troupe_bench_contract::savina::spec(w.spec.name));
            assert_eq!(
                w.peers,
                contract.is_some_and(|c| c == w.spec),
                "{}: peers flag and contract disagree",
                w.spec.name
            );
            // Defaults and quick values are valid values.
            w.spec.resolve(false, |_| None).unwrap();
            w.spec.resolve(true, |_| None).unwrap();
            assert!(find(w.spec.name).is_some());
        }
        assert_eq!(
            ALL.iter().filter(|w| w.peers).count(),
            spec::CONTRACT.len() + troupe_bench_contract::savina::PEER_RUN.len()
        );
        // Every Savina workload is in ALL and in its group.
        let savina = select("savina").unwrap();
        assert_eq!(savina.len(), 17);
        assert!(savina
            .iter()
            .all(|s| ALL.iter().any(|w| w.spec.name == s.spec.name)));
        assert_eq!(select("ring").map(|v| v.len()), Some(1));
        // The cluster group: in ALL, not in the quick suite.
        let cluster = select("cluster").unwrap();
        assert_eq!(cluster.len(), 5);
        assert!(cluster
            .iter()
            .all(|c| ALL.iter().any(|w| w.spec.name == c.spec.name)));
        let quick = quick_suite();
        assert_eq!(quick.len(), ALL.len() - 5);
        assert!(!quick.iter().any(|w| cluster::is_member(w)));
        assert!(select("savina-nothing").is_none());
    }
}
