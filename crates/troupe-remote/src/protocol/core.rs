//! The protocol's state of one node, and how it starts and stops.
//!
//! [`Core`] is what a node's tasks (the inbox loop of `inbox.rs`, the link
//! task of `links.rs`, one flusher per peer in `outbox.rs`) and its
//! references share. Its fields are the protocol's own: the API reaches it
//! through methods only. Invariants:
//! - `start` returns only once the inbox subscription is live at the
//!   transport (flushed), so a peer that publishes right after finds it.
//! - The inbox loop and the link task hold weak references: dropping the
//!   last `Arc<Core>` ends them.
//! - `targets` is written only by `install`/`unexpose` (whole actors at a
//!   time) and read by the inbox loop; `types` is only ever grown, and
//!   `install` grows it and the target table in one step or not at all.
//! - `shutdown` closes every outbox, waits for the flushers, sends a last
//!   ack to every sender, then closes the transport, within its grace.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use crate::protocol::auth::ClusterKey;
use crate::protocol::envelope::{
    append_seal, encode_frame, link_frame_len, Header, Kind, HEADER_LEN, SEAL_FRAME_LEN,
};
use crate::protocol::error::NodeError;
use crate::protocol::ledger::MAX_PROBE_GAP;
use crate::protocol::links::LinkIn;
use crate::protocol::message::{type_id, TypeEntry, TypeRegistry};
use crate::protocol::outbox::Outbox;
use crate::protocol::schema::SchemaMismatch;
use crate::protocol::serve::{IdMap, Target};
use crate::protocol::stats::{Counters, NodeStats};
use crate::transport::{Transport, TransportError};

/// The subject of a node's inbox.
pub fn node_subject(cluster: &str, node: &str) -> String {
    format!("troupe.{cluster}.node.{node}")
}

/// A ping of the node whose inbox is `subject`: one ping frame, sealed
/// under `key` when there is one. A live node answers it with an empty OK
/// reply; a dead one has no responders.
pub fn ping_frame(key: Option<&ClusterKey>, subject: &str) -> bytes::Bytes {
    let mut probe = Vec::with_capacity(HEADER_LEN + SEAL_FRAME_LEN);
    let _ = encode_frame(&mut probe, Header::new(Kind::Ping, 0, 0, 0), &(), 0);
    if let Some(key) = key {
        append_seal(&mut probe, key, subject);
    }
    probe.into()
}

/// Whether a name is a valid node or cluster name (it becomes a subject
/// token): a non-empty run of letters, digits, `_` and `-`.
pub fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// What a node is started with (the builder's settings, checked).
pub(crate) struct Config {
    pub cluster: String,
    pub name: String,
    pub types: TypeRegistry,
    pub batch_bytes: usize,
    pub queue_bytes: usize,
    pub serve_timeout: Duration,
    pub ask_spin: Duration,
    pub ack_period: Duration,
    pub link_idle: Duration,
    pub max_links: usize,
    pub key: Option<ClusterKey>,
}

/// What the node's tasks and its references share.
pub(crate) struct Core {
    pub(super) cluster: String,
    pub(super) name: Arc<str>,
    /// This connection's epoch: a random number written in every link frame,
    /// so a restarted process under the same name starts new links.
    pub(super) epoch: u64,
    /// Receiver state per sender node name (bounded: see `links.rs`).
    pub(super) links: Mutex<HashMap<String, LinkIn>>,
    pub(super) max_links: usize,
    /// Ticks of the link task without a batch after which an acked link
    /// state is dropped.
    pub(super) idle_ticks: u64,
    /// The link task's ticks so far.
    pub(super) tick: AtomicU64,
    pub(super) transport: Arc<dyn Transport>,
    pub(super) handle: Handle,
    pub(super) types: Mutex<TypeRegistry>,
    pub(super) targets: RwLock<IdMap<Target>>,
    pub(super) peers: Mutex<HashMap<String, Arc<Outbox>>>,
    pub(super) flushers: Mutex<Vec<JoinHandle<()>>>,
    pub(super) counters: Arc<Counters>,
    /// The cluster key: every message to a node's inbox is sealed with it,
    /// and only sealed ones are obeyed (see [`auth`](crate::auth)).
    pub(super) key: Option<ClusterKey>,
    /// The transport's connection state, watched: an ask in flight waits
    /// on it beside its reply.
    pub(super) link_state: tokio::sync::watch::Receiver<bool>,
    pub(super) closed: AtomicBool,
    /// The largest body a received frame may have: the max payload less a
    /// header.
    pub(super) max_frame_body: usize,
    /// The largest body of a tell or ask sent from here: room is also left
    /// for the link frame that opens a batch, and the seal.
    pub(super) max_body: usize,
    pub(super) batch_bytes: usize,
    pub(super) queue_bytes: usize,
    pub(super) serve_timeout: Duration,
    pub(super) ask_spin: Duration,
    /// Asks served whose reply is not sent yet (`serve.rs`).
    pub(super) serving: AtomicUsize,
    /// The last schema mismatch seen (see [`schema`](crate::schema)).
    pub(super) last_mismatch: Mutex<Option<SchemaMismatch>>,
    /// Receipts wait to be sent: wakes the link task (see `links.rs`).
    pub(super) receipts_due: Arc<tokio::sync::Notify>,
}

/// A random epoch (never 0): the std hasher's random keys over the clock
/// and the process id.
fn new_epoch() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    h.write_u128(now);
    h.write_u32(std::process::id());
    h.finish() | 1
}

impl Core {
    /// Takes the node's name on `transport` (refused if a live node holds
    /// it), subscribes its inbox and starts its tasks on `handle`.
    pub(crate) async fn start(
        c: Config,
        transport: Arc<dyn Transport>,
        handle: Handle,
    ) -> Result<Arc<Core>, NodeError> {
        let subject = node_subject(&c.cluster, &c.name);
        // Is the name taken? A live node answers a ping; no node means no
        // responders. Best effort: two nodes starting at the same instant
        // under one name can both pass (subscriptions are not exclusive).
        let probe = ping_frame(c.key.as_ref(), &subject);
        let ping = transport.request(&subject, probe, Duration::from_millis(500));
        if ping.await.is_ok() {
            return Err(NodeError::NameTaken(c.name));
        }
        // After the name check, so no live node of this name is probed.
        transport
            .check_access(&c.cluster, &subject)
            .await
            .map_err(|e| match e {
                TransportError::Forbidden(f) => NodeError::Forbidden(f),
                e => NodeError::Connect(e.to_string()),
            })?;
        let max_payload = transport.max_payload().max(HEADER_LEN + 1);
        let sub = transport
            .subscribe(&subject)
            .await
            .map_err(|e| NodeError::Subscribe(e.to_string()))?;
        // Once `start` returns, the server must have the subscription: a
        // peer that publishes right after would otherwise find no one there
        // (its tells lost, and counted lost by its link accounting).
        transport
            .flush()
            .await
            .map_err(|e| NodeError::Subscribe(e.to_string()))?;
        let link_len = link_frame_len(&c.name);
        // Room for the seal frame every message then ends with.
        let seal_len = if c.key.is_some() { SEAL_FRAME_LEN } else { 0 };
        let core = Arc::new(Core {
            cluster: c.cluster,
            epoch: new_epoch(),
            name: c.name.into(),
            links: Mutex::new(HashMap::new()),
            max_links: c.max_links,
            idle_ticks: {
                let period = c.ack_period.as_nanos().max(1);
                let ticks = c.link_idle.as_nanos() / period;
                (ticks.min(u128::from(u64::MAX)) as u64).max(2 * u64::from(MAX_PROBE_GAP))
            },
            tick: AtomicU64::new(0),
            link_state: transport.watch_connection(),
            transport,
            handle: handle.clone(),
            types: Mutex::new(c.types),
            targets: RwLock::new(IdMap::default()),
            peers: Mutex::new(HashMap::new()),
            flushers: Mutex::new(Vec::new()),
            counters: Arc::new(Counters::default()),
            closed: AtomicBool::new(false),
            max_frame_body: max_payload - HEADER_LEN,
            max_body: max_payload.saturating_sub(HEADER_LEN + link_len + seal_len),
            batch_bytes: c.batch_bytes.min(max_payload.saturating_sub(seal_len)),
            key: c.key,
            queue_bytes: c.queue_bytes,
            serve_timeout: c.serve_timeout,
            ask_spin: c.ask_spin,
            serving: AtomicUsize::new(0),
            last_mismatch: Mutex::new(None),
            receipts_due: Arc::new(tokio::sync::Notify::new()),
        });
        handle.spawn(Core::inbox_loop(Arc::downgrade(&core), sub));
        handle.spawn(Core::link_task(Arc::downgrade(&core), c.ack_period));
        Ok(core)
    }

    /// This node's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// This node's cluster.
    pub(crate) fn cluster(&self) -> &str {
        &self.cluster
    }

    /// The runtime the node's tasks run on.
    pub(crate) fn handle(&self) -> &Handle {
        &self.handle
    }

    /// The transport the node speaks through.
    pub(crate) fn transport(&self) -> &Arc<dyn Transport> {
        &self.transport
    }

    /// The largest body of a tell or ask this node sends.
    pub(crate) fn max_body(&self) -> usize {
        self.max_body
    }

    /// Whether a tell or ask may be sent now: connected and not closed.
    pub(crate) fn accepting(&self) -> bool {
        self.transport.is_connected() && !self.closed.load(Ordering::Acquire)
    }

    /// Registers a type; refused if another type holds its id.
    pub(crate) fn register(&self, entry: TypeEntry) -> Result<(), NodeError> {
        self.types.lock().insert(entry)
    }

    /// Registers `types` and installs `target` under its name, in one step:
    /// on error nothing is changed.
    pub(crate) fn install(&self, types: &[TypeEntry], target: Target) -> Result<(), NodeError> {
        let mut registry = self.types.lock();
        let mut trial = registry.clone();
        for t in types {
            trial.insert(*t)?;
        }
        let id = type_id(&target.name);
        let mut targets = self.targets.write();
        if let Some(held) = targets.get(&id) {
            return Err(NodeError::AlreadyExposed(if held.name == target.name {
                target.name
            } else {
                format!("{} (its id clashes with {})", target.name, held.name)
            }));
        }
        *registry = trial;
        targets.insert(id, target);
        Ok(())
    }

    /// Stops serving the actor exposed as `name`; whether one was.
    pub(crate) fn unexpose(&self, name: &str) -> bool {
        self.targets.write().remove(&type_id(name)).is_some()
    }

    /// The outbox for `node`, made (with its flusher) on first use.
    pub(crate) fn outbox(&self, node: &str) -> Arc<Outbox> {
        let mut peers = self.peers.lock();
        if let Some(o) = peers.get(node) {
            return o.clone();
        }
        let outbox = Arc::new(Outbox::new(
            node_subject(&self.cluster, node).into(),
            self.epoch,
            self.name.clone(),
            self.batch_bytes,
            self.queue_bytes,
            self.key.clone(),
            self.counters.clone(),
        ));
        let task = outbox
            .clone()
            .flusher(self.transport.clone(), self.counters.clone());
        self.flushers.lock().push(self.handle.spawn(task));
        peers.insert(node.to_string(), outbox.clone());
        outbox
    }

    fn outboxes(&self) -> Vec<Arc<Outbox>> {
        self.peers.lock().values().cloned().collect()
    }

    /// Tells accepted and not yet accounted, over all outboxes.
    pub(crate) fn unconfirmed(&self) -> u64 {
        self.outboxes().iter().map(|o| o.unconfirmed()).sum()
    }

    /// The counters, with the gauges filled in.
    pub(crate) fn stats(&self) -> NodeStats {
        let mut s = self.counters.snapshot();
        s.tells_unconfirmed = self.unconfirmed();
        s.links = self.links.lock().len() as u64;
        s.receipts_waiting = self
            .outboxes()
            .iter()
            .map(|o| o.receipts_waiting() as u64)
            .sum();
        s
    }

    /// The last schema mismatch seen.
    pub(crate) fn last_mismatch(&self) -> Option<SchemaMismatch> {
        self.last_mismatch.lock().clone()
    }

    /// Waits until no outbox holds frames, then until the transport has
    /// sent what it holds; whether it got there in `timeout`.
    pub(crate) async fn flush(&self, timeout: Duration) -> bool {
        tokio::time::timeout(timeout, async {
            while self.peers.lock().values().any(|o| o.pending()) {
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
            self.transport.flush().await.is_ok()
        })
        .await
        .unwrap_or(false)
    }

    /// Refuses new tells; gives the future that sends what is queued, a
    /// last ack to every sender, and closes the transport, within `grace`.
    pub(crate) fn shutdown(
        self: &Arc<Self>,
        grace: Duration,
    ) -> impl std::future::Future<Output = ()> {
        self.closed.store(true, Ordering::Release);
        for o in &self.outboxes() {
            o.close();
        }
        let flushers: Vec<_> = std::mem::take(&mut *self.flushers.lock());
        let core = self.clone();
        async move {
            let _ = tokio::time::timeout(grace, async {
                for f in flushers {
                    let _ = f.await;
                }
                // A last account to the senders, so that what this node
                // took is confirmed rather than counted lost when a process
                // under its name starts again.
                core.send_acks().await;
                // Unsubscribes, sends what the transport holds, and closes
                // (references still held now get `Closed`).
                core.transport.close().await;
            })
            .await;
        }
    }
}
