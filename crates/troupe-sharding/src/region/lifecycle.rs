//! The ownership messages and the entities' lives: a shard claimed
//! (`Owned`), handed over (`Release`) or lost (`Lost`); an entity
//! activated (with the fencing check, and the entity kind's spawn
//! options), stopped, passivated on `Tick` or to make room
//! (`max_entities`), and its stop reported (`Stopped`, with what its
//! mailbox still held); and publishing active entities to the direct path
//! (direct.rs) once they hold nothing back.
//!
//! What a stopped instance's mailbox held (its undelivered hook,
//! `troupe::Undelivered`) goes to the entity's next instance here, before
//! anything newer: the region redelivers rather than refuses, because
//! those messages were accepted (a confirmed tell's receipt said
//! `Delivered` once it was in the mailbox) and nothing is left to tell
//! their senders (a tell has no way back, and the receipt is settled).
//! They are dropped (counted in `mailbox_dropped` and in the actor
//! system's `dropped_messages`, asks among them failing with
//! `ActorStopped`) only where no next instance may run them here: the
//! shard is lost or gone (its new owner cannot be handed a decoded
//! message), the region killed the instance (a leave whose hand-over
//! timed out), the region stopped, or the instance stopped before it
//! handled anything (given them again it would start and stop again and
//! again).
//!
//! The least-recently-used sweep (`max_entities`) is a CLOCK: a ring of
//! active instances in activation order, a `used` mark per instance set
//! with each message the region hands it after the one that activated it
//! (`Activity::touch`, one store) and, for the direct path, its entry's
//! `touched` flag (already set per direct tell). To make room the sweep
//! takes the ring's front: marked, it is cleared and goes to the back (a
//! second chance); unmarked, it is passivated. An approximation of least
//! recently used: among instances not used since the sweep last passed
//! them, the one activated (or passed) longest ago goes first. Nothing per
//! message is allocated or searched; a sweep passes each instance at most
//! twice, amortized O(1) per activation.
//!
//! Written by the region actor only; see mod.rs for the protocol and the
//! invariants.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use troupe::{Actor, ActorRef, ReplyTo, StopReason, Undelivered};

use super::{Activity, Entity, Fence, Leftovers, OwnedShard, Region, RegionMsg, Returned};
use crate::shared::Shared;
use crate::stats::Counters;

impl<A: Actor> Region<A> {
    /// Spawns entity `id` of owned `shard` after the fencing check.
    /// `Fence::Lost`: the record names another owner or token (or the
    /// shard is not owned here); the shard is dropped here.
    /// `Fence::StoreDown`: the store did not answer; the shard stays owned
    /// and the check is retried after the next tick.
    pub(super) fn activate(&mut self, shard: u32, id: &str) -> Result<ActorRef<A>, Fence> {
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
        let hook = stop_hook(self.myself.as_ref(), &sh, id, generation);
        let actor = sh.system.spawn_with_undelivered(
            (sh.factory)(id),
            sh.config.entity_options.clone(),
            hook,
        );
        // What the last instance left goes first, before anything newer
        // (the caller sends its envelope after this returns).
        let mut still = None;
        if let Some(mut r) = self.returned.remove(id) {
            let mut msgs = r.left.take().into_iter();
            let mut handed = 0u64;
            while let Some(m) = msgs.next() {
                if let Err(e) = actor.try_tell(m) {
                    // The rest stays together, in order.
                    r.left.push(e.into_inner());
                    msgs.by_ref().for_each(|m| r.left.push(m));
                    break;
                }
                handed += 1;
            }
            sh.stats.redelivered.fetch_add(handed, Ordering::Relaxed);
            if !r.left.is_empty() {
                if actor.is_alive() {
                    // A bounded mailbox smaller than what was left (the
                    // region never blocks on it): dropped, counted.
                    mailbox_dropped(&sh, id, r.left.len() as u64);
                } else {
                    // It stopped already, on what it was handed: the rest
                    // waits for the instance after it, behind what its
                    // own mailbox will hand back (`take_left`).
                    still = Some(r);
                }
            }
        }
        self.entities.insert(
            id.to_string(),
            Entity::Active {
                actor: actor.clone(),
                last: Activity::new(self.clock.max(Instant::now())),
                generation,
                shard,
            },
        );
        if let Some(r) = still {
            self.returned.insert(id.to_string(), r);
        }
        self.lru.push_back((id.to_string(), generation));
        self.compact_lru();
        self.activated.push(id.to_string());
        Counters::add(&sh.stats.activations);
        sh.stats.entities_active.fetch_add(1, Ordering::Relaxed);
        let s = self.shards.get_mut(&shard).expect("owned above");
        s.ids.insert(id.to_string());
        if sh.config.remember_entities && s.remembered.insert(id.to_string()) {
            self.write_remembered(shard);
        }
        Ok(actor)
    }

    /// Whether one more instance may be activated: the table holds fewer
    /// than `max_entities`, or the least recently used active instance
    /// could be passivated to make room (its stop then takes a while: the
    /// table holds at most `max_entities` stopping ones besides, and
    /// refuses beyond that, counted in `entities_refused`).
    pub(super) fn make_room(&mut self) -> bool {
        let max = self.shared.config.max_entities;
        if self.entities.len() < max {
            return true;
        }
        self.entities.len() < max.saturating_mul(2) && self.evict_one()
    }

    /// The CLOCK sweep (module docs): passivates the least recently used
    /// active instance with nothing in the buffer; `false` if there is
    /// none.
    fn evict_one(&mut self) -> bool {
        // Each entry is passed at most twice: once to clear its mark, once
        // to take it.
        let mut budget = self.lru.len().saturating_mul(2);
        while budget > 0 {
            budget -= 1;
            let Some((id, generation)) = self.lru.pop_front() else {
                return false;
            };
            let Some(Entity::Active {
                last,
                generation: g,
                ..
            }) = self.entities.get_mut(&id)
            else {
                continue;
            };
            if *g != generation {
                continue;
            }
            let direct = self.shared.direct.take_touched(&id);
            if last.used || direct || self.buffered_ids.contains(&id) {
                last.used = false;
                self.lru.push_back((id, generation));
                continue;
            }
            Counters::add(&self.stat().evictions);
            self.passivate_now(&id);
            return true;
        }
        false
    }

    /// Drops the ring's entries of instances no longer active, once it
    /// holds twice as many entries as the table has entities (amortized
    /// O(1) per activation).
    fn compact_lru(&mut self) {
        if self.lru.len() <= self.entities.len().saturating_mul(2).max(64) {
            return;
        }
        let entities = &self.entities;
        self.lru.retain(|(id, generation)| {
            matches!(entities.get(id), Some(Entity::Active { generation: g, .. }) if g == generation)
        });
    }

    /// Hands what entity `id`'s last instance left to a new instance now,
    /// if its shard is owned here within the lease and the table has
    /// room; during a hand-over the new instance only drains them before
    /// the shard goes. Otherwise they wait (the next `Tick` tries again,
    /// and any activation hands them over first).
    fn redeliver(&mut self, id: &str) {
        let Some(shard) = self.returned.get(id).map(|r| r.shard) else {
            return;
        };
        let Some(releasing) = self.shards.get(&shard).map(|s| s.releasing.is_some()) else {
            self.drop_returned(shard);
            return;
        };
        let leased = self.lease_until.is_some_and(|t| Instant::now() < t);
        if !leased || self.entities.contains_key(id) || !self.make_room() {
            return;
        }
        if self.activate(shard, id).is_ok() && releasing {
            self.stop_entity(id, false);
        }
    }

    /// Drops (counted) what instances of `shard`'s entities left, now
    /// that no next instance will run here: the shard was lost or handed
    /// over, or the region stops.
    pub(super) fn drop_returned(&mut self, shard: u32) {
        let ids: Vec<String> = self
            .returned
            .iter()
            .filter(|(_, r)| r.shard == shard)
            .map(|(id, _)| id.clone())
            .collect();
        for id in ids {
            if let Some(r) = self.returned.remove(&id) {
                mailbox_dropped(&self.shared, &id, r.left.len() as u64);
            }
        }
    }

    fn write_remembered(&self, shard: u32) {
        let Some(s) = self.shards.get(&shard) else {
            return;
        };
        let mut ids: Vec<String> = s.remembered.iter().cloned().collect();
        ids.sort();
        if let Err(e) = self
            .shared
            .store
            .remember(&self.shared.kind, shard, s.token, &ids)
        {
            Counters::add(&self.stat().store_errors);
            tracing::warn!(error = %e, shard, "remembered entities not written");
        }
    }

    /// Asks entity `id` to stop (drain) or kills it; it becomes `Stopping`.
    pub(super) fn stop_entity(&mut self, id: &str, kill: bool) {
        if let Some(Entity::Active {
            actor,
            generation,
            shard,
            ..
        }) = self.entities.remove(id)
        {
            // No direct tell after the stop: the mailbox drains in order.
            self.shared.direct.remove(id);
            if kill {
                actor.kill();
            } else {
                actor.stop();
            }
            self.entities.insert(
                id.to_string(),
                Entity::Stopping {
                    actor,
                    generation,
                    shard,
                    waiting: Vec::new(),
                    asked: true,
                },
            );
        }
    }

    pub(super) fn lose(&mut self, shard: u32) {
        let Some(s) = self.shards.remove(&shard) else {
            return;
        };
        Counters::add(&self.stat().shards_lost);
        for id in &s.ids {
            Counters::add(&self.stat().handover_stops);
            match self.entities.get(id) {
                // Draining for a passivation or a release: it must not
                // go on handling while the shard's new owner runs it.
                Some(Entity::Stopping { actor, .. }) => actor.kill(),
                _ => self.stop_entity(id, true),
            }
        }
        if let Some(done) = s.releasing {
            done.reply(false);
        }
        // Its new owner cannot be handed decoded messages: what stopped
        // instances left here is dropped, counted.
        self.drop_returned(shard);
    }

    pub(super) fn owned(&mut self, shard: u32, token: u64) {
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
        match self.shards.get_mut(&shard) {
            // Owned again under a new token (the record was rewritten while
            // this node held it): the shard keeps its entities, so that a
            // later release or loss still stops them (and takes them off
            // the direct path).
            Some(s) => {
                s.token = token;
                s.store_down = false;
                s.remembered.extend(remembered.iter().cloned());
            }
            None => {
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
            }
        }
        for id in remembered {
            if !self.entities.contains_key(&id) && self.activate(shard, &id).is_err() {
                break;
            }
        }
        self.retry_buffer(false);
    }

    pub(super) fn release(&mut self, shard: u32, done: ReplyTo<bool>, kill: bool) {
        let Some(s) = self.shards.get_mut(&shard) else {
            done.reply(true);
            return;
        };
        // A second release (the kill after a timed-out one) answers
        // instead of the first, whose asker has given up.
        s.releasing = Some(done);
        let ids: Vec<String> = s.ids.iter().cloned().collect();
        // What stopped instances left is drained here before the shard
        // goes (unless this release kills).
        if !kill {
            let left: Vec<String> = self
                .returned
                .iter()
                .filter(|(_, r)| r.shard == shard)
                .map(|(id, _)| id.clone())
                .collect();
            for id in left {
                self.redeliver(&id);
            }
        }
        for id in &ids {
            if kill {
                Counters::add(&self.stat().handover_kills);
                match self.entities.get(id) {
                    Some(Entity::Stopping { actor, .. }) => actor.kill(),
                    _ => self.stop_entity(id, true),
                }
            } else {
                Counters::add(&self.stat().handover_stops);
                self.stop_entity(id, false);
            }
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
            // Left by an instance that stopped while the lease had run
            // out: no next instance runs here now.
            self.drop_returned(shard);
        }
    }

    /// An instance stopped; `left` is what its mailbox still held. An
    /// instance that stopped by itself (or panicked) has that handed to
    /// the entity's next instance, activated now if it may be (module
    /// docs); one that stopped normally with nothing left passivated
    /// itself (`Context::passivate`, or a stop with nothing queued):
    /// counted as a passivation, forgotten if remembered.
    pub(super) fn stopped(&mut self, id: String, generation: u64, left: Leftovers) {
        let left = left.open::<A::Msg>();
        let ours = match self.entities.get(&id) {
            Some(Entity::Active { generation: g, .. })
            | Some(Entity::Stopping { generation: g, .. }) => *g == generation,
            None => false,
        };
        if !ours {
            if let Some(u) = left.filter(|u| !u.is_empty()) {
                mailbox_dropped(&self.shared, &id, u.len() as u64);
            }
            return;
        }
        self.shared
            .stats
            .entities_active
            .fetch_sub(1, Ordering::Relaxed);
        let (shard, waiting, by_itself) = match self.entities.remove(&id) {
            Some(Entity::Active { shard, .. }) => {
                self.shared.direct.remove(&id);
                (shard, Vec::new(), true)
            }
            Some(Entity::Stopping {
                shard,
                waiting,
                asked,
                ..
            }) => (shard, waiting, !asked),
            None => return,
        };
        if let Some(s) = self.shards.get_mut(&shard) {
            s.ids.remove(&id);
        }
        if let Some(u) = left {
            self.take_left(&id, shard, u, by_itself);
        }
        // Before the release may finish: a release drains them first.
        self.redeliver(&id);
        self.finish_release(shard);
        for m in waiting {
            self.reroute(m);
        }
    }

    /// Keeps what instance `id` of `shard` left for the next instance, or
    /// drops it (counted) where none may run it (module docs). What the
    /// instance could not be handed because it had stopped already (kept
    /// in `returned` by `activate`) follows what its mailbox held.
    fn take_left(&mut self, id: &str, shard: u32, mut u: Undelivered<A::Msg>, by_itself: bool) {
        if let Some(mut older) = self.returned.remove(id) {
            older.left.take().into_iter().for_each(|m| u.push(m));
        }
        if u.is_empty() {
            if by_itself && *u.reason() == StopReason::Normal {
                Counters::add(&self.stat().passivations);
                self.forget(shard, id);
            }
            return;
        }
        let owned = self.shards.contains_key(&shard);
        if !owned || *u.reason() == StopReason::Killed || u.handled() == 0 {
            if owned && *u.reason() != StopReason::Killed {
                tracing::warn!(entity = %id, "an entity stopped before its first message; what it was sent is dropped");
            }
            mailbox_dropped(&self.shared, id, u.len() as u64);
            return;
        }
        // At most one entry per id, for its next instance.
        self.returned
            .insert(id.to_string(), Returned { shard, left: u });
    }

    /// Forgets remembered entity `id` of `shard` (its stop was a
    /// passivation).
    fn forget(&mut self, shard: u32, id: &str) {
        if self
            .shards
            .get_mut(&shard)
            .is_some_and(|s| s.remembered.remove(id))
        {
            self.write_remembered(shard);
        }
    }

    /// Stops entity `id` as an idle one is stopped (counted in
    /// `passivations`, forgotten if remembered); `false` if it is not
    /// running here or buffered envelopes wait for it.
    pub(super) fn passivate(&mut self, id: &str) -> bool {
        match self.entities.get(id) {
            Some(Entity::Active { .. }) if !self.buffered_ids.contains(id) => {}
            _ => return false,
        }
        self.passivate_now(id);
        true
    }

    /// Passivates active entity `id`: a drain, counted, forgotten if
    /// remembered.
    fn passivate_now(&mut self, id: &str) {
        let Some(Entity::Active { shard, .. }) = self.entities.get(id) else {
            return;
        };
        let shard = *shard;
        Counters::add(&self.stat().passivations);
        self.stop_entity(id, false);
        self.forget(shard, id);
    }

    pub(super) fn tick(&mut self) {
        self.clock = Instant::now();
        if let Some(idle) = self.shared.config.idle_timeout {
            let now = self.clock;
            // What the direct path told since the last tick is activity.
            let entities = &mut self.entities;
            self.shared.direct.touched(|id| {
                if let Some(Entity::Active { last, .. }) = entities.get_mut(id) {
                    last.touch(now);
                }
            });
            // An entity with envelopes in the buffer (a lease lapse held
            // them) is not idle: they are its next messages.
            let buffered = &self.buffered_ids;
            let idle_ids: Vec<(String, u32)> = self
                .entities
                .iter()
                .filter_map(|(id, e)| match e {
                    Entity::Active { last, shard, .. }
                        if now.duration_since(last.at) >= idle && !buffered.contains(id) =>
                    {
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
        // What stopped instances left goes before what the buffer holds
        // for them (a renewed lease, the store back).
        if !self.returned.is_empty() {
            let ids: Vec<String> = self.returned.keys().cloned().collect();
            for id in ids {
                self.redeliver(&id);
            }
        }
        self.retry_buffer(true);
    }

    /// Publishes the entities activated by the message just handled to
    /// the direct path, if still active in an owned shard that is not
    /// being released: everything the region held for them (what waited
    /// for a stop, the buffer) has been handed to them by now.
    pub(super) fn publish(&mut self) {
        if self.activated.is_empty() {
            return;
        }
        for id in std::mem::take(&mut self.activated) {
            if let Some(Entity::Active { actor, shard, .. }) = self.entities.get(&id) {
                let owned = self
                    .shards
                    .get(shard)
                    .is_some_and(|s| s.releasing.is_none() && s.ids.contains(&id));
                if owned {
                    self.shared.direct.insert(&id, actor);
                }
            }
        }
    }
}

/// The undelivered hook of instance `generation` of entity `id`: what its
/// mailbox holds when it stops goes to its region (`RegionMsg::Stopped`),
/// which also learns of the stop this way. If the region has gone, it is
/// dropped, counted (`mailbox_dropped`, and the actor system's
/// `dropped_messages`).
fn stop_hook<A: Actor>(
    region: Option<&ActorRef<Region<A>>>,
    shared: &Arc<Shared<A>>,
    id: &str,
    generation: u64,
) -> impl FnOnce(Undelivered<A::Msg>) + Send + 'static {
    let region = region.map(ActorRef::downgrade);
    let shared = Arc::downgrade(shared);
    let id = id.to_string();
    move |u: Undelivered<A::Msg>| {
        let n = u.len() as u64;
        let sent = region.and_then(|r| r.upgrade()).map(|r| {
            r.tell(RegionMsg::Stopped {
                id: id.clone(),
                generation,
                left: Leftovers::of(u),
            })
        });
        if !matches!(sent, Some(Ok(()))) && n > 0 {
            if let Some(shared) = shared.upgrade() {
                mailbox_dropped(&shared, &id, n);
            }
        }
    }
}

/// Counts `n` messages an entity's mailbox held that no instance will
/// handle (`mailbox_dropped`), with a log line at a limited rate. The
/// messages themselves are dropped by their `Undelivered`.
fn mailbox_dropped<A: Actor>(shared: &Shared<A>, entity: &str, n: u64) {
    if n == 0 {
        return;
    }
    let before = shared.stats.mailbox_dropped.fetch_add(n, Ordering::Relaxed);
    // Logged when the count crosses a power of two: a flood of losses
    // cannot flood the log.
    let after = before.saturating_add(n);
    if before == 0 || after.ilog2() != before.ilog2() {
        tracing::warn!(%entity, n, "messages in a stopped entity's mailbox were dropped (its shard was lost or killed)");
    }
}

#[cfg(test)]
mod tests {
    //! The region with one shard owned by this node ("n1") in an
    //! in-memory store: what a stopped instance left, passivation from
    //! inside, the least-recently-used limit and a bounded mailbox.

    use std::sync::{Arc, Condvar, Mutex};
    use std::time::{Duration, Instant};

    use serde::{Deserialize, Serialize};
    use troupe::{Actor, ActorRef, ActorSystem, Context, MailboxConfig, Overflow, SpawnOptions};
    use troupe_remote::{remote, RemoteMessage};

    use crate::config::Config;
    use crate::envelope::{ShardTell, Tag};
    use crate::ownership::{MemoryOwnership, OwnershipStore};
    use crate::region::direct::Direct;
    use crate::region::{Region, RegionMsg};
    use crate::shared::{tell_fn, Routes, Shared, TypeTable};
    use crate::stats::Counters;

    /// A command: below `HOLD`, a note written down; `HOLD + k`: written
    /// down, then, once the gate lets it through, does `k` (0 nothing,
    /// 1 stop, 2 panic, 3 passivate).
    #[remote("test.lifecycle.Cmd")]
    #[derive(Serialize, Deserialize)]
    struct Cmd(u64);

    const HOLD: u64 = 1000;
    const STOP: u64 = HOLD + 1;
    const PANIC: u64 = HOLD + 2;
    const PASSIVATE: u64 = HOLD + 3;

    /// Permits: a held command waits for one.
    #[derive(Default)]
    struct Gate(Mutex<u32>, Condvar);

    impl Gate {
        fn open(&self, n: u32) {
            *self.0.lock().unwrap() += n;
            self.1.notify_all();
        }
        fn pass(&self) {
            let mut p = self.0.lock().unwrap();
            let end = Instant::now() + Duration::from_secs(10);
            while *p == 0 && Instant::now() < end {
                p = self.1.wait_timeout(p, Duration::from_millis(50)).unwrap().0;
            }
            *p = p.saturating_sub(1);
        }
    }

    struct Gated {
        id: String,
        log: Arc<Mutex<Vec<(String, u64)>>>,
        gate: Arc<Gate>,
    }

    impl Actor for Gated {
        type Msg = Cmd;
        fn handle(&mut self, Cmd(n): Cmd, ctx: &mut Context<'_, Self>) {
            self.log.lock().unwrap().push((self.id.clone(), n));
            if n < HOLD {
                return;
            }
            self.gate.pass();
            match n {
                STOP => ctx.stop(),
                PANIC => panic!("on purpose"),
                PASSIVATE => ctx.passivate(),
                _ => {}
            }
        }
    }

    struct Fixture {
        system: ActorSystem,
        region: ActorRef<Region<Gated>>,
        shared: Arc<Shared<Gated>>,
        log: Arc<Mutex<Vec<(String, u64)>>>,
        gate: Arc<Gate>,
    }

    fn fixture(config: Config) -> Fixture {
        let system = ActorSystem::new();
        let log = Arc::new(Mutex::new(Vec::new()));
        let gate = Arc::new(Gate::default());
        let store = Arc::new(MemoryOwnership::new());
        let mut tells = TypeTable::default();
        tells
            .register(Cmd::TYPE_ID, Cmd::NAME, 0, tell_fn::<Gated, Cmd>())
            .unwrap();
        let (l, g) = (log.clone(), gate.clone());
        let shared = Arc::new(Shared {
            kind: "gated".into(),
            node: "n1".into(),
            config: Config {
                shards: 1,
                idle_timeout: None,
                // A lease of 30 s from the `Verified` below: on a loaded
                // machine a test outlasts the default 1.5 s.
                tick: Duration::from_secs(10),
                ..config
            },
            store: store.clone(),
            factory: Box::new(move |id| Gated {
                id: id.to_string(),
                log: l.clone(),
                gate: g.clone(),
            }),
            tells,
            asks: TypeTable::default(),
            routes: Routes::new(),
            stats: Counters::default(),
            handle: troupe_remote::runtime::handle().unwrap(),
            system: system.handle(),
            pending: Default::default(),
            stopped: Default::default(),
            direct: Direct::new(),
        });
        let region = system.spawn(Region::new(shared.clone()));
        let token = store.claim("gated", 0, "n1", 0).unwrap();
        region.tell(RegionMsg::Owned { shard: 0, token }).unwrap();
        region
            .tell(RegionMsg::Verified { at: Instant::now() })
            .unwrap();
        Fixture {
            system,
            region,
            shared,
            log,
            gate,
        }
    }

    impl Fixture {
        /// Tells entity `id` command `n`, as an entity reference does.
        fn tell(&self, id: &str, n: u64) {
            self.shared.direct.handing();
            self.region
                .tell(RegionMsg::Inbound(ShardTell {
                    entity: id.into(),
                    tag: Tag::of(Cmd::TYPE_ID),
                    hops: 0,
                    payload: postcard::to_allocvec(&Cmd(n)).unwrap(),
                }))
                .unwrap();
        }

        fn stats(&self) -> crate::ShardingStats {
            self.shared.stats.snapshot()
        }

        /// Waits (at most 10 s) for `f` of the stats.
        fn until(&self, f: impl Fn(&crate::ShardingStats) -> bool) {
            let end = Instant::now() + Duration::from_secs(10);
            while !f(&self.stats()) && Instant::now() < end {
                std::thread::sleep(Duration::from_millis(2));
            }
            assert!(f(&self.stats()), "{:?}", self.stats());
        }

        /// What entity `id` wrote down, once it has `n` entries (or after
        /// 10 s).
        fn logged(&self, id: &str, n: usize) -> Vec<u64> {
            let of = || -> Vec<u64> {
                let log = self.log.lock().unwrap();
                log.iter()
                    .filter(|(i, _)| i == id)
                    .map(|(_, n)| *n)
                    .collect()
            };
            let end = Instant::now() + Duration::from_secs(10);
            while of().len() < n && Instant::now() < end {
                std::thread::sleep(Duration::from_millis(2));
            }
            of()
        }

        fn active(&self) -> Vec<String> {
            self.region
                .ask(RegionMsg::Active, Duration::from_secs(5))
                .unwrap()
        }
    }

    /// L8: an entity that stops itself with tells in its mailbox: they go
    /// to its next instance, in order, ahead of a newer one. (They were
    /// dropped, counted only in the actor system's `dropped_messages`.)
    #[test]
    fn an_entity_that_stops_itself_hands_its_queue_to_the_next_instance() {
        let f = fixture(Config::default());
        f.tell("e", STOP);
        for n in 1..=3 {
            f.tell("e", n);
        }
        // All four in the mailbox, the first one taken.
        f.until(|s| s.delivered == 4);
        assert_eq!(f.logged("e", 1), [STOP]);
        f.gate.open(1);
        f.until(|s| s.redelivered == 3);
        f.tell("e", 4);
        assert_eq!(f.logged("e", 5), [STOP, 1, 2, 3, 4]);
        let st = f.stats();
        assert_eq!((st.activations, st.mailbox_dropped), (2, 0), "{st:?}");
        assert_eq!(f.system.dropped_messages(), 0);
        f.system.shutdown();
    }

    /// L8: the same for an entity that panics: what followed the message
    /// that panicked goes to the next instance.
    #[test]
    fn an_entity_that_panics_hands_its_queue_to_the_next_instance() {
        let f = fixture(Config::default());
        f.tell("e", PANIC);
        for n in 1..=3 {
            f.tell("e", n);
        }
        f.until(|s| s.delivered == 4);
        f.gate.open(1);
        f.until(|s| s.redelivered == 3);
        assert_eq!(f.logged("e", 4), [PANIC, 1, 2, 3]);
        let st = f.stats();
        assert_eq!((st.activations, st.mailbox_dropped), (2, 0), "{st:?}");
        assert_eq!(f.system.dropped_messages(), 0);
        f.system.shutdown();
    }

    /// L7: a shard lost with tells in an entity's mailbox: the entity is
    /// killed at once (another node owns it now) and what its mailbox
    /// held cannot follow it there (decoded messages): counted in
    /// `mailbox_dropped`, exported, logged. (They were counted only in
    /// the actor system's `dropped_messages`, nowhere the sharding's
    /// figures show.)
    #[test]
    fn a_lost_shard_counts_what_its_entities_mailboxes_held() {
        let f = fixture(Config::default());
        f.tell("e", HOLD);
        f.tell("e", 1);
        f.tell("e", 2);
        f.until(|s| s.delivered == 3);
        f.region.tell(RegionMsg::Lost { shard: 0 }).unwrap();
        f.until(|s| s.shards_lost == 1);
        f.gate.open(1);
        f.until(|s| s.mailbox_dropped == 2);
        assert_eq!(f.logged("e", 1), [HOLD]);
        let st = f.stats();
        assert_eq!((st.redelivered, st.activations), (0, 1), "{st:?}");
        assert!(f.active().is_empty());
        assert_eq!(f.system.dropped_messages(), 2);
        f.system.shutdown();
    }

    /// Issue 40: `ctx.passivate()` stops the entity once its mailbox has
    /// drained; a tell that comes meanwhile (its mailbox closed) waits in
    /// the region and starts the next instance. Counted as a passivation.
    #[test]
    fn an_entity_passivates_itself_and_loses_nothing() {
        let f = fixture(Config::default());
        f.tell("e", PASSIVATE);
        f.tell("e", HOLD);
        f.until(|s| s.delivered == 2);
        // Passivates, then takes the held note and waits in it.
        f.gate.open(1);
        assert_eq!(f.logged("e", 2), [PASSIVATE, HOLD]);
        // The mailbox is closed now: this one waits for the stop.
        f.tell("e", 1);
        f.gate.open(1);
        assert_eq!(f.logged("e", 3), [PASSIVATE, HOLD, 1]);
        let st = f.stats();
        assert_eq!(
            (
                st.passivations,
                st.activations,
                st.redelivered,
                st.entity_gone
            ),
            (1, 2, 0, 0),
            "{st:?}"
        );
        assert_eq!(f.system.dropped_messages(), 0);
        f.system.shutdown();
    }

    /// Issue 40: at `max_entities`, an activation passivates the least
    /// recently used entity instead of being refused: `a` was told again
    /// after `b` started, so `b` goes. (It was refused, counted in
    /// `entities_refused`.)
    #[test]
    fn the_entity_limit_passivates_the_least_recently_used() {
        let f = fixture(Config {
            max_entities: 2,
            ..Config::default()
        });
        f.tell("a", 1);
        f.tell("b", 1);
        f.tell("a", 2);
        f.tell("c", 1);
        f.until(|s| s.evictions == 1 && s.entities_active == 2);
        assert_eq!(f.active(), ["a", "c"]);
        // And `c`, used since, outlives `a` when `d` comes.
        f.tell("c", 2);
        f.tell("d", 1);
        f.until(|s| s.evictions == 2 && s.entities_active == 2);
        assert_eq!(f.active(), ["c", "d"]);
        let st = f.stats();
        assert_eq!(
            (st.passivations, st.entities_refused, st.activations),
            (2, 0, 4),
            "{st:?}"
        );
        // Told again, `b` starts again.
        f.tell("b", 2);
        assert_eq!(f.logged("b", 2), [1, 2]);
        f.system.shutdown();
    }

    /// A full bounded mailbox is tried again as soon as it may have made
    /// room, not on the next tick (here: no tick at all, the fixture's
    /// is 10 s): 100 tells through a mailbox of one, all delivered in
    /// order. (They were tried once per tick, one per tick; at the
    /// lifecycle test's 150 ms tick a slow machine let the buffer timeout
    /// expire them.)
    #[test]
    fn a_full_bounded_mailbox_is_tried_again_without_a_tick() {
        let f = fixture(Config {
            entity_options: SpawnOptions::new()
                .mailbox(MailboxConfig::bounded(1, Overflow::Reject)),
            ..Config::default()
        });
        f.tell("e", HOLD);
        f.until(|s| s.delivered == 1);
        for n in 1..=100 {
            f.tell("e", n);
        }
        f.until(|s| s.buffered >= 99);
        f.gate.open(1);
        let want: Vec<u64> = std::iter::once(HOLD).chain(1..=100).collect();
        assert_eq!(f.logged("e", 101), want, "{:?}", f.stats());
        let st = f.stats();
        assert_eq!(
            (st.entity_gone, st.expired, st.delivered),
            (0, 0, 101),
            "{st:?}"
        );
        f.system.shutdown();
    }

    /// Issue 40: entities spawned with the kind's options, here a bounded
    /// mailbox of one that refuses when full: what it refuses waits in the
    /// region's buffer and is delivered in order as it drains. (The
    /// region spawned every entity unbounded; told into a full bounded
    /// mailbox, a tell was counted `entity_gone` and lost.)
    #[test]
    fn a_bounded_entity_mailbox_holds_tells_back_in_order() {
        let f = fixture(Config {
            entity_options: SpawnOptions::new()
                .mailbox(MailboxConfig::bounded(1, Overflow::Reject)),
            ..Config::default()
        });
        f.tell("e", HOLD);
        f.until(|s| s.delivered == 1);
        assert_eq!(f.logged("e", 1), [HOLD]);
        for n in 1..=4 {
            f.tell("e", n);
        }
        // One in the mailbox, three in the buffer.
        f.until(|s| s.buffered >= 3);
        f.gate.open(1);
        for _ in 0..50 {
            if f.logged("e", 0).len() == 5 {
                break;
            }
            f.region.tell(RegionMsg::Tick).unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(f.logged("e", 5), [HOLD, 1, 2, 3, 4]);
        let st = f.stats();
        assert_eq!(
            (st.entity_gone, st.expired, st.delivered),
            (0, 0, 5),
            "{st:?}"
        );
        f.system.shutdown();
    }

    /// An entity that stops before it has handled anything is not given
    /// what it left again (it would start and stop again and again):
    /// counted in `mailbox_dropped`.
    #[test]
    fn an_entity_that_handles_nothing_is_not_restarted_forever() {
        /// Stops in `started`.
        struct Quitter;
        impl Actor for Quitter {
            type Msg = Cmd;
            fn started(&mut self, ctx: &mut Context<'_, Self>) {
                std::thread::sleep(Duration::from_millis(50));
                ctx.stop();
            }
            fn handle(&mut self, _: Cmd, _: &mut Context<'_, Self>) {}
        }
        let system = ActorSystem::new();
        let store = Arc::new(MemoryOwnership::new());
        let mut tells = TypeTable::default();
        tells
            .register(Cmd::TYPE_ID, Cmd::NAME, 0, tell_fn::<Quitter, Cmd>())
            .unwrap();
        let shared = Arc::new(Shared {
            kind: "quit".into(),
            node: "n1".into(),
            config: Config {
                shards: 1,
                ..Config::default()
            },
            store: store.clone(),
            factory: Box::new(|_| Quitter),
            tells,
            asks: TypeTable::default(),
            routes: Routes::new(),
            stats: Counters::default(),
            handle: troupe_remote::runtime::handle().unwrap(),
            system: system.handle(),
            pending: Default::default(),
            stopped: Default::default(),
            direct: Direct::new(),
        });
        let region = system.spawn(Region::new(shared.clone()));
        let token = store.claim("quit", 0, "n1", 0).unwrap();
        region.tell(RegionMsg::Owned { shard: 0, token }).unwrap();
        region
            .tell(RegionMsg::Verified { at: Instant::now() })
            .unwrap();
        for n in 0..3 {
            shared.direct.handing();
            region
                .tell(RegionMsg::Inbound(ShardTell {
                    entity: "q".into(),
                    tag: Tag::of(Cmd::TYPE_ID),
                    hops: 0,
                    payload: postcard::to_allocvec(&Cmd(n)).unwrap(),
                }))
                .unwrap();
        }
        let end = Instant::now() + Duration::from_secs(10);
        while shared.stats.snapshot().mailbox_dropped + shared.stats.snapshot().entity_gone < 3
            && Instant::now() < end
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(200));
        let st = shared.stats.snapshot();
        assert_eq!(st.mailbox_dropped + st.entity_gone, 3, "{st:?}");
        // A tell routed after a stop starts one more instance, which
        // stops as well: a few activations, never a loop.
        assert!(st.activations <= 3, "{st:?}");
        assert_eq!(st.redelivered, 0, "{st:?}");
        system.shutdown();
    }
}
