//! A cluster singleton: one instance of an actor in the cluster, moved
//! when its node leaves or dies, reached through a [`SingletonRef`] (the
//! proxy) from any node.
//!
//! `cluster.singleton("scheduler", || Scheduler::new())` is a sharding
//! type of its own (`singleton-scheduler`) with **one shard** and **one
//! entity** ([`SINGLETON_ID`]), so every guarantee of sharding holds for
//! it unchanged, and none is built twice:
//!
//! - **One owner.** The shard's owner record in the ownership store is
//!   written only by revision-checked writes; its revision is the fencing
//!   token. The region activates the instance only after reading the
//!   record back as its own ([`crate::region`]).
//! - **Lease.** A node delivers to the instance only within its delivery
//!   lease (three coordinator ticks from its last successful read of the
//!   record); a node that takes the singleton over from a node declared
//!   down activates it only once the old owner's lease has run out
//!   ([`crate::coordinator`], "Taking over"). So a node paused (SIGSTOP)
//!   or cut off, and replaced meanwhile, hands its old instance no
//!   message once the new one may run.
//! - **Eager start.** The instance runs without waiting for a message:
//!   the singleton's id is entered in the shard's remembered entities
//!   (`remember_entities`) when a node starts the singleton, and each new
//!   owner activates the remembered ids when it claims the shard. It is
//!   never passivated for idleness.
//! - **The proxy buffers while it moves.** A [`SingletonRef`] is an
//!   [`EntityRef`]: while the shard has no owner that delivers (a
//!   hand-over, a takeover's wait), tells and asks wait in the sending
//!   node's region buffer, bounded by [`SingletonBuilder::buffer`]
//!   (default 10,000) and by [`SingletonBuilder::buffer_timeout`]; a tell
//!   the full buffer cannot take is refused (`SendError::Full`, the
//!   message handed back), each one counted in
//!   [`ShardingStats::buffer_full`], an expired one in
//!   [`ShardingStats::expired`].
//!
//! ## The move, step by step
//!
//! 1. *Graceful leave* ([`Singleton::leave`], or a drop): the owner's
//!    coordinator leaves the member list, the instance handles what its
//!    mailbox holds and stops, the record is released, and the node that
//!    placement picks among the remaining members claims it at its next
//!    tick and activates the instance at once (no wait: the old one has
//!    stopped). Messages sent meanwhile wait in the senders' buffers.
//! 2. *Crash or pause* (SIGKILL, SIGSTOP, a partition): the survivors
//!    declare the node down after the cluster's down detection
//!    (`heartbeat × down_after`), the picked survivor claims the record
//!    (a new token) and activates the instance
//!    `(LEASE_TICKS + 1) × tick` later. What the old instance's mailbox
//!    held is lost with it; messages sent to the dead node before it was
//!    declared down are lost (a tell), or time out (an ask).
//! 3. *The old node comes back* (SIGCONT): its coordinator reads the
//!    record at its next tick, finds it owned by another and kills the
//!    old instance; its lease had run out, so its region delivered it
//!    nothing meanwhile.
//!
//! ## What is not guaranteed
//!
//! - Work the instance starts by itself (its own timers, threads, tasks)
//!   is not fenced: a paused node that resumes runs its old instance's
//!   timers until its coordinator's next tick kills it (at most one tick
//!   plus the record's read). Work that must never overlap writes
//!   through a revision-checked store, as the tests' fencing counter does.
//! - What the old instance already had in its mailbox when its process
//!   was paused is handled when it resumes (the lease is checked when the
//!   region hands a message over, not in the mailbox).
//! - Exactly one instance *running* at every instant is not promised
//!   across a crash: there is a gap (no instance) during the takeover.
//! - A singleton that stops itself is not restarted until a message for
//!   it arrives (its id leaves the remembered list, as a passivation).
//! - Its state is its own: keep it in a persistent actor
//!   (troupe-persistence) to carry it across moves.

use std::sync::Arc;
use std::time::Duration;

use troupe::{Actor, ActorSystem, AskError, ReplyTo, SendError, SpawnOptions};
use troupe_cluster::Cluster;
use troupe_remote::{Receipt, RemoteAsk, RemoteMessage};

use crate::ownership::bucket::BucketOwnership;
use crate::ownership::{OwnershipStore, StoreError};
use crate::sharding::{ClusterSharding, EntityRef, Sharding, ShardingBuilder, ShardingError};
use crate::stats::ShardingStats;

/// The one entity id of every singleton.
pub const SINGLETON_ID: &str = "singleton";

/// The sharding type a singleton named `name` runs as.
pub fn kind_of(name: &str) -> String {
    format!("singleton-{name}")
}

/// A cluster singleton on a cluster: `cluster.singleton("name", factory)`.
pub trait ClusterSingleton {
    /// Starts configuring singleton `name` (1 to 54 letters, digits, `_`
    /// or `-`), built by `factory` on the node that runs it.
    fn singleton<A: Actor>(
        &self,
        name: &str,
        factory: impl Fn() -> A + Send + Sync + 'static,
    ) -> SingletonBuilder<A>;
}

impl ClusterSingleton for Arc<Cluster> {
    fn singleton<A: Actor>(
        &self,
        name: &str,
        factory: impl Fn() -> A + Send + Sync + 'static,
    ) -> SingletonBuilder<A> {
        let kind = kind_of(name);
        SingletonBuilder {
            inner: self
                .sharding(&kind, move |_| factory())
                .shards(1)
                .idle_timeout(None)
                .remember_entities(true),
            cluster: self.clone(),
            kind,
            store: None,
            replicas: 1,
        }
    }
}

/// Settings and message types of a singleton; finish with
/// [`start`](Self::start) on every node that may run it.
#[must_use = "nothing runs until .start()"]
pub struct SingletonBuilder<A: Actor> {
    inner: ShardingBuilder<A>,
    cluster: Arc<Cluster>,
    kind: String,
    store: Option<Arc<dyn OwnershipStore>>,
    replicas: usize,
}

impl<A: Actor> SingletonBuilder<A> {
    /// The singleton takes tells of `M`.
    pub fn tell<M: RemoteMessage>(mut self) -> Self
    where
        A::Msg: From<M>,
    {
        self.inner = self.inner.tell::<M>();
        self
    }

    /// The singleton answers asks of `Q`.
    pub fn ask<Q: RemoteAsk>(
        mut self,
        make: impl Fn(Q, ReplyTo<Q::Reply>) -> A::Msg + Send + Sync + 'static,
    ) -> Self {
        self.inner = self.inner.ask::<Q>(make);
        self
    }

    /// Most messages a node's proxies buffer while the singleton moves
    /// (default 10,000); beyond it tells are refused, counted.
    pub fn buffer(mut self, n: usize) -> Self {
        self.inner = self.inner.buffer(n);
        self
    }

    /// How long a buffered message waits for the singleton (default 10 s).
    pub fn buffer_timeout(mut self, t: Duration) -> Self {
        self.inner = self.inner.buffer_timeout(t);
        self
    }

    /// How often each node reads the owner record (default: a quarter of
    /// the cluster's down detection). The same on every node.
    pub fn tick(mut self, every: Duration) -> Self {
        self.inner = self.inner.tick(every);
        self
    }

    /// How long a hand-over waits for the instance to stop (default 5 s).
    pub fn handover_timeout(mut self, t: Duration) -> Self {
        self.inner = self.inner.handover_timeout(t);
        self
    }

    /// How long a starting node waits before it takes the singleton from a
    /// node it has never seen live (default 5 s).
    pub fn takeover_grace(mut self, t: Duration) -> Self {
        self.inner = self.inner.takeover_grace(t);
        self
    }

    /// How the instance is spawned (mailbox, dispatcher).
    pub fn options(mut self, options: SpawnOptions) -> Self {
        self.inner = self.inner.entity_options(options);
        self
    }

    /// JetStream replicas of the ownership bucket, when this node creates it.
    pub fn replicas(mut self, n: usize) -> Self {
        self.replicas = n;
        self.inner = self.inner.replicas(n);
        self
    }

    /// Where ownership is recorded (default: the cluster's bucket).
    pub fn store(mut self, store: Arc<dyn OwnershipStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Run the instance on this actor system (default: one of its own).
    pub fn system(mut self, system: &ActorSystem) -> Self {
        self.inner = self.inner.system(system);
        self
    }

    /// Starts this node's part: the instance runs here if placement picks
    /// this node, and the proxies work from here either way.
    pub fn start(self) -> Result<Singleton<A>, ShardingError> {
        let store: Arc<dyn OwnershipStore> = match self.store {
            Some(s) => s,
            None => Arc::new(
                BucketOwnership::open_with_replicas(&self.cluster, self.replicas)
                    .map_err(ShardingError::Store)?,
            ),
        };
        // Eager start: the id in the remembered list before the shard's
        // first claim. Token 0 writes only where no owner has written the
        // list yet; a list an owner wrote holds the id already (or not,
        // where the singleton stopped itself: it stays stopped until a
        // message comes, module docs).
        match store.remember(&self.kind, 0, 0, &[SINGLETON_ID.to_string()]) {
            Ok(()) | Err(StoreError::Conflict) => {}
            Err(e) => return Err(ShardingError::Store(e)),
        }
        let sharding = self.inner.store(store).start()?;
        let proxy = SingletonRef(sharding.entity(SINGLETON_ID));
        Ok(Singleton { sharding, proxy })
    }
}

/// One node's part of a singleton. Dropping it hands the singleton over
/// if it runs here ([`leave`](Self::leave)).
pub struct Singleton<A: Actor> {
    sharding: Sharding<A>,
    proxy: SingletonRef<A>,
}

impl<A: Actor> Singleton<A> {
    /// A reference to the singleton, wherever it runs.
    pub fn proxy(&self) -> SingletonRef<A> {
        self.proxy.clone()
    }

    /// Whether the instance runs on this node now.
    pub fn is_here(&self) -> bool {
        self.sharding
            .local_entities()
            .iter()
            .any(|id| id == SINGLETON_ID)
    }

    /// Whether, at the last tick, the singleton's record was with the node
    /// this node's view of membership wants.
    pub fn settled(&self) -> bool {
        self.sharding.settled()
    }

    /// This node's counters (buffering, refusals, takeovers, ...).
    pub fn stats(&self) -> ShardingStats {
        self.sharding.stats()
    }

    /// Hands the singleton over if it runs here, then stops this node's
    /// part ([`Sharding::leave`]). Blocks until done.
    pub fn leave(self) {
        self.sharding.leave();
    }

    /// Stops this node's part at once, as if the process died
    /// ([`Sharding::halt`]).
    pub fn halt(self) {
        self.sharding.halt();
    }
}

/// The proxy: a reference to the singleton that routes to wherever it
/// runs, and buffers (bounded, with a timeout) while it moves.
pub struct SingletonRef<A: Actor>(EntityRef<A>);

impl<A: Actor> Clone for SingletonRef<A> {
    fn clone(&self) -> Self {
        SingletonRef(self.0.clone())
    }
}

impl<A: Actor> SingletonRef<A> {
    /// Sends `msg` to the singleton ([`EntityRef::tell`]); a full buffer
    /// refuses it (`SendError::Full`, `msg` handed back).
    pub fn tell<M: RemoteMessage>(&self, msg: M) -> Result<(), SendError<M>>
    where
        A::Msg: From<M>,
    {
        self.0.tell(msg)
    }

    /// Sends `msg` and gives a receipt of what the owner's node did with
    /// it ([`EntityRef::tell_confirmed`]).
    pub fn tell_confirmed<M: RemoteMessage>(
        &self,
        msg: M,
        within: Duration,
    ) -> Result<Receipt, SendError<M>>
    where
        A::Msg: From<M>,
    {
        self.0.tell_confirmed(msg, within)
    }

    /// Asks the singleton and blocks for the reply, at most `timeout`.
    pub fn ask<Q: RemoteAsk>(&self, q: Q, timeout: Duration) -> Result<Q::Reply, AskError> {
        self.0.ask(q, timeout)
    }

    /// Asks the singleton; the reply as a future, at most `timeout`.
    pub async fn ask_async<Q: RemoteAsk>(
        &self,
        q: Q,
        timeout: Duration,
    ) -> Result<Q::Reply, AskError> {
        self.0.ask_async(q, timeout).await
    }
}
