//! Routing: where one envelope goes. To its active entity (activated on
//! the first message, after the fencing check), to the instance that is
//! stopping (it waits), to the buffer (no owner here, lease lapsed, store
//! down), or forwarded to the owner the routing table names.
//!
//! Written by the region actor only; see mod.rs for the protocol and the
//! invariants.

use std::sync::atomic::Ordering;
use std::time::Instant;

use tracing::Instrument;
use troupe::{Actor, ActorRef};

use super::pending::Pending;
use super::{Entity, Fence, Region};
use crate::envelope::{check, Refusal, ShardReply, MAX_HOPS};
use crate::placement::shard_of;
use crate::shared::{Hand, Handed, Route, Shared};
use crate::stats::Counters;

impl<A: Actor> Region<A> {
    /// Delivers, forwards or buffers one envelope.
    pub(super) fn route(&mut self, msg: Pending) {
        if !check(msg.entity().as_bytes(), msg.hops()) {
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
    pub(super) fn reroute(&mut self, mut msg: Pending) {
        let span = msg.held().span.clone();
        let _in = span.as_ref().map(tracing::Span::enter);
        self.route(msg);
    }

    /// Keeps `msg` until its shard can take it, or refuses it if the
    /// buffer is full. Neither a remote tell the inbox confirmed (the
    /// inbox checked the bound for it, direct.rs) nor one the buffer held
    /// before is refused here; the envelopes the inbox has in flight count
    /// against the bound.
    pub(super) fn buffer(&mut self, mut msg: Pending) {
        let held = self
            .pending
            .len()
            .saturating_add(self.shared.direct.inflight());
        if !msg.reserved() && held >= self.shared.config.buffer {
            Counters::add(&self.stat().buffer_full);
            tracing::warn!(kind = %self.shared.kind, "sharding buffer full: an envelope was refused");
            msg.refuse(Refusal::Unavailable);
            return;
        }
        Counters::add(&self.stat().buffered);
        msg.stamp();
        msg.held().reserved = true;
        self.pending.push_back(msg);
        // Never lowered here: while `retry_buffer` routes the envelopes
        // again, those not yet routed still count (it stores the exact
        // figure when done).
        self.shared
            .pending
            .fetch_max(self.pending.len(), Ordering::AcqRel);
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
                ..
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
        self.shared.direct.remove(msg.entity());
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

    /// Routes again every buffered envelope; with `expire`, those older
    /// than the buffer timeout are refused instead (`expired`).
    pub(super) fn retry_buffer(&mut self, expire: bool) {
        let timeout = self.shared.config.buffer_timeout;
        let now = Instant::now();
        let all: Vec<Pending> = self.pending.drain(..).collect();
        for m in all {
            if expire && m.since().is_some_and(|t| now.duration_since(t) >= timeout) {
                Counters::add(&self.stat().expired);
                tracing::warn!(entity = %m.entity(), "a buffered envelope expired: its shard had no owner");
                m.refuse(Refusal::Unavailable);
            } else {
                self.reroute(m);
            }
        }
        // Only now: the direct path stays shut while envelopes from the
        // buffer are on their way to their entities.
        self.shared
            .pending
            .store(self.pending.len(), Ordering::Release);
    }
}

/// Decodes one envelope into `actor`'s message and hands it over.
fn send<A: Actor>(shared: &Shared<A>, actor: &ActorRef<A>, msg: Pending) {
    match msg {
        Pending::Tell(t, _) => match shared.tells.get(&t.tag) {
            None => Counters::add(&shared.stats.unknown_types),
            Some(d) => match (d.f)(&t.payload, actor, Hand::Tell) {
                Handed::Delivered => Counters::add(&shared.stats.delivered),
                Handed::Undecodable => Counters::add(&shared.stats.undecodable),
                Handed::Refused => {
                    Counters::add(&shared.stats.entity_gone);
                    tracing::warn!(entity = %t.entity, "an entity stopped as a tell reached it");
                }
            },
        },
        Pending::Ask(a, reply, _) => match shared.asks.get(&a.tag).map(|d| &d.f) {
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
