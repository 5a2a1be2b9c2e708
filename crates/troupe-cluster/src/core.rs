//! The cluster's shared state: what one process's membership holds
//! ([`Inner`]), its counters, and the helpers every task uses (seal, open,
//! count bad input, block on the I/O runtime).
//!
//! Who writes what:
//! - `peers` and `intake`: the heartbeat, goodbye and check tasks
//!   (`tasks.rs`); `cache`: the registry mirror (`mirror.rs`) and
//!   `declared_down`; `own`: the registry API (`directory.rs`) and the
//!   stop hook of an exposed actor; `exposed`: `Cluster::expose` and that
//!   hook; the counters: whoever meets what they count.
//! - Every task runs on the process's I/O runtime
//!   ([`troupe_remote::runtime`]), reached through `handle`; `block` must
//!   not be called on that runtime's own thread (it would wait on itself).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::Notify;
use troupe::ActorSystem;
use troupe_remote::auth::{ClusterKey, SEAL_LEN};
use troupe_remote::transport::kv::Bucket;
use troupe_remote::transport::Transport;

use crate::bad_input::{Inlet, RateLog};
use crate::liveness::{Downed, Intake, Peers, RecentDowns};
use crate::monitor::StandIns;
use crate::registry::Cache;
use crate::split_brain::Quorum;
use crate::wire::{CtlReply, Heartbeat, WireReason};

/// Counters of what this node saw.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) nodes_down: AtomicU64,
    pub(crate) resyncs: AtomicU64,
    pub(crate) registry_deletes: AtomicU64,
    pub(crate) bad_heartbeats: AtomicU64,
    pub(crate) bad_byes: AtomicU64,
    pub(crate) bad_stop_events: AtomicU64,
    pub(crate) bad_control: AtomicU64,
    pub(crate) bad_control_replies: AtomicU64,
    pub(crate) bad_registry_values: AtomicU64,
    pub(crate) bad_group_messages: AtomicU64,
    pub(crate) peers_refused: AtomicU64,
    pub(crate) unauthenticated: AtomicU64,
    pub(crate) verdicts_spared: AtomicU64,
    pub(crate) downed_heartbeats: AtomicU64,
    pub(crate) rejoins: AtomicU64,
    pub(crate) bad_downed_notices: AtomicU64,
    pub(crate) quorum_left: AtomicU64,
    pub(crate) marked_down: AtomicU64,
    pub(crate) bad_mark_downs: AtomicU64,
}

impl Counters {
    pub(crate) fn of(&self, inlet: Inlet) -> &AtomicU64 {
        match inlet {
            Inlet::Heartbeat => &self.bad_heartbeats,
            Inlet::Bye => &self.bad_byes,
            Inlet::StopEvent => &self.bad_stop_events,
            Inlet::Control => &self.bad_control,
            Inlet::ControlReply => &self.bad_control_replies,
            Inlet::RegistryValue => &self.bad_registry_values,
            Inlet::DownedNotice => &self.bad_downed_notices,
            Inlet::MarkDown => &self.bad_mark_downs,
        }
    }
}

/// A snapshot of a cluster's counters. The `bad_*` counters count messages
/// this node could not use (see `bad_input.rs`): each is dropped, logged at
/// a limited rate, and answered where a reply is expected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClusterStats {
    /// Peers this node declared down.
    pub nodes_down: u64,
    /// Registry re-syncs (one at start, one per reconnect or lost watch).
    pub resyncs: u64,
    /// Registry entries of dead nodes this node deleted from the bucket.
    pub registry_deletes: u64,
    /// Heartbeats that did not decode, or named another node than their
    /// subject, or this node's own name with another incarnation.
    pub bad_heartbeats: u64,
    /// Goodbyes that did not decode, named another node than their
    /// subject, or another incarnation than the one this node holds.
    pub bad_byes: u64,
    /// Stop events that did not decode.
    pub bad_stop_events: u64,
    /// Control requests that did not decode (answered `BadRequest`).
    pub bad_control: u64,
    /// Answers to this node's control requests that did not decode.
    pub bad_control_replies: u64,
    /// Registry values that did not decode or do not match their key.
    pub bad_registry_values: u64,
    /// Always 0 now: load-balanced tells travel on the node's links, and
    /// bad ones are counted in [`NodeStats`](troupe_remote::NodeStats).
    pub bad_group_messages: u64,
    /// Heartbeats of new nodes refused because the peer table was full.
    pub peers_refused: u64,
    /// Messages and registry values refused for want of a good seal (this
    /// node has a cluster key; see [`ClusterBuilder::secret`](crate::ClusterBuilder::secret)).
    pub unauthenticated: u64,
    /// Peers silent by this node's clock that were not declared down:
    /// heard once this node's own heartbeat intake caught up, or answering
    /// a ping (see the [`liveness`](crate::liveness) module).
    pub verdicts_spared: u64,
    /// Heartbeats and goodbyes of an incarnation this node declared down,
    /// ignored: down stays down (see the [`liveness`](crate::liveness)
    /// module); each answered with a notice at a limited rate.
    pub downed_heartbeats: u64,
    /// Times this node learned that it was declared down and rejoined as
    /// a new incarnation ([`Cluster::on_self_down`](crate::Cluster::on_self_down)).
    pub rejoins: u64,
    /// "You are down" notices that did not decode, named another node
    /// than their subject, or an incarnation this node never had.
    pub bad_downed_notices: u64,
    /// Times this node found itself on the losing side of a partition and
    /// left the quorum ([`SplitBrain`](crate::SplitBrain)).
    pub quorum_left: u64,
    /// Peers this node declared down because an operator marked them
    /// down ([`Cluster::mark_down`](crate::Cluster::mark_down), here or on
    /// another node); also counted in `nodes_down`.
    pub marked_down: u64,
    /// Mark-downs that did not decode, named another node than their
    /// subject, or a node or incarnation this node does not hold.
    pub bad_mark_downs: u64,
}

pub(crate) struct ExposedActor {
    pub(crate) kill: Box<dyn Fn() + Send + Sync>,
    pub(crate) stopped: Option<WireReason>,
}

pub(crate) type DownHook = Box<dyn Fn(&str) + Send + Sync>;
/// Told `(old, new)` incarnation when this node rejoins.
pub(crate) type SelfDownHook = Box<dyn Fn(u64, u64) + Send + Sync>;

/// The most earlier incarnations of its own a node remembers (their
/// heartbeats may still be on their way).
const PAST_CAP: usize = 16;

/// A fresh incarnation number: the clock's nanoseconds and the process id.
pub(crate) fn fresh_incarnation() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        ^ u64::from(std::process::id()) << 48
}

/// One process's membership in the cluster, shared by its tasks.
pub(crate) struct Inner {
    pub(crate) ns: String,
    pub(crate) name: String,
    /// This process's current incarnation: fresh at start, and again
    /// whenever it learns it was declared down (`rejoin`).
    pub(crate) incarnation: AtomicU64,
    /// Its earlier incarnations, newest last (at most `PAST_CAP`).
    pub(crate) past: Mutex<VecDeque<u64>>,
    /// The incarnations of peers this node declared down.
    pub(crate) downed: Mutex<Downed>,
    /// The peers declared down lately, for an operator's view (bounded).
    pub(crate) recent_downs: Mutex<RecentDowns>,
    /// The split-brain state (`split_brain.rs`), and whether this node is
    /// in the quorum (read by the sharding coordinators on every tick).
    pub(crate) quorum: Mutex<Quorum>,
    pub(crate) in_quorum: AtomicBool,
    pub(crate) self_down_hooks: Mutex<Vec<SelfDownHook>>,
    pub(crate) interval: Duration,
    pub(crate) down_after: f64,
    pub(crate) reconnect_grace: Duration,
    pub(crate) ttl: Duration,
    /// The node's transport: subjects, requests, connection state.
    pub(crate) transport: Arc<dyn Transport>,
    /// The registry bucket.
    pub(crate) kv: Bucket,
    /// The process's I/O runtime.
    pub(crate) handle: tokio::runtime::Handle,
    pub(crate) system: ActorSystem,
    pub(crate) peers: Mutex<Peers>,
    pub(crate) standins: StandIns,
    pub(crate) exposed: Mutex<HashMap<String, ExposedActor>>,
    /// This node's registry entries: key -> value, re-put by `refresh`.
    pub(crate) own: Mutex<HashMap<String, Bytes>>,
    pub(crate) cache: Cache,
    pub(crate) resync: Notify,
    pub(crate) down_hooks: Mutex<Vec<DownHook>>,
    pub(crate) counters: Counters,
    pub(crate) bad_log: RateLog,
    /// The "peer down" lines: one per [`LOG_EVERY`](crate::bad_input::LOG_EVERY),
    /// so that heartbeats under made-up incarnations (each a "restart")
    /// cannot flood the log.
    pub(crate) down_log: RateLog,
    /// The revision of this node's name key (`name_lock.rs`).
    pub(crate) name_rev: AtomicU64,
    pub(crate) key: Option<ClusterKey>,
    /// This node's own heartbeats out and back (see `liveness.rs`).
    pub(crate) intake: Intake,
    /// The next load-balanced member's number (its exposed name).
    pub(crate) balanced_seq: AtomicU64,
    /// The next turn of `dispatch_balanced`.
    pub(crate) balanced_turn: AtomicUsize,
}

/// `v` in postcard.
pub(crate) fn encode<T: serde::Serialize>(v: &T) -> Bytes {
    Bytes::from(postcard::to_allocvec(v).unwrap_or_default())
}

impl Inner {
    /// This process's current incarnation.
    pub(crate) fn incarnation(&self) -> u64 {
        self.incarnation.load(Ordering::Acquire)
    }

    /// Whether `inc` is one of this process's earlier incarnations.
    pub(crate) fn was_me(&self, inc: u64) -> bool {
        self.past.lock().contains(&inc)
    }

    /// This node learned that its incarnation `old` was declared down:
    /// it becomes a new incarnation (see "Down stays down" in
    /// `liveness.rs`): heartbeats, registry entries and the name's key
    /// carry the new number from now on, and the self-down hooks are
    /// told. Nothing if `old` is no longer current.
    pub(crate) fn rejoin(&self, old: u64) {
        let new = fresh_incarnation().max(1);
        if self
            .incarnation
            .compare_exchange(old, new, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        {
            let mut past = self.past.lock();
            if past.len() >= PAST_CAP {
                past.pop_front();
            }
            past.push_back(old);
        }
        self.counters.rejoins.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(node = %self.name, old, new, "this node was declared down by a peer: it rejoins as a new incarnation (its shards are claimed anew)");
        // Its registry entries, under the new incarnation; re-put at once.
        {
            let mut own = self.own.lock();
            for (k, v) in own.iter_mut() {
                if let Some(mut e) = crate::wire::decode::<crate::wire::RegEntry>(self.own_value(v))
                {
                    e.incarnation = new;
                    *v = self.seal(&crate::wire::kv_seal_subject(k), encode(&e));
                }
            }
        }
        self.resync.notify_one();
        for hook in self.self_down_hooks.lock().iter() {
            hook(old, new);
        }
    }

    /// This node's heartbeat (and goodbye).
    pub(crate) fn heartbeat(&self) -> Heartbeat {
        Heartbeat {
            node: self.name.clone(),
            incarnation: self.incarnation(),
            interval_ms: self.interval.as_millis().min(u32::MAX as u128) as u32,
        }
    }

    /// Counts a message this node cannot use and logs it at a limited
    /// rate (see `bad_input.rs`).
    pub(crate) fn bad(&self, inlet: Inlet, subject: &str, why: &dyn std::fmt::Display) {
        let c = self.counters.of(inlet);
        let count = c.fetch_add(1, Ordering::Relaxed).saturating_add(1);
        if let Some(left_out) = self.bad_log.admit(Instant::now()) {
            tracing::warn!(node = %self.name, %inlet, subject, error = %why, count, left_out, "dropped a bad message (lines about bad input are limited to one per 5 s; left_out counts those not written)");
        }
    }

    /// `payload` sealed for `subject` when this node has a cluster key.
    pub(crate) fn seal(&self, subject: &str, payload: Bytes) -> Bytes {
        match &self.key {
            None => payload,
            Some(key) => key.seal(subject, &payload).into(),
        }
    }

    /// The payload of a message on `subject`: with a cluster key, only if
    /// its seal is good (else counted and logged, `None`).
    pub(crate) fn open<'a>(
        &self,
        inlet: Inlet,
        subject: &str,
        payload: &'a [u8],
    ) -> Option<&'a [u8]> {
        let Some(key) = &self.key else {
            return Some(payload);
        };
        let opened = key.open(subject, payload);
        if opened.is_none() {
            let count = self
                .counters
                .unauthenticated
                .fetch_add(1, Ordering::Relaxed)
                .saturating_add(1);
            if let Some(left_out) = self.bad_log.admit(Instant::now()) {
                tracing::warn!(node = %self.name, %inlet, subject, count, left_out, "dropped a message without a good seal (not from a node of this cluster)");
            }
        }
        opened
    }

    /// One of this node's own registry values without its seal.
    pub(crate) fn own_value<'a>(&self, v: &'a [u8]) -> &'a [u8] {
        match &self.key {
            None => v,
            Some(_) => v.get(..v.len().saturating_sub(SEAL_LEN)).unwrap_or(v),
        }
    }

    /// A heartbeat or goodbye that decodes and names its subject's node.
    pub(crate) fn status_of(&self, actor: &str) -> CtlReply {
        match self.exposed.lock().get(actor) {
            None => CtlReply::Unknown,
            Some(a) => match &a.stopped {
                Some(r) => CtlReply::Stopped(r.clone()),
                None => CtlReply::Alive,
            },
        }
    }

    /// Runs `f` on the I/O runtime and waits for it (not on that
    /// runtime's own thread).
    pub(crate) fn block<F: std::future::Future + Send + 'static>(&self, f: F) -> F::Output
    where
        F::Output: Send + 'static,
    {
        troupe_remote::runtime::block_on(&self.handle, f).expect("the I/O runtime stopped")
    }
}
