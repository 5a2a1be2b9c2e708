//! # Troupe cluster: liveness, remote monitors and a registry over NATS
//!
//! Built on [`troupe_remote`] and what its transport provides: heartbeats
//! on plain subjects, request/reply for control, and a key-value bucket
//! (JetStream KV over NATS, with a watch) for the registry; load-balanced
//! groups are tells on the node's links. No consensus of our own: the bucket is the registry's truth,
//! each node's cache a mirror.
//!
//! - [`Cluster::monitor`] / [`Cluster::link`]: watch a remote actor like a
//!   local one ([`monitor`] module: stand-ins, stop events);
//! - [`Cluster::register`], [`Cluster::find`], [`Cluster::join_group`],
//!   [`Cluster::dispatch_group`], [`Cluster::join_balanced`],
//!   [`Cluster::dispatch_balanced`] ([`registry`] module);
//! - liveness: heartbeats, the peer table, down detection ([`liveness`]);
//! - every subject and key: [`wire`]; the NATS permissions a node needs,
//!   and the error where the server forbids one: [`permissions`].
//!
//! Hostile input, in short: every payload decodes with no byte left over;
//! a bad one is counted per subject in [`ClusterStats`], logged at most once
//! per 5 s, and a bad control request is answered `BadRequest` at once; the
//! peer table is bounded ([`ClusterBuilder::max_peers`], announced intervals
//! clamped to 60 s). With [`ClusterBuilder::secret`] every message and
//! registry value is sealed with HMAC-SHA256 under the cluster's key and
//! only sealed ones are obeyed, so a client that is not a node cannot kill
//! an actor or declare a node down ([`troupe_remote::auth`]).
//!
//! Fault behaviour, in short: a node killed outright is declared down by
//! every survivor within 1.75 heartbeat intervals (plus a check tick of
//! interval/20 and two round trips) of its last heartbeat, while a live
//! peer whose heartbeats a flood holds back is not ([`liveness`]); its actors' watchers get `Down`
//! with [`node_down_reason`], its registry entries leave every cache at
//! that moment and the bucket right after. A server restart fires no Down:
//! nodes reconnect by themselves, peers get a grace period, and the cache
//! re-syncs from the bucket.

//! # Layers
//!
//! A file imports only from its own floor or below (`.ci/layers.py`
//! checks it): 0 `wire`: [`wire`] (subjects, keys, payloads),
//! `bad_input.rs`, `error.rs`; 1 `state`: [`liveness`], [`registry`],
//! [`monitor`], [`permissions`], `core.rs` (the shared state and
//! counters), `tasks.rs` (heartbeats, control, the connection check),
//! `mirror.rs` (the registry's watch and refresh), `name_lock.rs` (one
//! live process per node name), [`split_brain`] (which side of a
//! partition serves); 2 `api`: `builder.rs`
//! ([`ClusterBuilder`]), `cluster.rs` ([`Cluster`]), `directory.rs`
//! (registry and broadcast groups), `balanced.rs` (load-balanced groups),
//! `remote_watch.rs` (remote monitors and links), [`metrics`] (the
//! counters to Prometheus and OpenTelemetry).
//!
//! The cluster stands on `troupe-remote`'s transport seam: it speaks to
//! peers through the [`Node`](troupe_remote::Node) and, for its own
//! subjects and the registry bucket, through the node's
//! [`Transport`](troupe_remote::transport::Transport) (publish,
//! subscribe, request, [`key_value`](troupe_remote::transport::Transport::key_value));
//! it names no async-nats type. Its tasks run on the process's one I/O
//! runtime, [`troupe_remote::runtime`], beside the node's.

#![warn(missing_docs)]

mod bad_input;
mod balanced;
mod builder;
mod cluster;
mod core;
mod directory;
mod error;
pub mod liveness;
pub mod metrics;
mod mirror;
pub mod monitor;
mod name_lock;
pub mod permissions;
pub mod registry;
mod remote_watch;
pub mod split_brain;
mod tasks;
pub mod wire;

pub use builder::ClusterBuilder;
pub use cluster::Cluster;
pub use core::ClusterStats;
pub use error::ClusterError;
pub use monitor::{is_node_down, node_down_reason, RemoteMonitor};
pub use split_brain::SplitBrain;
