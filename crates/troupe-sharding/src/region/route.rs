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
use crate::envelope::{budget_ms, check, Refusal, ShardReply, MAX_HOPS};
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
        // Behind what waits for the same entity, in the buffer or for its
        // stop: whatever could take this one now (a renewed lease, a new
        // route) would take it before them. The stop's `Stopped` routes
        // the waiting ones again, in order.
        if self.buffered_ids.contains(msg.entity()) {
            return self.buffer(msg);
        }
        let shard = shard_of(msg.entity(), self.shared.config.shards);
        let owned = self
            .shards
            .get(&shard)
            .is_some_and(|s| s.releasing.is_none());
        // Ownership confirmed within the lease (else the envelope waits
        // for the coordinator's next read).
        let leased = owned && self.lease_until.is_some_and(|t| Instant::now() < t);
        // One lookup for the common case, an active entity (activity is
        // stamped with the clock of the last tick: nothing allocated, no
        // clock read beyond the lease check), and for a stopping one.
        match self.entities.get_mut(msg.entity()) {
            Some(Entity::Stopping { waiting, .. }) => {
                let mut msg = msg;
                msg.keep_span();
                waiting.push(msg);
                return;
            }
            Some(Entity::Active { actor, last, .. }) if leased && actor.is_alive() => {
                last.touch(self.clock);
                // It stopped by itself between the check and the send:
                // routed again, the tell waits for that stop's
                // `Stopped` and goes to the next instance. Its bounded
                // mailbox was full: the tell waits in the buffer, and the
                // entity is tried again soon (room.rs).
                if let Some(back) = send(&self.shared, actor, msg) {
                    if actor.is_alive() {
                        self.wait_for_room(back);
                    } else {
                        self.route(back);
                    }
                }
                return;
            }
            _ => {}
        }
        if leased {
            self.activate_or_replace(shard, msg)
        } else if owned {
            self.buffer(msg)
        } else if let Some(msg) = self.forward(shard, msg) {
            self.buffer(msg);
        }
    }

    /// Forwards `msg` to the region of the owner the routing table names
    /// for `shard`, or hands it back (to wait in the buffer) if the table
    /// names no other node or the link to it is full or down. Refuses it
    /// instead if it has been forwarded [`MAX_HOPS`] times already
    /// (`TooManyHops`, counted in `hops_exceeded`: the routing tables of
    /// the nodes it went through disagree, and waiting here would only let
    /// it expire), or if it is an ask whose asker has stopped waiting
    /// (`Expired`). A forwarded ask waits for its reply until its asker's
    /// deadline (at most `forward_timeout`) and carries what is left of
    /// it; a timeout comes back as `Timeout`.
    fn forward(&mut self, shard: u32, msg: Pending) -> Option<Pending> {
        let Route::Remote { tell, ask } = self.shared.route(shard) else {
            return Some(msg);
        };
        if msg.hops() >= MAX_HOPS {
            if Counters::bump_and_log(&self.stat().hops_exceeded) {
                tracing::warn!(
                    entity = %msg.entity(),
                    "an envelope forwarded {MAX_HOPS} times was refused: routing tables disagree"
                );
            }
            msg.refuse(Refusal::TooManyHops);
            return None;
        }
        match msg {
            Pending::Tell(mut t, at) => {
                t.hops += 1;
                if let Err(e) = tell.tell(t) {
                    let mut t = e.into_inner();
                    t.hops -= 1;
                    return Some(Pending::Tell(t, at));
                }
            }
            Pending::Ask(mut a, reply, held) => {
                let cap = self.shared.config.forward_timeout;
                let left = held
                    .deadline
                    .map_or(cap, |d| d.saturating_duration_since(Instant::now()))
                    .min(cap);
                if left.is_zero() {
                    Counters::add(&self.stat().expired);
                    Pending::Ask(a, reply, held).refuse(Refusal::Expired);
                    return None;
                }
                a.hops += 1;
                a.budget_ms = budget_ms(left);
                // The forward runs in the span it is made in, so the ask
                // carries the sender's trace.
                let forward = async move {
                    let r = ask.ask_async(a, left).await;
                    reply.reply(
                        r.unwrap_or_else(|e| ShardReply::Refused(Refusal::from_ask_error(e))),
                    );
                };
                self.shared
                    .handle
                    .spawn(forward.instrument(tracing::Span::current()));
            }
        }
        Counters::add(&self.stat().forwarded);
        None
    }

    /// The region stops: each buffered envelope for a shard not owned
    /// here goes on to its owner if the routing table names one (after a
    /// leave, every shard's); the others are refused and counted
    /// (`expired`). Nothing is delivered or activated here any more.
    pub(super) fn drain_buffer(&mut self) {
        self.buffered_ids.clear();
        let all: Vec<Pending> = self.pending.drain(..).collect();
        for m in all {
            let shard = shard_of(m.entity(), self.shared.config.shards);
            let left = if self.shards.contains_key(&shard) {
                Some(m)
            } else {
                self.forward(shard, m)
            };
            if let Some(m) = left {
                Counters::add(&self.stat().expired);
                m.refuse(Refusal::Unavailable);
            }
        }
        self.shared.pending.store(0, Ordering::Release);
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
        if !self.buffered_ids.contains(msg.entity()) {
            self.buffered_ids.insert(msg.entity().to_string());
        }
        self.pending.push_back(msg);
        // Never lowered here: while `retry_buffer` routes the envelopes
        // again, those not yet routed still count (it stores the exact
        // figure when done).
        self.shared
            .pending
            .fetch_max(self.pending.len(), Ordering::AcqRel);
    }

    /// `msg`'s entity, in an owned shard within the lease, has no live
    /// instance here (`route` handed live and stopping ones theirs): it
    /// is activated, or, if its instance stopped by itself, `msg` waits
    /// for that stop's `Stopped`.
    fn activate_or_replace(&mut self, shard: u32, msg: Pending) {
        let stopped_by_itself = match self.entities.get(msg.entity()) {
            Some(Entity::Active {
                actor,
                generation,
                shard,
                ..
            }) => (actor.clone(), *generation, *shard),
            // Unreachable: `route` handed it to its waiting list.
            Some(Entity::Stopping { .. }) => return self.route(msg),
            None => {
                if !self.make_room() {
                    Counters::add(&self.stat().entities_refused);
                    tracing::warn!(kind = %self.shared.kind, "entity table full: an activation was refused");
                    msg.refuse(Refusal::Unavailable);
                    return;
                }
                let id = msg.entity().to_string();
                match self.activate(shard, &id) {
                    // An instance that stops before its first message is
                    // not given it again (it would be activated again and
                    // again): counted, `entity_gone`. One whose bounded
                    // mailbox is full already (what its last instance
                    // left) has it wait in the buffer.
                    Ok(actor) => {
                        if let Some(back) = send(&self.shared, &actor, msg) {
                            if actor.is_alive() {
                                self.wait_for_room(back);
                            } else {
                                gone(&self.shared, back.entity());
                            }
                        }
                    }
                    // The shard was dropped here: forward or buffer.
                    Err(Fence::Lost) => self.route(msg),
                    // Still owned: wait for the store.
                    Err(Fence::StoreDown) => self.buffer(msg),
                }
                return;
            }
        };
        // It stopped by itself; its `Stopped` is on the way.
        let (actor, generation, shard) = stopped_by_itself;
        self.shared.direct.remove(msg.entity());
        let mut msg = msg;
        msg.keep_span();
        self.entities.insert(
            msg.entity().to_string(),
            Entity::Stopping {
                actor,
                generation,
                shard,
                waiting: vec![msg],
                asked: false,
            },
        );
    }

    /// Routes again every buffered envelope; with `expire`, those older
    /// than the buffer timeout, and asks past their asker's deadline, are
    /// refused instead (`Expired`, counted in `expired`).
    pub(super) fn retry_buffer(&mut self, expire: bool) {
        let timeout = self.shared.config.buffer_timeout;
        let now = Instant::now();
        let all: Vec<Pending> = self.pending.drain(..).collect();
        // Routed again in order: an envelope buffered again lists its
        // entity anew, and that entity's later ones follow it back.
        self.buffered_ids.clear();
        for m in all {
            if expire && m.overdue(now, timeout) {
                if Counters::bump_and_log(&self.stat().expired) {
                    tracing::warn!(entity = %m.entity(), "a buffered envelope expired: it waited past the buffer timeout");
                }
                m.refuse(Refusal::Expired);
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

/// Decodes one envelope into `actor`'s message and hands it over, never
/// blocking the region (`try_tell`). A tell that `actor` refused because
/// it has stopped, or because its bounded mailbox is full, comes back,
/// for the caller to route again or buffer (or count as gone).
#[must_use]
fn send<A: Actor>(shared: &Shared<A>, actor: &ActorRef<A>, msg: Pending) -> Option<Pending> {
    match msg {
        Pending::Tell(t, held) => match shared.tells.get(&t.tag) {
            None => Counters::add(&shared.stats.unknown_types),
            Some(d) => match (d.f)(&t.payload, actor, Hand::Try) {
                Handed::Delivered => Counters::add(&shared.stats.delivered),
                Handed::Undecodable => Counters::add(&shared.stats.undecodable),
                Handed::Refused => return Some(Pending::Tell(t, held)),
            },
        },
        Pending::Ask(a, reply, _) => match shared.asks.get(&a.tag).map(|d| &d.f) {
            None => {
                Counters::add(&shared.stats.unknown_types);
                reply.reply(ShardReply::Refused(Refusal::UnknownType));
            }
            Some(f) => {
                if f(&a.payload, actor, reply) {
                    Counters::add(&shared.stats.delivered);
                } else {
                    Counters::add(&shared.stats.undecodable);
                }
            }
        },
    }
    None
}

/// Counts a tell its entity refused (`entity_gone`).
fn gone<A: Actor>(shared: &Shared<A>, entity: &str) {
    if Counters::bump_and_log(&shared.stats.entity_gone) {
        tracing::warn!(%entity, "an entity stopped as a tell reached it");
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use serde::{Deserialize, Serialize};
    use troupe::{ActorSystem, Context};
    use troupe_remote::{remote, RemoteMessage};

    use super::*;
    use crate::config::Config;
    use crate::envelope::{ShardAsk, ShardTell, Tag};
    use crate::ownership::{MemoryOwnership, OwnershipStore};
    use crate::region::direct::Direct;
    use crate::region::RegionMsg;
    use crate::shared::{tell_fn, Routes, TypeTable};

    #[remote("test.region.Seq")]
    #[derive(Serialize, Deserialize)]
    struct Seq(u64);

    /// Writes down the order of what it is told; takes 300 ms to stop.
    struct Log(Arc<Mutex<Vec<u64>>>);

    impl Actor for Log {
        type Msg = Seq;
        fn handle(&mut self, m: Seq, _: &mut Context<'_, Self>) {
            self.0.lock().unwrap().push(m.0);
        }
        fn stopped(&mut self, _: &mut Context<'_, Self>) {
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    /// `log` once it holds `n` entries (or after 5 s).
    fn logged(log: &Mutex<Vec<u64>>, n: usize) -> Vec<u64> {
        let deadline = Instant::now() + Duration::from_secs(5);
        while log.lock().unwrap().len() < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        log.lock().unwrap().clone()
    }

    /// A region of one shard, owned by this node ("n1") in an in-memory
    /// store, passivating after `idle`; what its entities are told goes
    /// to `log`.
    fn region(
        system: &ActorSystem,
        log: &Arc<Mutex<Vec<u64>>>,
        idle: Option<Duration>,
    ) -> (ActorRef<Region<Log>>, Arc<Shared<Log>>) {
        let config = Config {
            shards: 1,
            idle_timeout: idle,
            ..Config::default()
        };
        region_with(system, log, config)
    }

    /// As [`region`], with `config` (its `shards` set to 1).
    fn region_with(
        system: &ActorSystem,
        log: &Arc<Mutex<Vec<u64>>>,
        config: Config,
    ) -> (ActorRef<Region<Log>>, Arc<Shared<Log>>) {
        let store = Arc::new(MemoryOwnership::new());
        let mut tells = TypeTable::default();
        tells
            .register(Seq::TYPE_ID, Seq::NAME, 0, tell_fn::<Log, Seq>())
            .unwrap();
        let log = log.clone();
        let shared = Arc::new(Shared {
            kind: "log".into(),
            node: "n1".into(),
            config: Config {
                shards: 1,
                ..config
            },
            store: store.clone(),
            factory: Box::new(move |_| Log(log.clone())),
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
        let token = store.claim("log", 0, "n1", 0).unwrap();
        region.tell(RegionMsg::Owned { shard: 0, token }).unwrap();
        (region, shared)
    }

    /// The coordinator's renewal: a `Verified` whose reads began `ago`
    /// (4 ticks ago: the lease has run out).
    fn verified(region: &ActorRef<Region<Log>>, ago: Duration) {
        region
            .tell(RegionMsg::Verified {
                at: Instant::now() - ago,
            })
            .unwrap();
    }

    /// A tell for entity "e", handed over as an entity reference does
    /// (`shared` counts it in flight).
    fn tell(shared: &Shared<Log>, n: u64) -> RegionMsg {
        shared.direct.handing();
        RegionMsg::Inbound(ShardTell {
            entity: "e".into(),
            tag: Tag::of(Seq::TYPE_ID),
            hops: 0,
            payload: postcard::to_allocvec(&Seq(n)).unwrap(),
        })
    }

    /// A region passivating at once (every tick stops an entity with
    /// nothing held), its lease renewed, its entity "e" told 1.
    #[allow(clippy::type_complexity)]
    fn told_once() -> (
        ActorSystem,
        Arc<Mutex<Vec<u64>>>,
        ActorRef<Region<Log>>,
        Arc<Shared<Log>>,
    ) {
        let system = ActorSystem::new();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (region, shared) = region(&system, &log, Some(Duration::ZERO));
        verified(&region, Duration::ZERO);
        region.tell(tell(&shared, 1)).unwrap();
        (system, log, region, shared)
    }

    /// A tell that waits for its entity's stop reaches the next instance
    /// before a newer one that comes once the lease has run out (it used
    /// to wait in the buffer, and the stop's waiting tell joined it there
    /// behind it: 1, 3, 2).
    #[test]
    fn a_tell_waits_behind_its_entity_s_stop() {
        let (system, log, region, shared) = told_once();
        let tick = shared.config.tick;
        // Idle at once: the tick stops the entity (a stop of 300 ms).
        region.tell(RegionMsg::Tick).unwrap();
        region.tell(tell(&shared, 2)).unwrap();
        verified(&region, 4 * tick);
        region.tell(tell(&shared, 3)).unwrap();
        std::thread::sleep(Duration::from_millis(600));
        verified(&region, Duration::ZERO);
        region.tell(RegionMsg::Tick).unwrap();
        assert_eq!(logged(&log, 3), [1, 2, 3]);
        assert_eq!(shared.stats.snapshot().passivations, 1);
        system.shutdown();
    }

    /// `Passivate` stops a running entity at once, as idleness would
    /// (counted), with no idle timeout configured; it refuses an entity
    /// that is not running (stopping, or never started) and one whose
    /// tells wait in the buffer; a later tell starts it again.
    #[test]
    fn passivate_stops_a_running_entity_and_refuses_the_rest() {
        let system = ActorSystem::new();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (region, shared) = region(&system, &log, None);
        verified(&region, Duration::ZERO);
        region.tell(tell(&shared, 1)).unwrap();
        let ask = |id: &str| {
            region
                .ask(
                    |r| RegionMsg::Passivate(id.to_string(), r),
                    Duration::from_secs(5),
                )
                .unwrap()
        };
        assert!(!ask("nobody"));
        assert!(ask("e"));
        assert!(!ask("e"), "stopping: not running");
        assert_eq!(shared.stats.snapshot().passivations, 1);
        region.tell(tell(&shared, 2)).unwrap();
        assert_eq!(logged(&log, 2), [1, 2]);
        // Its tells wait in the buffer (the lease ran out): refused.
        let tick = shared.config.tick;
        verified(&region, 4 * tick);
        region.tell(tell(&shared, 3)).unwrap();
        assert!(!ask("e"), "buffered tells wait for it");
        let st = shared.stats.snapshot();
        assert_eq!((st.passivations, st.activations), (1, 2), "{st:?}");
        system.shutdown();
    }

    /// An entity whose tells wait in the buffer (the lease ran out) is
    /// not idle, whatever its last delivery's age: the tick that would
    /// passivate it leaves it, and the renewed lease's tick delivers to
    /// the same instance. (It was stopped, and the buffered tell
    /// activated a new one.)
    #[test]
    fn an_entity_with_buffered_tells_is_not_passivated() {
        let (system, log, region, shared) = told_once();
        let tick = shared.config.tick;
        verified(&region, 4 * tick);
        region.tell(tell(&shared, 2)).unwrap();
        region.tell(RegionMsg::Tick).unwrap();
        verified(&region, Duration::ZERO);
        region.tell(RegionMsg::Tick).unwrap();
        assert_eq!(logged(&log, 2), [1, 2]);
        let st = shared.stats.snapshot();
        assert_eq!((st.passivations, st.activations), (0, 1), "{st:?}");
        system.shutdown();
    }

    /// A tell buffered while the lease had run out reaches its entity
    /// before a newer one that comes after the lease's renewal and before
    /// the tick that retries the buffer. (Delivered at once, the newer
    /// one overtook it: the order was 2, 1, 3.)
    #[test]
    fn a_tell_waits_behind_its_entity_s_buffered_ones() {
        let system = ActorSystem::new();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (region, shared) = region(&system, &log, None);
        let tick = shared.config.tick;
        verified(&region, 4 * tick);
        region.tell(tell(&shared, 1)).unwrap();
        verified(&region, Duration::ZERO);
        region.tell(tell(&shared, 2)).unwrap();
        region.tell(RegionMsg::Tick).unwrap();
        region.tell(tell(&shared, 3)).unwrap();
        assert_eq!(logged(&log, 3), [1, 2, 3]);
        assert_eq!(shared.stats.snapshot().buffered, 2);
        system.shutdown();
    }

    /// An ask for entity "e" (of no type the region takes: these asks
    /// never reach it), its asker waiting `budget`.
    fn ask_env(budget: Duration) -> ShardAsk {
        ShardAsk {
            entity: "e".into(),
            tag: Tag::of(7),
            hops: 0,
            budget_ms: budget_ms(budget),
            payload: Vec::new(),
        }
    }

    /// L4: a tell and an ask that wait in the buffer past the buffer
    /// timeout (the lease ran out and was not renewed) expire on the next
    /// tick: both counted in `expired`, the ask answered `Expired`, a
    /// reason a receipt can carry and an asker can tell from a refusal
    /// for a full buffer. (It was answered `Unavailable`.)
    #[test]
    fn a_buffered_envelope_expires_as_expired() {
        let system = ActorSystem::new();
        let log = Arc::new(Mutex::new(Vec::new()));
        let config = Config {
            buffer_timeout: Duration::from_millis(50),
            ..Config::default()
        };
        let (region, shared) = region_with(&system, &log, config);
        verified(&region, 4 * shared.config.tick);
        region.tell(tell(&shared, 1)).unwrap();
        let asked = {
            let region = region.clone();
            std::thread::spawn(move || {
                region.ask(
                    |r| RegionMsg::Ask(ask_env(Duration::from_secs(60)), r),
                    Duration::from_secs(5),
                )
            })
        };
        while shared.stats.snapshot().buffered < 2 {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(60));
        region.tell(RegionMsg::Tick).unwrap();
        let reply = asked.join().unwrap();
        assert_eq!(reply, Ok(ShardReply::Refused(Refusal::Expired)));
        let st = shared.stats.snapshot();
        assert_eq!((st.expired, st.delivered), (2, 0), "{st:?}");
        assert!(log.lock().unwrap().is_empty());
        system.shutdown();
    }

    /// A buffered ask waits no longer than its asker: past its deadline
    /// the next tick refuses it (`Expired`, counted), whatever the buffer
    /// timeout (60 s here). (It waited out the buffer timeout, holding
    /// its place in the buffer long after its asker had given up.)
    #[test]
    fn a_buffered_ask_waits_no_longer_than_its_asker() {
        let system = ActorSystem::new();
        let log = Arc::new(Mutex::new(Vec::new()));
        let config = Config {
            buffer_timeout: Duration::from_secs(60),
            ..Config::default()
        };
        let (region, shared) = region_with(&system, &log, config);
        verified(&region, 4 * shared.config.tick);
        let asked = region.ask(
            |r| RegionMsg::Ask(ask_env(Duration::from_millis(30)), r),
            Duration::from_millis(30),
        );
        assert_eq!(asked, Err(troupe::AskError::Timeout));
        region.tell(RegionMsg::Tick).unwrap();
        let st = || shared.stats.snapshot();
        let deadline = Instant::now() + Duration::from_secs(5);
        while st().expired == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!((st().buffered, st().expired), (1, 1), "{:?}", st());
        assert_eq!(shared.pending.load(Ordering::Acquire), 0);
        system.shutdown();
    }

    /// L10: a region that stops while an entity is stopping hands what
    /// waits for that stop on, as it does its buffer: counted (`expired`)
    /// and, for an ask, answered `Unavailable`. (They were dropped: the
    /// tell counted nowhere, the asker told only that the region stopped.)
    #[test]
    fn a_stopping_region_refuses_what_waits_for_an_entity_s_stop() {
        let (system, log, region, shared) = told_once();
        // Idle at once: the tick stops the entity (a stop of 300 ms); a
        // tell and an ask wait for it.
        region.tell(RegionMsg::Tick).unwrap();
        region.tell(tell(&shared, 2)).unwrap();
        let asked = {
            let region = region.clone();
            std::thread::spawn(move || {
                region.ask(
                    |r| RegionMsg::Ask(ask_env(Duration::from_secs(60)), r),
                    Duration::from_secs(5),
                )
            })
        };
        std::thread::sleep(Duration::from_millis(100));
        region.stop();
        let reply = asked.join().unwrap();
        assert_eq!(reply, Ok(ShardReply::Refused(Refusal::Unavailable)));
        let st = shared.stats.snapshot();
        assert_eq!((st.delivered, st.expired), (1, 2), "{st:?}");
        assert_eq!(logged(&log, 1), [1]);
        system.shutdown();
    }

    /// A forwarded ask that times out is a timeout to its asker: the
    /// entity may have run it. (It came back as `NoReply`.) Refusals
    /// that mean "never handed to the entity" stay so.
    #[test]
    fn a_forwarded_timeout_stays_a_timeout() {
        use troupe::AskError;
        let round = |e| Refusal::from_ask_error(e).to_ask_error();
        assert_eq!(round(AskError::Timeout), AskError::Timeout);
        assert_eq!(round(AskError::NoResponders), AskError::NoResponders);
        assert_eq!(round(AskError::ActorStopped), AskError::ActorStopped);
        for r in [
            Refusal::Expired,
            Refusal::TooManyHops,
            Refusal::Unavailable,
            Refusal::BadEnvelope,
            Refusal::UnknownType,
            Refusal::Undecodable,
        ] {
            assert!(r.not_handled());
            assert_eq!(r.to_ask_error(), AskError::NoResponders);
        }
        for r in [Refusal::Timeout, Refusal::Stopped, Refusal::NoReply] {
            assert!(!r.not_handled());
        }
        // An ask's budget: rounded up to the millisecond, saturated.
        assert_eq!(budget_ms(Duration::from_micros(1)), 1);
        assert_eq!(budget_ms(Duration::from_millis(30)), 30);
        assert_eq!(budget_ms(Duration::MAX), u32::MAX);
    }
}
