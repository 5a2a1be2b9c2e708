//! The user-facing API: [`ClusterSharding::sharding`] → [`ShardingBuilder`]
//! → [`Sharding`] → [`EntityRef`].
//!
//! An entity reference routes each message by the node's routing table:
//! to the owning node's region directly when the shard is owned by a live
//! peer, to this node's region otherwise (which delivers, or buffers until
//! the shard has an owner). Order: messages from one sender to one entity
//! arrive in the order sent while the entity's shard stays where it is; a
//! move may reorder messages that were in flight across it.

use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use troupe::{
    Actor, ActorRef, ActorSystem, AskError, ReplyTo, SendError, SpawnOptions, SystemHandle,
};
use troupe_cluster::Cluster;
use troupe_remote::{Delivered, Exposure, Receipt, RemoteAsk, RemoteMessage};

use crate::config::Config;
use crate::coordinator::{Command, Control, Coordinator};
use crate::envelope::{
    budget_ms, check, EntityTell, EntityTellOut, Refusal, ShardAsk, ShardReply, ShardTell, Tag,
};
use crate::ownership::bucket::BucketOwnership;
use crate::ownership::{update_members, OwnershipStore, StoreError};
use crate::placement::shard_of;
use crate::region::direct::{self, Direct};
use crate::region::{Region, RegionMsg};
use crate::shared::{tell_fn, AskFn, Route, Routes, Shared, TellFn, TypeTable};
use crate::stats::{Counters, ShardingStats};

/// Why a sharding could not start.
#[derive(Debug)]
pub enum ShardingError {
    /// The type name is not 1 to 64 letters, digits, `_` or `-`.
    BadName(String),
    /// The ownership store could not be opened.
    Store(StoreError),
    /// The region could not be exposed on the node.
    Expose(String),
    /// Two tell types (or two ask types) of the sharding type have the
    /// same [`Tag`](crate::envelope::Tag): their stable names.
    TagClash(&'static str, &'static str),
}

impl fmt::Display for ShardingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShardingError::BadName(n) => write!(
                f,
                "sharding type name {n:?} must be 1 to 64 letters, digits, '_' or '-'"
            ),
            ShardingError::Store(e) => write!(f, "{e}"),
            ShardingError::Expose(e) => write!(f, "cannot expose the region: {e}"),
            ShardingError::TagClash(a, b) => write!(
                f,
                "message types {a:?} and {b:?} have the same 32-bit tag; rename one"
            ),
        }
    }
}

impl std::error::Error for ShardingError {}

/// Sharding on a cluster: `cluster.sharding::<Cart>("cart", factory)`.
///
/// Implemented for `Arc<Cluster>`: the sharding's coordinator keeps the
/// cluster (membership) for as long as it runs.
pub trait ClusterSharding {
    /// Starts configuring the sharding type `kind` of entities `A`, built
    /// by `factory` from their id.
    fn sharding<A: Actor>(
        &self,
        kind: &str,
        factory: impl Fn(&str) -> A + Send + Sync + 'static,
    ) -> ShardingBuilder<A>;
}

impl ClusterSharding for Arc<Cluster> {
    fn sharding<A: Actor>(
        &self,
        kind: &str,
        factory: impl Fn(&str) -> A + Send + Sync + 'static,
    ) -> ShardingBuilder<A> {
        ShardingBuilder {
            cluster: self.clone(),
            kind: kind.to_string(),
            factory: Box::new(factory),
            config: Config::default(),
            tells: TypeTable::default(),
            asks: TypeTable::default(),
            clash: None,
            exposers: Vec::new(),
            store: None,
            system: None,
            tick_set: false,
        }
    }
}

/// Settings and message types of a sharding type; finish with
/// [`start`](Self::start). Every node of the cluster must start the same
/// type with the same shard count and message types.
#[must_use = "nothing runs until .start()"]
pub struct ShardingBuilder<A: Actor> {
    cluster: Arc<Cluster>,
    kind: String,
    factory: Box<dyn Fn(&str) -> A + Send + Sync>,
    config: Config,
    tells: TypeTable<TellFn<A>>,
    asks: TypeTable<AskFn<A>>,
    /// Two types registered with the same tag; `start` reports it.
    clash: Option<(&'static str, &'static str)>,
    /// The region's handler for each tell type's `EntityTell`, installed
    /// by `start`.
    exposers: Vec<Exposer<A>>,
    store: Option<Arc<dyn OwnershipStore>>,
    system: Option<SystemHandle>,
    /// `tick` was set: else `start` derives it from the cluster's down
    /// detection ([`Config::tick_for`]).
    tick_set: bool,
}

impl<A: Actor> ShardingBuilder<A> {
    /// Entities take tells of `M`, converted into their message type.
    pub fn tell<M: RemoteMessage>(mut self) -> Self
    where
        A::Msg: From<M>,
    {
        let wire_schema = troupe_remote::schema::tell_fingerprint::<EntityTell<M>>();
        if let Err(c) = self
            .tells
            .register(M::TYPE_ID, M::NAME, wire_schema, tell_fn::<A, M>())
        {
            self.clash.get_or_insert(c);
        }
        self.exposers.push(Box::new(|exposure, shared, region| {
            let (shared, region) = (shared.clone(), region.clone());
            exposure.tell_with::<EntityTell<M>>(move |body| {
                direct::inbound_typed::<A, M>(&shared, &region, body)
            })
        }));
        self
    }

    /// Entities answer asks of `Q`: `make` builds their message from the
    /// request and the reply handle.
    pub fn ask<Q: RemoteAsk>(
        mut self,
        make: impl Fn(Q, ReplyTo<Q::Reply>) -> A::Msg + Send + Sync + 'static,
    ) -> Self {
        let make = Arc::new(make);
        // The entity's reply is encoded and handed to the region's reply
        // handle on the entity's thread, as it is made (`ask_then`): no
        // task of the I/O runtime per ask. (A task per ask cost the node's
        // one I/O thread a wake-up and a poll, and its reply could not come
        // while that thread spun for it, `ask_spin`.)
        let f: AskFn<A> = Box::new(move |b, actor: &ActorRef<A>, reply: ReplyTo<ShardReply>| {
            let Ok(q) = postcard::from_bytes::<Q>(b) else {
                reply.reply(ShardReply::Refused(Refusal::Undecodable));
                return false;
            };
            let make = make.clone();
            actor.ask_then(
                move |r| make(q, r),
                move |answer| {
                    reply.reply(match answer {
                        Ok(v) => match postcard::to_allocvec(&v) {
                            Ok(b) => ShardReply::Ok(b),
                            Err(_) => ShardReply::Refused(Refusal::NoReply),
                        },
                        Err(e) => ShardReply::Refused(Refusal::from_ask_error(e)),
                    });
                },
            );
            true
        });
        if let Err(c) = self.asks.register(Q::TYPE_ID, Q::NAME, 0, f) {
            self.clash.get_or_insert(c);
        }
        self
    }

    /// Number of shards (default 64); the same on every node.
    pub fn shards(mut self, n: u32) -> Self {
        self.config.shards = n.max(1);
        self
    }

    /// Passivate entities idle this long (`None`: never; default 120 s):
    /// nothing delivered to them for that long and nothing of theirs
    /// waiting in the region's buffer.
    pub fn idle_timeout(mut self, idle: Option<Duration>) -> Self {
        self.config.idle_timeout = idle;
        self
    }

    /// Remember active entity ids and reactivate them on the shard's next
    /// owner (after a move or a restart).
    pub fn remember_entities(mut self, on: bool) -> Self {
        self.config.remember_entities = on;
        self
    }

    /// How often ownership is checked against membership (default: a
    /// quarter of the cluster's down detection, at most 500 ms; see
    /// [`Config::tick_for`]). The delivery lease is
    /// [`LEASE_TICKS`](crate::region::LEASE_TICKS) ticks and a taken-over
    /// shard waits one lease and one tick before its new owner delivers, so
    /// the tick sets how fast a shard moves, not whether two nodes may run
    /// one entity: set the same tick on every node.
    pub fn tick(mut self, every: Duration) -> Self {
        self.config.tick = every.max(Duration::from_millis(10));
        self.tick_set = true;
        self
    }

    /// Most envelopes buffered for shards without an owner (default 10,000).
    pub fn buffer(mut self, n: usize) -> Self {
        self.config.buffer = n;
        self
    }

    /// How long a buffered envelope waits for an owner (default 10 s).
    pub fn buffer_timeout(mut self, t: Duration) -> Self {
        self.config.buffer_timeout = t;
        self
    }

    /// Most entities this node runs at once for this type (default
    /// 1,000,000). An activation beyond it passivates the least recently
    /// used entity (an approximation, CLOCK: one mark per entity set with
    /// each message, nothing allocated per message; counted in
    /// `evictions`); while as many entities again are still stopping, an
    /// activation is refused and counted (`entities_refused`).
    pub fn max_entities(mut self, n: usize) -> Self {
        self.config.max_entities = n.max(1);
        self
    }

    /// How each entity of this type is spawned (default: the actor
    /// system's defaults): a bounded mailbox and its overflow policy, a
    /// dispatcher (the tokio dispatcher persistence recommends for
    /// persistent entities), metrics. A full bounded mailbox never blocks
    /// the region: a tell it refuses waits in the region's buffer for the
    /// next tick (and expires as buffered tells do); a policy that drops
    /// (`DropOldest`, `DropNewest`) drops accepted tells, counted in the
    /// actor system's `dropped_messages`. A dedicated thread per entity is
    /// possible but costs a thread each.
    ///
    /// ```no_run
    /// # fn f(cluster: &std::sync::Arc<troupe_cluster::Cluster>, system: &troupe::ActorSystem,
    /// #      rt: tokio::runtime::Handle) {
    /// use troupe::{MailboxConfig, Overflow, SpawnOptions};
    /// use troupe_sharding::ClusterSharding;
    /// # struct Cart;
    /// # impl troupe::Actor for Cart {
    /// #     type Msg = ();
    /// #     fn handle(&mut self, _: (), _: &mut troupe::Context<'_, Self>) {}
    /// # }
    /// let journal = system.tokio_dispatcher("journal", rt);
    /// let carts = cluster
    ///     .sharding("cart", |_id| Cart)
    ///     .system(system)
    ///     .entity_options(
    ///         SpawnOptions::new()
    ///             .mailbox(MailboxConfig::bounded(1_000, Overflow::Reject))
    ///             .dispatcher(&journal),
    ///     );
    /// # let _ = carts;
    /// # }
    /// ```
    pub fn entity_options(mut self, options: SpawnOptions) -> Self {
        self.config.entity_options = options;
        self
    }

    /// How long a starting node waits before it takes over shards of
    /// nodes it has never seen live (default 5 s; keep it above the
    /// cluster's heartbeat interval times its `down_after`).
    pub fn takeover_grace(mut self, t: Duration) -> Self {
        self.config.takeover_grace = t;
        self
    }

    /// How long a hand-over waits for a shard's entities to stop (default 5 s).
    pub fn handover_timeout(mut self, t: Duration) -> Self {
        self.config.handover_timeout = t;
        self
    }

    /// JetStream replicas of the ownership bucket if this node creates it
    /// (default 1; 3 on a 3-server NATS cluster). Ignored with
    /// [`store`](Self::store).
    pub fn replicas(mut self, n: usize) -> Self {
        self.config.replicas = n.clamp(1, 5);
        self
    }

    /// Where ownership is recorded (default: a key-value bucket of the
    /// cluster's transport, [`BucketOwnership`]).
    pub fn store(mut self, store: Arc<dyn OwnershipStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Spawn entities on this system (default: one the sharding owns).
    pub fn system(mut self, system: &ActorSystem) -> Self {
        self.system = Some(system.handle());
        self
    }

    /// Starts the region and the coordinator on this node.
    pub fn start(self) -> Result<Sharding<A>, ShardingError> {
        let ok = !self.kind.is_empty()
            && self.kind.len() <= 64
            && self
                .kind
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !ok {
            return Err(ShardingError::BadName(self.kind));
        }
        if let Some((a, b)) = self.clash {
            return Err(ShardingError::TagClash(a, b));
        }
        let mut config = self.config;
        if !self.tick_set {
            config.tick = Config::tick_for(self.cluster.down_detection());
        }
        let store = match self.store {
            Some(s) => s,
            None => Arc::new(
                BucketOwnership::open_with_replicas(&self.cluster, config.replicas)
                    .map_err(ShardingError::Store)?,
            ),
        };
        update_members(&*store, &self.kind, self.cluster.name(), true)
            .map_err(ShardingError::Store)?;
        // A new start lifts an operator's `down` mark (`controls.rs`).
        crate::controls::rejoined(&*store, &self.kind, self.cluster.name())
            .map_err(ShardingError::Store)?;
        let handle = troupe_remote::runtime::handle()
            .map_err(|e| ShardingError::Store(StoreError::Unavailable(e.to_string())))?;
        let (own_system, system) = match self.system {
            Some(h) => (None, h),
            None => {
                let s = ActorSystem::new();
                let h = s.handle();
                (Some(s), h)
            }
        };
        let shared = Arc::new(Shared {
            kind: self.kind.clone(),
            node: self.cluster.name().to_string(),
            config,
            store,
            factory: self.factory,
            tells: self.tells,
            asks: self.asks,
            routes: Routes::new(),
            stats: Counters::default(),
            handle,
            system: system.clone(),
            pending: Default::default(),
            stopped: Default::default(),
            direct: Direct::new(),
        });
        let region = system.spawn_with(
            Region::new(shared.clone()),
            SpawnOptions::new().dedicated_thread(),
        );
        let region_name = format!("shard-region-{}", self.kind);
        let mut exposure = self
            .cluster
            .expose(&region_name, &region)
            .tell_with::<ShardTell>({
                let (shared, region) = (shared.clone(), region.clone());
                move |body: &[u8]| direct::inbound(&shared, &region, body)
            })
            .ask::<ShardAsk>(RegionMsg::Ask);
        for expose in self.exposers {
            exposure = expose(exposure, &shared, &region);
        }
        exposure
            .serve()
            .map_err(|e| ShardingError::Expose(e.to_string()))?;
        let control = Arc::new(Control::new());
        {
            let control = Arc::downgrade(&control);
            self.cluster.on_node_down(move |_| {
                if let Some(c) = control.upgrade() {
                    c.set(Command::Wake);
                }
            });
        }
        let coordinator = Coordinator {
            shared: shared.clone(),
            region: region.clone(),
            region_name: region_name.clone(),
            cluster: self.cluster.clone(),
            control: control.clone(),
            owned: HashMap::new(),
            refs: HashMap::new(),
            seen: Default::default(),
            last_live: Vec::new(),
            deferred: HashMap::new(),
            started: std::time::Instant::now(),
            incarnation: self.cluster.incarnation(),
            alive_inc: HashMap::new(),
            leaving: false,
        };
        let thread = std::thread::Builder::new()
            .name(format!("shard-coord-{}", self.kind))
            .spawn(move || coordinator.run())
            .map_err(|e| ShardingError::Expose(e.to_string()))?;
        Ok(Sharding {
            shared,
            region,
            region_name,
            cluster: self.cluster,
            control,
            thread: Some(thread),
            _system: own_system,
        })
    }
}

/// One node's part of a sharding type: hands out [`EntityRef`]s, runs this
/// node's region and coordinator. Dropping it hands this node's shards
/// over ([`leave`](Self::leave)); dropped by a task of the cluster's I/O
/// runtime, it leaves on a thread of its own and the drop returns at once.
pub struct Sharding<A: Actor> {
    shared: Arc<Shared<A>>,
    region: ActorRef<Region<A>>,
    region_name: String,
    cluster: Arc<Cluster>,
    control: Arc<Control>,
    thread: Option<JoinHandle<()>>,
    _system: Option<ActorSystem>,
}

impl<A: Actor> Sharding<A> {
    /// A reference to entity `id`, on whichever node owns it. An id that is
    /// empty or longer than 256 bytes gives a reference whose sends are
    /// all refused.
    pub fn entity(&self, id: &str) -> EntityRef<A> {
        EntityRef {
            shared: self.shared.clone(),
            region: self.region.clone(),
            id: Id::new(id),
            shard: shard_of(id, self.shared.config.shards),
            _a: PhantomData,
        }
    }

    /// The sharding's kind (`cluster.sharding("cart", ..)`: `cart`).
    pub fn kind(&self) -> &str {
        &self.shared.kind
    }

    /// This node's counters.
    pub fn stats(&self) -> ShardingStats {
        self.shared.stats.snapshot()
    }

    /// Whether, at the last tick, every shard was owned by the node this
    /// node's view of membership wants.
    pub fn settled(&self) -> bool {
        self.control.settled.load(Ordering::Relaxed)
    }

    /// The ids of the entities running on this node, sorted.
    pub fn local_entities(&self) -> Vec<String> {
        self.region
            .ask(RegionMsg::Active, Duration::from_secs(10))
            .unwrap_or_default()
    }

    /// Passivates entity `id` on this node now, as the idle timeout would
    /// (counted in `passivations`; a later message starts it again).
    /// `false` if it is not running here, or envelopes buffered for it
    /// wait. Blocks until the region answers (at most 10 s).
    pub fn passivate(&self, id: &str) -> bool {
        self.region
            .ask(
                |r| RegionMsg::Passivate(id.to_string(), r),
                Duration::from_secs(10),
            )
            .unwrap_or(false)
    }

    /// The shards moving to or from this node now, by shard (see
    /// [`moving`](crate::moving)): those it hands over and those it
    /// takes over, as its coordinator last published them.
    pub fn handovers(&self) -> Vec<crate::moving::Handover> {
        let now = std::time::Instant::now();
        let mut v: Vec<_> = self
            .control
            .moving
            .lock()
            .iter()
            .map(|r| r.view(now))
            .collect();
        v.sort_by_key(|h| h.shard);
        v
    }

    /// The shard of `id`.
    pub fn shard_of(&self, id: &str) -> u32 {
        shard_of(id, self.shared.config.shards)
    }

    /// This node's state of the sharding (for the reminders' firer).
    pub(crate) fn shared(&self) -> &Arc<Shared<A>> {
        &self.shared
    }

    /// The cluster this sharding runs on (for the producers of `delivery`).
    pub(crate) fn cluster(&self) -> &Arc<Cluster> {
        &self.cluster
    }

    /// Hands every shard this node owns over (its entities stop, the
    /// records are released) and stops this node's part: what its region
    /// holds is forwarded to the new owners, and the call returns once
    /// the node's links have accounted for every tell they took (at most
    /// the hand-over timeout more). From then on this node's entity
    /// references refuse sends (`SendError::Stopped`, asks
    /// `AskError::ActorStopped`). Blocks until done.
    pub fn leave(mut self) {
        self.stop(Command::Leave);
    }

    /// Stops this node's part at once, releasing nothing, as if the process
    /// had died: its entities are killed and its shards wait for the
    /// cluster to declare the node down; its entity references refuse
    /// sends from then on. For tests and for shutdown paths that must not
    /// wait.
    pub fn halt(mut self) {
        self.stop(Command::Halt);
    }

    /// After the coordinator has handed the shards over (`Leave`) or
    /// stopped at once (`Halt`): the region is unexposed first, so that
    /// the node refuses (and its senders hear of) every remote tell from
    /// then on, and this node's entity references refuse every send
    /// (`Stopped`, the message handed back). On a leave the region then
    /// stops after what its mailbox holds (the envelopes the inbox handed
    /// over before: forwarded to the new owners) and forwards its buffer
    /// as it stops, and the leave waits (at most the hand-over timeout)
    /// until the node's links have accounted for every tell they took:
    /// what this node accepted is published and confirmed before its
    /// owner drops the node, whose drop flushes for a short grace only. A
    /// halt kills the region (what it holds is dropped and counted, as in
    /// a crash).
    fn stop(&mut self, how: Command) {
        let Some(t) = self.thread.take() else { return };
        let leave = matches!(how, Command::Leave);
        self.control.set(how);
        let _ = t.join();
        self.shared.stopped.store(true, Ordering::Release);
        self.cluster.node().unexpose(&self.region_name);
        if leave {
            self.region.stop();
            if self
                .region
                .join_timeout(crate::coordinator::STOP_WAIT)
                .is_some()
            {
                self.cluster
                    .node()
                    .settle(self.shared.config.handover_timeout);
                return;
            }
        }
        self.region.kill();
        let _ = self.region.join_timeout(crate::coordinator::STOP_WAIT);
    }
}

impl<A: Actor> Drop for Sharding<A> {
    /// Leaves, as [`leave`](Sharding::leave) does. The leave waits for
    /// work on the cluster's I/O runtime (ownership reads, the links'
    /// accounting): dropped by a task of that runtime, whose thread would
    /// then wait for itself, the leave runs on a thread of its own and the
    /// drop returns at once.
    fn drop(&mut self) {
        if self.thread.is_none() {
            return;
        }
        if !troupe_remote::runtime::on(self.cluster.node().runtime()) {
            self.stop(Command::Leave);
            return;
        }
        let rest = Sharding {
            shared: self.shared.clone(),
            region: self.region.clone(),
            region_name: std::mem::take(&mut self.region_name),
            cluster: self.cluster.clone(),
            control: self.control.clone(),
            thread: self.thread.take(),
            _system: self._system.take(),
        };
        // The parts in a slot, so that a thread that cannot be spawned
        // hands them back here rather than dropping them (which would
        // come back to this branch).
        let slot = Arc::new(std::sync::Mutex::new(Some(rest)));
        let theirs = slot.clone();
        let spawned = std::thread::Builder::new()
            .name("troupe-sharding-leave".into())
            .spawn(move || {
                let rest = theirs.lock().ok().and_then(|mut s| s.take());
                if let Some(mut rest) = rest {
                    rest.stop(Command::Leave);
                }
            });
        if spawned.is_err() {
            // No thread to leave on: stop the coordinator without waiting
            // for it, as a halt (the shards wait for down detection).
            let rest = slot.lock().ok().and_then(|mut s| s.take());
            if let Some(mut rest) = rest {
                rest.control.set(Command::Halt);
                rest.shared.stopped.store(true, Ordering::Release);
                rest.thread.take();
            }
        }
    }
}

/// An entity reference's id: inline up to [`INLINE_ID`] bytes, so that a
/// tell copies it into its envelope without following a pointer of its
/// own per reference (with 64 references told in turn, 64 separate
/// lines); longer ids are shared, so a clone never allocates.
#[derive(Clone)]
enum Id {
    Inline { len: u8, bytes: [u8; INLINE_ID] },
    Shared(Arc<str>),
}

/// The longest id an [`Id`] keeps inline.
const INLINE_ID: usize = 22;

impl Id {
    fn new(id: &str) -> Id {
        let b = id.as_bytes();
        match u8::try_from(b.len()) {
            Ok(len) if b.len() <= INLINE_ID => {
                let mut bytes = [0; INLINE_ID];
                bytes[..b.len()].copy_from_slice(b);
                Id::Inline { len, bytes }
            }
            _ => Id::Shared(id.into()),
        }
    }

    /// The id's bytes (a `str`'s).
    fn bytes(&self) -> &[u8] {
        match self {
            Id::Inline { len, bytes } => bytes.get(..usize::from(*len)).unwrap_or_default(),
            Id::Shared(s) => s.as_bytes(),
        }
    }

    fn as_str(&self) -> &str {
        match self {
            // Always a `str`'s bytes (`Id::new`).
            Id::Inline { .. } => std::str::from_utf8(self.bytes()).unwrap_or_default(),
            Id::Shared(s) => s,
        }
    }
}

/// Installs the region's handler for one tell type's
/// [`EntityTell`](crate::envelope::EntityTell)s on the region's exposure.
type Exposer<A> = Box<
    dyn for<'n> FnOnce(
            Exposure<'n, Region<A>>,
            &Arc<Shared<A>>,
            &ActorRef<Region<A>>,
        ) -> Exposure<'n, Region<A>>
        + Send,
>;

/// A reference to one entity, wherever it runs. Cheap to clone.
pub struct EntityRef<A: Actor> {
    shared: Arc<Shared<A>>,
    region: ActorRef<Region<A>>,
    id: Id,
    shard: u32,
    _a: PhantomData<fn(A)>,
}

impl<A: Actor> Clone for EntityRef<A> {
    fn clone(&self) -> Self {
        EntityRef {
            shared: self.shared.clone(),
            region: self.region.clone(),
            id: self.id.clone(),
            shard: self.shard,
            _a: PhantomData,
        }
    }
}

impl<A: Actor> fmt::Debug for EntityRef<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EntityRef({}/{})", self.shared.kind, self.id())
    }
}

impl<A: Actor> EntityRef<A> {
    /// A reference to entity `id` of the same sharding (for the producers
    /// of `delivery`, which keep one reference and address many ids).
    pub(crate) fn sibling(&self, id: &str) -> EntityRef<A> {
        EntityRef {
            shared: self.shared.clone(),
            region: self.region.clone(),
            id: Id::new(id),
            shard: shard_of(id, self.shared.config.shards),
            _a: PhantomData,
        }
    }

    /// The entity's id.
    pub fn id(&self) -> &str {
        // Always a `str`'s bytes (`Sharding::entity`).
        self.id.as_str()
    }

    /// Sends `msg` to the entity. Never blocks. Hands `msg` back as
    /// `Closed` if the sharding does not take `M` or the id is invalid,
    /// `Full` if the owner's outbox is full or the message cannot be sent
    /// (as a remote tell), or the shard has no owner and this node's
    /// buffer is full, `Stopped` if this node's sharding has stopped.
    pub fn tell<M: RemoteMessage>(&self, msg: M) -> Result<(), SendError<M>>
    where
        A::Msg: From<M>,
    {
        let wire_schema = match self.tell_schema::<M>() {
            Ok(w) => w,
            Err(refuse) => return Err(refuse(msg)),
        };
        // To a live owner: an `EntityTell<M>`, the message encoded once,
        // straight into the owner's outbox, with the id borrowed; nothing
        // is allocated.
        let sent = self.shared.with_route(self.shard, |route| match route {
            Route::Remote { tell, .. } => {
                let out = EntityTellOut {
                    entity: self.id.bytes(),
                    msg: &msg,
                };
                match tell.tell_other_as::<EntityTell<M>, _>(wire_schema, &out) {
                    Ok(()) => Sent::Yes,
                    Err(SendError::Full(())) => Sent::Full,
                    Err(_) => Sent::NotTried,
                }
            }
            Route::Local => Sent::NotTried,
        });
        match sent {
            Sent::Yes => {
                self.shared.stats.tells_sent.add();
                return Ok(());
            }
            // The owner's outbox is full: the caller gets the message back
            // (a detour through this node's region would overtake nothing
            // but reorder what follows).
            Sent::Full => return Err(SendError::Full(msg)),
            Sent::NotTried => {}
        }
        self.to_local_region(msg)
    }

    /// Sends `msg` to the entity as [`tell`](Self::tell) does (same path,
    /// same order among tells from this node, same errors, which hand
    /// `msg` back) and gives a [`Receipt`] of what the owner's node did
    /// with it:
    /// - `Ok(Delivered)`: the owner's node took it: into the entity's
    ///   mailbox (the direct path), or into its region, which activates
    ///   the entity, buffers it for a shard in hand-over, or forwards it;
    ///   for a shard owned here, this node's region took it. It is not
    ///   "handled": see the guide's table (`book/src/sharding.md`);
    /// - `Err(Refused(_))`: the owner's node refused it (its buffer was
    ///   full, or the type or body is unknown there);
    /// - `Err(Lost)`, `Err(Unknown)`: as [`RemoteRef::tell_confirmed`](troupe_remote::RemoteRef::tell_confirmed)
    ///   (`within` is the deadline for `Unknown`).
    pub fn tell_confirmed<M: RemoteMessage>(
        &self,
        msg: M,
        within: Duration,
    ) -> Result<Receipt, SendError<M>>
    where
        A::Msg: From<M>,
    {
        let wire_schema = match self.tell_schema::<M>() {
            Ok(w) => w,
            Err(refuse) => return Err(refuse(msg)),
        };
        let sent = self.shared.with_route(self.shard, |route| match route {
            Route::Remote { tell, .. } => {
                let out = EntityTellOut {
                    entity: self.id.bytes(),
                    msg: &msg,
                };
                match tell.tell_other_confirmed_as::<EntityTell<M>, _>(wire_schema, &out, within) {
                    Ok(r) => Ok(r),
                    Err(SendError::Full(())) => Err(Sent::Full),
                    Err(_) => Err(Sent::NotTried),
                }
            }
            Route::Local => Err(Sent::NotTried),
        });
        match sent {
            Ok(receipt) => {
                self.shared.stats.tells_sent.add();
                Counters::add(&self.shared.stats.tells_confirmed_sent);
                Ok(receipt)
            }
            Err(Sent::Full) => Err(SendError::Full(msg)),
            Err(_) => {
                // This node's region took it, or says why not now.
                self.to_local_region(msg)?;
                Counters::add(&self.shared.stats.tells_confirmed_sent);
                Ok(Receipt::ready(Ok(Delivered)))
            }
        }
    }

    /// The checks every tell makes before it goes anywhere: this node's
    /// sharding still runs, it takes `M`, the id is valid. `Ok`: the schema
    /// fingerprint `M`'s tells carry; `Err`: how to hand the message back.
    #[inline(always)]
    fn tell_schema<M: RemoteMessage>(&self) -> Result<u64, fn(M) -> SendError<M>> {
        if self.shared.stopped.load(Ordering::Acquire) {
            return Err(SendError::Stopped);
        }
        let Some(typed) = self.shared.tells.find(M::TYPE_ID) else {
            return Err(SendError::Closed);
        };
        if !check(self.id.bytes(), 0) {
            return Err(SendError::Closed);
        }
        Ok(typed.wire_schema)
    }

    /// Hands `msg` to this node's region, which delivers, forwards or
    /// buffers it.
    fn to_local_region<M: RemoteMessage>(&self, msg: M) -> Result<(), SendError<M>>
    where
        A::Msg: From<M>,
    {
        let Ok(payload) = postcard::to_allocvec(&msg) else {
            return Err(SendError::Closed(msg));
        };
        self.shared.stats.tells_sent.add();
        // The bound the region's buffer keeps (region/route.rs): what it
        // holds and what the inbox has confirmed on its way to it.
        if self.shared.buffer_held() >= self.shared.config.buffer {
            Counters::add(&self.shared.stats.buffer_full);
            return Err(SendError::Full(msg));
        }
        let env = ShardTell {
            entity: self.id().to_string(),
            tag: Tag::of(M::TYPE_ID),
            hops: 0,
            payload,
        };
        // Handed over as the inbox hands a remote tell: its place in the
        // buffer reserved (counted in `inflight` until the region has
        // routed it), so the region never refuses a tell accepted here.
        self.shared.direct.handing();
        match self.region.tell(RegionMsg::Inbound(env)) {
            Ok(()) => Ok(()),
            Err(_) => {
                self.shared.direct.routed();
                Err(SendError::Stopped(msg))
            }
        }
    }

    fn ask_envelope<Q: RemoteAsk>(&self, q: &Q, timeout: Duration) -> Result<ShardAsk, AskError> {
        if self.shared.stopped.load(Ordering::Acquire) {
            return Err(AskError::ActorStopped);
        }
        if !self.shared.asks.takes(Q::TYPE_ID) || !check(self.id.bytes(), 0) {
            return Err(AskError::NoResponders);
        }
        let payload = postcard::to_allocvec(q).map_err(|_| AskError::NoReply)?;
        Counters::add(&self.shared.stats.asks);
        Ok(ShardAsk {
            entity: self.id().to_string(),
            tag: Tag::of(Q::TYPE_ID),
            hops: 0,
            budget_ms: budget_ms(timeout),
            payload,
        })
    }

    /// Asks the entity and blocks for the reply, at most `timeout`. Not
    /// from inside a handler (use [`ask_async`](Self::ask_async) there).
    pub fn ask<Q: RemoteAsk>(&self, q: Q, timeout: Duration) -> Result<Q::Reply, AskError> {
        let env = self.ask_envelope(&q, timeout)?;
        let reply = match self.shared.route(self.shard) {
            Route::Remote { ask, .. } => ask.ask(env, timeout)?,
            Route::Local => self.region.ask(|r| RegionMsg::Ask(env, r), timeout)?,
        };
        decode_reply::<Q>(reply)
    }

    /// Asks the entity; the reply as a future, at most `timeout`.
    pub async fn ask_async<Q: RemoteAsk>(
        &self,
        q: Q,
        timeout: Duration,
    ) -> Result<Q::Reply, AskError> {
        let env = self.ask_envelope(&q, timeout)?;
        let reply = match self.shared.route(self.shard) {
            Route::Remote { ask, .. } => ask.ask_async(env, timeout).await?,
            Route::Local => {
                self.region
                    .ask_async(|r| RegionMsg::Ask(env, r))
                    .with_timeout(timeout)
                    .await?
            }
        };
        decode_reply::<Q>(reply)
    }
}

/// What a tell to a remote owner came to.
enum Sent {
    Yes,
    /// The owner's outbox is full.
    Full,
    /// No remote owner, or the connection is down: this node's region takes it.
    NotTried,
}

fn decode_reply<Q: RemoteAsk>(reply: ShardReply) -> Result<Q::Reply, AskError> {
    match reply {
        ShardReply::Ok(b) => postcard::from_bytes(&b).map_err(|_| AskError::NoReply),
        ShardReply::Refused(r) => Err(r.to_ask_error()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids of 0 to 40 bytes, either side of the inline limit and with
    /// multi-byte characters, come back as they went in.
    #[test]
    fn an_id_keeps_its_bytes_inline_and_shared() {
        for n in 0..=40usize {
            let id: String = (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
            let kept = Id::new(&id);
            assert_eq!(kept.bytes(), id.as_bytes(), "{n}");
            assert_eq!(kept.as_str(), id, "{n}");
            assert_eq!(matches!(kept, Id::Inline { .. }), n <= INLINE_ID, "{n}");
            assert_eq!(kept.clone().bytes(), id.as_bytes());
        }
        let wide = "ü-7-€".repeat(3);
        assert_eq!(Id::new(&wide).as_str(), wide);
    }
}
