//! The distributed benchmarks (`troupe-bench cluster`): each of Troupe's
//! distributed features beside its physical baseline in the same run.
//!
//! - `entity_tell`: tells to sharded entities across 3 nodes, against plain
//!   `troupe-remote` tells to actors on the same fixed node (1 and 64
//!   actors), and asks both ways;
//! - `entity_producer`: the at-least-once producer (window 100) against
//!   plain entity tells, and `tell_confirmed` against asks of the same
//!   size (rates, and p50/p99 one at a time);
//! - `persist_events`: persisted events per second against raw async-nats
//!   JetStream publishing with the same acknowledgement settings;
//! - `persist_recovery`: recovery of one entity's events, a full replay
//!   against a recovery from a snapshot;
//! - `rebalance`: a fourth node joins a 3-node cluster holding `--entities`
//!   entities: the time until all answer again, against the same ask sweep
//!   with nothing moving, and the time until placement settles.
//!
//! The measurements are the programs `troupe-sharding-bench` and
//! `troupe-persistence-bench` (one source for each benchmark): the workloads
//! run them as child processes ([`program`]) and turn their sample lines into
//! figures ([`samples`]). `--samples` and `--warmup` become the programs'
//! rounds (the warm-up rounds are dropped), except `rebalance`, whose every
//! run is a fresh cluster (no warm-up; `--samples` runs). The programs start
//! their own nats-server, so the group needs one installed: the quick suite
//! leaves the group out, and `all` includes it only when a nats-server is
//! found. The suite's probe cannot judge a child process (the child's CPU
//! would count as another process's), so the programs report each sample's
//! interference themselves (`window_s`, `other_cpu_s`). The
//! programs size their own threads (`--threads` does not apply): the nodes'
//! default systems, and one worker for the persistent actors as for the raw
//! publishers.

pub mod entity_producer;
pub mod entity_tell;
pub mod persist_events;
pub mod persist_recovery;
pub mod program;
pub mod rebalance;
pub mod samples;

use crate::run::Workload;

/// The group, in report order.
pub const GROUP: &[&Workload] = &[
    &entity_tell::WORKLOAD,
    &entity_producer::WORKLOAD,
    &persist_events::WORKLOAD,
    &persist_recovery::WORKLOAD,
    &rebalance::WORKLOAD,
];

/// The group's name on the command line.
pub const NAME: &str = "cluster";

/// The workloads `name` selects, if it is the group's name.
pub fn group(name: &str) -> Option<Vec<&'static Workload>> {
    (name == NAME).then(|| GROUP.to_vec())
}

/// Whether `w` is one of the group's workloads.
pub fn is_member(w: &Workload) -> bool {
    GROUP.iter().any(|g| g.spec.name == w.spec.name)
}
