//! A node: one process's membership in a Troupe cluster, the actors it
//! exposes and the remote references it hands out.
//!
//! # Threads and invariants
//! - A node runs on a tokio runtime: the process's I/O runtime
//!   ([`runtime`](crate::runtime), shared by every node and the cluster)
//!   when made with `connect`, the caller's with `connect_async`. The transport, the inbox loop, the link task and one
//!   flusher task per peer node run there. Blocking calls (`connect`,
//!   `ping`, `flush`, `RemoteRef::ask`) must not be made from async code
//!   on that runtime; use the `_async` forms there.
//! - The node holds its protocol state through methods only (see
//!   `protocol/core.rs`); it names no transport type but the
//!   [`Transport`] trait.
//! - Dropping the node flushes what tells have queued and acks what it
//!   received (for at most [`NodeBuilder::shutdown_grace`]) before closing
//!   the transport.

use std::sync::Arc;
use std::time::Duration;

use crate::api::builder::check_token;
use crate::api::runtime::{block_on, on};
use crate::protocol::core::{node_subject, Core};
use crate::protocol::message::{RemoteMessage, TypeEntry};
use crate::protocol::schema::SchemaMismatch;
use crate::protocol::stats::NodeStats;
use crate::transport::nats::NatsTransport;
use crate::transport::permissions::Violations;
use crate::transport::Transport;
use crate::{Exposure, NodeBuilder, NodeError, RemoteRef};

/// A process's membership in a Troupe cluster.
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
/// let server = Node::builder(&url, "server").insecure().connect()?;
/// server.expose("echo", &echo).ask::<Ping>(|q, r| (q, r)).serve()?;
///
/// let client = Node::builder(&url, "client").insecure().connect()?;
/// let remote = client.lookup::<Ping>("echo@server")?;
/// assert_eq!(remote.ask(Ping(7), Duration::from_secs(1)), Ok(7));
/// # Ok::<(), troupe_remote::NodeError>(())
/// ```
pub struct Node {
    core: Arc<Core>,
    /// Made with `connect` (on the process's I/O runtime), not
    /// `connect_async`: dropping it waits for its flush.
    blocking: bool,
    grace: Duration,
}

impl Node {
    pub(crate) fn new(core: Arc<Core>, blocking: bool, grace: Duration) -> Node {
        Node {
            core,
            blocking,
            grace,
        }
    }

    /// Connects to the NATS server at `url` as `node_name` in the default
    /// cluster. Names are letters, digits, `_` and `-`. With no cluster
    /// key this refuses ([`NodeError::Insecure`]); use
    /// [`builder`](Self::builder) with a secret, or `.insecure()`.
    pub fn connect(url: &str, node_name: &str) -> Result<Node, NodeError> {
        Node::builder(url, node_name).connect()
    }

    /// A builder for a node over the NATS server at `url`, with a cluster
    /// namespace, credentials, limits.
    pub fn builder(url: &str, node_name: &str) -> NodeBuilder {
        NodeBuilder::over_nats(url, node_name)
    }

    /// A builder for a node that speaks through `transport` (e.g. an
    /// in-memory [`MemoryNetwork`](crate::transport::memory::MemoryNetwork)
    /// connection) instead of connecting to NATS.
    pub fn builder_on(transport: impl Transport, node_name: &str) -> NodeBuilder {
        NodeBuilder::over(Arc::new(transport), node_name)
    }

    /// This node's name.
    pub fn name(&self) -> &str {
        self.core.name()
    }

    /// This node's cluster.
    pub fn cluster(&self) -> &str {
        self.core.cluster()
    }

    /// The subject of this node's inbox.
    pub fn subject(&self) -> String {
        node_subject(self.core.cluster(), self.core.name())
    }

    /// The largest message body this node sends: the transport's max
    /// payload less a frame header and the link frame that opens every
    /// batch.
    pub fn max_body(&self) -> usize {
        self.core.max_body()
    }

    /// The transport this node speaks through, for traffic beside the
    /// actors. With NATS,
    /// `transport().as_any().downcast_ref::<transport::nats::NatsTransport>()`
    /// gives the client itself.
    pub fn transport(&self) -> &Arc<dyn Transport> {
        self.core.transport()
    }

    /// The tokio runtime this node runs on.
    pub fn runtime(&self) -> &tokio::runtime::Handle {
        self.core.handle()
    }

    /// Counters of traffic and bad input, and the gauge of tells not yet
    /// accounted (`tells_unconfirmed`, summed over this node's outboxes).
    pub fn stats(&self) -> NodeStats {
        self.core.stats()
    }

    /// Waits, blocking this thread, until every tell this node accepted is
    /// accounted on this side (`stats().tells_unconfirmed == 0`: confirmed,
    /// refused by the peer, or counted lost), at most `timeout`; says
    /// whether it got there. Unlike [`flush`](Self::flush), which returns
    /// once the server has the tells, this waits for the peers' acks (about
    /// one to two [`NodeBuilder::ack_period`]s on a healthy link). It
    /// cannot succeed while a peer is absent: its tells stay unconfirmed.
    pub fn settle(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if self.core.unconfirmed() == 0 {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Tells this node that `node` was declared down (by the cluster's
    /// failure detector: `troupe-cluster` calls it for every peer it
    /// declares down). Every tell to it not yet accounted becomes lost, in
    /// [`NodeStats`] (`frames_lost`, `tells_lost_to_down`) and in its
    /// receipt (`Lost`); returns how many. Tells it confirmed stay
    /// confirmed: "into the mailbox", which a dead node dropped (see
    /// [`NodeStats`]'s docs). A `node` this one never told is a no-op.
    pub fn peer_down(&self, node: &str) -> u64 {
        self.core.peer_down(node)
    }

    /// A hook that calls [`peer_down`](Self::peer_down) on this node while
    /// it exists (it holds it weakly), for a failure detector's callback.
    pub fn peer_down_hook(&self) -> impl Fn(&str) + Send + Sync + 'static {
        let core = std::sync::Arc::downgrade(&self.core);
        move |node: &str| {
            if let Some(core) = core.upgrade() {
                core.peer_down(node);
            }
        }
    }

    /// Whether the connection to the server is up.
    pub fn is_connected(&self) -> bool {
        self.core.transport().is_connected()
    }

    /// The permission violations the server reported on this node's
    /// connection (see [`permissions`](crate::permissions)); always empty
    /// on a transport other than NATS.
    pub fn violations(&self) -> Arc<Violations> {
        match self.transport().as_any().downcast_ref::<NatsTransport>() {
            Some(t) => t.violations().clone(),
            None => Arc::new(Violations::default()),
        }
    }

    /// Registers a message type; refused if another type holds its id.
    pub fn register<M: RemoteMessage>(&self) -> Result<(), NodeError> {
        self.core.register(TypeEntry::of::<M>())
    }

    /// Makes a local actor reachable as `name@<this node>`; say which
    /// remote types it takes on the returned [`Exposure`] and finish with
    /// `.serve()`.
    ///
    /// This does not publish the actor's stop: a node has no monitors.
    /// Remote monitors and links are `troupe-cluster`'s, because telling
    /// "the actor stopped" from "its node is gone" needs the cluster's
    /// membership (heartbeats, `Down`); an actor that remote monitors
    /// watch is exposed with `Cluster::expose`, which tracks its stop and
    /// then calls this. A monitor of an actor exposed here alone sees only
    /// its node going down.
    pub fn expose<A: troupe::Actor>(
        &self,
        name: &str,
        actor: &troupe::ActorRef<A>,
    ) -> Exposure<'_, A> {
        Exposure::new(&self.core, name, actor.clone())
    }

    /// Stops serving the actor exposed as `name`; returns whether one was.
    pub fn unexpose(&self, name: &str) -> bool {
        self.core.unexpose(name)
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
            self.core.clone(),
            self.core.outbox(node),
            actor,
            node,
        ))
    }

    /// The schema document of this node: its exposed actors, the remote
    /// types each takes (stable names, type ids, fingerprints, whether
    /// portable, fields and variants, reply types), as JSON (layout:
    /// `docs/protocol.md`, "Schema export"). What a client in another
    /// language reads to know what to send.
    pub fn schema_json(&self) -> serde_json::Value {
        crate::protocol::schema_export::export(&self.core)
    }

    /// The last schema mismatch this node saw: a tell or ask it received
    /// whose type has another shape here under the same stable name, or an
    /// ask of its own that the peer refused for that reason. Both sides are
    /// named; see [`schema`](crate::schema) for how to evolve a type.
    pub fn last_schema_mismatch(&self) -> Option<SchemaMismatch> {
        self.core.last_mismatch()
    }

    /// Asks node `node` of this cluster whether it is there; the round trip.
    pub fn ping(&self, node: &str, timeout: Duration) -> Result<Duration, troupe::AskError> {
        let start = std::time::Instant::now();
        let ping = self.core.clone().ping(node.to_string(), timeout);
        block_on(self.core.handle(), ping).unwrap_or(Err(troupe::AskError::Disconnected))?;
        Ok(start.elapsed())
    }

    /// Flushes queued tells and waits until the server has them (or `timeout`).
    pub fn flush(&self, timeout: Duration) -> bool {
        let core = self.core.clone();
        block_on(self.core.handle(), async move { core.flush(timeout).await }).unwrap_or(false)
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let flush = self.core.shutdown(self.grace);
        if self.blocking && !on(self.core.handle()) {
            let (tx, rx) = oneshot::channel();
            self.core.handle().spawn(async move {
                flush.await;
                let _ = tx.send(());
            });
            let _ = rx.recv_timeout(self.grace + Duration::from_millis(100));
        } else {
            // On the caller's runtime, which may be this very thread: flush
            // in the background rather than wait for it here.
            self.core.handle().spawn(flush);
        }
    }
}
