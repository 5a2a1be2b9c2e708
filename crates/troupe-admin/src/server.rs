//! [`AdminBuilder`] → [`AdminServer`]: binds, serves on the process's one
//! tokio runtime (troupe-remote's [`runtime::handle`](troupe_remote::runtime::handle)),
//! stops on [`AdminServer::stop`] or drop.
//!
//! Invariants: the listener is bound before `start` returns (its errors
//! are the caller's); an address that is not loopback is refused unless
//! the builder said [`AdminBuilder::allow_non_loopback`].

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use troupe::SystemHandle;
use troupe_cluster::Cluster;
use troupe_sharding::ownership::bucket::BucketOwnership;
use troupe_sharding::ownership::OwnershipStore;

use crate::read::owners::{CountsMsg, CountsResponder, ShardCounts, COUNTS_ACTOR};
use crate::router::{router, App};
use crate::security::Security;
use crate::target::{Hook, Kind, ShardingView, Target};

/// The address served by default: loopback only.
pub const DEFAULT_ADDR: &str = "127.0.0.1:9470";
/// The largest request body accepted by default (bytes; 413 above).
pub const DEFAULT_BODY_LIMIT: usize = 16 * 1024;
/// Requests a second the server's token bucket refills by default.
pub const DEFAULT_RATE: f64 = 50.0;
/// The bucket's size by default (a burst of this many requests).
pub const DEFAULT_BURST: u32 = 100;

/// Why a server did not start.
#[derive(Debug)]
pub struct StartError(pub String);

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the management API did not start: {}", self.0)
    }
}

impl std::error::Error for StartError {}

/// Settings of a management server; see [`AdminServer::builder`].
#[must_use = "nothing is served until .start()"]
pub struct AdminBuilder {
    token: String,
    addr: String,
    non_loopback: bool,
    origins: Vec<String>,
    rate: f64,
    burst: u32,
    body_limit: usize,
    cluster: Option<Arc<Cluster>>,
    system: Option<SystemHandle>,
    kinds: Vec<(String, u32, Arc<dyn ShardingView>)>,
    store: Option<Arc<dyn OwnershipStore>>,
    on_leave: Option<Hook>,
}

impl AdminBuilder {
    /// The address to bind, `ip:port` (default [`DEFAULT_ADDR`]; port 0
    /// picks a free one). Must be loopback unless
    /// [`allow_non_loopback`](Self::allow_non_loopback).
    pub fn bind(mut self, addr: &str) -> Self {
        self.addr = addr.to_string();
        self
    }

    /// Allows binding an address that is not loopback: the API is then
    /// reachable from other machines (still behind its bearer token).
    pub fn allow_non_loopback(mut self) -> Self {
        self.non_loopback = true;
        self
    }

    /// Another origin (`scheme://host:port`) actions may come from, e.g.
    /// the name of a reverse proxy in front of the server.
    pub fn allow_origin(mut self, origin: &str) -> Self {
        self.origins.push(origin.to_string());
        self
    }

    /// The token bucket: `per_second` requests refill it, up to `burst`
    /// (defaults [`DEFAULT_RATE`], [`DEFAULT_BURST`]).
    pub fn rate(mut self, per_second: f64, burst: u32) -> Self {
        self.rate = per_second;
        self.burst = burst;
        self
    }

    /// The largest request body, in bytes (default [`DEFAULT_BODY_LIMIT`]).
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// The node's cluster membership (members, node, counters, health).
    pub fn cluster(mut self, cluster: &Arc<Cluster>) -> Self {
        self.cluster = Some(cluster.clone());
        self
    }

    /// The actor system whose busiest actors `/api/v1/actors` lists.
    pub fn system(mut self, system: SystemHandle) -> Self {
        self.system = Some(system);
        self
    }

    /// A sharded kind to report: its name and shard count as configured,
    /// and its `Sharding` (kept by the server until it stops).
    pub fn sharding(mut self, kind: &str, shards: u32, view: Arc<dyn ShardingView>) -> Self {
        self.kinds.push((kind.to_string(), shards, view));
        self
    }

    /// The ownership store shard records are read from (default: the
    /// cluster's bucket, as `Sharding` uses by default).
    pub fn store(mut self, store: Arc<dyn OwnershipStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// What `POST /api/v1/actions/leave` runs (once): typically it sends
    /// the application's main thread a signal to leave its shardings
    /// (`Sharding::leave`) and drop its `Cluster`.
    pub fn on_leave(mut self, f: impl Fn() + Send + Sync + 'static) -> Self {
        self.on_leave = Some(Box::new(f));
        self
    }

    /// Binds and starts serving. Blocks while it opens the ownership
    /// store, so it must not be called on the I/O runtime's own threads.
    pub fn start(self) -> Result<AdminServer, StartError> {
        let addr: SocketAddr = self
            .addr
            .parse()
            .map_err(|e| StartError(format!("address {:?}: {e}", self.addr)))?;
        if !addr.ip().is_loopback() && !self.non_loopback {
            return Err(StartError(format!(
                "{addr} is not loopback: say .allow_non_loopback() to bind it"
            )));
        }
        if !self.kinds.is_empty() && self.store.is_none() && self.cluster.is_none() {
            return Err(StartError(
                "sharded kinds need a cluster or a store to read their shards from".into(),
            ));
        }
        let listener =
            TcpListener::bind(addr).map_err(|e| StartError(format!("bind {addr}: {e}")))?;
        let local = listener
            .local_addr()
            .map_err(|e| StartError(e.to_string()))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| StartError(e.to_string()))?;
        let mut origins = vec![format!("http://{local}")];
        if local.ip().is_loopback() {
            origins.push(format!("http://localhost:{}", local.port()));
        }
        origins.extend(self.origins);
        let security =
            Security::new(&self.token, self.rate, self.burst, origins).map_err(StartError)?;
        let store: Option<Arc<dyn OwnershipStore>> = match (self.store, &self.cluster) {
            (Some(s), _) => Some(s),
            (None, Some(c)) if !self.kinds.is_empty() => Some(Arc::new(
                BucketOwnership::open(c).map_err(|e| StartError(e.to_string()))?,
            )),
            _ => None,
        };
        // The other nodes' shard maps ask this node for its counts
        // (`read/owners.rs`): served by an actor of the given system, or
        // of a one-thread system of the server's own.
        let mut own_system = None;
        let responder = match &self.cluster {
            Some(c) if !self.kinds.is_empty() => {
                let sys = match &self.system {
                    Some(s) => s.clone(),
                    None => {
                        let s = troupe::ActorSystem::builder()
                            .threads(1)
                            .name("troupe-admin")
                            .build();
                        let h = s.handle();
                        own_system = Some(s);
                        h
                    }
                };
                let kinds = self
                    .kinds
                    .iter()
                    .map(|(n, _, v)| (n.clone(), v.clone()))
                    .collect();
                let actor = sys.spawn(CountsResponder { kinds });
                // Not fatal: without it, the other nodes' maps show this
                // node's counts as unknown (e.g. a second server on one
                // cluster, whose name is taken).
                if let Err(e) = c
                    .expose(COUNTS_ACTOR, &actor)
                    .ask::<ShardCounts>(CountsMsg::Ask)
                    .serve()
                {
                    tracing::warn!(error = %e, "management API: {COUNTS_ACTOR} not exposed; other nodes will not see this node's entity counts");
                }
                Some(actor)
            }
            _ => None,
        };
        let kinds = self
            .kinds
            .into_iter()
            .filter_map(|(name, shards, view)| {
                store.clone().map(|store| Kind {
                    name,
                    shards,
                    view,
                    store,
                })
            })
            .collect();
        let app = Arc::new(App {
            target: Target {
                cluster: self.cluster,
                system: self.system,
                kinds,
                started: Instant::now(),
                on_leave: Mutex::new(self.on_leave),
            },
            security: Arc::new(security),
        });
        let handle = troupe_remote::runtime::handle().map_err(|e| StartError(e.to_string()))?;
        let listener = {
            let _in = handle.enter();
            tokio::net::TcpListener::from_std(listener).map_err(|e| StartError(e.to_string()))?
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let app = router(app, self.body_limit);
        handle.spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
            if let Err(e) = served {
                tracing::warn!(error = %e, "the management API stopped");
            }
        });
        Ok(AdminServer {
            addr: local,
            stop: Some(stop),
            responder,
            _own_system: own_system,
        })
    }
}

/// A running management server. Dropping it stops it.
pub struct AdminServer {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    /// The actor answering other nodes' count asks (`read/owners.rs`),
    /// stopped with the server.
    responder: Option<troupe::ActorRef<CountsResponder>>,
    /// The server's own actor system, when none was given.
    _own_system: Option<troupe::ActorSystem>,
}

impl AdminServer {
    /// A builder whose every action and non-health read needs
    /// `Authorization: Bearer <token>` (at least
    /// [`MIN_TOKEN_LEN`](crate::security::MIN_TOKEN_LEN) bytes).
    pub fn builder(token: &str) -> AdminBuilder {
        AdminBuilder {
            token: token.to_string(),
            addr: DEFAULT_ADDR.to_string(),
            non_loopback: false,
            origins: Vec::new(),
            rate: DEFAULT_RATE,
            burst: DEFAULT_BURST,
            body_limit: DEFAULT_BODY_LIMIT,
            cluster: None,
            system: None,
            kinds: Vec::new(),
            store: None,
            on_leave: None,
        }
    }

    /// The address served.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops serving (requests in progress finish).
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(r) = self.responder.take() {
            r.stop();
        }
    }
}

impl Drop for AdminServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}
