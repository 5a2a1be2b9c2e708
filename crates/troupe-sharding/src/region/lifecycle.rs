//! The ownership messages and the entities' lives: a shard claimed
//! (`Owned`), handed over (`Release`) or lost (`Lost`); an entity
//! activated (with the fencing check), stopped, passivated on `Tick`, and
//! its stop reported (`Stopped`); and publishing active entities to the
//! direct path (direct.rs) once they hold nothing back.
//!
//! Written by the region actor only; see mod.rs for the protocol and the
//! invariants.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::Instant;

use troupe::{Actor, ActorRef, ReplyTo};

use super::{Entity, Fence, OwnedShard, Region, RegionMsg};
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
        }
    }

    pub(super) fn stopped(&mut self, id: String, generation: u64) {
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
            Some(Entity::Active { shard, .. }) => {
                self.shared.direct.remove(&id);
                (shard, Vec::new())
            }
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

    /// Stops entity `id` as an idle one is stopped (counted in
    /// `passivations`, forgotten if remembered); `false` if it is not
    /// running here or buffered envelopes wait for it.
    pub(super) fn passivate(&mut self, id: &str) -> bool {
        let shard = match self.entities.get(id) {
            Some(Entity::Active { shard, .. }) if !self.buffered_ids.contains(id) => *shard,
            _ => return false,
        };
        Counters::add(&self.stat().passivations);
        self.stop_entity(id, false);
        if self
            .shards
            .get_mut(&shard)
            .is_some_and(|s| s.remembered.remove(id))
        {
            self.write_remembered(shard);
        }
        true
    }

    pub(super) fn tick(&mut self) {
        self.clock = Instant::now();
        if let Some(idle) = self.shared.config.idle_timeout {
            let now = self.clock;
            // What the direct path told since the last tick is activity.
            let entities = &mut self.entities;
            self.shared.direct.touched(|id| {
                if let Some(Entity::Active { last, .. }) = entities.get_mut(id) {
                    *last = now;
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
                        if now.duration_since(*last) >= idle && !buffered.contains(id) =>
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
