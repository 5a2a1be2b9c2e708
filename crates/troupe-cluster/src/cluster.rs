//! The cluster membership of one process: a [`troupe_remote::Node`] plus
//! liveness, stop events, control requests and the registry mirror.
//!
//! # Tasks (on the cluster's own one-thread tokio runtime)
//! - `beat`: publishes this node's heartbeat every interval;
//! - `listen`: heartbeats, goodbyes and stop events of all nodes, and
//!   control requests to this node;
//! - `check`: every interval/20, watches this node's own connection
//!   (reconnected: grace for every peer, registry re-sync, own entries
//!   re-put) and, while connected, declares silent peers down: a peer
//!   overdue by the clock is down only if it was silent before this
//!   node's own heartbeat came back, and then does not answer a ping (see
//!   [`crate::liveness`]);
//! - `mirror`: the registry's KV watch (see [`crate::registry`]);
//! - `refresh`: re-puts this node's own registry entries every ttl/3.
//!
//! Dropping a [`Cluster`] says goodbye (peers declare it down at once),
//! deletes its registry entries, and closes the node.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use async_nats::jetstream::kv::{Operation, Store};
use async_nats::{Client, Subject};
use bytes::Bytes;
use futures::StreamExt;
use parking_lot::Mutex;
use tokio::runtime::Runtime;
use tokio::sync::Notify;
use troupe::supervision::is_abnormal;
use troupe::{Actor, ActorRef, ActorSystem, Down, StopReason};
use troupe_remote::auth::{ClusterKey, SEAL_LEN};
use troupe_remote::envelope::{append_seal, encode_frame, Header, Kind, HEADER_LEN};
use troupe_remote::transport::nats::NatsTransport;
use troupe_remote::{Exposure, Node, NodeBuilder, RemoteMessage, RemoteRef};

use crate::bad_input::{Inlet, RateLog};
use crate::liveness::{Heard, Intake, Peer, Peers};
use crate::monitor::{RemoteMonitor, StandIns};
use crate::permissions;
use crate::registry::Cache;
use crate::wire::{self, decode, Ctl, CtlReply, Heartbeat, RegEntry, StopEvent, WireReason};
use crate::ClusterError;

type NodeOptions = Box<dyn FnOnce(NodeBuilder) -> NodeBuilder + Send>;

/// Configures and connects a [`Cluster`].
///
/// ```no_run
/// use std::time::Duration;
/// let c = troupe_cluster::Cluster::builder("nats://127.0.0.1:4222", "n1")
///     .namespace("staging")
///     .heartbeat(Duration::from_millis(200))
///     .user_password("app", "secret")
///     .connect()?;
/// # Ok::<(), troupe_cluster::ClusterError>(())
/// ```
#[must_use = "a builder does nothing until .connect()"]
pub struct ClusterBuilder {
    url: String,
    name: String,
    namespace: String,
    heartbeat: Duration,
    down_after: f64,
    reconnect_grace: Duration,
    registry_ttl: Duration,
    connect_timeout: Duration,
    user: Option<(String, String)>,
    nkey: Option<String>,
    node: Option<NodeOptions>,
    max_peers: usize,
    key: Option<ClusterKey>,
}

impl ClusterBuilder {
    /// The cluster namespace (default `"default"`): the subject prefix
    /// `troupe.<namespace>.` and the registry bucket `troupe-<namespace>-registry`.
    pub fn namespace(mut self, ns: impl Into<String>) -> Self {
        self.namespace = ns.into();
        self
    }
    /// Heartbeat interval (default 1 s).
    pub fn heartbeat(mut self, every: Duration) -> Self {
        self.heartbeat = every.max(Duration::from_millis(10));
        self
    }
    /// Silence, in the peer's own heartbeat intervals, after which it is
    /// declared down (default 1.75: Down within two intervals of a death).
    pub fn down_after(mut self, intervals: f64) -> Self {
        self.down_after = intervals.max(1.0);
        self
    }
    /// After this node reconnects to the server, how long every peer has
    /// to reconnect too before its silence counts (default 5 s): a server
    /// restart is not a node death.
    pub fn reconnect_grace(mut self, grace: Duration) -> Self {
        self.reconnect_grace = grace;
        self
    }
    /// The registry bucket's `max_age`, the backstop for entries of nodes
    /// nobody saw die (default 30 s; owners re-put every third of it).
    pub fn registry_ttl(mut self, ttl: Duration) -> Self {
        self.registry_ttl = ttl.max(Duration::from_secs(1));
        self
    }
    /// Bound on the initial connection (default 5 s).
    pub fn connect_timeout(mut self, t: Duration) -> Self {
        self.connect_timeout = t;
        self
    }
    /// Authenticates with a user and password.
    pub fn user_password(mut self, user: &str, password: &str) -> Self {
        self.user = Some((user.to_string(), password.to_string()));
        self
    }
    /// Authenticates with an nkey seed (`SU...`).
    pub fn nkey(mut self, seed: &str) -> Self {
        self.nkey = Some(seed.to_string());
        self
    }
    /// The most peers this node holds in its table (default
    /// [`DEFAULT_MAX_PEERS`](crate::liveness::DEFAULT_MAX_PEERS)): a
    /// heartbeat of one more node is refused and counted
    /// (`ClusterStats::peers_refused`), so heartbeats under made-up names
    /// cannot grow the table.
    pub fn max_peers(mut self, n: usize) -> Self {
        self.max_peers = n.max(1);
        self
    }
    /// The cluster's shared secret: every message this node publishes (its
    /// node's inbox traffic, heartbeats, goodbyes, stop events, control
    /// requests and replies, registry values, group messages) is sealed
    /// with HMAC-SHA256 under it, and only sealed messages are obeyed, so a
    /// client that is not a node cannot kill an actor, declare a peer up,
    /// down or restarted, or plant a registry entry (see
    /// [`troupe_remote::auth`]). Set the same secret on every node.
    pub fn secret(mut self, secret: impl AsRef<[u8]>) -> Self {
        self.key = Some(ClusterKey::new(secret));
        self
    }
    /// Anything else on the underlying [`NodeBuilder`] (TLS and other
    /// `async-nats` options through `.nats(|o| o.connect_options(..))`,
    /// limits).
    pub fn node_options(
        mut self,
        f: impl FnOnce(NodeBuilder) -> NodeBuilder + Send + 'static,
    ) -> Self {
        self.node = Some(Box::new(f));
        self
    }

    /// Connects the node, opens (or creates) the registry bucket, loads
    /// the registry and starts heartbeats. A wrong credential or an absent
    /// server is an error within the connect timeout.
    pub fn connect(self) -> Result<Cluster, ClusterError> {
        if !wire::is_token(&self.namespace) || !wire::is_token(&self.name) {
            return Err(ClusterError::BadName(format!(
                "namespace {:?} and node {:?} must be letters, digits, '_' and '-'",
                self.namespace, self.name
            )));
        }
        let (user, nkey, ct) = (self.user.clone(), self.nkey.clone(), self.connect_timeout);
        let mut nb = Node::builder(&self.url, &self.name)
            .cluster(self.namespace.clone())
            .nats(move |n| {
                n.connect_options(move |mut o| {
                    o = o.connection_timeout(ct);
                    if let Some((u, p)) = user {
                        o = o.user_and_password(u, p);
                    }
                    if let Some(seed) = nkey {
                        o = o.nkey(seed);
                    }
                    o
                })
            });
        if let Some(key) = &self.key {
            nb = nb.cluster_key(key.clone());
        }
        if let Some(f) = self.node {
            nb = f(nb);
        }
        let node = connect_bounded(nb, ct + Duration::from_secs(1))?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(format!("troupe-cluster-{}", self.name))
            .enable_all()
            .build()
            .map_err(|e| ClusterError::Nats(format!("cannot start the cluster runtime: {e}")))?;
        // Subscriptions dropped on an early return unsubscribe through
        // tokio::spawn: inside the runtime's context.
        let _in_rt = rt.enter();
        let ttl = self.registry_ttl;
        let violations = node.violations();
        let kv = rt.block_on(permissions::open_bucket(
            nats_client(&node)?,
            &self.namespace,
            ttl,
            &violations,
        ))?;
        let incarnation = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
            ^ u64::from(std::process::id()) << 48;
        let inner = Arc::new(Inner {
            ns: self.namespace,
            name: self.name,
            incarnation,
            interval: self.heartbeat,
            down_after: self.down_after,
            reconnect_grace: self.reconnect_grace,
            ttl,
            client: nats_client(&node)?,
            kv,
            handle: rt.handle().clone(),
            system: ActorSystem::builder().threads(1).build(),
            peers: Mutex::new(Peers::with_cap(self.max_peers)),
            standins: StandIns::default(),
            exposed: Mutex::new(HashMap::new()),
            own: Mutex::new(HashMap::new()),
            cache: Cache::default(),
            resync: Notify::new(),
            down_hooks: Mutex::new(Vec::new()),
            counters: Counters::default(),
            bad_log: RateLog::default(),
            key: self.key,
            intake: Intake::default(),
        });
        let (hb, bye, down, ctl) = rt
            .block_on({
                let i = inner.clone();
                async move {
                    let c = &i.client;
                    let ns = &i.ns;
                    Ok::<_, async_nats::SubscribeError>((
                        c.subscribe(format!("troupe.{ns}.hb.*")).await?,
                        c.subscribe(format!("troupe.{ns}.bye.*")).await?,
                        c.subscribe(format!("troupe.{ns}.down.*")).await?,
                        c.subscribe(wire::ctl_subject(ns, &i.name)).await?,
                    ))
                }
            })
            .map_err(|e| ClusterError::Nats(e.to_string()))?;
        rt.block_on(permissions::guarded(
            &violations,
            0,
            inner.clone().sync_registry(),
        ))?;
        permissions::none_reported(&violations)?;
        let tasks = vec![
            rt.spawn(inner.clone().beat()),
            rt.spawn(inner.clone().on_heartbeats(hb)),
            rt.spawn(inner.clone().on_byes(bye)),
            rt.spawn(inner.clone().on_stop_events(down)),
            rt.spawn(inner.clone().on_ctl(ctl)),
            rt.spawn(inner.clone().check()),
            rt.spawn(inner.clone().mirror()),
            rt.spawn(inner.clone().refresh()),
        ];
        Ok(Cluster {
            inner,
            node: Some(node),
            rt: Some(rt),
            tasks,
        })
    }
}

/// Runs the blocking node connect on a helper thread and gives up after
/// `limit`, so no credential or server problem can hang the caller.
/// The NATS client under the node (the cluster's registry is JetStream KV).
fn nats_client(node: &Node) -> Result<Client, ClusterError> {
    match node.transport().as_any().downcast_ref::<NatsTransport>() {
        Some(t) => Ok(t.client().clone()),
        None => Err(ClusterError::Nats(
            "a cluster node needs the NATS transport".into(),
        )),
    }
}

fn connect_bounded(nb: NodeBuilder, limit: Duration) -> Result<Node, ClusterError> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("troupe-cluster-connect".into())
        .spawn(move || {
            let _ = tx.send(nb.connect());
        })
        .map_err(|e| ClusterError::Nats(e.to_string()))?;
    match rx.recv_timeout(limit) {
        Ok(r) => Ok(r?),
        Err(_) => Err(ClusterError::Node(troupe_remote::NodeError::Connect(
            format!("no connection within {limit:?}"),
        ))),
    }
}

/// Counters of what this node saw.
#[derive(Default)]
struct Counters {
    nodes_down: AtomicU64,
    resyncs: AtomicU64,
    registry_deletes: AtomicU64,
    bad_heartbeats: AtomicU64,
    bad_byes: AtomicU64,
    bad_stop_events: AtomicU64,
    bad_control: AtomicU64,
    bad_control_replies: AtomicU64,
    bad_registry_values: AtomicU64,
    bad_group_messages: AtomicU64,
    peers_refused: AtomicU64,
    unauthenticated: AtomicU64,
    verdicts_spared: AtomicU64,
}

impl Counters {
    fn of(&self, inlet: Inlet) -> &AtomicU64 {
        match inlet {
            Inlet::Heartbeat => &self.bad_heartbeats,
            Inlet::Bye => &self.bad_byes,
            Inlet::StopEvent => &self.bad_stop_events,
            Inlet::Control => &self.bad_control,
            Inlet::ControlReply => &self.bad_control_replies,
            Inlet::RegistryValue => &self.bad_registry_values,
            Inlet::Group => &self.bad_group_messages,
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
    /// Load-balanced group messages of another type, or that did not decode.
    pub bad_group_messages: u64,
    /// Heartbeats of new nodes refused because the peer table was full.
    pub peers_refused: u64,
    /// Messages and registry values refused for want of a good seal (this
    /// node has a cluster key; see [`ClusterBuilder::secret`]).
    pub unauthenticated: u64,
    /// Peers silent by this node's clock that were not declared down:
    /// heard once this node's own heartbeat intake caught up, or answering
    /// a ping (see the [`liveness`](crate::liveness) module).
    pub verdicts_spared: u64,
}

struct ExposedActor {
    kill: Box<dyn Fn() + Send + Sync>,
    stopped: Option<WireReason>,
}

type DownHook = Box<dyn Fn(&str) + Send + Sync>;

pub(crate) struct Inner {
    ns: String,
    name: String,
    incarnation: u64,
    interval: Duration,
    down_after: f64,
    reconnect_grace: Duration,
    ttl: Duration,
    client: Client,
    kv: Store,
    handle: tokio::runtime::Handle,
    system: ActorSystem,
    peers: Mutex<Peers>,
    standins: StandIns,
    exposed: Mutex<HashMap<String, ExposedActor>>,
    /// This node's registry entries: key -> value, re-put by `refresh`.
    own: Mutex<HashMap<String, Bytes>>,
    cache: Cache,
    resync: Notify,
    down_hooks: Mutex<Vec<DownHook>>,
    counters: Counters,
    bad_log: RateLog,
    key: Option<ClusterKey>,
    /// This node's own heartbeats out and back (see `liveness.rs`).
    intake: Intake,
}

fn encode<T: serde::Serialize>(v: &T) -> Bytes {
    Bytes::from(postcard::to_allocvec(v).unwrap_or_default())
}

impl Inner {
    fn heartbeat(&self) -> Heartbeat {
        Heartbeat {
            node: self.name.clone(),
            incarnation: self.incarnation,
            interval_ms: self.interval.as_millis().min(u32::MAX as u128) as u32,
        }
    }

    async fn beat(self: Arc<Self>) {
        let subject = Subject::from(wire::heartbeat_subject(&self.ns, &self.name));
        let payload = self.seal(&subject, encode(&self.heartbeat()));
        let mut tick = tokio::time::interval(self.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            self.intake.sent();
            let _ = self.client.publish(subject.clone(), payload.clone()).await;
        }
    }

    /// Publishes a heartbeat and waits until this node hears it back on
    /// `hb.*` (see `liveness.rs`, "Late intake is not a silent peer"):
    /// the instant it was published, before which every heartbeat that
    /// reached the server has now been handled; `None` if the connection
    /// dropped meanwhile. After `max(reconnect_grace, 4 intervals)` it
    /// gives up waiting (the heartbeat was lost, or the intake is that far
    /// behind) and returns the instant anyway.
    async fn probe_intake(&self) -> Option<Instant> {
        let subject = wire::heartbeat_subject(&self.ns, &self.name);
        let payload = self.seal(&subject, encode(&self.heartbeat()));
        let at = Instant::now();
        let n = self.intake.sent();
        let _ = self.client.publish(subject, payload).await;
        let step = (self.interval / 20).max(Duration::from_millis(2));
        let limit = self.reconnect_grace.max(self.interval * 4);
        loop {
            if tokio::time::timeout(step, self.intake.caught_up(n))
                .await
                .is_ok()
            {
                return Some(at);
            }
            if self.client.connection_state() != async_nats::connection::State::Connected {
                return None;
            }
            if at.elapsed() > limit {
                self.intake.resync();
                tracing::warn!(node = %self.name, ?limit, "this node's own heartbeat did not come back: judging peers by the clock");
                return Some(at);
            }
        }
    }

    /// Counts a message this node cannot use and logs it at a limited
    /// rate (see `bad_input.rs`).
    fn bad(&self, inlet: Inlet, subject: &str, why: &dyn std::fmt::Display) {
        let c = self.counters.of(inlet);
        let count = c.fetch_add(1, Ordering::Relaxed).saturating_add(1);
        if let Some(left_out) = self.bad_log.admit(Instant::now()) {
            tracing::warn!(node = %self.name, %inlet, subject, error = %why, count, left_out, "dropped a bad message (lines about bad input are limited to one per 5 s; left_out counts those not written)");
        }
    }

    /// `payload` sealed for `subject` when this node has a cluster key.
    fn seal(&self, subject: &str, payload: Bytes) -> Bytes {
        match &self.key {
            None => payload,
            Some(key) => key.seal(subject, &payload).into(),
        }
    }

    /// The payload of a message on `subject`: with a cluster key, only if
    /// its seal is good (else counted and logged, `None`).
    fn open<'a>(&self, inlet: Inlet, subject: &str, payload: &'a [u8]) -> Option<&'a [u8]> {
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
    fn own_value<'a>(&self, v: &'a [u8]) -> &'a [u8] {
        match &self.key {
            None => v,
            Some(_) => v.get(..v.len().saturating_sub(SEAL_LEN)).unwrap_or(v),
        }
    }

    /// A heartbeat or goodbye that decodes and names its subject's node.
    fn membership(&self, inlet: Inlet, msg: &async_nats::Message) -> Option<Heartbeat> {
        let payload = self.open(inlet, &msg.subject, &msg.payload)?;
        let Some(hb) = decode::<Heartbeat>(payload) else {
            self.bad(inlet, &msg.subject, &"did not decode");
            return None;
        };
        if hb.node != wire::last_token(&msg.subject) {
            self.bad(inlet, &msg.subject, &"names another node than its subject");
            return None;
        }
        Some(hb)
    }

    async fn on_heartbeats(self: Arc<Self>, mut sub: async_nats::Subscriber) {
        while let Some(msg) = sub.next().await {
            let Some(hb) = self.membership(Inlet::Heartbeat, &msg) else {
                continue;
            };
            if hb.node == self.name {
                if hb.incarnation != self.incarnation {
                    self.bad(
                        Inlet::Heartbeat,
                        &msg.subject,
                        &"another node with this node's name heartbeats in the cluster",
                    );
                } else {
                    self.intake.heard();
                }
                continue;
            }
            let heard = self.peers.lock().heard(&hb, Instant::now());
            match heard {
                Heard::New => tracing::info!(node = %self.name, peer = %hb.node, "peer up"),
                Heard::Again => {}
                Heard::Restarted { old } => self.node_down(&hb.node, old, "restarted"),
                Heard::Full => {
                    self.counters.peers_refused.fetch_add(1, Ordering::Relaxed);
                    if let Some(left_out) = self.bad_log.admit(Instant::now()) {
                        tracing::warn!(node = %self.name, peer = %hb.node, left_out, "the peer table is full: a new node's heartbeat was refused");
                    }
                }
            }
        }
    }

    async fn on_byes(self: Arc<Self>, mut sub: async_nats::Subscriber) {
        while let Some(msg) = sub.next().await {
            let Some(hb) = self.membership(Inlet::Bye, &msg) else {
                continue;
            };
            if hb.node == self.name {
                continue;
            }
            let removed = self
                .peers
                .lock()
                .remove_incarnation(&hb.node, hb.incarnation);
            match removed {
                Some(_) => self.declared_down(&hb.node, hb.incarnation, "left"),
                None => self.bad(
                    Inlet::Bye,
                    &msg.subject,
                    &"a goodbye of a node or incarnation this node does not hold",
                ),
            }
        }
    }

    async fn on_stop_events(self: Arc<Self>, mut sub: async_nats::Subscriber) {
        while let Some(msg) = sub.next().await {
            let node = wire::last_token(&msg.subject);
            let Some(payload) = self.open(Inlet::StopEvent, &msg.subject, &msg.payload) else {
                continue;
            };
            let Some(ev) = decode::<StopEvent>(payload) else {
                self.bad(Inlet::StopEvent, &msg.subject, &"did not decode");
                continue;
            };
            self.standins
                .stop(&format!("{}@{node}", ev.actor), ev.reason.into());
        }
    }

    async fn on_ctl(self: Arc<Self>, mut sub: async_nats::Subscriber) {
        while let Some(msg) = sub.next().await {
            let Some(reply) = msg.reply else {
                self.bad(
                    Inlet::Control,
                    &msg.subject,
                    &"a control request without a reply subject",
                );
                continue;
            };
            let request = self
                .open(Inlet::Control, &msg.subject, &msg.payload)
                .map(decode::<Ctl>);
            let answer = match request {
                None => CtlReply::BadRequest,
                Some(Some(Ctl::Watch { actor })) => self.status_of(&actor),
                Some(Some(Ctl::Kill { actor, reason })) => {
                    let ex = self.exposed.lock();
                    match ex.get(&actor) {
                        None => CtlReply::Unknown,
                        Some(a) => match &a.stopped {
                            Some(r) => CtlReply::Stopped(r.clone()),
                            None => {
                                tracing::info!(node = %self.name, actor = %actor, ?reason, "killed by a link");
                                (a.kill)();
                                CtlReply::Alive
                            }
                        },
                    }
                }
                Some(None) => {
                    self.bad(Inlet::Control, &msg.subject, &"did not decode");
                    CtlReply::BadRequest
                }
            };
            let answer = self.seal(&reply, encode(&answer));
            let _ = self.client.publish(reply, answer).await;
        }
    }

    fn status_of(&self, actor: &str) -> CtlReply {
        match self.exposed.lock().get(actor) {
            None => CtlReply::Unknown,
            Some(a) => match &a.stopped {
                Some(r) => CtlReply::Stopped(r.clone()),
                None => CtlReply::Alive,
            },
        }
    }

    async fn check(self: Arc<Self>) {
        let tick = (self.interval / 20).max(Duration::from_millis(2));
        let mut was_connected = true;
        loop {
            tokio::time::sleep(tick).await;
            let connected =
                self.client.connection_state() == async_nats::connection::State::Connected;
            if !connected {
                was_connected = false;
                continue;
            }
            if !was_connected {
                was_connected = true;
                tracing::info!(node = %self.name, "reconnected: grace for peers, registry re-sync");
                // Peers reconnect on their own backoff: none is declared
                // down until `reconnect_grace` after this node is back.
                self.peers
                    .lock()
                    .grace(Instant::now() + self.reconnect_grace);
                // Own heartbeats lost with the connection never come back.
                self.intake.resync();
                self.resync.notify_one();
            }
            // The clock only asks; the intake and the peer answer (see
            // `liveness.rs`).
            let overdue = self.peers.lock().overdue(Instant::now(), self.down_after);
            if overdue == 0 {
                continue;
            }
            let Some(probed_at) = self.probe_intake().await else {
                was_connected = false;
                continue;
            };
            let silent = self.peers.lock().expired(probed_at, self.down_after);
            let dead = self.confirm_silent(silent).await;
            let spared = overdue.saturating_sub(dead.len()) as u64;
            self.counters
                .verdicts_spared
                .fetch_add(spared, Ordering::Relaxed);
            for (node, peer) in dead {
                self.declared_down(&node, peer.incarnation, "silent");
            }
        }
    }

    /// Of peers silent before this node's intake probe, those that do not
    /// answer a ping within `down_after` of this node's intervals (or
    /// have no one on their inbox): their heartbeats may be stuck in their
    /// own connection's outgoing queue behind a flood it is reading, but
    /// then so is their answer, and a dead node's inbox has no responders
    /// at once. A peer that answers is put back as heard now.
    async fn confirm_silent(&self, silent: Vec<(String, Peer)>) -> Vec<(String, Peer)> {
        if silent.is_empty() {
            return silent;
        }
        let limit = self.interval.mul_f64(self.down_after);
        let pings = silent.into_iter().map(|(node, peer)| async move {
            let subject = troupe_remote::node_subject(&self.ns, &node);
            let mut ping = Vec::with_capacity(HEADER_LEN);
            let _ = encode_frame(&mut ping, Header::new(Kind::Ping, 0, 0, 0), &(), 0);
            if let Some(key) = &self.key {
                append_seal(&mut ping, key, &subject);
            }
            let answer =
                tokio::time::timeout(limit, self.client.request(subject, ping.into())).await;
            (node, peer, matches!(answer, Ok(Ok(_))))
        });
        let mut dead = Vec::new();
        for (node, peer, alive) in futures::future::join_all(pings).await {
            if alive {
                tracing::info!(node = %self.name, peer = %node, "a peer silent by its heartbeats answered a ping: not down");
                self.peers.lock().reinstate(&node, peer, Instant::now());
            } else {
                dead.push((node, peer));
            }
        }
        dead
    }

    fn node_down(&self, node: &str, incarnation: u64, why: &str) {
        self.declared_down(node, incarnation, why);
    }

    /// `node` (that incarnation) is down: Down to watchers of its actors,
    /// its registry entries out of the cache and the bucket, hooks told.
    fn declared_down(&self, node: &str, incarnation: u64, why: &str) {
        tracing::warn!(node = %self.name, peer = %node, why, "peer down");
        self.counters.nodes_down.fetch_add(1, Ordering::Relaxed);
        self.standins.stop_node(node);
        let gone = self.cache.maps.write().drop_node(node, incarnation);
        if !gone.is_empty() {
            let kv = self.kv.clone();
            let n = gone.len() as u64;
            self.counters
                .registry_deletes
                .fetch_add(n, Ordering::Relaxed);
            self.handle.spawn(async move {
                for (key, rev) in gone {
                    // Conditional: a restarted node's fresh entry survives.
                    let _ = kv.delete_expect_revision(&key, Some(rev)).await;
                }
            });
        }
        for hook in self.down_hooks.lock().iter() {
            hook(node);
        }
    }

    /// Re-reads the whole bucket into a fresh cache (the watch runs already).
    async fn sync_registry(self: Arc<Self>) -> Result<(), ClusterError> {
        let snapshot = tokio::time::timeout(Duration::from_secs(5), async {
            let mut keys = self.kv.keys().await.map_err(|e| e.to_string())?;
            let mut maps = crate::registry::Maps::default();
            while let Some(k) = keys.next().await {
                let Ok(k) = k else { continue };
                if let Ok(Some(e)) = self.kv.entry(&k).await {
                    if e.operation == Operation::Put {
                        maps.apply(&k, e.revision, self.registry_value(&k, &e.value));
                    }
                }
            }
            Ok::<_, String>(maps)
        })
        .await
        .map_err(|_| ClusterError::Registry("registry snapshot took over 5 s".into()))?
        .map_err(ClusterError::Registry)?;
        // Entries of nodes this node knows are down are not resurrected.
        let mut live = snapshot;
        {
            let old = self.cache.maps.read();
            for (k, rev) in &old.deleted {
                live.apply(k, *rev, None);
            }
        }
        *self.cache.maps.write() = live;
        self.counters.resyncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    async fn mirror(self: Arc<Self>) {
        loop {
            let watch = self.kv.watch_all().await;
            match watch {
                Ok(mut w) => {
                    if let Err(e) = self.clone().sync_registry().await {
                        tracing::warn!(node = %self.name, error = %e, "registry re-sync failed");
                    }
                    loop {
                        tokio::select! {
                            next = w.next() => match next {
                                Some(Ok(e)) => {
                                    let value = match e.operation {
                                        Operation::Put => self.registry_value(&e.key, &e.value),
                                        _ => None,
                                    };
                                    self.cache.maps.write().apply(&e.key, e.revision, value);
                                }
                                _ => break,
                            },
                            _ = self.resync.notified() => {
                                self.republish_own().await;
                                break;
                            }
                        }
                    }
                }
                Err(e) => {
                    tracing::debug!(node = %self.name, error = %e, "registry watch not started")
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A registry value, if it decodes and matches its key (a member key
    /// names its node and actor); `None` (a delete, for the cache) and
    /// counted otherwise.
    fn registry_value(&self, key: &str, value: &[u8]) -> Option<RegEntry> {
        let value = self.open(Inlet::RegistryValue, &wire::kv_seal_subject(key), value)?;
        let Some(e) = decode::<RegEntry>(value) else {
            self.bad(Inlet::RegistryValue, key, &"did not decode");
            return None;
        };
        if let Some(crate::registry::Key::Member { member, .. }) = crate::registry::Key::parse(key)
        {
            if member.split_once('.') != Some((e.node.as_str(), e.actor.as_str())) {
                self.bad(
                    Inlet::RegistryValue,
                    key,
                    &"names another node or actor than its key",
                );
                return None;
            }
        }
        Some(e)
    }

    async fn republish_own(&self) {
        let own: Vec<(String, Bytes)> = self
            .own
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (k, v) in own {
            let _ = self.kv.put(&k, v).await;
        }
    }

    async fn refresh(self: Arc<Self>) {
        let mut tick = tokio::time::interval(self.ttl / 3);
        tick.tick().await;
        loop {
            tick.tick().await;
            self.republish_own().await;
        }
    }

    fn block<F: std::future::Future + Send + 'static>(&self, f: F) -> F::Output
    where
        F::Output: Send + 'static,
    {
        let (tx, rx) = std::sync::mpsc::channel();
        self.handle.spawn(async move {
            let _ = tx.send(f.await);
        });
        rx.recv().expect("the cluster runtime stopped")
    }
}

/// A process's membership in a Troupe cluster.
///
/// ```no_run
/// use serde::{Deserialize, Serialize};
/// use std::time::Duration;
/// use troupe::{Actor, ActorSystem, Context, Down};
/// use troupe_cluster::Cluster;
/// use troupe_remote::remote;
///
/// #[remote("demo.Job")]
/// #[derive(Serialize, Deserialize, Clone)]
/// struct Job(u32);
///
/// struct Worker;
/// impl Actor for Worker {
///     type Msg = Job;
///     fn handle(&mut self, _: Job, _: &mut Context<'_, Self>) {}
/// }
/// struct Watcher;
/// impl Actor for Watcher {
///     type Msg = Down;
///     fn handle(&mut self, d: Down, _: &mut Context<'_, Self>) { println!("{}", d.reason); }
/// }
///
/// let system = ActorSystem::new();
/// // Process 1: serves `worker@n1`, registered as "jobs" and in group "pool".
/// let n1 = Cluster::connect("nats://127.0.0.1:4222", "n1")?;
/// let worker = system.spawn(Worker);
/// n1.expose("worker", &worker).tell::<Job>().serve()?;
/// n1.register::<Job>("jobs", "worker")?;
/// n1.join_group::<Job>("pool", "worker")?;
///
/// // Process 2: finds it, watches it, sends to the group.
/// let n2 = Cluster::connect("nats://127.0.0.1:4222", "n2")?;
/// let jobs = n2.find::<Job>("jobs").expect("registered");
/// jobs.tell(Job(1)).ok();
/// let watcher = system.spawn(Watcher);
/// n2.monitor(&watcher, "worker@n1", |down| down)?;
/// assert_eq!(n2.dispatch_group("pool", Job(2)), 1);
/// # Ok::<(), troupe_cluster::ClusterError>(())
/// ```
pub struct Cluster {
    inner: Arc<Inner>,
    node: Option<Node>,
    rt: Option<Runtime>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

fn split(target: &str) -> Result<(&str, &str), ClusterError> {
    match target.split_once('@') {
        Some((a, n)) if wire::is_token(a) && wire::is_token(n) => Ok((a, n)),
        _ => Err(ClusterError::BadName(format!(
            "{target:?} is not actor@node"
        ))),
    }
}

fn token(what: &str, s: &str) -> Result<(), ClusterError> {
    if wire::is_token(s) {
        Ok(())
    } else {
        Err(ClusterError::BadName(format!(
            "{what} {s:?} must be letters, digits, '_' and '-'"
        )))
    }
}

impl Cluster {
    /// Joins the default namespace with default settings.
    pub fn connect(url: &str, node: &str) -> Result<Cluster, ClusterError> {
        Cluster::builder(url, node).connect()
    }

    /// A builder (namespace, heartbeat, credentials, node options).
    pub fn builder(url: &str, node: &str) -> ClusterBuilder {
        ClusterBuilder {
            url: url.to_string(),
            name: node.to_string(),
            namespace: "default".into(),
            heartbeat: Duration::from_secs(1),
            down_after: 1.75,
            reconnect_grace: Duration::from_secs(5),
            registry_ttl: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            user: None,
            nkey: None,
            node: None,
            max_peers: crate::liveness::DEFAULT_MAX_PEERS,
            key: None,
        }
    }

    /// The node (remote references, exposure, stats).
    pub fn node(&self) -> &Node {
        self.node.as_ref().expect("present until drop")
    }

    /// This node's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The peers this node holds alive, sorted.
    pub fn peers(&self) -> Vec<String> {
        self.inner.peers.lock().names()
    }

    /// Counters of downs, re-syncs and registry cleanup.
    pub fn stats(&self) -> ClusterStats {
        let c = &self.inner.counters;
        ClusterStats {
            nodes_down: c.nodes_down.load(Ordering::Relaxed),
            resyncs: c.resyncs.load(Ordering::Relaxed),
            registry_deletes: c.registry_deletes.load(Ordering::Relaxed),
            bad_heartbeats: c.bad_heartbeats.load(Ordering::Relaxed),
            bad_byes: c.bad_byes.load(Ordering::Relaxed),
            bad_stop_events: c.bad_stop_events.load(Ordering::Relaxed),
            bad_control: c.bad_control.load(Ordering::Relaxed),
            bad_control_replies: c.bad_control_replies.load(Ordering::Relaxed),
            bad_registry_values: c.bad_registry_values.load(Ordering::Relaxed),
            bad_group_messages: c.bad_group_messages.load(Ordering::Relaxed),
            peers_refused: c.peers_refused.load(Ordering::Relaxed),
            unauthenticated: c.unauthenticated.load(Ordering::Relaxed),
            verdicts_spared: c.verdicts_spared.load(Ordering::Relaxed),
        }
    }

    /// Calls `f` with a peer's name whenever one is declared down (on the
    /// cluster's I/O thread: keep it short).
    pub fn on_node_down(&self, f: impl Fn(&str) + Send + Sync + 'static) {
        self.inner.down_hooks.lock().push(Box::new(f));
    }

    /// Exposes a local actor as `name@<this node>` (as
    /// [`Node::expose`]) and tracks it: its stop is published to every
    /// node (remote monitors, links) and its registry entries are removed.
    pub fn expose<A: Actor>(&self, name: &str, actor: &ActorRef<A>) -> Exposure<'_, A> {
        let weak = actor.downgrade();
        self.inner.exposed.lock().insert(
            name.to_string(),
            ExposedActor {
                kill: Box::new(move || {
                    if let Some(a) = weak.upgrade() {
                        a.kill();
                    }
                }),
                stopped: None,
            },
        );
        let inner = Arc::downgrade(&self.inner);
        let actor_name = name.to_string();
        actor.on_stop(move |_, reason| {
            let Some(inner) = inner.upgrade() else { return };
            let wr = WireReason::from(reason);
            if let Some(a) = inner.exposed.lock().get_mut(&actor_name) {
                a.stopped = Some(wr.clone());
            }
            let subject = wire::down_subject(&inner.ns, &inner.name);
            let ev = inner.seal(
                &subject,
                encode(&StopEvent {
                    actor: actor_name.clone(),
                    reason: wr,
                }),
            );
            // Its registry entries go with it.
            let keys: Vec<String> = {
                let mut own = inner.own.lock();
                let keys: Vec<String> = own
                    .iter()
                    .filter(|(_, v)| {
                        decode::<RegEntry>(inner.own_value(v))
                            .is_some_and(|e| e.actor == actor_name)
                    })
                    .map(|(k, _)| k.clone())
                    .collect();
                for k in &keys {
                    own.remove(k);
                }
                keys
            };
            let (client, kv) = (inner.client.clone(), inner.kv.clone());
            inner.handle.spawn(async move {
                let _ = client.publish(subject, ev).await;
                for k in keys {
                    let _ = kv.delete(&k).await;
                }
            });
        });
        self.node().expose(name, actor)
    }

    /// Puts one of this node's entries; `name` is what the user called it
    /// (for the error).
    fn put_own(
        &self,
        name: &str,
        key: String,
        entry: RegEntry,
        create: bool,
    ) -> Result<(), ClusterError> {
        let value = self
            .inner
            .seal(&wire::kv_seal_subject(&key), encode(&entry));
        let kv = self.inner.kv.clone();
        let (k, v) = (key.clone(), value.clone());
        let r = self.inner.block(async move {
            tokio::time::timeout(Duration::from_secs(5), async move {
                if create {
                    kv.create(&k, v).await.map(|_| ()).map_err(|e| {
                        (
                            e.kind() == async_nats::jetstream::kv::CreateErrorKind::AlreadyExists,
                            e.to_string(),
                        )
                    })
                } else {
                    kv.put(&k, v)
                        .await
                        .map(|_| ())
                        .map_err(|e| (false, e.to_string()))
                }
            })
            .await
            .unwrap_or_else(|_| Err((false, "no answer within 5 s".into())))
        });
        match r {
            Ok(()) => {
                self.inner.own.lock().insert(key, value);
                Ok(())
            }
            Err((true, _)) => Err(ClusterError::NameTaken(name.to_string())),
            Err((false, e)) => Err(ClusterError::Registry(e)),
        }
    }

    fn entry<M: RemoteMessage>(&self, actor: &str) -> RegEntry {
        RegEntry {
            node: self.inner.name.clone(),
            actor: actor.to_string(),
            type_id: M::TYPE_ID,
            incarnation: self.inner.incarnation,
        }
    }

    /// Registers `name` cluster-wide for the actor exposed here as `actor`,
    /// taking messages `M`. Refused if a live entry holds the name.
    pub fn register<M: RemoteMessage>(&self, name: &str, actor: &str) -> Result<(), ClusterError> {
        token("name", name)?;
        token("actor", actor)?;
        self.put_own(name, wire::name_key(name), self.entry::<M>(actor), true)
    }

    /// Removes this node's registration of `name`.
    pub fn unregister(&self, name: &str) -> Result<(), ClusterError> {
        self.delete_own(wire::name_key(name))
    }

    /// Deletes one of this node's registry entries, if it holds it.
    fn delete_own(&self, key: String) -> Result<(), ClusterError> {
        if self.inner.own.lock().remove(&key).is_none() {
            return Ok(());
        }
        let kv = self.inner.kv.clone();
        self.inner
            .block(async move { kv.delete(&key).await })
            .map_err(|e| ClusterError::Registry(e.to_string()))
    }

    /// Adds the actor exposed here as `actor` to the broadcast group `group`.
    pub fn join_group<M: RemoteMessage>(
        &self,
        group: &str,
        actor: &str,
    ) -> Result<(), ClusterError> {
        token("group", group)?;
        token("actor", actor)?;
        let key = wire::member_key(group, &self.inner.name, actor);
        self.put_own(group, key, self.entry::<M>(actor), false)
    }

    /// The old name of [`join_group`](Self::join_group).
    #[deprecated(
        since = "0.1.0",
        note = "renamed to `join_group` (`join` is `ActorRef::join`, waiting for a stop)"
    )]
    pub fn join<M: RemoteMessage>(&self, group: &str, actor: &str) -> Result<(), ClusterError> {
        self.join_group::<M>(group, actor)
    }

    /// Takes the actor exposed here as `actor` out of the broadcast group
    /// `group` (it also leaves when it stops); `Ok` if it was not in it.
    pub fn leave_group(&self, group: &str, actor: &str) -> Result<(), ClusterError> {
        token("group", group)?;
        token("actor", actor)?;
        self.delete_own(wire::member_key(group, &self.inner.name, actor))
    }

    /// Adds `actor` to the load-balanced group `group`: each message sent
    /// with [`dispatch_balanced`](Self::dispatch_balanced) reaches one member
    /// (a NATS queue group). Lasts while the actor runs.
    pub fn join_balanced<M: RemoteMessage, A: Actor>(
        &self,
        group: &str,
        actor: &ActorRef<A>,
    ) -> Result<(), ClusterError>
    where
        A::Msg: From<M>,
    {
        token("group", group)?;
        let subject = wire::group_subject(&self.inner.ns, group);
        let client = self.inner.client.clone();
        let q = group.to_string();
        let mut sub = self
            .inner
            .block(async move { client.queue_subscribe(subject, q).await })
            .map_err(|e| ClusterError::Nats(e.to_string()))?;
        let weak = actor.downgrade();
        let inner = Arc::downgrade(&self.inner);
        self.inner.handle.spawn(async move {
            while let Some(msg) = sub.next().await {
                let Some(a) = weak.upgrade() else { break };
                if !a.is_alive() {
                    break;
                }
                let p = &msg.payload;
                let opened = match inner.upgrade() {
                    Some(inner) => inner.open(Inlet::Group, &msg.subject, p),
                    None => break,
                };
                let Some(p) = opened else { continue };
                let m = match p.split_first_chunk::<8>() {
                    Some((id, body)) if u64::from_le_bytes(*id) == M::TYPE_ID => decode::<M>(body),
                    _ => None,
                };
                match m {
                    Some(m) => {
                        let _ = a.try_tell(A::Msg::from(m));
                    }
                    None => {
                        if let Some(inner) = inner.upgrade() {
                            inner.bad(
                                Inlet::Group,
                                &msg.subject,
                                &"another type, or did not decode",
                            );
                        }
                    }
                }
            }
            let _ = sub.unsubscribe().await;
        });
        Ok(())
    }

    /// Sends `msg` to one member of the load-balanced group `group`.
    pub fn dispatch_balanced<M: RemoteMessage>(
        &self,
        group: &str,
        msg: &M,
    ) -> Result<(), ClusterError> {
        let mut payload = M::TYPE_ID.to_le_bytes().to_vec();
        payload.extend(postcard::to_allocvec(msg).map_err(|e| ClusterError::Nats(e.to_string()))?);
        let client = self.inner.client.clone();
        let subject = wire::group_subject(&self.inner.ns, group);
        let payload = self.inner.seal(&subject, payload.into());
        self.inner
            .block(async move { client.publish(subject, payload).await })
            .map_err(|e| ClusterError::Nats(e.to_string()))
    }

    /// The actor registered as `name`, from the local cache (no network);
    /// `None` if unknown, gone, or registered for another type than `M`.
    pub fn find<M: RemoteMessage>(&self, name: &str) -> Option<RemoteRef<M>> {
        let maps = self.inner.cache.maps.read();
        let slot = maps.names.get(name)?;
        slot.typed(|e| {
            self.node()
                .lookup::<M>(&format!("{}@{}", e.actor, e.node))
                .ok()
        })
    }

    /// Members of `group` as `actor@node`, from the cache, sorted.
    pub fn members(&self, group: &str) -> Vec<String> {
        let maps = self.inner.cache.maps.read();
        let mut v: Vec<String> = maps
            .groups
            .get(group)
            .map(|g| {
                g.values()
                    .map(|s| format!("{}@{}", s.entry.actor, s.entry.node))
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// Tells every member of `group` (registered for `M`) a copy of `msg`;
    /// returns how many accepted it.
    pub fn dispatch_group<M: RemoteMessage + Clone>(&self, group: &str, msg: M) -> usize {
        let maps = self.inner.cache.maps.read();
        let Some(g) = maps.groups.get(group) else {
            return 0;
        };
        let mut n = 0;
        for slot in g.values() {
            let r = slot.typed(|e| {
                self.node()
                    .lookup::<M>(&format!("{}@{}", e.actor, e.node))
                    .ok()
            });
            if let Some(r) = r {
                if r.tell(msg.clone()).is_ok() {
                    n += 1;
                }
            }
        }
        n
    }

    /// The stand-in of `target`, asking its node about it when new.
    fn standin(&self, target: &str) -> Result<ActorRef<crate::monitor::StandIn>, ClusterError> {
        let (actor, node) = split(target)?;
        let (s, new) = self.inner.standins.get(&self.inner.system, target);
        if !new {
            return Ok(s);
        }
        if node == self.inner.name {
            match self.inner.status_of(actor) {
                CtlReply::Alive => {}
                CtlReply::Stopped(r) => self.inner.standins.stop(target, r.into()),
                CtlReply::Unknown | CtlReply::BadRequest => self.inner.standins.stop(
                    target,
                    StopReason::Failed(format!("no such actor: {target}")),
                ),
            }
            return Ok(s);
        }
        let inner = self.inner.clone();
        let (target, actor, node) = (target.to_string(), actor.to_string(), node.to_string());
        let timeout = (inner.interval * 2).max(Duration::from_millis(500));
        self.inner.handle.spawn(async move {
            let subject = wire::ctl_subject(&inner.ns, &node);
            let ask = inner.seal(&subject, encode(&Ctl::Watch { actor }));
            let req = async_nats::Request::new()
                .payload(ask)
                .timeout(Some(timeout));
            match inner.client.send_request(subject, req).await {
                Ok(m) => match inner
                    .open(Inlet::ControlReply, &m.subject, &m.payload)
                    .and_then(decode::<CtlReply>)
                {
                    Some(CtlReply::Alive) => {
                        // Known alive now: its silence from here on counts.
                        inner
                            .peers
                            .lock()
                            .assume(&node, 0, inner.interval, Instant::now());
                    }
                    Some(CtlReply::Stopped(r)) => inner.standins.stop(&target, r.into()),
                    Some(CtlReply::Unknown) => inner.standins.stop(
                        &target,
                        StopReason::Failed(format!("no such actor: {target}")),
                    ),
                    Some(CtlReply::BadRequest) => inner.standins.stop(
                        &target,
                        StopReason::Failed(format!("{node} refused the watch request of {target}")),
                    ),
                    None => {
                        inner.bad(Inlet::ControlReply, &m.subject, &"did not decode");
                        inner.standins.stop(
                            &target,
                            StopReason::Failed(format!("a bad answer to the watch of {target}")),
                        )
                    }
                },
                Err(_) => {
                    inner.standins.stop(&target, crate::node_down_reason(&node));
                }
            }
        });
        Ok(s)
    }

    /// Watches the remote actor `target` (`actor@node`): `watcher` receives
    /// `to_msg(Down)` when it stops (its own reason), or when its node is
    /// declared down ([`node_down_reason`](crate::node_down_reason)).
    pub fn monitor<A: Actor>(
        &self,
        watcher: &ActorRef<A>,
        target: &str,
        to_msg: impl FnOnce(Down) -> A::Msg + Send + 'static,
    ) -> Result<RemoteMonitor, ClusterError> {
        let s = self.standin(target)?;
        let link = troupe::supervision::monitor(watcher, &s, to_msg);
        Ok(RemoteMonitor { id: s.id(), link })
    }

    /// Links `local` and the remote actor `target` both ways: an abnormal
    /// stop of either (panic, failure, kill, or the remote node going down)
    /// kills the other.
    pub fn link<A: Actor>(&self, local: &ActorRef<A>, target: &str) -> Result<(), ClusterError> {
        let s = self.standin(target)?;
        let weak = local.downgrade();
        s.on_stop(move |_, reason| {
            if is_abnormal(reason) {
                if let Some(l) = weak.upgrade() {
                    l.kill();
                }
            }
        });
        let (actor, node) = split(target)?;
        let inner = Arc::downgrade(&self.inner);
        let (actor, node) = (actor.to_string(), node.to_string());
        local.on_stop(move |_, reason| {
            if !is_abnormal(reason) {
                return;
            }
            let Some(inner) = inner.upgrade() else { return };
            let subject = wire::ctl_subject(&inner.ns, &node);
            let ask = inner.seal(
                &subject,
                encode(&Ctl::Kill {
                    actor,
                    reason: reason.into(),
                }),
            );
            let client = inner.client.clone();
            inner.handle.spawn(async move {
                let req = async_nats::Request::new()
                    .payload(ask)
                    .timeout(Some(Duration::from_secs(2)));
                let _ = client.send_request(subject, req).await;
            });
        });
        Ok(())
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        let inner = self.inner.clone();
        let own: Vec<String> = inner.own.lock().keys().cloned().collect();
        inner.block({
            let inner = inner.clone();
            async move {
                let _ = tokio::time::timeout(Duration::from_millis(500), async {
                    let subject = wire::bye_subject(&inner.ns, &inner.name);
                    let bye = inner.seal(&subject, encode(&inner.heartbeat()));
                    let _ = inner.client.publish(subject, bye).await;
                    for k in own {
                        let _ = inner.kv.delete(&k).await;
                    }
                    let _ = inner.client.flush().await;
                })
                .await;
            }
        });
        self.node.take();
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}
