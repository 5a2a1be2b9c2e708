//! [`ClusterBuilder`]: the settings of a cluster node, and `connect`,
//! which makes the node, opens the registry bucket through the node's
//! transport, loads the registry and starts the run loops (`tasks.rs`,
//! `mirror.rs`) on the process's I/O runtime.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use troupe::ActorSystem;
use troupe_remote::auth::ClusterKey;
use troupe_remote::runtime::block_on;
use troupe_remote::transport::kv::BucketConfig;
use troupe_remote::{Node, NodeBuilder};

use crate::bad_input::RateLog;
use crate::cluster::Cluster;
use crate::core::{Counters, DownHook, Inner};
use crate::liveness::{Intake, Peers};
use crate::monitor::StandIns;
use crate::permissions;
use crate::registry::Cache;
use crate::split_brain::{Quorum, SplitBrain};
use crate::wire;
use crate::ClusterError;

type NodeOptions = Box<dyn FnOnce(NodeBuilder) -> NodeBuilder + Send>;

/// Where a cluster node's transport comes from.
pub(crate) enum Via {
    /// A NATS server's URL, with the builder's credentials.
    Url(String),
    /// A builder of a node over a transport given by the user.
    Given(Box<dyn FnOnce(&str) -> NodeBuilder + Send>),
}

/// Configures and connects a [`Cluster`].
///
/// ```no_run
/// use std::time::Duration;
/// let c = troupe_cluster::Cluster::builder("nats://127.0.0.1:4222", "n1").insecure()
///     .namespace("staging")
///     .heartbeat(Duration::from_millis(200))
///     .user_password("app", "secret")
///     .connect()?;
/// # Ok::<(), troupe_cluster::ClusterError>(())
/// ```
#[must_use = "a builder does nothing until .connect()"]
pub struct ClusterBuilder {
    pub(crate) via: Via,
    pub(crate) name: String,
    pub(crate) namespace: String,
    pub(crate) heartbeat: Duration,
    pub(crate) down_after: f64,
    pub(crate) reconnect_grace: Duration,
    pub(crate) registry_ttl: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) user: Option<(String, String)>,
    pub(crate) nkey: Option<String>,
    pub(crate) node: Option<NodeOptions>,
    pub(crate) max_peers: usize,
    pub(crate) key: Option<ClusterKey>,
    pub(crate) insecure: bool,
    pub(crate) registry_replicas: usize,
    pub(crate) split_brain: SplitBrain,
}

impl ClusterBuilder {
    /// The defaults, for the node `name` over `via`.
    pub(crate) fn new(via: Via, name: &str) -> Self {
        ClusterBuilder {
            via,
            name: name.to_string(),
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
            insecure: false,
            registry_replicas: 1,
            split_brain: SplitBrain::Off,
        }
    }

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
    /// Which side of a partition keeps serving (default
    /// [`SplitBrain::Off`]: the ownership store decides); set the same
    /// strategy on every node. See the
    /// [`split_brain`](crate::split_brain) module for the trade-offs.
    pub fn split_brain(mut self, strategy: SplitBrain) -> Self {
        self.split_brain = strategy;
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
    /// JetStream replicas of the registry bucket when this node creates it
    /// (default 1; 3 on a 3-server NATS cluster, so the registry outlives
    /// one server). A bucket that exists keeps its count.
    pub fn registry_replicas(mut self, n: usize) -> Self {
        self.registry_replicas = n.clamp(1, 5);
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
    /// Runs without a cluster secret: the node then obeys an unsealed Kill
    /// and lets any client that may publish on the cluster's subjects
    /// declare a peer down or plant a registry entry. Without a
    /// [`secret`](Self::secret) and without this, [`connect`](Self::connect)
    /// refuses with `ClusterError::Node(NodeError::Insecure)`. For tests,
    /// examples and a trusted network behind NATS permissions.
    pub fn insecure(mut self) -> Self {
        self.insecure = true;
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

    /// Connects the node, opens (or creates) the registry bucket, takes
    /// the node's name (`name_lock.rs`), loads the registry and starts
    /// heartbeats. Refused without a [`secret`](Self::secret) unless the
    /// builder said [`insecure`](Self::insecure). A wrong credential or an absent
    /// server is an error within the connect timeout.
    pub fn connect(self) -> Result<Cluster, ClusterError> {
        if self.key.is_none() && !self.insecure {
            return Err(ClusterError::Node(troupe_remote::NodeError::Insecure));
        }
        if !wire::is_token(&self.namespace) || !wire::is_token(&self.name) {
            return Err(ClusterError::BadName(format!(
                "namespace {:?} and node {:?} must be letters, digits, '_' and '-'",
                self.namespace, self.name
            )));
        }
        let (user, nkey, ct) = (self.user.clone(), self.nkey.clone(), self.connect_timeout);
        let nb = match self.via {
            Via::Url(url) => Node::builder(&url, &self.name).nats(move |mut n| {
                n = n.connection_timeout(ct);
                if let Some((u, p)) = user {
                    n = n.user_password(u, p);
                }
                if let Some(seed) = nkey {
                    n = n.nkey(seed);
                }
                n
            }),
            Via::Given(make) => make(&self.name),
        };
        let mut nb = nb.cluster(self.namespace.clone());
        match &self.key {
            Some(key) => nb = nb.cluster_key(key.clone()),
            None => nb = nb.insecure(),
        }
        if let Some(f) = self.node {
            nb = f(nb);
        }
        let node = connect_bounded(nb, ct + Duration::from_secs(1))?;
        let handle = node.runtime().clone();
        if troupe_remote::runtime::on(&handle) {
            return Err(ClusterError::Nats(
                "Cluster::connect blocks: call it off the I/O runtime's thread".into(),
            ));
        }
        // Subscriptions dropped on an early return unsubscribe through
        // tokio::spawn: inside the runtime's context.
        let _in_rt = handle.enter();
        let ttl = self.registry_ttl;
        let violations = node.violations();
        let transport = node.transport().clone();
        let config = BucketConfig {
            name: wire::bucket(&self.namespace),
            max_age: ttl,
            replicas: self.registry_replicas,
        };
        let kv = block_on(&handle, {
            let (transport, violations) = (transport.clone(), violations.clone());
            async move { permissions::open_bucket(&*transport, &config, &violations).await }
        })
        .unwrap_or_else(|| Err(stopped()))?;
        let incarnation = crate::core::fresh_incarnation();
        // One live process per name, also for two that start at once
        // (name_lock.rs).
        let name_rev = block_on(&handle, {
            let (kv, name) = (kv.clone(), self.name.clone());
            let violations = violations.clone();
            let wait = crate::name_lock::wait(self.heartbeat, self.down_after);
            async move {
                let acquire = crate::name_lock::acquire(&kv, &name, incarnation, wait);
                permissions::guarded_settled(&violations, Duration::from_millis(500), acquire).await
            }
        })
        .unwrap_or_else(|| Err(stopped()))?;
        let inner = Arc::new(Inner {
            ns: self.namespace,
            name: self.name,
            incarnation: AtomicU64::new(incarnation),
            past: Mutex::new(Default::default()),
            downed: Mutex::new(Default::default()),
            recent_downs: Mutex::new(Default::default()),
            // A lost peer counts as a member for ten down detections; a
            // node out of the quorum is back after two with enough peers.
            quorum: Mutex::new(Quorum::new(
                self.split_brain,
                self.heartbeat.mul_f64(self.down_after * 10.0),
                self.heartbeat.mul_f64(self.down_after * 2.0),
            )),
            in_quorum: AtomicBool::new(true),
            self_down_hooks: Mutex::new(Vec::new()),
            interval: self.heartbeat,
            down_after: self.down_after,
            reconnect_grace: self.reconnect_grace,
            ttl,
            transport,
            kv,
            handle: handle.clone(),
            system: ActorSystem::builder().threads(1).build(),
            peers: Mutex::new(Peers::with_cap(self.max_peers)),
            standins: StandIns::default(),
            exposed: Mutex::new(HashMap::new()),
            own: Mutex::new(HashMap::new()),
            cache: Cache::default(),
            resync: Notify::new(),
            // The node's link accounting first: a peer declared down
            // makes its unconfirmed tells lost (`Node::peer_down`).
            down_hooks: Mutex::new(vec![Box::new(node.peer_down_hook()) as DownHook]),
            counters: Counters::default(),
            bad_log: RateLog::default(),
            down_log: RateLog::default(),
            name_rev: AtomicU64::new(name_rev),
            key: self.key,
            intake: Intake::default(),
            balanced_seq: AtomicU64::new(0),
            balanced_turn: AtomicUsize::new(0),
        });
        let subscribed = block_on(&handle, {
            let i = inner.clone();
            async move {
                let t = &i.transport;
                let ns = &i.ns;
                Ok::<_, troupe_remote::transport::TransportError>((
                    t.subscribe(&format!("troupe.{ns}.hb.*")).await?,
                    t.subscribe(&format!("troupe.{ns}.bye.*")).await?,
                    t.subscribe(&format!("troupe.{ns}.down.*")).await?,
                    t.subscribe(&wire::ctl_subject(ns, &i.name)).await?,
                    t.subscribe(&wire::downed_subject(ns, &i.name)).await?,
                    t.subscribe(&format!("troupe.{ns}.markdown.*")).await?,
                ))
            }
        })
        .unwrap_or_else(|| Err(troupe_remote::transport::TransportError::Disconnected));
        let (hb, bye, down, ctl, downed, marks) =
            subscribed.map_err(|e| ClusterError::Nats(e.to_string()))?;
        block_on(&handle, {
            let (inner, violations) = (inner.clone(), violations.clone());
            async move { permissions::guarded(&violations, 0, inner.sync_registry()).await }
        })
        .unwrap_or_else(|| Err(stopped()))?;
        permissions::none_reported(&violations)?;
        let tasks = vec![
            handle.spawn(inner.clone().beat()),
            handle.spawn(inner.clone().on_heartbeats(hb)),
            handle.spawn(inner.clone().on_byes(bye)),
            handle.spawn(inner.clone().on_stop_events(down)),
            handle.spawn(inner.clone().on_ctl(ctl)),
            handle.spawn(inner.clone().on_downed_notices(downed)),
            handle.spawn(inner.clone().on_mark_downs(marks)),
            handle.spawn(inner.clone().check()),
            handle.spawn(inner.clone().mirror()),
            handle.spawn(inner.clone().refresh()),
            handle.spawn(inner.clone().hold_name()),
        ];
        Ok(Cluster {
            inner,
            node: Some(node),
            tasks,
        })
    }
}

fn stopped() -> ClusterError {
    ClusterError::Nats("the I/O runtime stopped".into())
}

/// Runs the blocking node connect on a helper thread and gives up after
/// `limit`, so no credential or server problem can hang the caller.
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
