//! Configuring and connecting a [`Node`]: [`NodeBuilder`].
//!
//! Invariants:
//! - Names are checked (letters, digits, `_`, `-`) and registered types
//!   checked for clashes before anything is connected.
//! - A node made with [`Node::builder`] connects over NATS
//!   ([`NatsOptions`]); one made with [`Node::builder_on`] speaks through
//!   the transport it is given. Everything else is the same.
//! - `connect` runs the node on the process's I/O runtime
//!   ([`runtime`](crate::runtime)) and blocks on it; `connect_async` runs
//!   the node on the caller's runtime.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Handle;

use crate::api::runtime::{block_on, shared};
use crate::protocol::auth::ClusterKey;
use crate::protocol::core::{is_token, Config, Core};
use crate::protocol::envelope::HEADER_LEN;
use crate::protocol::message::{RemoteMessage, TypeEntry, TypeRegistry};
use crate::transport::nats::NatsOptions;
use crate::transport::Transport;
use crate::{Node, NodeError};

/// How a node reaches its peers.
enum Via {
    Nats(NatsOptions),
    Given(Arc<dyn Transport>),
}

impl Via {
    async fn open(self, cluster: &str, name: &str) -> Result<Arc<dyn Transport>, NodeError> {
        match self {
            Via::Nats(o) => match o.connect(cluster, name).await {
                Ok(t) => Ok(Arc::new(t)),
                Err(e) => Err(NodeError::Connect(e.to_string())),
            },
            Via::Given(t) => Ok(t),
        }
    }
}

pub(crate) fn check_token(what: &str, s: &str) -> Result<(), NodeError> {
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
/// let node = Node::builder("nats://127.0.0.1:4222", "shop-1").insecure()
///     .cluster("staging")
///     .credentials_file("/etc/nats/shop.creds")
///     .connect()?;
/// # Ok::<(), troupe_remote::NodeError>(())
/// ```
#[must_use = "a builder does nothing until .connect()"]
pub struct NodeBuilder {
    via: Via,
    name: String,
    cluster: String,
    types: Vec<TypeEntry>,
    threads: usize,
    batch_bytes: usize,
    queue_bytes: usize,
    serve_timeout: Duration,
    ask_spin: Duration,
    shutdown_grace: Duration,
    ack_period: Duration,
    link_idle: Duration,
    max_links: usize,
    key: Option<ClusterKey>,
    insecure: bool,
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

    /// Authenticates with a NATS credentials file (JWT + nkey seed); the
    /// same as `.nats(|o| o.credentials_file(path))`. Ignored by a node
    /// made with [`Node::builder_on`].
    pub fn credentials_file(self, path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        self.nats(move |o| o.credentials_file(path))
    }

    /// Any other NATS setting (token, user and password, TLS, reconnect
    /// policy... through [`NatsOptions::connect_options`]). Ignored by a
    /// node made with [`Node::builder_on`].
    pub fn nats(mut self, f: impl FnOnce(NatsOptions) -> NatsOptions) -> Self {
        if let Via::Nats(o) = self.via {
            self.via = Via::Nats(f(o));
        }
        self
    }

    /// Threads of the process's I/O runtime ([`runtime`](crate::runtime)),
    /// if this node is the first to start it (default 1: a current-thread
    /// runtime, the cheapest wake-ups). Nodes started later share the
    /// runtime as it is.
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
    /// CPU per served ask while the actor has not replied. Only an ask
    /// served while no other waits for its reply spins: under concurrent
    /// asks the I/O thread has their frames and replies to handle.
    pub fn ask_spin(mut self, t: Duration) -> Self {
        self.ask_spin = t;
        self
    }

    /// The ack period: how often the node's link task acknowledges the
    /// tells it received to their senders, and how often a sender may
    /// probe a quiet link whose tells are not all confirmed (an unanswered
    /// probe doubles the gap, up to 32 periods). Default 100 ms. The
    /// sender's `tells_unconfirmed` drains within about two periods of a
    /// link going quiet.
    pub fn ack_period(mut self, period: Duration) -> Self {
        self.ack_period = period.max(Duration::from_millis(1));
        self
    }

    /// The old name of [`ack_period`](Self::ack_period).
    #[deprecated(
        since = "0.1.0",
        note = "renamed to `ack_period` (it is the period of acks)"
    )]
    pub fn link_sync(self, period: Duration) -> Self {
        self.ack_period(period)
    }

    /// How long a sender's link state is kept after its last batch, once
    /// acked (default 60 s; at least 64 [`ack_period`](Self::ack_period)s,
    /// so a sender's probe always comes first).
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

    /// Runs without a cluster key: this node then obeys unsealed messages
    /// (a Kill, a ping) from any client that may publish to its inbox.
    /// Without a key and without this, [`connect`](Self::connect) refuses
    /// with [`NodeError::Insecure`]. For tests, examples and a trusted
    /// network behind NATS permissions.
    pub fn insecure(mut self) -> Self {
        self.insecure = true;
        self
    }

    /// How long dropping the node waits to flush queued tells (default 2 s).
    pub fn shutdown_grace(mut self, t: Duration) -> Self {
        self.shutdown_grace = t;
        self
    }

    /// Checks the names and the registered types; gives the protocol's
    /// settings and the transport to open.
    fn checked(self) -> Result<(Config, Via, Duration), NodeError> {
        if self.key.is_none() && !self.insecure {
            return Err(NodeError::Insecure);
        }
        check_token("cluster", &self.cluster)?;
        check_token("node name", &self.name)?;
        let mut types = TypeRegistry::default();
        for t in &self.types {
            types.insert(*t)?;
        }
        let config = Config {
            cluster: self.cluster,
            name: self.name,
            types,
            batch_bytes: self.batch_bytes,
            queue_bytes: self.queue_bytes,
            serve_timeout: self.serve_timeout,
            ask_spin: self.ask_spin,
            ack_period: self.ack_period,
            link_idle: self.link_idle,
            max_links: self.max_links,
            key: self.key,
        };
        Ok((config, self.via, self.shutdown_grace))
    }

    /// Connects, checks the registered types, takes the node's name in the
    /// cluster (refused if a live node holds it) and starts serving.
    /// Refused ([`NodeError::Insecure`]) without a cluster key unless the
    /// builder said [`insecure`](Self::insecure).
    pub fn connect(self) -> Result<Node, NodeError> {
        let threads = self.threads;
        let (config, via, grace) = self.checked()?;
        let handle = shared(threads)?;
        let core = block_on(&handle, start(config, via, handle.clone()))
            .unwrap_or_else(|| Err(NodeError::Connect("the I/O runtime stopped".into())))?;
        Ok(Node::new(core, true, grace))
    }

    /// Connects from async code, on the caller's tokio runtime (which must
    /// enable I/O and time): no I/O thread of the node's own. `ask_async`
    /// called on that runtime then runs without a thread hop, which is the
    /// fastest ask. Blocking calls (`ask`, `ping`, `flush`) must then come
    /// from threads outside that runtime.
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), troupe_remote::NodeError> {
    /// let node = troupe_remote::Node::builder("nats://127.0.0.1:4222", "web-1").insecure().connect_async().await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect_async(self) -> Result<Node, NodeError> {
        let (config, via, grace) = self.checked()?;
        let handle = Handle::try_current().map_err(|_| {
            NodeError::Connect("connect_async must run inside a tokio runtime".into())
        })?;
        let core = start(config, via, handle).await?;
        Ok(Node::new(core, false, grace))
    }
}

async fn start(config: Config, via: Via, handle: Handle) -> Result<Arc<Core>, NodeError> {
    let transport = via.open(&config.cluster, &config.name).await?;
    Core::start(config, transport, handle).await
}

impl NodeBuilder {
    /// A builder for a node over NATS at `url`.
    pub(crate) fn over_nats(url: &str, name: &str) -> Self {
        NodeBuilder::new(Via::Nats(NatsOptions::new(url)), name)
    }

    /// A builder for a node speaking through `transport`.
    pub(crate) fn over(transport: Arc<dyn Transport>, name: &str) -> Self {
        NodeBuilder::new(Via::Given(transport), name)
    }

    fn new(via: Via, name: &str) -> Self {
        NodeBuilder {
            via,
            name: name.to_string(),
            cluster: "default".to_string(),
            types: Vec::new(),
            threads: 1,
            batch_bytes: 8 * 1024,
            queue_bytes: 16 * 1024 * 1024,
            serve_timeout: Duration::from_secs(60),
            ask_spin: Duration::from_micros(40),
            shutdown_grace: Duration::from_secs(2),
            ack_period: Duration::from_millis(100),
            link_idle: Duration::from_secs(60),
            max_links: 1024,
            key: None,
            insecure: false,
        }
    }
}
