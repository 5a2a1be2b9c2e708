//! The region: one actor per node and sharding type that holds this
//! node's entities, delivers envelopes to them, and buffers or forwards
//! the ones for shards it does not own.
//!
//! Protocol (the coordinator drives ownership, the region obeys):
//! - `Owned { shard, token }`: the coordinator claimed `shard` with fencing
//!   token `token`. The region delivers to its entities from now on,
//!   reactivates the remembered ones (`remember_entities`), and retries
//!   its buffer.
//! - An envelope for an owned shard goes to its entity, activated on the
//!   first message: before spawning, the region reads the shard's record
//!   and spawns only if it is still `(this node, token)` (the fencing
//!   check); if the record names another owner or token the shard is
//!   treated as lost. If the store does not answer, the shard stays owned
//!   (the coordinator still holds it and will not send `Owned` again): the
//!   envelope waits in the buffer and the check is retried on the next
//!   `Tick`, at most one store read per shard and tick while it is down.
//! - `Release { shard }`: hand-over. The region stops delivering to the
//!   shard, asks each of its entities to stop (each first handles what is
//!   in its mailbox), and answers once the last one has stopped; only then
//!   does the coordinator release the record. Envelopes that arrive
//!   meanwhile wait in the buffer. With `kill` (a leave whose hand-over
//!   timed out) it kills them instead, running and stopping ones alike
//!   (`handover_kills`; what their mailboxes held is dropped and counted
//!   in the system's `dropped`), so that the leave still releases the
//!   record rather than leave the shard to a departed region.
//! - `Lost { shard }`: someone else holds the record. The region kills
//!   the shard's entities at once; what their mailboxes held is dropped,
//!   counted (`mailbox_dropped`): the new owner cannot be handed decoded
//!   messages.
//! - An envelope for a shard not owned here is forwarded to the owner the
//!   routing table names, or buffered if it names none or the link is
//!   full or down. One forwarded [`MAX_HOPS`](crate::envelope::MAX_HOPS)
//!   times already is refused at once (`TooManyHops`, `hops_exceeded`). A
//!   forwarded ask carries what is left of its asker's deadline and waits
//!   for its reply no longer; a timeout is answered `Timeout`.
//! - `Verified { at }`: the coordinator read every record at `at` (and has
//!   sent the `Owned` and `Lost` that followed from them). The region
//!   delivers to an owned shard only within [`LEASE_TICKS`] ticks of the
//!   last one (the lease); past it, envelopes wait in the buffer until the
//!   next `Verified`. A node paused (SIGSTOP, a stalled VM) or cut off from
//!   the store past its lease thus delivers nothing until its coordinator
//!   has read the records again and killed the entities of shards that
//!   moved meanwhile. A node that takes a shard over from another tells
//!   its region `Owned` only a lease and a tick after its claim
//!   (coordinator.rs, "Taking over"), so the two never deliver at once,
//!   whatever the lease and the heartbeat.
//!   The lease is checked when the region hands a message to its entity:
//!   what already sits in an entity's mailbox when its node pauses is
//!   handled when the node resumes, before the coordinator's next read.
//! - `Stopped { id, generation, left }`: an instance stopped, with what
//!   its mailbox still held (its undelivered hook; lifecycle.rs). What an
//!   instance that stopped by itself or panicked left goes to the next
//!   instance before anything newer (activated at once when the shard is
//!   leased here; during a hand-over it only drains them); then what
//!   waited for the stop is routed again.
//! - `Tick`: passivates idle entities (none with envelopes in the buffer:
//!   those are its next messages), hands what stopped instances left to
//!   new ones (a lease renewed, the store back) and retries the buffer; an envelope
//!   older than the buffer timeout, or an ask past its asker's deadline,
//!   is refused `Expired` and counted (`expired`): an ask is answered;
//!   a tell has no way back (`Pending::refuse` is where a receipt would
//!   carry the reason), and a local one is counted on its sender's node.
//! - `Room`: a tell that an entity's full bounded mailbox sent back waits
//!   in the buffer and is tried again after 1 ms, backing off to a tick
//!   while the mailbox stays full (room.rs); the other buffered envelopes
//!   keep their places.
//!
//! Invariants:
//! - At most one instance per entity id runs on this node: a new one is
//!   spawned only once the previous one's stop has been reported
//!   (`Stopped`, from its `on_stop` hook); what arrives meanwhile waits
//!   with it.
//! - Every envelope is delivered, forwarded, kept in the buffer or
//!   counted in exactly one refusal counter; when the region stops, what
//!   its buffer holds and what waits for an entity's stop is forwarded or
//!   refused (`expired`).
//! - An envelope that waits (in the buffer, or for its entity's stop)
//!   keeps the span it arrived in and is routed again inside it, so a
//!   traced sender's trace goes on through the wait (feature `otel` of
//!   troupe-remote carries it across nodes); a forwarded ask runs in the
//!   span it was forwarded from.
//! - The entity table is bounded, since ids come from the network: at
//!   most `max_entities` active instances (an activation beyond it
//!   passivates the least recently used, lifecycle.rs's CLOCK sweep) and
//!   as many stopping ones besides (an activation beyond is refused and
//!   counted). What stopped instances left (`returned`) holds one entry
//!   per entity id without a live instance.
//! - Every message delivered into an entity's mailbox is handled there,
//!   handed to its next instance (`redelivered`), or counted in
//!   `mailbox_dropped`.
//!
//! - Per-sender FIFO to an entity while its shard stays put: the region
//!   handles envelopes in mailbox order and hands an entity what waited
//!   for it before anything newer: an envelope for an entity that has
//!   envelopes in the buffer joins them there, whatever the lease or the
//!   routing table say by then (a renewed lease, before the next `Tick`
//!   retries the buffer, let newer tells overtake buffered ones); the
//!   direct path (direct.rs) keeps it with the region's path.
//!
//! An entity that stops by itself or panics: what its mailbox held when
//! it stopped comes back with its `Stopped` (the entity is spawned with
//! an undelivered hook, `troupe::Undelivered`) and goes to the next
//! instance first; what arrives for it after its stop waits for the
//! stop's `Stopped` and goes to the next instance after it, also a tell
//! its mailbox refused because the stop came between the region's check
//! and its send. An entity that passivates itself (`ctx.passivate()`, a
//! drain, as the region's own passivation) handles its mailbox first; a
//! tell its closed mailbox refuses waits for the stop the same way. A
//! tell an entity's full bounded mailbox refuses (the kind's spawn
//! options) waits in the buffer: the region never blocks on an entity.
//!
//! The region runs on a thread of its own: the fencing check and the
//! remembered-ids writes are blocking store calls. A remote tell to an
//! entity active here usually skips it: the node's inbox loop tells the
//! entity directly (direct.rs), within the same lease.
//!
//! Files: `route.rs`, where one envelope goes; `lifecycle.rs`, the
//! ownership messages and the entities' lives; `direct.rs`, the direct
//! path and the table of entities it may tell; `pending.rs`, an envelope
//! on its way and what it keeps while it waits.

use std::any::Any;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use troupe::timer::TimerHandle;
use troupe::{Actor, ActorRef, Context, ReplyTo, Undelivered};

use crate::envelope::{ShardAsk, ShardReply, ShardTell};
use crate::shared::Shared;
use crate::stats::Counters;

pub(crate) mod direct;
mod lifecycle;
mod pending;
mod room;
mod route;
use pending::{Held, Pending};

/// What the region actor takes.
pub enum RegionMsg {
    /// A tell for an entity: from another node (one that did not take
    /// the direct path) or from an entity reference on this node. Its
    /// place in the buffer is reserved: whoever handed it over counted it
    /// in `inflight` (`Direct::handing`) after checking the buffer's
    /// bound, and the region never refuses it for a full buffer.
    Inbound(ShardTell),
    /// An ask for an entity.
    Ask(ShardAsk, ReplyTo<ShardReply>),
    /// The coordinator claimed the shard with this token.
    Owned {
        /// The shard.
        shard: u32,
        /// Its fencing token.
        token: u64,
    },
    /// Stop the shard's entities, answer `true` when all have stopped.
    Release {
        /// The shard.
        shard: u32,
        /// Answered when done.
        done: ReplyTo<bool>,
        /// Kill them (running and stopping ones: what their mailboxes
        /// hold is dropped and counted) instead of letting them drain: a
        /// leave whose hand-over timed out.
        kill: bool,
    },
    /// The shard is owned elsewhere: kill its entities.
    Lost {
        /// The shard.
        shard: u32,
    },
    /// The coordinator read every record at this instant.
    Verified {
        /// When its read began.
        at: Instant,
    },
    /// Passivate idle entities, retry the buffer.
    Tick,
    /// Try again the entities whose bounded mailbox was full (room.rs).
    Room,
    /// An entity instance stopped.
    Stopped {
        /// Its id.
        id: String,
        /// Its instance number.
        generation: u64,
        /// What its mailbox still held.
        left: Leftovers,
    },
    /// The ids of the entities running here, sorted.
    Active(ReplyTo<Vec<String>>),
    /// Passivate this entity now, as if it were idle; answers whether it
    /// was running here (and not held by buffered envelopes).
    Passivate(String, ReplyTo<bool>),
}

/// What an entity instance's mailbox held when it stopped
/// ([`troupe::Undelivered`] of the entity's message type), on its way from
/// the instance's undelivered hook to its region; opaque, since
/// [`RegionMsg`] names no entity type. Dropped unopened, its messages are
/// dropped and counted in the actor system's `dropped_messages`.
pub struct Leftovers(Box<dyn Any + Send>);

impl Leftovers {
    fn of<M: Send + 'static>(u: Undelivered<M>) -> Self {
        Leftovers(Box::new(u))
    }

    fn open<M: Send + 'static>(self) -> Option<Undelivered<M>> {
        self.0.downcast().ok().map(|u| *u)
    }
}

impl std::fmt::Debug for Leftovers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Leftovers(..)")
    }
}

/// What a stopped instance left, kept for the entity's next instance
/// (which [`Region::activate`] hands it first). Dropped, its messages are
/// counted in the actor system's `dropped_messages`.
struct Returned<M: Send + 'static> {
    shard: u32,
    left: Undelivered<M>,
}

/// When an active entity was last handed a message, for idleness
/// (`at`), and whether it was since the least-recently-used sweep last
/// passed it (`used`, [`Region::evict_one`]).
#[derive(Clone, Copy)]
struct Activity {
    at: Instant,
    used: bool,
}

impl Activity {
    /// A new instance: not marked, so that one used again since it was
    /// activated goes after it in the sweep.
    fn new(at: Instant) -> Self {
        Activity { at, used: false }
    }

    /// A message was handed over at `at` (a clock reading the region
    /// has: nothing read, nothing allocated).
    #[inline]
    fn touch(&mut self, at: Instant) {
        self.at = at;
        self.used = true;
    }
}

/// Why an activation did not happen.
enum Fence {
    /// The shard is not (or no longer) owned here.
    Lost,
    /// The store did not answer the fencing read.
    StoreDown,
}

struct OwnedShard {
    token: u64,
    /// The fencing read failed since the last tick: activations wait in
    /// the buffer without asking the store again.
    store_down: bool,
    releasing: Option<ReplyTo<bool>>,
    /// Entities of the shard running or stopping here.
    ids: HashSet<String>,
    /// Ids kept in the store (`remember_entities`).
    remembered: HashSet<String>,
}

enum Entity<A: Actor> {
    Active {
        actor: ActorRef<A>,
        /// The last time the region saw it handed a message (the direct
        /// path's tells are read on `Tick`, `Direct::touched`, and by the
        /// sweep, `Direct::take_touched`).
        last: Activity,
        generation: u64,
        shard: u32,
    },
    Stopping {
        /// Kept so that a leave whose hand-over timed out can kill it.
        actor: ActorRef<A>,
        generation: u64,
        shard: u32,
        waiting: Vec<Pending>,
        /// The region asked it to stop (a passivation, a hand-over, a
        /// loss); else it stopped by itself.
        asked: bool,
    },
}

/// The region actor of one sharding type on one node.
pub struct Region<A: Actor> {
    shared: Arc<Shared<A>>,
    myself: Option<ActorRef<Region<A>>>,
    shards: HashMap<u32, OwnedShard>,
    entities: HashMap<String, Entity<A>>,
    pending: VecDeque<Pending>,
    /// The entities with envelopes in `pending`: an envelope for one of
    /// them joins them in the buffer instead of overtaking them
    /// (route.rs). Bounded as the buffer is.
    buffered_ids: HashSet<String>,
    generation: u64,
    /// The time of the last tick: entities' activity is stamped with it.
    clock: Instant,
    /// Owned shards are delivered to until then (`Verified` plus the lease).
    lease_until: Option<Instant>,
    /// Entities activated in the message being handled: published to the
    /// direct path once it is handled.
    activated: Vec<String>,
    /// What stopped instances left in their mailboxes, by entity id, for
    /// the next instance (`activate` hands it over first). An id here has
    /// no live instance: none, or one that stopped while it was handed
    /// these (its own leftovers go before them). Bounded as the entity
    /// table is: one entry per id.
    returned: HashMap<String, Returned<A::Msg>>,
    /// The least-recently-used sweep's ring (CLOCK): active instances
    /// `(id, generation)` in activation order; entries of instances that
    /// stopped are skipped (and compacted away).
    lru: VecDeque<(String, u64)>,
    /// Entities whose full bounded mailbox sent a tell back to the buffer
    /// since the last `Room` (room.rs). Bounded as the buffer is.
    full: HashSet<String>,
    /// The pending `Room` timer, if any (dropped: cancelled).
    room: Option<TimerHandle>,
    /// The wait before the next `Room`.
    room_delay: Duration,
}

/// The lease, in coordinator ticks, that one `Verified` grants.
pub const LEASE_TICKS: u32 = 3;

impl<A: Actor> Region<A> {
    pub(crate) fn new(shared: Arc<Shared<A>>) -> Self {
        Region {
            shared,
            myself: None,
            shards: HashMap::new(),
            entities: HashMap::new(),
            pending: VecDeque::new(),
            buffered_ids: HashSet::new(),
            generation: 0,
            clock: Instant::now(),
            lease_until: None,
            activated: Vec::new(),
            returned: HashMap::new(),
            lru: VecDeque::new(),
            full: HashSet::new(),
            room: None,
            room_delay: room::FIRST,
        }
    }

    fn stat(&self) -> &Counters {
        &self.shared.stats
    }
}

impl<A: Actor> Actor for Region<A> {
    type Msg = RegionMsg;

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        self.myself = Some(ctx.myself());
    }

    fn handle(&mut self, msg: RegionMsg, _ctx: &mut Context<'_, Self>) {
        match msg {
            RegionMsg::Inbound(t) => {
                self.route(Pending::Tell(t, Held::reserved()));
                self.shared.direct.routed();
            }
            RegionMsg::Ask(a, r) => {
                let held = Held::ask(a.budget_ms);
                self.route(Pending::Ask(a, r, held));
            }
            RegionMsg::Owned { shard, token } => self.owned(shard, token),
            RegionMsg::Release { shard, done, kill } => self.release(shard, done, kill),
            RegionMsg::Lost { shard } => self.lose(shard),
            RegionMsg::Verified { at } => {
                let until = at + self.shared.config.tick * LEASE_TICKS;
                self.lease_until = Some(until);
                self.shared.direct.set_lease(until);
            }
            RegionMsg::Tick => self.tick(),
            RegionMsg::Room => self.try_room(),
            RegionMsg::Stopped {
                id,
                generation,
                left,
            } => self.stopped(id, generation, left),
            RegionMsg::Active(r) => {
                let mut ids: Vec<String> = self
                    .entities
                    .iter()
                    .filter(|(_, e)| matches!(e, Entity::Active { .. }))
                    .map(|(id, _)| id.clone())
                    .collect();
                ids.sort();
                r.reply(ids);
            }
            RegionMsg::Passivate(id, r) => {
                r.reply(self.passivate(&id));
            }
        }
        // Everything this message released has been handed over.
        self.publish();
        self.schedule_room();
    }

    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {
        self.shared.direct.clear();
        let shards: Vec<u32> = self.returned.values().map(|r| r.shard).collect();
        for shard in shards {
            self.drop_returned(shard);
        }
        for e in self.entities.values_mut() {
            match e {
                Entity::Active { actor, .. } => actor.kill(),
                // What waits for an entity's stop goes the buffer's way:
                // no `Stopped` will route it now.
                Entity::Stopping { waiting, .. } => self.pending.extend(waiting.drain(..)),
            }
        }
        self.drain_buffer();
    }
}
