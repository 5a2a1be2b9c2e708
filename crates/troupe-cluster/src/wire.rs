//! Everything a cluster puts on the wire, in one place: subjects, the KV
//! bucket and its keys, and the payloads (postcard).
//!
//! ```text
//! troupe.<cluster>.hb.<node>     heartbeat, every `heartbeat` (default 1 s)      Heartbeat
//! troupe.<cluster>.bye.<node>    a node leaving on purpose (dropped Cluster)     Heartbeat
//! troupe.<cluster>.down.<node>   an exposed actor of <node> stopped              StopEvent
//! troupe.<cluster>.ctl.<node>    request/reply: watch or kill an exposed actor   Ctl -> CtlReply
//! troupe.<cluster>.downed.<node> to <node>: "your incarnation was declared
//!                                down here" (answers its heartbeats)    Heartbeat
//! troupe.<cluster>.markdown.<node> to every node: an operator marked
//!                                <node> (this incarnation) down         Heartbeat
//! KV bucket troupe-<cluster>-registry (JetStream, history 1, max_age = registry_ttl)
//!   n.<name>                      a registered name           -> RegEntry
//!   g.<group>.<node>.<actor>      one member of a group       -> RegEntry
//!   g.=<group>.<node>.<actor>     one member of a load-balanced group (its
//!                                 tells go on the node's links) -> RegEntry
//! ```
//!
//! Invariants:
//! - every subject starts with `troupe.<cluster>.`, like troupe-remote's,
//!   and the bucket is the cluster's own, so two clusters on one server
//!   never see each other's heartbeats, stop events or registry; the
//!   bucket's JetStream subjects lie outside that prefix, so a cluster
//!   node's permissions list them too ([`crate::permissions`]);
//! - names, groups, actors and nodes are tokens (`[A-Za-z0-9_-]+`), so a
//!   key splits back into its parts on `.` without ambiguity (a
//!   load-balanced group's `=` prefix is no token character);
//! - a node's `incarnation` is fresh per process start, so an entry or a
//!   heartbeat of a dead incarnation is never taken for the new one's;
//! - every payload decodes with no byte left over ([`decode`]); one that
//!   does not is bad input (see `bad_input.rs`), never a guess.

use serde::{Deserialize, Serialize};
use troupe::StopReason;

/// Decodes a payload to `T`, refusing trailing bytes (postcard's
/// `from_bytes` ignores them, so a garbled message could pass for a shorter
/// well-formed one).
///
/// ```
/// use troupe_cluster::wire::{decode, CtlReply};
/// let ok = postcard::to_allocvec(&CtlReply::Alive).unwrap();
/// assert_eq!(decode::<CtlReply>(&ok), Some(CtlReply::Alive));
/// let mut long = ok.clone();
/// long.push(0);
/// assert_eq!(decode::<CtlReply>(&long), None);
/// ```
pub fn decode<T: serde::de::DeserializeOwned>(b: &[u8]) -> Option<T> {
    troupe_remote::envelope::decode_body::<T>(b).ok()
}

/// The last token of a subject (the node a per-node subject is about).
pub fn last_token(subject: &str) -> &str {
    subject.rsplit('.').next().unwrap_or("")
}

/// Subject of a node's heartbeats.
pub fn heartbeat_subject(cluster: &str, node: &str) -> String {
    format!("troupe.{cluster}.hb.{node}")
}
/// Subject of a node's goodbye.
pub fn bye_subject(cluster: &str, node: &str) -> String {
    format!("troupe.{cluster}.bye.{node}")
}
/// Subject of a node's stop events.
pub fn down_subject(cluster: &str, node: &str) -> String {
    format!("troupe.{cluster}.down.{node}")
}
/// Subject of the notices to `node` that an incarnation of it was
/// declared down ([`crate::liveness`], "Down stays down").
pub fn downed_subject(cluster: &str, node: &str) -> String {
    format!("troupe.{cluster}.downed.{node}")
}
/// Subject of an operator's "mark `node` down" to every node
/// ([`Cluster::mark_down`](crate::Cluster::mark_down)).
pub fn mark_down_subject(cluster: &str, node: &str) -> String {
    format!("troupe.{cluster}.markdown.{node}")
}
/// Subject of a node's control requests.
pub fn ctl_subject(cluster: &str, node: &str) -> String {
    format!("troupe.{cluster}.ctl.{node}")
}
/// The registry's KV bucket.
pub fn bucket(cluster: &str) -> String {
    format!("troupe-{cluster}-registry")
}
/// What a registry value's seal covers in place of a subject (see
/// [`troupe_remote::auth`]): the key, so a value cannot be moved to
/// another key.
pub fn kv_seal_subject(key: &str) -> String {
    format!("kv:{key}")
}
/// The key of a registered name.
pub fn name_key(name: &str) -> String {
    format!("n.{name}")
}
/// The key that holds node `node`'s name (`name_lock.rs`).
pub fn lock_key(node: &str) -> String {
    format!("lock.{node}")
}
/// Whether `key` is a name's key, not a registry entry.
pub fn is_lock_key(key: &str) -> bool {
    key.starts_with("lock.")
}
/// The key of one group membership.
pub fn member_key(group: &str, node: &str, actor: &str) -> String {
    format!("g.{group}.{node}.{actor}")
}

/// The registry's group name of the load-balanced group `group`: `=`
/// and the group, never a broadcast group's name (a token).
pub fn balanced_group(group: &str) -> String {
    format!("={group}")
}

/// Whether `s` is a token: non-empty letters, digits, `_`, `-` (the
/// rule of troupe-remote's node names, shared).
pub use troupe_remote::is_token;

/// A heartbeat (and a goodbye).
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Heartbeat {
    /// The sender.
    pub node: String,
    /// Fresh per process start.
    pub incarnation: u64,
    /// The sender's heartbeat interval, in ms.
    pub interval_ms: u32,
}

/// A stop reason on the wire: troupe's `StopReason` is non-exhaustive, so
/// variants this crate does not know travel as `Other(display)`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub enum WireReason {
    /// `StopReason::Normal`.
    Normal,
    /// `StopReason::Panicked`.
    Panicked(String),
    /// `StopReason::Killed`.
    Killed,
    /// `StopReason::Shutdown`.
    Shutdown,
    /// `StopReason::Failed`.
    Failed(String),
    /// Anything else, by its display.
    Other(String),
}

impl From<&StopReason> for WireReason {
    fn from(r: &StopReason) -> Self {
        match r {
            StopReason::Normal => WireReason::Normal,
            StopReason::Panicked(m) => WireReason::Panicked(m.clone()),
            StopReason::Killed => WireReason::Killed,
            StopReason::Shutdown => WireReason::Shutdown,
            StopReason::Failed(m) => WireReason::Failed(m.clone()),
            other => WireReason::Other(other.to_string()),
        }
    }
}

impl From<WireReason> for StopReason {
    fn from(r: WireReason) -> Self {
        match r {
            WireReason::Normal => StopReason::Normal,
            WireReason::Panicked(m) => StopReason::Panicked(m),
            WireReason::Killed => StopReason::Killed,
            WireReason::Shutdown => StopReason::Shutdown,
            WireReason::Failed(m) | WireReason::Other(m) => StopReason::Failed(m),
        }
    }
}

/// An exposed actor stopped.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct StopEvent {
    /// The actor's exposed name.
    pub actor: String,
    /// Why.
    pub reason: WireReason,
}

/// A control request to a node.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub enum Ctl {
    /// Is this exposed actor alive? (Sent when a monitor starts, so a stop
    /// that happened before the monitor is still reported.)
    Watch {
        /// The exposed name.
        actor: String,
    },
    /// Kill this exposed actor (a link's far side stopped abnormally).
    Kill {
        /// The exposed name.
        actor: String,
        /// Why, for the logs.
        reason: WireReason,
    },
}

/// The answer to a [`Ctl`].
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub enum CtlReply {
    /// The actor runs (and for `Kill`: was told to stop).
    Alive,
    /// The actor has stopped, for this reason.
    Stopped(WireReason),
    /// The node exposes no such actor through the cluster.
    Unknown,
    /// The request did not decode (or failed authentication): nothing was
    /// done. Sent at once, so the sender does not wait out its timeout.
    BadRequest,
}

/// What a registry key holds.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct RegEntry {
    /// The node serving the actor.
    pub node: String,
    /// The actor's exposed name on that node.
    pub actor: String,
    /// The remote type id the name is registered for.
    pub type_id: u64,
    /// The serving node's incarnation.
    pub incarnation: u64,
}
