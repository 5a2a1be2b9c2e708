//! A node: one process's connection to a NATS server, its inbox, the actors
//! it exposes and the remote references it hands out.
//!
//! # Subject scheme
//!
//! ```text
//! troupe.<cluster>.node.<node>      one inbox per node: tells (batched) and asks
//! troupe.<cluster>._INBOX.<id>.*    this node's reply inboxes for its own asks
//! ```
//!
//! One subject per *node*, with the target actor named in each frame, rather
//! than one subject per actor, because:
//! - tells to any actors on one node share one outbox, so a burst is
//!   coalesced into few NATS messages whatever the mix of targets;
//! - exposing an actor is a local table insert, not a server round trip, and
//!   the server's interest graph grows with nodes, not actors;
//! - order is kept per (sender node, receiver node), which implies the
//!   per-(sender, actor) order users expect from local actors.
//!
//! The cost: "no responders" from the server only says the *node* is absent;
//! an actor that a live node does not expose is reported by that node
//! (status `UnknownTarget`), which the asker sees as the same error.
//!
//! Every subject starts with `troupe.<cluster>.`, so two clusters sharing a
//! server never see each other's traffic (and a server's permissions can
//! fence a node's namespace with one `troupe.<cluster>.>` rule; a user
//! without it is refused at connect, see [`permissions`](crate::permissions)).
//!
//! # Threads and invariants
//! - A node owns a small tokio runtime (its `threads`, default 1) that runs
//!   the NATS client, the inbox loop and one flusher task per peer node.
//!   Blocking calls (`connect`, `RemoteRef::ask`) must not be made from
//!   async code; use the `_async` forms there.
//! - The inbox loop never panics on input: every frame ends in one counter of
//!   [`NodeStats`] and bad ones are logged with `tracing`.
//! - Dropping the node flushes what tells have queued and acks what it
//!   received (for at most [`NodeBuilder::shutdown_grace`]) before closing
//!   the connection.
//!
//! # Links: the receiver's half
//!
//! Every batch of tells starts with a link frame (sender epoch, sender name,
//! first sequence number; see [`envelope`](crate::envelope)). The inbox loop
//! keeps, per sender name, `{epoch, base, upto, received, dropped, dirty}`:
//! a new epoch (the sender restarted) or a first sight starts fresh state
//! with `base` = the batch's first number. A batch with first `F` and `k`
//! tells sets `upto = max(upto, F + k - 1)`, adds `k` to `received` and its
//! undelivered tells to `dropped`, counts `F - (upto + 1)` missed numbers if
//! it skips ahead, and marks the state dirty (a probe, `k = 0`, too, so an
//! ack lost on the way is sent again). One small *link task* per node runs
//! every [`NodeBuilder::link_sync`]: it publishes an ack for each dirty
//! state to the sender's inbox, and asks each of this node's outboxes
//! whether its link wants a probe (see `outbox.rs`). Acks arriving here are
//! handed to the outbox of the peer that sent them, if it is this epoch's.
//! The loop takes the link table's lock once per NATS message and
//! allocates only at a sender's first sight.
//!
//! The link table is keyed by names read off the wire, so it is bounded:
//! at most [`NodeBuilder::max_links`] states (a new sender beyond them is
//! not tracked: its tells are delivered, counted in `links_refused`, and
//! its sender sees them unconfirmed), and the link task drops a state that
//! has been acked and quiet for [`NodeBuilder::link_idle`]. Dropping such a
//! state loses nothing: the sender's next batch starts a fresh one whose
//! base follows the last number acked, and a sender whose last ack was
//! lost probes (at least every 32 periods) long before the state goes.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_nats::{Client, ConnectOptions, Event, Message, Subject};
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::StreamExt;
use parking_lot::{Mutex, RwLock};
use tokio::runtime::{Handle, Runtime};
use tokio::task::JoinHandle;

use crate::auth::ClusterKey;
use crate::envelope::{
    append_seal, decode_body, decode_frame, encode_frame, link_frame_len, open_sealed, Frame,
    Frames, Header, Kind, LinkAck, Status, HEADER_LEN, SEAL_FRAME_LEN,
};
use crate::error::ask_error_of;
use crate::message::{type_id, RemoteMessage, TypeEntry, TypeRegistry};
use crate::outbox::{Outbox, MAX_PROBE_GAP};
use crate::permissions::Violations;
use crate::schema::{self, SchemaMismatch, SchemaSide};
use crate::stats::{add_and_log, bump, bump_and_log, Counters, NodeStats};
use crate::{NodeError, RemoteRef};

/// The largest gap in a sender's sequence numbers counted as missed tells;
/// a larger jump restarts the link state (see `Shared::account_run`).
pub(crate) const MAX_GAP: u64 = 1 << 24;

/// What a local actor said to a tell.
pub(crate) enum Outcome {
    Delivered,
    Undecodable,
    Refused,
}

pub(crate) type TellFn = Box<dyn Fn(&[u8]) -> Outcome + Send + Sync>;
/// Decodes an ask, sends it to the actor; the future gives the reply frame.
pub(crate) type AskFn =
    Box<dyn Fn(&Frame<'_>, usize) -> Result<BoxFuture<'static, Vec<u8>>, Status> + Send + Sync>;

#[derive(Default)]
pub(crate) struct Handlers {
    pub tell: Option<TellFn>,
    pub ask: Option<AskFn>,
    /// The type's stable name and Rust type, for a schema mismatch's report.
    pub entry: Option<TypeEntry>,
    /// The schema fingerprints of the type as told, and as asked (with its
    /// reply); [`schema::UNCHECKED`] when it could not be traced.
    pub tell_schema: u64,
    pub ask_schema: u64,
}

pub(crate) struct Target {
    pub name: String,
    pub by_type: HashMap<u64, Handlers>,
}

/// The receiver's state of one link (tells from one sender node); see the
/// module docs.
pub(crate) struct LinkIn {
    /// The sender's inbox, where acks go.
    subject: Subject,
    epoch: u64,
    base: u64,
    upto: u64,
    received: u64,
    dropped: u64,
    /// Changed since the last ack was sent.
    dirty: bool,
    /// The link task's tick when a batch last came in on this link.
    seen_tick: u64,
}

impl LinkIn {
    fn fresh(&mut self, epoch: u64, first: u64) {
        self.epoch = epoch;
        self.base = first;
        self.upto = first.saturating_sub(1);
        self.received = 0;
        self.dropped = 0;
    }
}

/// The link a run of tells in one NATS message belongs to.
struct LinkRun<'a> {
    sender: &'a str,
    epoch: u64,
    first: u64,
    tells: u64,
    dropped: u64,
}

/// What the node's tasks and its references share.
pub(crate) struct Shared {
    pub cluster: String,
    pub name: Arc<str>,
    /// This connection's epoch: a random number written in every link frame,
    /// so a restarted process under the same name starts new links.
    pub epoch: u64,
    /// Receiver state per sender node name (bounded: see the module docs).
    pub links: Mutex<HashMap<String, LinkIn>>,
    pub max_links: usize,
    /// Ticks of the link task without a batch after which an acked link
    /// state is dropped.
    pub idle_ticks: u64,
    /// The link task's ticks so far.
    pub tick: AtomicU64,
    pub client: Client,
    pub handle: Handle,
    pub types: Mutex<TypeRegistry>,
    pub targets: RwLock<HashMap<u64, Target>>,
    pub peers: Mutex<HashMap<String, Arc<Outbox>>>,
    pub flushers: Mutex<Vec<JoinHandle<()>>>,
    pub counters: Arc<Counters>,
    pub connected: Arc<AtomicBool>,
    /// The cluster key: every message to a node's inbox is sealed with it,
    /// and only sealed ones are obeyed (see [`auth`](crate::auth)).
    pub key: Option<ClusterKey>,
    /// The same, watched: an ask in flight waits on it beside its reply.
    pub link_state: tokio::sync::watch::Receiver<bool>,
    pub closed: AtomicBool,
    /// The largest body a received frame may have: the server's max payload
    /// less a header.
    pub max_frame_body: usize,
    /// The largest body of a tell or ask sent from here: room is also left
    /// for the link frame that opens a batch.
    pub max_body: usize,
    pub batch_bytes: usize,
    pub queue_bytes: usize,
    pub serve_timeout: Duration,
    pub ask_spin: Duration,
    /// The last schema mismatch seen (see [`schema`]).
    pub last_mismatch: Mutex<Option<SchemaMismatch>>,
    /// Permission violations the server reported (see [`crate::permissions`]).
    pub violations: Arc<Violations>,
}

/// The subject of a node's inbox.
pub fn node_subject(cluster: &str, node: &str) -> String {
    format!("troupe.{cluster}.node.{node}")
}

fn check_token(what: &str, s: &str) -> Result<(), NodeError> {
    if !is_token(s) {
        return Err(NodeError::BadName(format!(
            "{what} {s:?} must be a non-empty run of letters, digits, '_' and '-'"
        )));
    }
    Ok(())
}

/// Configures and connects a [`Node`].
///
/// ```no_run
/// # use troupe_remote::Node;
/// let node = Node::builder("nats://127.0.0.1:4222", "shop-1")
///     .cluster("staging")
///     .credentials_file("/etc/nats/shop.creds")
///     .connect()?;
/// # Ok::<(), troupe_remote::NodeError>(())
/// ```
#[must_use = "a builder does nothing until .connect()"]
pub struct NodeBuilder {
    url: String,
    name: String,
    cluster: String,
    types: Vec<TypeEntry>,
    credentials_file: Option<PathBuf>,
    options: Option<Box<dyn FnOnce(ConnectOptions) -> ConnectOptions + Send>>,
    threads: usize,
    batch_bytes: usize,
    queue_bytes: usize,
    serve_timeout: Duration,
    ask_spin: Duration,
    shutdown_grace: Duration,
    link_sync: Duration,
    link_idle: Duration,
    max_links: usize,
    key: Option<ClusterKey>,
}

impl NodeBuilder {
    /// The cluster namespace (default `"default"`): nodes only reach nodes of
    /// their cluster.
    pub fn cluster(mut self, cluster: impl Into<String>) -> Self {
        self.cluster = cluster.into();
        self
    }

    /// Registers a message type up front, so a clash with another type is
    /// reported by [`connect`](Self::connect), naming both.
    pub fn register<M: RemoteMessage>(mut self) -> Self {
        self.types.push(TypeEntry::of::<M>());
        self
    }

    /// Authenticates with a NATS credentials file (JWT + nkey seed).
    pub fn credentials_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.credentials_file = Some(path.into());
        self
    }

    /// Any other `async-nats` connect option (token, user and password, TLS,
    /// reconnect policy...), applied after the node's own.
    pub fn connect_options(
        mut self,
        f: impl FnOnce(ConnectOptions) -> ConnectOptions + Send + 'static,
    ) -> Self {
        self.options = Some(Box::new(f));
        self
    }

    /// Threads of the node's I/O runtime (default 1).
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n.max(1);
        self
    }

    /// Upper bound of one coalesced NATS message (default 8 KiB; never above
    /// the server's max payload). Measured on 2 cores: 8 KiB moves 1 KiB
    /// tells ~25% faster than 64 KiB (whole batches fit the client's and the
    /// server's 64 KiB read buffers) and 64-byte tells as fast.
    pub fn batch_bytes(mut self, n: usize) -> Self {
        self.batch_bytes = n.max(HEADER_LEN + 1);
        self
    }

    /// Bytes of tells a peer's outbox may hold before `tell` answers
    /// `SendError::Full` (default 16 MiB).
    pub fn queue_bytes(mut self, n: usize) -> Self {
        self.queue_bytes = n;
        self
    }

    /// How long this node waits for a local actor to answer a remote ask
    /// (default 60 s); the asker's own timeout usually ends it sooner.
    pub fn serve_timeout(mut self, t: Duration) -> Self {
        self.serve_timeout = t;
        self
    }

    /// How long the inbox loop spins waiting for a local actor's reply to a
    /// remote ask before leaving it to a task (default 40 µs; zero turns it
    /// off). An actor that answers at once then has its reply sent without
    /// the I/O thread sleeping and being woken, which on an idle VM costs
    /// tens of µs; measured on 2 cores, it takes the serving side's share of
    /// a remote ask's p50 from ~20 µs to a few. The price: up to this much
    /// CPU per served ask while the actor has not replied.
    pub fn ask_spin(mut self, t: Duration) -> Self {
        self.ask_spin = t;
        self
    }

    /// The period of the node's link task (default 100 ms): how often it
    /// acknowledges the tells it received to their senders, and how often a
    /// sender may probe a quiet link whose tells are not all confirmed (an
    /// unanswered probe doubles the gap, up to 32 periods). The sender's
    /// `tells_unconfirmed` drains within about two periods of a link going
    /// quiet.
    pub fn link_sync(mut self, period: Duration) -> Self {
        self.link_sync = period.max(Duration::from_millis(1));
        self
    }

    /// How long a sender's link state is kept after its last batch, once
    /// acked (default 60 s; at least 64 [`link_sync`](Self::link_sync)
    /// periods, so a sender's probe always comes first).
    pub fn link_idle(mut self, idle: Duration) -> Self {
        self.link_idle = idle;
        self
    }

    /// The most senders whose links this node tracks at once (default
    /// 1024). The table is keyed by names read off the wire; a sender beyond
    /// the bound still has its tells delivered, but unacknowledged (counted
    /// in `NodeStats::links_refused`).
    pub fn max_links(mut self, n: usize) -> Self {
        self.max_links = n.max(1);
        self
    }

    /// The cluster's shared secret: this node seals every message it
    /// publishes to a node's inbox with HMAC-SHA256 under it, and obeys
    /// only messages sealed with it (see [`auth`](crate::auth)). Set the
    /// same secret on every node of the cluster.
    pub fn secret(self, secret: impl AsRef<[u8]>) -> Self {
        self.cluster_key(ClusterKey::new(secret))
    }

    /// As [`secret`](Self::secret), with a key already made.
    pub fn cluster_key(mut self, key: ClusterKey) -> Self {
        self.key = Some(key);
        self
    }

    /// How long dropping the node waits to flush queued tells (default 2 s).
    pub fn shutdown_grace(mut self, t: Duration) -> Self {
        self.shutdown_grace = t;
        self
    }

    /// Checks the names and the registered types; gives the type registry.
    fn checked(&self) -> Result<TypeRegistry, NodeError> {
        check_token("cluster", &self.cluster)?;
        check_token("node name", &self.name)?;
        let mut types = TypeRegistry::default();
        for t in &self.types {
            types.insert(*t)?;
        }
        Ok(types)
    }

    /// Connects, checks the registered types, takes the node's name in the
    /// cluster (refused if a live node holds it) and starts serving.
    pub fn connect(self) -> Result<Node, NodeError> {
        let types = self.checked()?;
        let io = Io::start(&self.name, self.threads)?;
        let handle = io.handle.clone();
        let grace = self.shutdown_grace;
        let shared = block_on(&handle, start(self, types, handle.clone()))
            .unwrap_or_else(|| Err(NodeError::Connect("the I/O runtime stopped".into())))?;
        Ok(Node {
            shared,
            io: Some(io),
            grace,
        })
    }

    /// Connects from async code, on the caller's tokio runtime (which must
    /// enable I/O and time): no I/O thread of the node's own. `ask_async`
    /// called on that runtime then runs without a thread hop, which is the
    /// fastest ask. Blocking calls (`ask`, `ping`, `flush`) must then come
    /// from threads outside that runtime.
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), troupe_remote::NodeError> {
    /// let node = troupe_remote::Node::builder("nats://127.0.0.1:4222", "web-1").connect_async().await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect_async(self) -> Result<Node, NodeError> {
        let types = self.checked()?;
        let handle = Handle::try_current().map_err(|_| {
            NodeError::Connect("connect_async must run inside a tokio runtime".into())
        })?;
        let grace = self.shutdown_grace;
        let shared = start(self, types, handle).await?;
        Ok(Node {
            shared,
            io: None,
            grace,
        })
    }
}

async fn start(
    b: NodeBuilder,
    types: TypeRegistry,
    handle: Handle,
) -> Result<Arc<Shared>, NodeError> {
    let connected = Arc::new(AtomicBool::new(true));
    let flag = connected.clone();
    let (link_up, link_state) = tokio::sync::watch::channel(true);
    let node = b.name.clone();
    let violations = Arc::new(Violations::default());
    let noting = violations.clone();
    let mut opts = match &b.credentials_file {
        Some(p) => ConnectOptions::with_credentials_file(p.clone())
            .await
            .map_err(|e| NodeError::Connect(format!("credentials file {}: {e}", p.display())))?,
        None => ConnectOptions::new(),
    };
    opts = opts
        .name(format!("troupe/{}/{}", b.cluster, b.name))
        .custom_inbox_prefix(format!("troupe.{}._INBOX", b.cluster))
        .event_callback(move |event| {
            let flag = flag.clone();
            let node = node.clone();
            let link_up = link_up.clone();
            if let Event::ServerError(e) = &event {
                noting.note(&node, e);
            }
            async move {
                match event {
                    Event::Connected => {
                        flag.store(true, Ordering::Release);
                        link_up.send_replace(true);
                        tracing::info!(node = %node, "connected to the NATS server");
                    }
                    Event::Disconnected | Event::Closed => {
                        flag.store(false, Ordering::Release);
                        // Asks in flight end now, with `Disconnected`.
                        link_up.send_replace(false);
                        tracing::warn!(node = %node, %event, "lost the NATS server");
                    }
                    other => tracing::debug!(node = %node, event = %other, "NATS event"),
                }
            }
        });
    if let Some(f) = b.options {
        opts = f(opts);
    }
    let client = opts
        .connect(b.url.as_str())
        .await
        .map_err(|e| NodeError::Connect(format!("{}: {e}", b.url)))?;
    let subject = node_subject(&b.cluster, &b.name);
    // Is the name taken? A live node answers a ping; no node means no
    // responders. Best effort: two nodes starting at the same instant under
    // one name can both pass (the server has no exclusive subscriptions).
    let mut probe = Vec::with_capacity(HEADER_LEN);
    let ping = Header::new(Kind::Ping, 0, 0, 0);
    let _ = encode_frame(&mut probe, ping, &(), 0);
    if let Some(key) = &b.key {
        append_seal(&mut probe, key, &subject);
    }
    let req = async_nats::Request::new()
        .payload(probe.into())
        .timeout(Some(Duration::from_millis(500)));
    if client.send_request(subject.clone(), req).await.is_ok() {
        return Err(NodeError::NameTaken(b.name));
    }
    crate::permissions::probe(&client, &violations, &b.cluster, &subject).await?;
    let max_payload = client.server_info().max_payload.max(HEADER_LEN + 1);
    let sub = client
        .subscribe(subject.clone())
        .await
        .map_err(|e| NodeError::Subscribe(e.to_string()))?;
    // Once `connect` returns, the server must have the subscription: a peer
    // that publishes right after would otherwise find no one there (its
    // tells lost, and counted lost by its link accounting).
    client
        .flush()
        .await
        .map_err(|e| NodeError::Subscribe(e.to_string()))?;
    let link_len = link_frame_len(&b.name);
    // Room for the seal frame every message then ends with.
    let seal_len = if b.key.is_some() { SEAL_FRAME_LEN } else { 0 };
    let shared = Arc::new(Shared {
        cluster: b.cluster,
        epoch: new_epoch(),
        name: b.name.into(),
        links: Mutex::new(HashMap::new()),
        max_links: b.max_links,
        idle_ticks: {
            let sync = b.link_sync.as_nanos().max(1);
            let ticks = b.link_idle.as_nanos() / sync;
            (ticks.min(u128::from(u64::MAX)) as u64).max(2 * u64::from(MAX_PROBE_GAP))
        },
        tick: AtomicU64::new(0),
        client,
        handle: handle.clone(),
        types: Mutex::new(types),
        targets: RwLock::new(HashMap::new()),
        peers: Mutex::new(HashMap::new()),
        flushers: Mutex::new(Vec::new()),
        counters: Arc::new(Counters::default()),
        connected,
        link_state,
        closed: AtomicBool::new(false),
        max_frame_body: max_payload - HEADER_LEN,
        max_body: max_payload.saturating_sub(HEADER_LEN + link_len + seal_len),
        batch_bytes: b.batch_bytes.min(max_payload.saturating_sub(seal_len)),
        key: b.key,
        queue_bytes: b.queue_bytes,
        serve_timeout: b.serve_timeout,
        ask_spin: b.ask_spin,
        last_mismatch: Mutex::new(None),
        violations,
    });
    // The inbox loop holds a weak reference so that dropping the node ends it.
    let weak = Arc::downgrade(&shared);
    let mut sub = sub;
    handle.spawn(async move {
        while let Some(msg) = sub.next().await {
            let Some(shared) = weak.upgrade() else { break };
            // A bug on some input must not make the node deaf: the message
            // is dropped, counted and logged, and the loop goes on. (The
            // decoders are total; this is the second line.)
            let caught =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| shared.on_message(msg)));
            if caught.is_err() {
                bump(&shared.counters.panics);
                tracing::error!(node = %shared.name, "handling an inbox message panicked; dropped it");
            }
        }
    });
    let weak = Arc::downgrade(&shared);
    handle.spawn(async move {
        let mut tick = tokio::time::interval(b.link_sync);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(shared) = weak.upgrade() else { break };
            if shared.closed.load(Ordering::Acquire) {
                break;
            }
            let tick = std::panic::AssertUnwindSafe(shared.link_tick());
            if futures::FutureExt::catch_unwind(tick).await.is_err() {
                bump(&shared.counters.panics);
                tracing::error!(node = %shared.name, "the link task's tick panicked; it goes on");
            }
        }
    });
    Ok(shared)
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

/// Whether a sender's name from the wire is a valid node name (it becomes
/// part of the ack's subject).
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Runs `fut` on the node's runtime and waits for it on this thread (which
/// must not be one of the runtime's own).
/// `None` if the runtime dropped it (it is shutting down).
pub(crate) fn block_on<F>(handle: &Handle, fut: F) -> Option<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    handle.spawn(async move {
        let _ = tx.send(fut.await);
    });
    rx.recv().ok()
}

impl Shared {
    fn on_message(self: &Arc<Self>, msg: Message) {
        let payload = match &self.key {
            None => &msg.payload[..],
            Some(key) => match open_sealed(&msg.payload, key, &msg.subject) {
                Some(frames) => frames,
                None => {
                    if bump_and_log(&self.counters.unauthenticated) {
                        let count = self.counters.unauthenticated.load(Ordering::Relaxed);
                        tracing::warn!(node = %self.name, bytes = msg.payload.len(), count, "dropped a message without a good seal (not from a node of this cluster)");
                    }
                    if let Some(reply) = msg.reply {
                        self.reply_status(reply, Status::BadFrame, 0, 0, 0);
                    }
                    return;
                }
            },
        };
        match msg.reply {
            Some(reply) => self.on_request(payload, reply),
            None => self.on_batch(payload),
        }
    }

    fn bad_frame(&self, err: &dyn std::fmt::Display, len: usize) {
        if bump_and_log(&self.counters.bad_frames) {
            let count = self.counters.bad_frames.load(Ordering::Relaxed);
            tracing::warn!(node = %self.name, bytes = len, error = %err, count, "dropped a bad frame");
        }
    }

    fn on_batch(&self, payload: &[u8]) {
        let targets = self.targets.read();
        let mut run: Option<LinkRun<'_>> = None;
        for frame in Frames::new(payload, self.max_frame_body) {
            let frame = match frame {
                Ok(f) => f,
                Err(e) => {
                    self.bad_frame(&e, payload.len());
                    break;
                }
            };
            bump(&self.counters.frames_received);
            match frame.kind {
                Kind::Tell => {}
                Kind::Link => {
                    bump(&self.counters.link_frames);
                    if let Some(r) = run.take() {
                        self.end_run(r);
                    }
                    match decode_body::<&str>(frame.body) {
                        Ok(sender) if is_token(sender) && frame.correlation > 0 => {
                            run = Some(LinkRun {
                                sender,
                                epoch: frame.type_id,
                                first: frame.correlation,
                                tells: 0,
                                dropped: 0,
                            })
                        }
                        _ => {
                            self.bad_frame(&"a link frame with a bad name or number", payload.len())
                        }
                    }
                    continue;
                }
                Kind::Ack => {
                    bump(&self.counters.link_frames);
                    self.on_ack(&frame, payload.len());
                    continue;
                }
                // A keyed sender's seal, read by a node without a key (a
                // keyed node checked and took it off before).
                Kind::Seal => continue,
                _ => {
                    self.bad_frame(
                        &format_args!("a {:?} frame outside a request", frame.kind),
                        payload.len(),
                    );
                    continue;
                }
            }
            let delivered = self.deliver(&targets, &frame, run.as_ref().map(|r| r.sender));
            match run.as_mut() {
                Some(r) => {
                    r.tells += 1;
                    r.dropped += u64::from(!delivered);
                }
                None => bump(&self.counters.unlinked),
            }
        }
        drop(targets);
        if let Some(r) = run {
            self.end_run(r);
        }
    }

    /// Whether a received tell's or ask's fingerprint `theirs` agrees with
    /// `ours`; if not, the mismatch is counted, logged (rate-limited) and
    /// kept. 0 on either side is not checked.
    fn schema_agrees(
        &self,
        h: &Handlers,
        ours: u64,
        theirs: u64,
        sender: Option<&str>,
        ask: bool,
    ) -> bool {
        if ours == schema::UNCHECKED || theirs == schema::UNCHECKED || ours == theirs {
            return true;
        }
        let entry = h.entry.unwrap_or(TypeEntry {
            id: 0,
            name: "?",
            rust_type: "?",
        });
        self.schema_mismatch(SchemaMismatch {
            name: entry.name.to_string(),
            ask,
            here: SchemaSide {
                node: self.name.to_string(),
                rust_type: Some(entry.rust_type.to_string()),
                fingerprint: ours,
            },
            there: SchemaSide {
                node: sender.unwrap_or_default().to_string(),
                rust_type: None,
                fingerprint: theirs,
            },
        });
        false
    }

    /// Counts, logs (at the 1st, 2nd, 4th... occurrence) and keeps a
    /// schema mismatch.
    pub(crate) fn schema_mismatch(&self, m: SchemaMismatch) {
        if bump_and_log(&self.counters.schema_mismatches) {
            let count = self.counters.schema_mismatches.load(Ordering::Relaxed);
            tracing::error!(node = %self.name, count, "{m}");
        }
        *self.last_mismatch.lock() = Some(m);
    }

    /// Hands one tell to its actor; says whether it was delivered.
    fn deliver(
        &self,
        targets: &HashMap<u64, Target>,
        frame: &Frame<'_>,
        sender: Option<&str>,
    ) -> bool {
        let Some(target) = targets.get(&frame.target) else {
            if bump_and_log(&self.counters.unknown_target) {
                tracing::warn!(node = %self.name, target = format_args!("{:#018x}", frame.target), "tell for an actor not exposed here");
            }
            return false;
        };
        let handlers = target.by_type.get(&frame.type_id);
        if let Some(h) = handlers.filter(|h| h.tell.is_some()) {
            if !self.schema_agrees(h, h.tell_schema, frame.correlation, sender, false) {
                return false;
            }
        }
        let Some(tell) = handlers.and_then(|h| h.tell.as_ref()) else {
            if bump_and_log(&self.counters.unknown_type) {
                tracing::warn!(node = %self.name, actor = %target.name, type_id = format_args!("{:#018x}", frame.type_id), "tell of a type the actor does not take remotely");
            }
            return false;
        };
        match tell(frame.body) {
            Outcome::Delivered => {
                bump(&self.counters.delivered);
                true
            }
            Outcome::Refused => {
                bump(&self.counters.refused);
                tracing::debug!(node = %self.name, actor = %target.name, "the actor refused a remote tell (full or stopped)");
                false
            }
            Outcome::Undecodable => {
                if bump_and_log(&self.counters.undecodable) {
                    tracing::warn!(node = %self.name, actor = %target.name, "a remote tell's body did not decode to its type");
                }
                false
            }
        }
    }

    /// Accounts a run of tells in the sender's link state.
    fn end_run(&self, r: LinkRun<'_>) {
        let now = self.tick.load(Ordering::Relaxed);
        let mut links = self.links.lock();
        let full = links.len() >= self.max_links;
        match links.get_mut(r.sender) {
            Some(st) => {
                st.seen_tick = now;
                self.account_run(st, &r)
            }
            None if full => {
                drop(links);
                if bump_and_log(&self.counters.links_refused) {
                    let count = self.counters.links_refused.load(Ordering::Relaxed);
                    tracing::warn!(node = %self.name, sender = %r.sender, count, max = self.max_links, "the link table is full: this sender's tells are not acknowledged");
                }
            }
            None => {
                // A sender's first sight: the one allocation of its link.
                let mut st = LinkIn {
                    subject: Subject::from(node_subject(&self.cluster, r.sender)),
                    epoch: r.epoch,
                    base: 0,
                    upto: 0,
                    received: 0,
                    dropped: 0,
                    dirty: false,
                    seen_tick: now,
                };
                st.fresh(r.epoch, r.first);
                self.account_run(&mut st, &r);
                links.insert(r.sender.to_string(), st);
            }
        }
    }

    fn account_run(&self, st: &mut LinkIn, r: &LinkRun<'_>) {
        if st.epoch != r.epoch {
            st.fresh(r.epoch, r.first);
        }
        let expected = st.upto.saturating_add(1);
        if r.first > expected {
            let missed = r.first - expected;
            if missed > MAX_GAP {
                // No sender loses this many in one gap (an outage loses
                // what the buffers held, ~10^6 at most): a forged or
                // garbled number. Start the state over at it, as a new
                // epoch would; the sender's ledger then counts the
                // numbers before it lost, and `frames_missed` keeps its
                // meaning.
                self.bad_frame(
                    &format_args!("a link frame skipping {missed} sequence numbers"),
                    0,
                );
                st.fresh(r.epoch, r.first);
            } else if add_and_log(&self.counters.frames_missed, missed) {
                let total = self.counters.frames_missed.load(Ordering::Relaxed);
                tracing::warn!(node = %self.name, sender = %r.sender, missed, total, "tells from this sender never arrived");
            }
        }
        // `first >= 1` (checked at decoding), so neither side wraps.
        st.upto = st
            .upto
            .max(r.first.saturating_add(r.tells).saturating_sub(1));
        st.received = st.received.saturating_add(r.tells);
        st.dropped = st.dropped.saturating_add(r.dropped);
        st.dirty = true;
    }

    /// Hands a peer's ack to the outbox for that peer.
    fn on_ack(&self, frame: &Frame<'_>, len: usize) {
        let ack = match LinkAck::decode(frame) {
            Ok(a) => a,
            Err(e) => return self.bad_frame(&format_args!("an ack that did not decode: {e}"), len),
        };
        if ack.epoch != self.epoch {
            tracing::debug!(node = %self.name, peer = %ack.receiver, "an ack for an earlier connection of this node");
            return;
        }
        let outbox = self.peers.lock().get(ack.receiver.as_str()).cloned();
        match outbox {
            Some(o) => o.on_ack(&ack, &self.counters),
            None => {
                tracing::debug!(node = %self.name, peer = %ack.receiver, "an ack from a node this one never sent to")
            }
        }
    }

    /// The link task's work: acks for dirty receiver states, probes for quiet
    /// outboxes with unconfirmed tells.
    async fn link_tick(&self) {
        let now = self.tick.fetch_add(1, Ordering::Relaxed) + 1;
        if !self.connected.load(Ordering::Acquire) {
            return;
        }
        self.send_acks().await;
        // After the acks: a state still dirty (its ack failed) stays.
        let idle = self.idle_ticks;
        self.links
            .lock()
            .retain(|_, l| l.dirty || now.saturating_sub(l.seen_tick) <= idle);
        let outboxes: Vec<Arc<Outbox>> = self.peers.lock().values().cloned().collect();
        for o in outboxes {
            if o.wants_probe() {
                o.push_probe();
            }
        }
    }

    /// Publishes an ack for every receiver link state that changed since its
    /// last one.
    async fn send_acks(&self) {
        let acks: Vec<(String, Subject, Vec<u8>)> = {
            let mut links = self.links.lock();
            links
                .iter_mut()
                .filter(|(_, l)| l.dirty)
                .map(|(sender, l)| {
                    l.dirty = false;
                    let ack = LinkAck {
                        epoch: l.epoch,
                        upto: l.upto,
                        receiver: self.name.to_string(),
                        base: l.base,
                        received: l.received,
                        dropped: l.dropped,
                    };
                    let mut out =
                        Vec::with_capacity(2 * HEADER_LEN + self.name.len() + SEAL_FRAME_LEN);
                    ack.encode(&mut out);
                    if let Some(key) = &self.key {
                        append_seal(&mut out, key, &l.subject);
                    }
                    (sender.clone(), l.subject.clone(), out)
                })
                .collect()
        };
        for (sender, subject, bytes) in acks {
            match self.client.publish(subject, bytes.into()).await {
                Ok(()) => bump(&self.counters.acks_sent),
                Err(e) => {
                    tracing::debug!(node = %self.name, sender = %sender, error = %e, "could not send an ack; will again");
                    if let Some(l) = self.links.lock().get_mut(&sender) {
                        l.dirty = true;
                    }
                }
            }
        }
    }

    fn on_request(self: &Arc<Self>, payload: &[u8], reply: Subject) {
        let frame = match decode_frame(payload, self.max_frame_body) {
            Ok((frame, [])) => frame,
            // A keyed sender's seal, read by a node without a key.
            Ok((frame, rest)) if rest.len() == SEAL_FRAME_LEN && rest[1] == Kind::Seal as u8 => {
                frame
            }
            Ok(_) => {
                self.bad_frame(&"a request holding more than one frame", payload.len());
                return self.reply_status(reply, Status::BadFrame, 0, 0, 0);
            }
            Err(e) => {
                self.bad_frame(&e, payload.len());
                return self.reply_status(reply, Status::BadFrame, 0, 0, 0);
            }
        };
        bump(&self.counters.frames_received);
        let (t, target, corr) = (frame.type_id, frame.target, frame.correlation);
        match frame.kind {
            Kind::Ping => return self.reply_status(reply, Status::Ok, 0, 0, corr),
            Kind::Ask => {}
            _ => {
                self.bad_frame(
                    &format_args!("a {:?} frame as a request", frame.kind),
                    payload.len(),
                );
                return self.reply_status(reply, Status::BadFrame, t, target, corr);
            }
        }
        let started = {
            let targets = self.targets.read();
            match targets.get(&target) {
                None => {
                    bump(&self.counters.unknown_target);
                    Err(Status::UnknownTarget)
                }
                Some(tg) => match tg.by_type.get(&t).filter(|h| h.ask.is_some()) {
                    None => {
                        bump(&self.counters.unknown_type);
                        Err(Status::UnknownType)
                    }
                    Some(h) if !self.schema_agrees(h, h.ask_schema, corr, None, true) => {
                        let rust_type = h.entry.map_or("?", |e| e.rust_type);
                        let mut out = Vec::with_capacity(HEADER_LEN + rust_type.len() + 10);
                        let head = Header {
                            kind: Kind::Reply,
                            status: Status::SchemaMismatch,
                            type_id: t,
                            target,
                            correlation: corr,
                        };
                        let ours = (rust_type, h.ask_schema);
                        let _ = encode_frame(&mut out, head, &ours, usize::MAX);
                        drop(targets);
                        let client = self.client.clone();
                        self.handle.spawn(async move {
                            let _ = client.publish(reply, out.into()).await;
                        });
                        return;
                    }
                    Some(h) => match h.ask.as_ref() {
                        Some(ask) => ask(&frame, self.max_frame_body),
                        None => Err(Status::UnknownType),
                    },
                },
            }
        };
        match started {
            Ok(mut fut) => {
                bump(&self.counters.asks_served);
                let client = self.client.clone();
                let limit = self.serve_timeout;
                let me = self.clone();
                let ready = spin_poll(&mut fut, self.ask_spin);
                self.handle.spawn(async move {
                    let bytes = match ready {
                        Some(bytes) => bytes,
                        None => match tokio::time::timeout(limit, fut).await {
                            Ok(bytes) => bytes,
                            Err(_) => status_frame(Status::Timeout, t, target, corr),
                        },
                    };
                    if let Err(e) = client.publish(reply, bytes.into()).await {
                        tracing::warn!(node = %me.name, error = %e, "could not send a reply");
                    }
                });
            }
            Err(status) => {
                if status == Status::BadFrame {
                    bump(&self.counters.undecodable);
                }
                self.reply_status(reply, status, t, target, corr)
            }
        }
    }

    fn reply_status(&self, reply: Subject, status: Status, t: u64, target: u64, corr: u64) {
        let bytes = status_frame(status, t, target, corr);
        let client = self.client.clone();
        self.handle.spawn(async move {
            let _ = client.publish(reply, bytes.into()).await;
        });
    }

    /// The outbox for `node`, made (with its flusher) on first use.
    pub(crate) fn outbox(self: &Arc<Self>, node: &str) -> Arc<Outbox> {
        let mut peers = self.peers.lock();
        if let Some(o) = peers.get(node) {
            return o.clone();
        }
        let outbox = Arc::new(Outbox::new(
            Subject::from(node_subject(&self.cluster, node)),
            self.epoch,
            self.name.clone(),
            self.batch_bytes,
            self.queue_bytes,
            self.key.clone(),
        ));
        let task = outbox
            .clone()
            .flusher(self.client.clone(), self.counters.clone());
        self.flushers.lock().push(self.handle.spawn(task));
        peers.insert(node.to_string(), outbox.clone());
        outbox
    }

    /// Sends one ask frame as a NATS request and decodes the reply. `ty`:
    /// the ask's type, named in a schema mismatch the peer reports.
    pub(crate) async fn request<R: serde::de::DeserializeOwned>(
        self: Arc<Self>,
        subject: Subject,
        frame: Bytes,
        correlation: u64,
        timeout: Duration,
        ty: Option<TypeEntry>,
    ) -> Result<R, troupe::AskError> {
        let frame = match &self.key {
            None => frame,
            Some(key) => {
                let mut sealed = Vec::with_capacity(frame.len() + SEAL_FRAME_LEN);
                sealed.extend_from_slice(&frame);
                append_seal(&mut sealed, key, &subject);
                sealed.into()
            }
        };
        let peer = subject
            .rsplit_once(".node.")
            .map_or("", |(_, node)| node)
            .to_string();
        let req = async_nats::Request::new()
            .payload(frame)
            .timeout(Some(timeout));
        // The client keeps a request waiting across a reconnect, until its
        // timeout; the README promises `Disconnected` at once instead.
        let mut link = self.link_state.clone();
        let sent = tokio::select! {
            biased;
            r = self.client.send_request(subject, req) => r,
            _ = link.wait_for(|up| !*up) => return Err(troupe::AskError::Disconnected),
        };
        let msg = match sent {
            Ok(m) => m,
            Err(e) => {
                return Err(match e.kind() {
                    async_nats::RequestErrorKind::TimedOut => troupe::AskError::Timeout,
                    async_nats::RequestErrorKind::NoResponders => troupe::AskError::NoResponders,
                    _ => troupe::AskError::Disconnected,
                })
            }
        };
        let bad = |why: &dyn std::fmt::Display| {
            if bump_and_log(&self.counters.bad_replies) {
                tracing::warn!(node = %self.name, error = %why, "a bad reply to an ask");
            }
            troupe::AskError::NoReply
        };
        match decode_frame(&msg.payload, self.max_frame_body.max(msg.payload.len())) {
            Ok((f, rest))
                if rest.is_empty() && f.kind == Kind::Reply && f.correlation == correlation =>
            {
                if f.status == Status::SchemaMismatch {
                    let theirs = decode_body::<(String, u64)>(f.body).ok();
                    let entry = ty.unwrap_or(TypeEntry {
                        id: 0,
                        name: "?",
                        rust_type: "?",
                    });
                    self.schema_mismatch(SchemaMismatch {
                        name: entry.name.to_string(),
                        ask: true,
                        here: SchemaSide {
                            node: self.name.to_string(),
                            rust_type: Some(entry.rust_type.to_string()),
                            fingerprint: correlation,
                        },
                        there: SchemaSide {
                            node: peer,
                            rust_type: theirs.as_ref().map(|t| t.0.clone()),
                            fingerprint: theirs.map_or(0, |t| t.1),
                        },
                    });
                }
                if f.status != Status::Ok {
                    return Err(ask_error_of(f.status));
                }
                decode_body(f.body).map_err(|e| bad(&e))
            }
            Ok(_) => Err(bad(&"not the reply frame of this ask")),
            Err(e) => Err(bad(&e)),
        }
    }

    pub(crate) fn register(&self, entry: TypeEntry) -> Result<(), NodeError> {
        self.types.lock().insert(entry)
    }
}

/// Polls a served ask's reply, spinning for at most `spin`: a fast actor's
/// reply is then sent without this thread going to sleep and being woken
/// (on a VM whose CPUs halt when idle, each wake-up costs tens of µs).
fn spin_poll(fut: &mut BoxFuture<'static, Vec<u8>>, spin: Duration) -> Option<Vec<u8>> {
    if spin.is_zero() {
        return None;
    }
    let waker = futures::task::noop_waker();
    let mut cx = std::task::Context::from_waker(&waker);
    let start = std::time::Instant::now();
    loop {
        if let std::task::Poll::Ready(bytes) = fut.as_mut().poll(&mut cx) {
            return Some(bytes);
        }
        if start.elapsed() >= spin {
            return None;
        }
        std::hint::spin_loop();
    }
}

pub(crate) fn status_frame(status: Status, t: u64, target: u64, corr: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + 1);
    let h = Header {
        kind: Kind::Reply,
        status,
        type_id: t,
        target,
        correlation: corr,
    };
    let _ = encode_frame(&mut out, h, &(), usize::MAX);
    out
}

/// A process's membership in a Troupe cluster over NATS.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use std::time::Duration;
/// use troupe::{Actor, ActorSystem, Context, ReplyTo};
/// use troupe_remote::{remote, Node};
///
/// #[remote("demo.Ping", reply = u64)]
/// #[derive(Serialize, Deserialize)]
/// struct Ping(u64);
///
/// struct Echo;
/// impl Actor for Echo {
///     type Msg = (Ping, ReplyTo<u64>);
///     fn handle(&mut self, (Ping(n), reply): Self::Msg, _: &mut Context<'_, Self>) { reply.reply(n); }
/// }
///
/// # let Some(nats) = troupe_test_nats::NatsServer::start_or_skip() else { return Ok(()) };
/// # let url = nats.url(); // e.g. "nats://127.0.0.1:4222"
/// let system = ActorSystem::new();
/// let echo = system.spawn(Echo);
/// let server = Node::connect(&url, "server")?;
/// server.expose("echo", &echo).ask::<Ping>(|q, r| (q, r)).serve()?;
///
/// let client = Node::connect(&url, "client")?;
/// let remote = client.lookup::<Ping>("echo@server")?;
/// assert_eq!(remote.ask(Ping(7), Duration::from_secs(1)), Ok(7));
/// # Ok::<(), troupe_remote::NodeError>(())
/// ```
pub struct Node {
    shared: Arc<Shared>,
    /// `None` when the node runs on the caller's runtime (`connect_async`).
    io: Option<Io>,
    grace: Duration,
}

/// The node's I/O runtime, driven by its own thread: a current-thread
/// runtime for one thread (the cheapest wake-ups), a multi-thread one above.
/// The thread blocks on `stop` and drops the runtime on its own stack, so a
/// node may be dropped anywhere, async code included.
struct Io {
    handle: Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Io {
    fn start(name: &str, threads: usize) -> Result<Io, NodeError> {
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread_name = format!("troupe-remote-{name}");
        let thread = std::thread::Builder::new()
            .name(thread_name.clone())
            .spawn(move || {
                let rt = if threads <= 1 {
                    tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                } else {
                    tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(threads)
                        .thread_name(thread_name)
                        .enable_all()
                        .build()
                };
                let rt: Runtime = match rt {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = tx.send(Err(e.to_string()));
                        return;
                    }
                };
                let _ = tx.send(Ok(rt.handle().clone()));
                let _ = rt.block_on(stopped);
                rt.shutdown_background();
            })
            .map_err(|e| NodeError::Connect(format!("cannot start the I/O thread: {e}")))?;
        match rx.recv() {
            Ok(Ok(handle)) => Ok(Io {
                handle,
                stop: Some(stop),
                thread: Some(thread),
            }),
            Ok(Err(e)) => Err(NodeError::Connect(format!(
                "cannot start the I/O runtime: {e}"
            ))),
            Err(_) => Err(NodeError::Connect("the I/O thread died at start".into())),
        }
    }
}

impl Drop for Io {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Node {
    /// Connects to the NATS server at `url` as `node_name` in the default
    /// cluster. Names are letters, digits, `_` and `-`.
    pub fn connect(url: &str, node_name: &str) -> Result<Node, NodeError> {
        Node::builder(url, node_name).connect()
    }

    /// A builder for a node with a cluster namespace, credentials, limits.
    pub fn builder(url: &str, node_name: &str) -> NodeBuilder {
        NodeBuilder {
            url: url.to_string(),
            name: node_name.to_string(),
            cluster: "default".to_string(),
            types: Vec::new(),
            credentials_file: None,
            options: None,
            threads: 1,
            batch_bytes: 8 * 1024,
            queue_bytes: 16 * 1024 * 1024,
            serve_timeout: Duration::from_secs(60),
            ask_spin: Duration::from_micros(40),
            shutdown_grace: Duration::from_secs(2),
            link_sync: Duration::from_millis(100),
            link_idle: Duration::from_secs(60),
            max_links: 1024,
            key: None,
        }
    }

    /// This node's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// This node's cluster.
    pub fn cluster(&self) -> &str {
        &self.shared.cluster
    }

    /// The subject of this node's inbox.
    pub fn subject(&self) -> String {
        node_subject(&self.shared.cluster, &self.shared.name)
    }

    /// The largest message body this node sends: the server's max payload
    /// less a frame header and the link frame that opens every batch.
    pub fn max_body(&self) -> usize {
        self.shared.max_body
    }

    /// Counters of traffic and bad input, and the gauge of tells not yet
    /// accounted (`tells_unconfirmed`, summed over this node's outboxes).
    pub fn stats(&self) -> NodeStats {
        let mut s = self.shared.counters.snapshot();
        s.tells_unconfirmed = self.unconfirmed();
        s.links = self.shared.links.lock().len() as u64;
        s
    }

    /// Tells accepted and not yet accounted, over all this node's outboxes.
    fn unconfirmed(&self) -> u64 {
        let outboxes: Vec<Arc<Outbox>> = self.shared.peers.lock().values().cloned().collect();
        outboxes.iter().map(|o| o.unconfirmed()).sum()
    }

    /// Waits, blocking this thread, until every tell this node accepted is
    /// accounted on this side (`stats().tells_unconfirmed == 0`: confirmed,
    /// refused by the peer, or counted lost), at most `timeout`; says
    /// whether it got there. Unlike [`flush`](Self::flush), which returns
    /// once the server has the tells, this waits for the peers' acks (about
    /// one to two [`NodeBuilder::link_sync`] periods on a healthy link). It
    /// cannot succeed while a peer is absent: its tells stay unconfirmed.
    pub fn settle(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if self.unconfirmed() == 0 {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Whether the connection to the server is up.
    pub fn is_connected(&self) -> bool {
        self.shared.connected.load(Ordering::Acquire)
    }

    /// The underlying NATS client (for raw traffic beside the actors).
    pub fn client(&self) -> &Client {
        &self.shared.client
    }

    /// The permission violations the server reported on this node's
    /// connection (see [`permissions`](crate::permissions)).
    pub fn violations(&self) -> Arc<Violations> {
        self.shared.violations.clone()
    }

    /// Registers a message type; refused if another type holds its id.
    pub fn register<M: RemoteMessage>(&self) -> Result<(), NodeError> {
        self.shared.register(TypeEntry::of::<M>())
    }

    /// Makes a local actor reachable as `name@<this node>`; say which
    /// remote types it takes on the returned [`Exposure`](crate::Exposure)
    /// and finish with `.serve()`.
    pub fn expose<A: troupe::Actor>(
        &self,
        name: &str,
        actor: &troupe::ActorRef<A>,
    ) -> crate::Exposure<'_, A> {
        crate::Exposure::new(self, name, actor.clone())
    }

    /// Stops serving the actor exposed as `name`; returns whether one was.
    pub fn unexpose(&self, name: &str) -> bool {
        self.shared.targets.write().remove(&type_id(name)).is_some()
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// A reference to the actor `actor@node` that takes `M`. No network
    /// round trip: a missing node or actor shows on the first ask
    /// (`AskError::NoResponders`) or in the remote node's counters (tells).
    pub fn lookup<M: RemoteMessage>(&self, name: &str) -> Result<RemoteRef<M>, NodeError> {
        let Some((actor, node)) = name.split_once('@') else {
            return Err(NodeError::BadName(format!(
                "{name:?} is not of the form actor@node"
            )));
        };
        if actor.is_empty() {
            return Err(NodeError::BadName(format!(
                "{name:?} has an empty actor name"
            )));
        }
        check_token("node name", node)?;
        self.register::<M>()?;
        Ok(RemoteRef::new(
            self.shared.clone(),
            self.shared.outbox(node),
            actor,
            node,
        ))
    }

    /// The last schema mismatch this node saw: a tell or ask it received
    /// whose type has another shape here under the same stable name, or an
    /// ask of its own that the peer refused for that reason. Both sides are
    /// named; see [`schema`](crate::schema) for how to evolve a type.
    pub fn last_schema_mismatch(&self) -> Option<SchemaMismatch> {
        self.shared.last_mismatch.lock().clone()
    }

    /// Asks node `node` of this cluster whether it is there; the round trip.
    pub fn ping(&self, node: &str, timeout: Duration) -> Result<Duration, troupe::AskError> {
        check_token("node name", node).map_err(|_| troupe::AskError::NoResponders)?;
        let subject = Subject::from(node_subject(&self.shared.cluster, node));
        let mut frame = Vec::with_capacity(HEADER_LEN);
        let h = Header::new(Kind::Ping, 0, 0, 0);
        let _ = encode_frame(&mut frame, h, &(), 0);
        let shared = self.shared.clone();
        let start = std::time::Instant::now();
        block_on(
            &self.shared.handle,
            shared.request::<()>(subject, frame.into(), 0, timeout, None),
        )
        .unwrap_or(Err(troupe::AskError::Disconnected))?;
        Ok(start.elapsed())
    }

    /// Flushes queued tells and waits until the server has them (or `timeout`).
    pub fn flush(&self, timeout: Duration) -> bool {
        let shared = self.shared.clone();
        block_on(&self.shared.handle, async move {
            tokio::time::timeout(timeout, async {
                loop {
                    let pending = shared.peers.lock().values().any(|o| o.pending());
                    if !pending {
                        break;
                    }
                    tokio::time::sleep(Duration::from_micros(200)).await;
                }
                shared.client.flush().await.is_ok()
            })
            .await
            .unwrap_or(false)
        })
        .unwrap_or(false)
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
        let outboxes: Vec<_> = self.shared.peers.lock().values().cloned().collect();
        for o in &outboxes {
            o.close();
        }
        let flushers: Vec<_> = std::mem::take(&mut *self.shared.flushers.lock());
        let client = self.shared.client.clone();
        let shared = self.shared.clone();
        let grace = self.grace;
        let flush = async move {
            let _ = tokio::time::timeout(grace, async {
                for f in flushers {
                    let _ = f.await;
                }
                // A last account to the senders, so that what this node took
                // is confirmed rather than counted lost when a process under
                // its name starts again.
                shared.send_acks().await;
                // Unsubscribes, sends what the client holds, and closes the
                // connection (references still held now get `Closed`).
                let _ = client.drain().await;
            })
            .await;
        };
        if self.io.is_some() {
            let (tx, rx) = oneshot::channel();
            self.shared.handle.spawn(async move {
                flush.await;
                let _ = tx.send(());
            });
            let _ = rx.recv_timeout(grace + Duration::from_millis(100));
            // Dropping `self.io` next stops the runtime's thread.
        } else {
            // On the caller's runtime, which may be this very thread: flush
            // in the background rather than wait for it here.
            self.shared.handle.spawn(flush);
        }
    }
}
