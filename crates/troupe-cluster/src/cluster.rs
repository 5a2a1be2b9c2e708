//! [`Cluster`]: one process's membership, its accessors, `expose`, and
//! the goodbye on drop. The rest of its API is one file per concept:
//! `directory.rs` (registry and broadcast groups), `balanced.rs`
//! (load-balanced groups), `remote_watch.rs` (remote monitors and links);
//! `builder.rs` connects it.
//!
//! Dropping a [`Cluster`] ends its tasks, says goodbye (peers declare it
//! down at once), deletes its registry entries, and closes the node. On
//! the I/O runtime's own thread the goodbye is sent without waiting.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use troupe::{Actor, ActorRef};
use troupe_remote::transport::Transport;
use troupe_remote::{Exposure, Node};

use crate::builder::{ClusterBuilder, Via};
use crate::core::{encode, ClusterStats, ExposedActor, Inner};
use crate::wire::{self, decode, RegEntry, StopEvent, WireReason};
use crate::ClusterError;

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
/// let n1 = Cluster::builder("nats://127.0.0.1:4222", "n1").insecure().connect()?;
/// let worker = system.spawn(Worker);
/// n1.expose("worker", &worker).tell::<Job>().serve()?;
/// n1.register::<Job>("jobs", "worker")?;
/// n1.join_group::<Job>("pool", "worker")?;
///
/// // Process 2: finds it, watches it, sends to the group.
/// let n2 = Cluster::builder("nats://127.0.0.1:4222", "n2").insecure().connect()?;
/// let jobs = n2.find::<Job>("jobs").expect("registered");
/// jobs.tell(Job(1)).ok();
/// let watcher = system.spawn(Watcher);
/// n2.monitor(&watcher, "worker@n1", |down| down)?;
/// assert_eq!(n2.dispatch_group("pool", Job(2)), 1);
/// # Ok::<(), troupe_cluster::ClusterError>(())
/// ```
pub struct Cluster {
    pub(crate) inner: Arc<Inner>,
    pub(crate) node: Option<Node>,
    pub(crate) tasks: Vec<tokio::task::JoinHandle<()>>,
}

pub(crate) fn split(target: &str) -> Result<(&str, &str), ClusterError> {
    match target.split_once('@') {
        Some((a, n)) if wire::is_token(a) && wire::is_token(n) => Ok((a, n)),
        _ => Err(ClusterError::BadName(format!(
            "{target:?} is not actor@node"
        ))),
    }
}

pub(crate) fn token(what: &str, s: &str) -> Result<(), ClusterError> {
    if wire::is_token(s) {
        Ok(())
    } else {
        Err(ClusterError::BadName(format!(
            "{what} {s:?} must be letters, digits, '_' and '-'"
        )))
    }
}

impl Cluster {
    /// Joins the default namespace with default settings, which include
    /// no secret: this refuses (`NodeError::Insecure`); use
    /// [`builder`](Self::builder) with [`secret`](ClusterBuilder::secret)
    /// (or, for tests, [`insecure`](ClusterBuilder::insecure)).
    pub fn connect(url: &str, node: &str) -> Result<Cluster, ClusterError> {
        Cluster::builder(url, node).connect()
    }

    /// A builder (namespace, heartbeat, credentials, node options).
    pub fn builder(url: &str, node: &str) -> ClusterBuilder {
        ClusterBuilder::new(Via::Url(url.to_string()), node)
    }

    /// A builder for a node that speaks through `transport` instead of
    /// connecting to NATS: e.g. a connection to an in-process
    /// [`MemoryNetwork`](troupe_remote::transport::memory::MemoryNetwork),
    /// whose buckets hold the registry. The credential and connect-timeout
    /// settings do not apply (the transport is connected already).
    ///
    /// ```
    /// use troupe_cluster::Cluster;
    /// use troupe_remote::transport::memory::MemoryNetwork;
    ///
    /// let net = MemoryNetwork::new();
    /// let a = Cluster::builder_on(net.connect(), "a").insecure().connect()?;
    /// let b = Cluster::builder_on(net.connect(), "b").insecure().connect()?;
    /// assert_eq!(a.name(), "a");
    /// # drop(b);
    /// # Ok::<(), troupe_cluster::ClusterError>(())
    /// ```
    pub fn builder_on(transport: impl Transport, node: &str) -> ClusterBuilder {
        let make = move |name: &str| Node::builder_on(transport, name);
        ClusterBuilder::new(Via::Given(Box::new(make)), node)
    }

    /// The node (remote references, exposure, stats).
    pub fn node(&self) -> &Node {
        self.node.as_ref().expect("present until drop")
    }

    /// This node's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// This node's heartbeat interval ([`ClusterBuilder::heartbeat`]).
    pub fn heartbeat(&self) -> Duration {
        self.inner.interval
    }

    /// The silence after which a peer with this node's heartbeat is
    /// declared down: the interval times `down_after`
    /// ([`ClusterBuilder::down_after`]). No peer is declared down sooner
    /// after its last heartbeat reached this node.
    pub fn down_detection(&self) -> Duration {
        self.inner.interval.mul_f64(self.inner.down_after)
    }

    /// This process's current incarnation: fresh at start, and new again
    /// each time it learns it was declared down and rejoins (see
    /// [`on_self_down`](Self::on_self_down)). Owner records of the
    /// sharding layer name it beside the node's name.
    pub fn incarnation(&self) -> u64 {
        self.inner.incarnation()
    }

    /// The peers this node holds alive, with their incarnations, sorted
    /// by name.
    pub fn peer_incarnations(&self) -> Vec<(String, u64)> {
        self.inner.peers.lock().incarnations()
    }

    /// Calls `f(old, new)` when this node learns that a peer declared its
    /// incarnation `old` down and it rejoins as `new` (on the cluster's
    /// I/O thread: keep it short). A node declared down stays down in
    /// that incarnation: peers ignore its heartbeats until it has a new
    /// one (see the [`liveness`](crate::liveness) module, "Down stays
    /// down"). To stop instead of rejoining, exit the process here.
    pub fn on_self_down(&self, f: impl Fn(u64, u64) + Send + Sync + 'static) {
        self.inner.self_down_hooks.lock().push(Box::new(f));
    }

    /// Whether this node is on the side of a partition that serves (always,
    /// with [`SplitBrain::Off`](crate::SplitBrain::Off)); see the
    /// [`split_brain`](crate::split_brain) module. The sharding layer
    /// gives up its shards and claims none while it is not.
    pub fn in_quorum(&self) -> bool {
        self.inner.in_quorum.load(Ordering::Acquire)
    }

    /// The split-brain strategy this node was built with.
    pub fn split_brain(&self) -> crate::SplitBrain {
        self.inner.quorum.lock().strategy()
    }

    /// The peers this node holds alive, sorted by name, each with its
    /// incarnation, how long ago it was last heard and its heartbeat
    /// interval (for an operator's view; [`peers`](Self::peers) for the
    /// names alone).
    pub fn peer_states(&self) -> Vec<crate::liveness::PeerState> {
        self.inner.peers.lock().states(std::time::Instant::now())
    }

    /// The peers this node declared down lately, oldest first, each with
    /// its incarnation, why and how long ago: at most
    /// [`RECENT_DOWN_CAP`](crate::liveness::RECENT_DOWN_CAP), each until
    /// [`RECENT_DOWN_KEEP`](crate::liveness::RECENT_DOWN_KEEP) has passed
    /// or the node is heard again in a new incarnation.
    pub fn down_peers(&self) -> Vec<crate::liveness::DownPeer> {
        self.inner
            .recent_downs
            .lock()
            .states(std::time::Instant::now())
    }

    /// Marks `node` down for the whole cluster, as an operator's verdict:
    /// every node (this one included) declares the incarnation it holds
    /// alive down at once, as if that node had said goodbye (Down to the
    /// watchers of its actors, its registry entries deleted, the sharding
    /// layer's takeover), and down stays down (see the
    /// [`liveness`](crate::liveness) module). The node itself, if it still
    /// runs, learns it from its peers' answer to its next heartbeat and
    /// rejoins as a new incarnation (or exits, from an
    /// [`on_self_down`](Self::on_self_down) hook).
    ///
    /// The message is sealed with the cluster's key like every other: only
    /// a node of the cluster can send one. Errors: `BadName` for this node
    /// itself (leave instead: drop the `Cluster`) or a name that is not a
    /// token, `NotAPeer` for a node this node does not hold alive, `Nats`
    /// if the publish failed.
    pub fn mark_down(&self, node: &str) -> Result<u64, ClusterError> {
        token("node", node)?;
        if node == self.inner.name {
            return Err(ClusterError::BadName(format!(
                "{node:?} is this node: a node does not mark itself down (leave instead)"
            )));
        }
        let Some((_, incarnation)) = self
            .peer_incarnations()
            .into_iter()
            .find(|(n, _)| n == node)
        else {
            return Err(ClusterError::NotAPeer(node.to_string()));
        };
        let inner = self.inner.clone();
        let subject = wire::mark_down_subject(&inner.ns, node);
        let payload = inner.seal(
            &subject,
            encode(&crate::wire::Heartbeat {
                node: node.to_string(),
                incarnation,
                interval_ms: inner.heartbeat().interval_ms,
            }),
        );
        let transport = inner.transport.clone();
        self.inner
            .block(async move {
                transport.publish(&subject, payload).await?;
                transport.flush().await
            })
            .map_err(|e| ClusterError::Nats(e.to_string()))?;
        Ok(incarnation)
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
            downed_heartbeats: c.downed_heartbeats.load(Ordering::Relaxed),
            rejoins: c.rejoins.load(Ordering::Relaxed),
            bad_downed_notices: c.bad_downed_notices.load(Ordering::Relaxed),
            quorum_left: c.quorum_left.load(Ordering::Relaxed),
            marked_down: c.marked_down.load(Ordering::Relaxed),
            bad_mark_downs: c.bad_mark_downs.load(Ordering::Relaxed),
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
            let (transport, kv) = (inner.transport.clone(), inner.kv.clone());
            inner.handle.spawn(async move {
                let _ = transport.publish(&subject, ev).await;
                for k in keys {
                    let _ = kv.delete(&k, None).await;
                }
            });
        });
        self.node().expose(name, actor)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        let inner = self.inner.clone();
        let own: Vec<String> = inner.own.lock().keys().cloned().collect();
        let goodbye = {
            let inner = inner.clone();
            async move {
                let _ = tokio::time::timeout(Duration::from_millis(500), async {
                    let subject = wire::bye_subject(&inner.ns, &inner.name);
                    let bye = inner.seal(&subject, encode(&inner.heartbeat()));
                    let _ = inner.transport.publish(&subject, bye).await;
                    for k in own {
                        let _ = inner.kv.delete(&k, None).await;
                    }
                    inner.release_name().await;
                    let _ = inner.transport.flush().await;
                })
                .await;
            }
        };
        if troupe_remote::runtime::on(&inner.handle) {
            inner.handle.spawn(goodbye);
        } else {
            let _ = troupe_remote::runtime::block_on(&inner.handle, goodbye);
        }
        self.node.take();
    }
}
