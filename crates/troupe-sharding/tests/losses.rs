//! Loss paths made visible: envelopes the regions cannot deliver are
//! refused with a reason and counted, never left to wait unseen. Runs on
//! the in-memory transport with an in-memory ownership store (whose
//! outage keeps a region from delivering), so no server is needed.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use troupe::{Actor, ActorSystem, AskError, Context};
use troupe_cluster::Cluster;
use troupe_remote::transport::memory::MemoryNetwork;
use troupe_remote::RemoteMessage;
use troupe_sharding::envelope::{Refusal, ShardAsk, ShardReply, ShardTell, Tag, MAX_HOPS};
use troupe_sharding::ownership::{MemoryOwnership, OwnershipStore};
use troupe_sharding::placement::desired_owner;
use troupe_sharding::{ClusterSharding, Sharding, ShardingBuilder};

const REGION: &str = "shard-region-counter";

/// Node `name` of the counter type on `net`, with `store`.
fn node(
    net: &MemoryNetwork,
    store: &Arc<MemoryOwnership>,
    tracker: &Tracker,
    name: &str,
    tune: impl FnOnce(ShardingBuilder<Counter>) -> ShardingBuilder<Counter>,
) -> (Arc<Cluster>, Sharding<Counter>) {
    let c = Arc::new(
        Cluster::builder_on(net.connect(), name)
            .insecure()
            .heartbeat(HB)
            .connect()
            .expect("connect"),
    );
    let s = tune(counters(&c, tracker).store(store.clone()))
        .start()
        .expect("start");
    (c, s)
}

/// L6: an envelope forwarded [`MAX_HOPS`] times that reaches a region
/// whose table names another owner is refused at once (`TooManyHops`,
/// counted in `hops_exceeded`). It used to wait in that region's buffer
/// until the buffer timeout (60 s here): the ask timed out, the tell was
/// nowhere to be seen.
#[test]
fn an_envelope_forwarded_too_often_is_refused_at_once() {
    let net = MemoryNetwork::new();
    let tracker = Tracker::default();
    let store = Arc::new(MemoryOwnership::new());
    let slow = |b: ShardingBuilder<Counter>| b.buffer_timeout(Duration::from_secs(60));
    let (c1, s1) = node(&net, &store, &tracker, "h1", slow);
    let (c2, s2) = node(&net, &store, &tracker, "h2", slow);
    settle(&[&c1, &c2], &[&s1, &s2]);
    let names = ["h1".to_string(), "h2".to_string()];
    let id = (0..)
        .map(|i| format!("hop-{i}"))
        .find(|id| desired_owner(&names, s1.shard_of(id)) == Some("h2"))
        .expect("an id owned by h2");
    // As if two other regions had forwarded it already: h1, whose table
    // names h2, would forward it a fourth time.
    let region = format!("{REGION}@h1");
    let tell = c2.node().lookup::<ShardTell>(&region).expect("lookup");
    let payload = postcard::to_allocvec(&Add { from: 1, seq: 1 }).expect("encode");
    tell.tell(ShardTell {
        entity: id.clone(),
        tag: Tag::of(Add::TYPE_ID),
        hops: MAX_HOPS,
        payload,
    })
    .expect("tell");
    let ask = c2.node().lookup::<ShardAsk>(&region).expect("lookup");
    let asked = Instant::now();
    let reply = ask.ask(
        ShardAsk {
            entity: id.clone(),
            tag: Tag::of(Count::TYPE_ID),
            hops: MAX_HOPS,
            budget_ms: 2_000,
            payload: postcard::to_allocvec(&Count).expect("encode"),
        },
        Duration::from_secs(2),
    );
    assert_eq!(
        reply,
        Ok(ShardReply::Refused(Refusal::TooManyHops)),
        "after {:?}; {:?}",
        asked.elapsed(),
        s1.stats()
    );
    assert!(
        wait_until(Duration::from_secs(5), || s1.stats().hops_exceeded == 2),
        "{:?}",
        s1.stats()
    );
    let st = s1.stats();
    assert_eq!((st.buffered, st.forwarded, st.expired), (0, 0, 0), "{st:?}");
    // Not handled: the entity, asked the usual way, has seen nothing.
    assert_eq!(s1.entity(&id).ask(Count, Duration::from_secs(5)), Ok(0));
    assert_eq!(tracker.delivered(), 0);
}

/// L4, as a user meets it: a shard's owner cannot deliver (its store is
/// down, so no fencing read and no renewed lease), the tells and an ask
/// sent to it on its own node wait in its buffer, and past the buffer
/// timeout they expire: each counted in `expired`, the ask answered
/// "not handled" (`NoResponders`, from `Refusal::Expired`), and none of
/// them is handled later when the store returns.
#[test]
fn buffered_tells_expire_counted_on_their_senders_node() {
    let net = MemoryNetwork::new();
    let tracker = Tracker::default();
    let store = Arc::new(MemoryOwnership::new());
    let (c1, s1) = node(&net, &store, &tracker, "x1", |b| {
        b.buffer_timeout(Duration::from_millis(300))
    });
    settle(&[&c1], &[&s1]);
    store.set_down(true);
    // The lease (3 ticks of 150 ms) runs out without a renewal.
    std::thread::sleep(Duration::from_millis(600));
    const SENT: u64 = 5;
    for seq in 1..=SENT {
        s1.entity("late").tell(Add { from: 1, seq }).expect("tell");
    }
    let reply = s1.entity("late").ask(Count, Duration::from_secs(5));
    assert_eq!(reply, Err(AskError::NoResponders), "{:?}", s1.stats());
    assert!(
        wait_until(Duration::from_secs(5), || s1.stats().expired == SENT + 1),
        "{:?}",
        s1.stats()
    );
    store.set_down(false);
    assert_eq!(s1.entity("late").ask(Count, Duration::from_secs(5)), Ok(0));
    // The region counts the ask once it has handed it over, which the
    // reply may overtake.
    assert!(wait_until(Duration::from_secs(5), || s1.stats().delivered == 1));
    let st = s1.stats();
    assert_eq!((st.expired, st.delivered), (SENT + 1, 1), "{st:?}");
    assert_eq!(tracker.delivered(), 0);
}

/// Takes 20 ms per `Add`: a mailbox of them drains slowly.
struct Slow(Arc<AtomicU64>);

impl Actor for Slow {
    type Msg = Msg;
    fn handle(&mut self, m: Msg, _: &mut Context<'_, Self>) {
        match m {
            Msg::Add(_) => {
                std::thread::sleep(Duration::from_millis(20));
                self.0.fetch_add(1, Ordering::Relaxed);
            }
            Msg::Count(r) => {
                r.reply(self.0.load(Ordering::Relaxed));
            }
        }
    }
}

/// L11: a leave whose hand-over times out (an entity with 2 s of work in
/// its mailbox, a hand-over timeout of 300 ms) kills the shard's
/// entities and releases the record, so the remaining node takes the
/// shard over; what the killed mailbox held is counted, exactly, in the
/// leaving node's actor system. (The record went on naming the departed
/// region, alive in the cluster, so no one ever took the shard: asks to
/// the entity were refused for as long as the process ran.)
#[test]
fn a_leave_whose_hand_over_timed_out_still_hands_the_shard_over() {
    let net = MemoryNetwork::new();
    let store = Arc::new(MemoryOwnership::new());
    let handled = Arc::new(AtomicU64::new(0));
    let system = ActorSystem::new();
    let node = |name: &str| {
        let c = Arc::new(
            Cluster::builder_on(net.connect(), name)
                .insecure()
                .heartbeat(HB)
                .connect()
                .expect("connect"),
        );
        let h = handled.clone();
        let s = c
            .sharding("slow", move |_| Slow(h.clone()))
            .tell::<Add>()
            .ask::<Count>(|_, r| Msg::Count(r))
            .shards(8)
            .tick(Duration::from_millis(150))
            .handover_timeout(Duration::from_millis(300))
            .store(store.clone())
            .system(&system)
            .start()
            .expect("start");
        (c, s)
    };
    let (c1, s1) = node("l1");
    let (c2, s2) = node("l2");
    assert!(
        wait_until(Duration::from_secs(20), || {
            c1.peers().len() == 1 && c2.peers().len() == 1 && s1.settled() && s2.settled()
        }),
        "the cluster did not settle"
    );
    let names = ["l1".to_string(), "l2".to_string()];
    let id = (0..)
        .map(|i| format!("slow-{i}"))
        .find(|id| desired_owner(&names, s1.shard_of(id)) == Some("l1"))
        .expect("an id owned by l1");
    let shard = s1.shard_of(&id);
    const SENT: u64 = 100;
    for seq in 1..=SENT {
        s1.entity(&id).tell(Add { from: 1, seq }).expect("tell");
    }
    assert!(wait_until(Duration::from_secs(5), || handled
        .load(Ordering::Relaxed)
        > 0));
    let dropped_before = system.dropped_messages();
    s1.leave();
    assert!(
        wait_until(Duration::from_secs(10), || {
            store
                .owner("slow", shard)
                .is_ok_and(|o| o.node.as_deref() == Some("l2"))
        }),
        "the shard stayed with the departed region: {:?}",
        store.owner("slow", shard)
    );
    let on_l1 = handled.load(Ordering::Relaxed);
    assert!(on_l1 < SENT, "the mailbox drained before the kill: {on_l1}");
    assert_eq!(
        s2.entity(&id).ask(Count, Duration::from_secs(5)),
        Ok(on_l1),
        "the new owner's instance answers"
    );
    // Every tell was handled on l1 or dropped there, counted.
    assert_eq!(system.dropped_messages() - dropped_before, SENT - on_l1);
    drop(s2);
    system.shutdown();
}

/// Stops itself after every 3rd `Add`: with `ctx.myself().stop()` (a
/// drain) if `drain`, else with `ctx.stop()`.
struct Quitter {
    handled: Arc<AtomicU64>,
    mine: u64,
    drain: bool,
}

impl Actor for Quitter {
    type Msg = Msg;
    fn handle(&mut self, m: Msg, ctx: &mut Context<'_, Self>) {
        match m {
            Msg::Add(_) => {
                self.handled.fetch_add(1, Ordering::Relaxed);
                self.mine += 1;
                if self.mine % 3 == 0 {
                    if self.drain {
                        ctx.myself().stop();
                    } else {
                        ctx.stop();
                    }
                }
            }
            Msg::Count(r) => {
                r.reply(self.handled.load(Ordering::Relaxed));
            }
        }
    }
}

/// L8: an entity that stops itself loses nothing, whether at once
/// (`ctx.stop()`: what its mailbox holds goes to its next instance,
/// `redelivered`; it was dropped, counted in the actor system's
/// `dropped_messages`) or with a drain (`ctx.myself().stop()`): what
/// arrives after the stop waits for it and goes to the next instance,
/// also one that reaches the region as the entity
/// stops (the region saw it alive, then its mailbox refused the tell:
/// it is routed again, to the next instance; it was counted in
/// `entity_gone` and lost, 1 in 2,000 in 2 of 8 runs). 2,000 tells to one
/// entity that stops every 3rd, in bursts of 25.
#[test]
fn an_entity_that_stops_itself_loses_nothing_unseen() {
    for drain in [true, false] {
        let net = MemoryNetwork::new();
        let store = Arc::new(MemoryOwnership::new());
        let handled = Arc::new(AtomicU64::new(0));
        let system = ActorSystem::new();
        let c = Arc::new(
            Cluster::builder_on(net.connect(), "q1")
                .insecure()
                .heartbeat(HB)
                .connect()
                .expect("connect"),
        );
        let h = handled.clone();
        let s = c
            .sharding("quitter", move |_| Quitter {
                handled: h.clone(),
                mine: 0,
                drain,
            })
            .tell::<Add>()
            .ask::<Count>(|_, r| Msg::Count(r))
            .shards(4)
            .store(store.clone())
            .system(&system)
            .start()
            .expect("start");
        const SENT: u64 = 2_000;
        const BURST: u64 = 25;
        let e = s.entity("q");
        let accounted =
            || handled.load(Ordering::Relaxed) + system.dropped_messages() + s.stats().entity_gone;
        // In bursts, each accounted for before the next, so that the
        // entity stops (and restarts) about twice per burst.
        for burst in 0..SENT / BURST {
            for seq in 1..=BURST {
                e.tell(Add {
                    from: 1,
                    seq: burst * BURST + seq,
                })
                .expect("tell");
            }
            assert!(
                wait_until(Duration::from_secs(10), || accounted()
                    == (burst + 1) * BURST),
                "drain {drain}: handled {}, dropped {}, {:?}",
                handled.load(Ordering::Relaxed),
                system.dropped_messages(),
                s.stats()
            );
        }
        let st = s.stats();
        assert!(st.activations > 10, "drain {drain}: {st:?}");
        assert_eq!(
            handled.load(Ordering::Relaxed),
            SENT,
            "drain {drain}: {st:?}"
        );
        assert_eq!(system.dropped_messages(), 0, "drain {drain}: {st:?}");
        assert_eq!(st.mailbox_dropped, 0, "drain {drain}: {st:?}");
        drop(s);
        system.shutdown();
    }
}

/// L7: a shard found owned elsewhere (a false down: here, its record
/// rewritten to another node) kills its entities at once, also one that
/// is draining its mailbox for a passivation, so it does not go on
/// handling while the new owner runs it; what the killed mailbox held is
/// counted, exactly, in the sharding's `mailbox_dropped` (exported) and
/// the actor system's `dropped_messages`. (The
/// draining instance was left to handle all 100 tells, each after the
/// shard had moved.)
#[test]
fn a_lost_shard_s_draining_entity_is_killed_and_its_mailbox_counted() {
    let net = MemoryNetwork::new();
    let store = Arc::new(MemoryOwnership::new());
    let handled = Arc::new(AtomicU64::new(0));
    let system = ActorSystem::new();
    let c = Arc::new(
        Cluster::builder_on(net.connect(), "p1")
            .insecure()
            .heartbeat(HB)
            .connect()
            .expect("connect"),
    );
    let h = handled.clone();
    let s = c
        .sharding("slow", move |_| Slow(h.clone()))
        .tell::<Add>()
        .ask::<Count>(|_, r| Msg::Count(r))
        .shards(8)
        .tick(Duration::from_millis(150))
        .idle_timeout(Some(Duration::from_millis(200)))
        .store(store.clone())
        .system(&system)
        .start()
        .expect("start");
    assert!(wait_until(Duration::from_secs(10), || s.settled()));
    const SENT: u64 = 100;
    for seq in 1..=SENT {
        s.entity("p").tell(Add { from: 1, seq }).expect("tell");
    }
    // 2 s of work: the region passivates it (it was handed nothing for
    // the idle timeout), and it drains.
    assert!(wait_until(Duration::from_secs(5), || s
        .stats()
        .passivations
        == 1));
    let shard = s.shard_of("p");
    let rec = store.owner("slow", shard).expect("record");
    store
        .claim("slow", shard, "ghost", rec.revision)
        .expect("steal");
    assert!(
        wait_until(Duration::from_secs(5), || s.stats().shards_lost >= 1),
        "{:?}",
        s.stats()
    );
    assert!(wait_until(Duration::from_secs(10), || {
        handled.load(Ordering::Relaxed) + system.dropped_messages() == SENT
    }));
    let on_p1 = handled.load(Ordering::Relaxed);
    assert!(
        on_p1 < SENT,
        "the draining instance went on after its shard was lost: {on_p1} handled"
    );
    assert_eq!(s.stats().mailbox_dropped, SENT - on_p1, "{:?}", s.stats());
    drop(s);
    system.shutdown();
}

/// Asks carry their deadline end to end: an ask with 400 ms left that a
/// region forwards to an owner that can only buffer it (the store is
/// down) is answered within its asker's deadline, with a refusal (the
/// forward's `Timeout`, or the owner's `Expired` if its tick comes
/// first), not left to the asker's own timer. (The forward waited 10 s,
/// the owner's buffer 60 s: the asker, waiting 5 s, timed out itself.)
#[test]
fn a_forwarded_ask_waits_no_longer_than_its_asker() {
    let net = MemoryNetwork::new();
    let tracker = Tracker::default();
    let store = Arc::new(MemoryOwnership::new());
    let slow = |b: ShardingBuilder<Counter>| b.buffer_timeout(Duration::from_secs(60));
    let (c1, s1) = node(&net, &store, &tracker, "d1", slow);
    let (c2, s2) = node(&net, &store, &tracker, "d2", slow);
    settle(&[&c1, &c2], &[&s1, &s2]);
    let names = ["d1".to_string(), "d2".to_string()];
    let id = (0..)
        .map(|i| format!("far-{i}"))
        .find(|id| desired_owner(&names, s1.shard_of(id)) == Some("d2"))
        .expect("an id owned by d2");
    store.set_down(true);
    let ask = c2
        .node()
        .lookup::<ShardAsk>(&format!("{REGION}@d1"))
        .expect("lookup");
    let reply = ask.ask(
        ShardAsk {
            entity: id,
            tag: Tag::of(Count::TYPE_ID),
            hops: 0,
            budget_ms: 400,
            payload: postcard::to_allocvec(&Count).expect("encode"),
        },
        Duration::from_secs(5),
    );
    assert!(
        matches!(
            reply,
            Ok(ShardReply::Refused(Refusal::Timeout | Refusal::Expired))
        ),
        "{reply:?}; d1 {:?}, d2 {:?}",
        s1.stats(),
        s2.stats()
    );
    assert_eq!(s1.stats().forwarded, 1, "{:?}", s1.stats());
    store.set_down(false);
}
