//! # Troupe cluster: liveness, remote monitors and a registry over NATS
//!
//! Built on [`troupe_remote`] and what NATS provides: heartbeats on plain
//! subjects, request/reply for control, queue groups for load-balanced
//! groups, and a JetStream key-value bucket (with a watch) for the
//! registry. No consensus of our own: the bucket is the registry's truth,
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
//! [`monitor`], [`permissions`]; 2 `api`: `cluster.rs` ([`Cluster`],
//! [`ClusterBuilder`]). The cluster speaks to peers through
//! `troupe-remote`'s [`Node`](troupe_remote::Node) and, for JetStream and
//! its own subjects, the NATS transport's client
//! ([`NatsTransport::client`](troupe_remote::transport::nats::NatsTransport::client)).

#![warn(missing_docs)]

mod bad_input;
mod balanced;
mod builder;
mod cluster;
mod core;
mod directory;
mod error;
pub mod liveness;
mod mirror;
pub mod monitor;
pub mod permissions;
pub mod registry;
mod remote_watch;
mod tasks;
pub mod wire;

pub use builder::ClusterBuilder;
pub use cluster::Cluster;
pub use core::ClusterStats;
pub use error::ClusterError;
pub use monitor::{is_node_down, node_down_reason, RemoteMonitor};
