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
//!   meanwhile wait in the buffer.
//! - `Lost { shard }`: someone else holds the record. The region kills
//!   the shard's entities at once.
//! - An envelope for a shard not owned here is forwarded to the owner the
//!   routing table names (at most [`MAX_HOPS`] times), or buffered.
//! - `Verified { at }`: the coordinator read every record at `at` (and has
//!   sent the `Owned` and `Lost` that followed from them). The region
//!   delivers to an owned shard only within [`LEASE_TICKS`] ticks of the
//!   last one (the lease); past it, envelopes wait in the buffer until the
//!   next `Verified`. A node paused (SIGSTOP, a stalled VM) or cut off from
//!   the store past its lease thus delivers nothing until its coordinator
//!   has read the records again and killed the entities of shards that
//!   moved meanwhile. The lease (3 ticks, 1.5 s by default) must be shorter
//!   than the time the cluster takes to declare a silent node down (at
//!   least `down_after` heartbeats, 1.75 s by default).
//!   The lease is checked when the region hands a message to its entity:
//!   what already sits in an entity's mailbox when its node pauses is
//!   handled when the node resumes, before the coordinator's next read.
//! - `Tick`: passivates idle entities and retries the buffer; an envelope
//!   older than the buffer timeout is dropped and counted (`expired`), an
//!   ask among them answered `Unavailable`.
//!
//! Invariants:
//! - At most one instance per entity id runs on this node: a new one is
//!   spawned only once the previous one's stop has been reported
//!   (`Stopped`, from its `on_stop` hook); what arrives meanwhile waits
//!   with it.
//! - Every envelope is delivered, forwarded, kept in the buffer or
//!   counted in exactly one refusal counter.
//! - An envelope that waits (in the buffer, or for its entity's stop)
//!   keeps the span it arrived in and is routed again inside it, so a
//!   traced sender's trace goes on through the wait (feature `otel` of
//!   troupe-remote carries it across nodes); a forwarded ask runs in the
//!   span it was forwarded from.
//! - The entity table is bounded (`max_entities`): an activation beyond
//!   it is refused and counted, since ids come from the network.
//!
//! The region runs on a thread of its own: the fencing check and the
//! remembered-ids writes are blocking store calls.
//!
//! `pending.rs`: an envelope on its way, and what it keeps while it waits.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use tracing::Instrument;
use troupe::{Actor, ActorRef, Context, ReplyTo};

use crate::envelope::{check, Refusal, ShardAsk, ShardReply, ShardTell, MAX_HOPS};
use crate::placement::shard_of;
use crate::shared::{Route, Shared};
use crate::stats::Counters;

mod pending;
use pending::{Held, Pending};

/// What the region actor takes.
pub enum RegionMsg {
    /// A tell for an entity (local or from another node).
    Tell(ShardTell),
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
    /// An entity instance stopped.
    Stopped {
        /// Its id.
        id: String,
        /// Its instance number.
        generation: u64,
    },
    /// The ids of the entities running here, sorted.
    Active(ReplyTo<Vec<String>>),
}

impl From<ShardTell> for RegionMsg {
    fn from(t: ShardTell) -> Self {
        RegionMsg::Tell(t)
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
        last: Instant,
        generation: u64,
        shard: u32,
    },
    Stopping {
        generation: u64,
        shard: u32,
        waiting: Vec<Pending>,
    },
}

/// The region actor of one sharding type on one node.
pub struct Region<A: Actor> {
    shared: Arc<Shared<A>>,
    myself: Option<ActorRef<Region<A>>>,
    shards: HashMap<u32, OwnedShard>,
    entities: HashMap<String, Entity<A>>,
    pending: VecDeque<Pending>,
    generation: u64,
    /// The time of the last tick: entities' activity is stamped with it.
    clock: Instant,
    /// Owned shards are delivered to until then (`Verified` plus the lease).
    lease_until: Option<Instant>,
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
            generation: 0,
            clock: Instant::now(),
            lease_until: None,
        }
    }

    fn stat(&self) -> &Counters {
        &self.shared.stats
    }

    /// Delivers, forwards or buffers one envelope.
    fn route(&mut self, msg: Pending) {
        if !check(msg.entity(), msg.hops()) {
            Counters::add(&self.stat().bad_envelopes);
            msg.refuse(Refusal::BadEnvelope);
            return;
        }
        let shard = shard_of(msg.entity(), self.shared.config.shards);
        if self
            .shards
            .get(&shard)
            .is_some_and(|s| s.releasing.is_none())
        {
            // Ownership not confirmed within the lease: wait for the
            // coordinator's next read.
            if self.lease_until.is_none_or(|t| Instant::now() >= t) {
                return self.buffer(msg);
            }
            return self.deliver(shard, msg);
        }
        match self.shared.route(shard) {
            Route::Remote { tell, ask } if msg.hops() < MAX_HOPS => {
                Counters::add(&self.stat().forwarded);
                match msg {
                    Pending::Tell(mut t, at) => {
                        t.hops += 1;
                        if let Err(e) = tell.tell(t) {
                            let mut t = e.into_inner();
                            t.hops -= 1;
                            self.buffer(Pending::Tell(t, at));
                        }
                    }
                    Pending::Ask(mut a, reply, _) => {
                        a.hops += 1;
                        let timeout = self.shared.config.forward_timeout;
                        // The forward runs in the span it is made in, so the
                        // ask carries the sender's trace.
                        let forward = async move {
                            let r = ask.ask_async(a, timeout).await;
                            reply.reply(r.unwrap_or_else(|e| {
                                ShardReply::Refused(Refusal::from_ask_error(e))
                            }));
                        };
                        self.shared
                            .handle
                            .spawn(forward.instrument(tracing::Span::current()));
                    }
                }
            }
            _ => self.buffer(msg),
        }
    }

    /// Routes an envelope that waited, inside the span it arrived in.
    fn reroute(&mut self, mut msg: Pending) {
        let span = msg.held().span.clone();
        let _in = span.as_ref().map(tracing::Span::enter);
        self.route(msg);
    }

    fn buffer(&mut self, mut msg: Pending) {
        if self.pending.len() >= self.shared.config.buffer {
            Counters::add(&self.stat().buffer_full);
            tracing::warn!(kind = %self.shared.kind, "sharding buffer full: an envelope was refused");
            msg.refuse(Refusal::Unavailable);
            return;
        }
        Counters::add(&self.stat().buffered);
        msg.stamp();
        self.pending.push_back(msg);
        self.shared
            .pending
            .store(self.pending.len(), Ordering::Relaxed);
    }

    fn deliver(&mut self, shard: u32, msg: Pending) {
        // The common case, an active entity, allocates nothing and reads no
        // clock beyond the lease check: activity is stamped with the clock
        // of the last tick.
        let clock = self.clock;
        let stopped_by_itself = match self.entities.get_mut(msg.entity()) {
            Some(Entity::Stopping { waiting, .. }) => {
                let mut msg = msg;
                msg.keep_span();
                waiting.push(msg);
                return;
            }
            Some(Entity::Active {
                actor,
                last,
                generation,
                shard,
            }) => {
                if actor.is_alive() {
                    *last = clock;
                    send(&self.shared, actor, msg);
                    return;
                }
                (*generation, *shard)
            }
            None => {
                if self.entities.len() >= self.shared.config.max_entities {
                    Counters::add(&self.stat().entities_refused);
                    tracing::warn!(kind = %self.shared.kind, "entity table full: an activation was refused");
                    msg.refuse(Refusal::Unavailable);
                    return;
                }
                let id = msg.entity().to_string();
                match self.activate(shard, &id) {
                    Ok(actor) => send(&self.shared, &actor, msg),
                    // The shard was dropped here: forward or buffer.
                    Err(Fence::Lost) => self.route(msg),
                    // Still owned: wait for the store.
                    Err(Fence::StoreDown) => self.buffer(msg),
                }
                return;
            }
        };
        // It stopped by itself; its `Stopped` is on the way.
        let (generation, shard) = stopped_by_itself;
        let mut msg = msg;
        msg.keep_span();
        self.entities.insert(
            msg.entity().to_string(),
            Entity::Stopping {
                generation,
                shard,
                waiting: vec![msg],
            },
        );
    }

    /// Spawns entity `id` of owned `shard` after the fencing check.
    /// `Fence::Lost`: the record names another owner or token (or the
    /// shard is not owned here); the shard is dropped here.
    /// `Fence::StoreDown`: the store did not answer; the shard stays owned
    /// and the check is retried after the next tick.
    fn activate(&mut self, shard: u32, id: &str) -> Result<ActorRef<A>, Fence> {
        let (token, down) = match self.shards.get(&shard) {
            Some(s) => (s.token, s.store_down),
            None => return Err(Fence::Lost),
        };
        if down {
            return Err(Fence::StoreDown);
        }
        let sh = self.shared.clone();
        match sh.store.owner(&sh.kind, shard) {
            Ok(o) if o.revision == token && o.node.as_deref() == Some(sh.node.as_str()) => {}
            Ok(_) => {
                Counters::add(&sh.stats.fencing_refusals);
                self.lose(shard);
                return Err(Fence::Lost);
            }
            Err(e) => {
                Counters::add(&sh.stats.store_errors);
                tracing::warn!(error = %e, shard, "fencing check failed; activations wait for the store");
                if let Some(s) = self.shards.get_mut(&shard) {
                    s.store_down = true;
                }
                return Err(Fence::StoreDown);
            }
        }
        self.generation += 1;
        let generation = self.generation;
        let actor = sh.system.spawn((sh.factory)(id));
        if let Some(me) = &self.myself {
            let me = me.downgrade();
            let id = id.to_string();
            actor.on_stop(move |_, _| {
                if let Some(me) = me.upgrade() {
                    let _ = me.tell(RegionMsg::Stopped { id, generation });
                }
            });
        }
        self.entities.insert(
            id.to_string(),
            Entity::Active {
                actor: actor.clone(),
                last: Instant::now(),
                generation,
                shard,
            },
        );
        Counters::add(&sh.stats.activations);
        sh.stats.entities_active.fetch_add(1, Ordering::Relaxed);
        let s = self.shards.get_mut(&shard).expect("owned above");
        s.ids.insert(id.to_string());
        if sh.config.remember_entities && s.remembered.insert(id.to_string()) {
            self.write_remembered(shard);
        }
        Ok(actor)
    }

    fn write_remembered(&self, shard: u32) {
        let Some(s) = self.shards.get(&shard) else {
            return;
        };
        let mut ids: Vec<String> = s.remembered.iter().cloned().collect();
        ids.sort();
        if let Err(e) = self.shared.store.remember(&self.shared.kind, shard, &ids) {
            Counters::add(&self.stat().store_errors);
            tracing::warn!(error = %e, shard, "remembered entities not written");
        }
    }

    /// Asks entity `id` to stop (drain) or kills it; it becomes `Stopping`.
    fn stop_entity(&mut self, id: &str, kill: bool) {
        if let Some(Entity::Active {
            actor,
            generation,
            shard,
            ..
        }) = self.entities.remove(id)
        {
            if kill {
                actor.kill();
            } else {
                actor.stop();
            }
            self.entities.insert(
                id.to_string(),
                Entity::Stopping {
                    generation,
                    shard,
                    waiting: Vec::new(),
                },
            );
        }
    }

    fn lose(&mut self, shard: u32) {
        let Some(s) = self.shards.remove(&shard) else {
            return;
        };
        Counters::add(&self.stat().shards_lost);
        for id in &s.ids {
            Counters::add(&self.stat().handover_stops);
            self.stop_entity(id, true);
        }
        if let Some(done) = s.releasing {
            done.reply(false);
        }
    }

    fn owned(&mut self, shard: u32, token: u64) {
        let remembered = if self.shared.config.remember_entities {
            match self.shared.store.remembered(&self.shared.kind, shard) {
                Ok(ids) => ids,
                Err(e) => {
                    Counters::add(&self.stat().store_errors);
                    tracing::warn!(error = %e, shard, "remembered entities not read");
                    Vec::new()
                }
            }
        } else {
            Vec::new()
        };
        self.shards.insert(
            shard,
            OwnedShard {
                token,
                store_down: false,
                releasing: None,
                ids: HashSet::new(),
                remembered: remembered.iter().cloned().collect(),
            },
        );
        for id in remembered {
            if !self.entities.contains_key(&id) && self.activate(shard, &id).is_err() {
                break;
            }
        }
        self.retry_buffer(false);
    }

    fn release(&mut self, shard: u32, done: ReplyTo<bool>) {
        let Some(s) = self.shards.get_mut(&shard) else {
            done.reply(true);
            return;
        };
        s.releasing = Some(done);
        let ids: Vec<String> = s.ids.iter().cloned().collect();
        for id in &ids {
            Counters::add(&self.stat().handover_stops);
            self.stop_entity(id, false);
        }
        self.finish_release(shard);
    }

    fn finish_release(&mut self, shard: u32) {
        let done = self
            .shards
            .get(&shard)
            .is_some_and(|s| s.releasing.is_some() && s.ids.is_empty());
        if done {
            if let Some(s) = self.shards.remove(&shard) {
                if let Some(r) = s.releasing {
                    r.reply(true);
                }
            }
        }
    }

    fn stopped(&mut self, id: String, generation: u64) {
        let ours = match self.entities.get(&id) {
            Some(Entity::Active { generation: g, .. })
            | Some(Entity::Stopping { generation: g, .. }) => *g == generation,
            None => false,
        };
        if !ours {
            return;
        }
        self.shared
            .stats
            .entities_active
            .fetch_sub(1, Ordering::Relaxed);
        let (shard, waiting) = match self.entities.remove(&id) {
            Some(Entity::Active { shard, .. }) => (shard, Vec::new()),
            Some(Entity::Stopping { shard, waiting, .. }) => (shard, waiting),
            None => return,
        };
        if let Some(s) = self.shards.get_mut(&shard) {
            s.ids.remove(&id);
        }
        self.finish_release(shard);
        for m in waiting {
            self.reroute(m);
        }
    }

    fn tick(&mut self) {
        self.clock = Instant::now();
        if let Some(idle) = self.shared.config.idle_timeout {
            let now = self.clock;
            let idle_ids: Vec<(String, u32)> = self
                .entities
                .iter()
                .filter_map(|(id, e)| match e {
                    Entity::Active { last, shard, .. } if now.duration_since(*last) >= idle => {
                        Some((id.clone(), *shard))
                    }
                    _ => None,
                })
                .collect();
            let mut touched = HashSet::new();
            for (id, shard) in idle_ids {
                Counters::add(&self.stat().passivations);
                self.stop_entity(&id, false);
                if let Some(s) = self.shards.get_mut(&shard) {
                    if s.remembered.remove(&id) {
                        touched.insert(shard);
                    }
                }
            }
            for shard in touched {
                self.write_remembered(shard);
            }
        }
        // Each shard whose fencing read failed gets one more read.
        for s in self.shards.values_mut() {
            s.store_down = false;
        }
        self.retry_buffer(true);
    }

    fn retry_buffer(&mut self, expire: bool) {
        let timeout = self.shared.config.buffer_timeout;
        let now = Instant::now();
        let all: Vec<Pending> = self.pending.drain(..).collect();
        self.shared.pending.store(0, Ordering::Relaxed);
        for m in all {
            if expire && m.since().is_some_and(|t| now.duration_since(t) >= timeout) {
                Counters::add(&self.stat().expired);
                tracing::warn!(entity = %m.entity(), "a buffered envelope expired: its shard had no owner");
                m.refuse(Refusal::Unavailable);
            } else {
                self.reroute(m);
            }
        }
    }
}

/// Decodes one envelope into `actor`'s message and hands it over.
fn send<A: Actor>(shared: &Shared<A>, actor: &ActorRef<A>, msg: Pending) {
    match msg {
        Pending::Tell(t, _) => match shared.tells.get(&t.type_id) {
            None => Counters::add(&shared.stats.unknown_types),
            Some(decode) => match decode(&t.payload) {
                None => Counters::add(&shared.stats.undecodable),
                Some(m) => match actor.tell(m) {
                    Ok(()) => Counters::add(&shared.stats.delivered),
                    Err(_) => {
                        Counters::add(&shared.stats.entity_gone);
                        tracing::warn!(entity = %t.entity, "an entity stopped as a tell reached it");
                    }
                },
            },
        },
        Pending::Ask(a, reply, _) => match shared.asks.get(&a.type_id) {
            None => {
                Counters::add(&shared.stats.unknown_types);
                reply.reply(ShardReply::Refused(Refusal::UnknownType));
            }
            Some(f) => {
                if f(&a.payload, actor, reply, &shared.handle) {
                    Counters::add(&shared.stats.delivered);
                } else {
                    Counters::add(&shared.stats.undecodable);
                }
            }
        },
    }
}

impl<A: Actor> Actor for Region<A> {
    type Msg = RegionMsg;

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        self.myself = Some(ctx.myself());
    }

    fn handle(&mut self, msg: RegionMsg, _ctx: &mut Context<'_, Self>) {
        match msg {
            RegionMsg::Tell(t) => self.route(Pending::Tell(t, Held::default())),
            RegionMsg::Ask(a, r) => self.route(Pending::Ask(a, r, Held::default())),
            RegionMsg::Owned { shard, token } => self.owned(shard, token),
            RegionMsg::Release { shard, done } => self.release(shard, done),
            RegionMsg::Lost { shard } => self.lose(shard),
            RegionMsg::Verified { at } => {
                self.lease_until = Some(at + self.shared.config.tick * LEASE_TICKS);
            }
            RegionMsg::Tick => self.tick(),
            RegionMsg::Stopped { id, generation } => self.stopped(id, generation),
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
        }
    }

    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {
        for e in self.entities.values() {
            if let Entity::Active { actor, .. } = e {
                actor.kill();
            }
        }
        for m in self.pending.drain(..) {
            Counters::add(&self.shared.stats.expired);
            m.refuse(Refusal::Unavailable);
        }
    }
}
