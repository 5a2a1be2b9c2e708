//! The at-least-once producer (`delivery`) against a real nats-server,
//! three nodes in this process: exact counts (every confirmed message
//! handled once, in order), retries that repeat delivered messages and
//! are not handled twice, the window, and the durable queue across a
//! producer's restart. The SIGKILL of a node is in `producer_kill.rs`.
//!
//! Skips without nats-server (fails under `TROUPE_REQUIRE_NATS=1`).

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{cluster, wait_until, HB};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use troupe::{Actor, Context, ReplyTo};
use troupe_cluster::Cluster;
use troupe_remote::remote;
use troupe_sharding::delivery::{
    Confirmation, Consumer, Deliver, Deliveries, Delivery, Producer, ProducerError,
};
use troupe_sharding::{ClusterSharding, Sharding};
use troupe_test_nats::NatsServer;

/// The `n`-th message the test sends to one entity (from 1).
#[remote("sharding.test.producer.Item")]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Item(u64);

#[remote("sharding.test.producer.Handled", reply = u64)]
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Handled;

enum Msg {
    Delivery(Delivery<Item>),
    Handled(ReplyTo<u64>),
}

/// How the entities treat deliveries now.
const NORMAL: u8 = 0;
/// Drop each delivery unanswered (the producer hears `NoReply`).
const HOLD: u8 = 1;
/// Handle and record, then drop the answer (a lost confirmation).
const LOSE_ANSWER: u8 = 2;

/// What every entity of the process handled, per id, in order; how they
/// behave; how long each delivery takes.
#[derive(Clone, Default)]
struct World {
    log: Arc<Mutex<HashMap<String, Vec<u64>>>>,
    mode: Arc<AtomicU8>,
    slow_ms: Arc<AtomicU64>,
    dedup: Arc<std::sync::atomic::AtomicBool>,
    /// The most messages one delivery carried.
    largest: Arc<AtomicU64>,
}

impl World {
    fn new() -> World {
        let w = World::default();
        w.dedup.store(true, Ordering::Relaxed);
        w
    }
    fn of(&self, id: &str) -> Vec<u64> {
        self.log.lock().get(id).cloned().unwrap_or_default()
    }
    fn total(&self) -> usize {
        self.log.lock().values().map(Vec::len).sum()
    }
}

struct Sink {
    id: String,
    world: World,
    consumer: Consumer,
    /// Deliveries this entity has taken (the third and sixth are slowed
    /// while `World::slow_ms` is set).
    deliveries: u64,
}

impl Actor for Sink {
    type Msg = Msg;
    fn handle(&mut self, m: Msg, _: &mut Context<'_, Self>) {
        match m {
            Msg::Delivery(d) => {
                // The third and sixth deliveries are slower than the
                // producer's retry_after, whatever the machine's speed, so
                // the producer must resend them; the others (and so the
                // resends, however many pile up) are answered at once.
                self.deliveries += 1;
                self.world
                    .largest
                    .fetch_max(d.len() as u64, Ordering::Relaxed);
                let slow = self.world.slow_ms.load(Ordering::Relaxed);
                if slow > 0 && matches!(self.deliveries, 3 | 6) {
                    std::thread::sleep(Duration::from_millis(slow));
                }
                match self.world.mode.load(Ordering::Relaxed) {
                    HOLD => drop(d),
                    LOSE_ANSWER => {
                        let fresh: Vec<(u64, u64)> = d
                            .fresh(&self.consumer)
                            .map(|f| f.map(|(s, Item(n))| (s, *n)).collect())
                            .unwrap_or_default();
                        for (seq, n) in fresh {
                            self.world
                                .log
                                .lock()
                                .entry(self.id.clone())
                                .or_default()
                                .push(n);
                            self.consumer.record(d.producer(), d.epoch(), seq);
                        }
                        drop(d);
                    }
                    _ => {
                        if !self.world.dedup.load(Ordering::Relaxed) {
                            // The mutation the dedup test must catch: a
                            // table that forgets everything each time.
                            self.consumer = Consumer::new();
                        }
                        let (log, id) = (&self.world.log, &self.id);
                        d.handle(&mut self.consumer, |Item(n)| {
                            log.lock().entry(id.clone()).or_default().push(n)
                        });
                    }
                }
            }
            Msg::Handled(r) => {
                r.reply(self.world.of(&self.id).len() as u64);
            }
        }
    }
}

fn sinks(c: &Arc<Cluster>, world: &World) -> Sharding<Sink> {
    let world = world.clone();
    c.sharding("sink", move |id| Sink {
        id: id.to_string(),
        world: world.clone(),
        consumer: Consumer::new(),
        deliveries: 0,
    })
    .deliveries::<Item>(Msg::Delivery)
    .ask::<Handled>(|_, r| Msg::Handled(r))
    .shards(32)
    .tick(Duration::from_millis(150))
    .start()
    .expect("start")
}

/// Three nodes `{prefix}1..3` with the sink type, settled.
fn three(server: &NatsServer, prefix: &str, world: &World) -> Vec<(Arc<Cluster>, Sharding<Sink>)> {
    let nodes: Vec<_> = (1..=3)
        .map(|i| {
            let c = cluster(server, &format!("{prefix}{i}"));
            let s = sinks(&c, world);
            (c, s)
        })
        .collect();
    assert!(
        wait_until(Duration::from_secs(20), || nodes.iter().all(|(c, s)| c
            .peers()
            .len()
            == 2
            && s.settled())),
        "the cluster did not settle"
    );
    std::thread::sleep(Duration::from_millis(300));
    nodes
}

fn ids(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("sink-{i}")).collect()
}

/// Every entity's log is exactly 1..=n: each message handled once, in order.
fn assert_exact(world: &World, ids: &[String], n: u64) {
    for id in ids {
        let got = world.of(id);
        let want: Vec<u64> = (1..=n).collect();
        assert_eq!(
            got,
            want,
            "{id}: handled {} (want 1..={n} once each, in order)",
            got.len()
        );
    }
}

#[test]
fn every_confirmed_message_is_handled_once_in_order() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let world = World::new();
    let nodes = three(&server, "pa", &world);
    let producer = Producer::<Item>::builder(&nodes[0].1, "p-exact")
        .window(100)
        .start()
        .expect("producer");
    let ids = ids(24);
    const N: u64 = 200;
    for n in 1..=N {
        for id in &ids {
            producer.send_blocking(id, Item(n)).expect("accepted");
        }
    }
    producer
        .flush_blocking(Duration::from_secs(30))
        .expect("every message confirmed");
    let st = producer.stats();
    assert_eq!(st.confirmed, N * ids.len() as u64);
    assert_eq!(st.unconfirmed, 0);
    assert_exact(&world, &ids, N);
    // The entities ran on every node: deliveries crossed nodes.
    for (_, s) in &nodes {
        assert!(!s.local_entities().is_empty(), "a node ran no entity");
    }
    eprintln!("{st:?}");
}

/// A delivery whose answer is late is sent again while the first is still
/// in the entity's mailbox: both arrive, the table drops the repeat. The
/// same run with the table forgetting everything (`dedup` off) must
/// handle some message twice, or this test proves nothing.
#[test]
fn retries_of_delivered_messages_are_not_handled_twice() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let ids = ids(4);
    const N: u64 = 60;
    let run = |dedup: bool, prefix: &str| -> (World, u64) {
        let world = World::new();
        world.dedup.store(dedup, Ordering::Relaxed);
        world.slow_ms.store(60, Ordering::Relaxed);
        let nodes = three(&server, prefix, &world);
        let producer = Producer::<Item>::builder(&nodes[0].1, &format!("p-{prefix}"))
            .window(40)
            .batch(5)
            .retry_after(Duration::from_millis(20))
            .start()
            .expect("producer");
        for n in 1..=N {
            for id in &ids {
                producer.send_blocking(id, Item(n)).expect("accepted");
            }
        }
        let flushed = producer.flush_blocking(Duration::from_secs(60));
        world.slow_ms.store(0, Ordering::Relaxed);
        assert!(flushed.is_ok(), "{flushed:?}: {:?}", producer.stats());
        (world, producer.stats().resent)
    };
    let (world, resent) = run(true, "pd");
    assert!(
        resent > 0,
        "no retry repeated a message: the test shows nothing"
    );
    assert_exact(&world, &ids, N);
    eprintln!("with the table: {resent} messages resent, none handled twice");

    let (world, resent) = run(false, "pn");
    assert!(resent > 0);
    let handled = world.total();
    assert!(
        handled > (N as usize) * ids.len(),
        "without the table no message was handled twice ({handled}): the test cannot fail"
    );
    eprintln!(
        "without the table: {resent} resent, {handled} handled for {} sent",
        N as usize * ids.len()
    );
}

/// Duplicates injected by hand: a delivery repeated is confirmed and not
/// handled again; a delivery of an older epoch is stale.
#[test]
fn an_injected_duplicate_is_confirmed_not_handled() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let world = World::new();
    let nodes = three(&server, "pi", &world);
    let e = nodes[1].1.entity("dup-1");
    let t = Duration::from_secs(10);
    let d = |epoch, first, msgs: Vec<u64>| Deliver {
        producer: "hand".into(),
        epoch,
        first,
        msgs: msgs.into_iter().map(Item).collect(),
    };
    assert_eq!(
        e.ask(d(7, 1, vec![1, 2, 3]), t),
        Ok(Confirmation::Handled { upto: 3 })
    );
    assert_eq!(
        e.ask(d(7, 1, vec![1, 2, 3]), t),
        Ok(Confirmation::Handled { upto: 3 })
    );
    assert_eq!(
        e.ask(d(7, 2, vec![2, 3, 4]), t),
        Ok(Confirmation::Handled { upto: 4 })
    );
    assert_eq!(
        e.ask(d(6, 1, vec![9]), t),
        Ok(Confirmation::Stale { current: 7 })
    );
    assert_eq!(e.ask(d(7, 1, vec![]), t), Ok(Confirmation::Failed));
    assert_eq!(world.of("dup-1"), vec![1, 2, 3, 4]);
}

#[test]
fn a_full_producer_answers_full_and_send_waits() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let world = World::new();
    let nodes = three(&server, "pw", &world);
    let producer = Arc::new(
        Producer::<Item>::builder(&nodes[0].1, "p-window")
            .max_unconfirmed(4)
            .retry_after(Duration::from_millis(200))
            .start()
            .expect("producer"),
    );
    world.mode.store(HOLD, Ordering::Relaxed);
    for n in 1..=4 {
        producer
            .try_send("w-1", Item(n))
            .expect("room in the window");
    }
    match producer.try_send("w-1", Item(5)) {
        Err(ProducerError::Full(Item(5))) => {}
        other => panic!("a full producer: {other:?}"),
    }
    assert_eq!(producer.stats().unconfirmed, 4);
    assert!(producer.flush_blocking(Duration::from_millis(300)).is_err());
    // `send` waits for room: it has not returned while the entity holds.
    let waiter = {
        let p = producer.clone();
        std::thread::spawn(move || {
            let t0 = Instant::now();
            p.send_blocking("w-1", Item(5)).expect("accepted");
            t0.elapsed()
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !waiter.is_finished(),
        "send returned with the producer full"
    );
    assert!(world.of("w-1").is_empty());
    world.mode.store(NORMAL, Ordering::Relaxed);
    let waited = waiter.join().expect("sender");
    assert!(waited >= Duration::from_millis(450), "{waited:?}");
    producer
        .flush_blocking(Duration::from_secs(20))
        .expect("confirmed");
    assert_eq!(world.of("w-1"), vec![1, 2, 3, 4, 5]);
    assert!(
        producer.stats().failures > 0,
        "the held deliveries failed and were retried"
    );
}

/// The window is per entity: an entity that holds its deliveries holds
/// at most `window` messages of its own stream out, the rest wait
/// accepted in the stream, and the other entities' streams go on, each
/// with deliveries of up to the window (not a share of one window).
#[test]
fn the_window_bounds_each_entity_not_the_producer() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let world = World::new();
    let nodes = three(&server, "pe", &world);
    const WINDOW: u64 = 3;
    let producer = Producer::<Item>::builder(&nodes[0].1, "p-per-entity")
        .window(WINDOW as usize)
        .retry_after(Duration::from_millis(100))
        .start()
        .expect("producer");
    assert_eq!((producer.window(), producer.max_unconfirmed()), (3, 10_000));
    world.mode.store(HOLD, Ordering::Relaxed);
    // 20 to the held entity and 20 to each of 4 others: all accepted at
    // once (far below max_unconfirmed), though the window is 3.
    let ids = ids(5);
    for n in 1..=20 {
        for id in &ids {
            producer.try_send(id, Item(n)).expect("accepted");
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(world.total(), 0, "held");
    assert!(world.largest.load(Ordering::Relaxed) <= WINDOW);
    world.mode.store(NORMAL, Ordering::Relaxed);
    producer
        .flush_blocking(Duration::from_secs(30))
        .expect("confirmed");
    for id in &ids {
        assert_eq!(world.of(id), (1..=20).collect::<Vec<_>>(), "{id}");
    }
    assert_eq!(
        world.largest.load(Ordering::Relaxed),
        WINDOW,
        "deliveries of a full window each, never more"
    );
    let st = producer.stats();
    assert_eq!(st.confirmed, 100);
    // Each stream needs at least 20 / 3 rounded up = 7 deliveries.
    assert!(st.deliveries >= 5 * 7, "{st:?}");
}

/// A durable producer dropped with messages unconfirmed (some handled
/// whose answer was lost, some never handled): a producer started later
/// with its id reloads them, resends them in order, and the entity
/// handles each once.
#[test]
fn a_restarted_durable_producer_resends_what_was_not_confirmed() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let world = World::new();
    let nodes = three(&server, "pq", &world);
    let ids = ids(3);
    let start = || {
        Producer::<Item>::builder(&nodes[0].1, "p-durable")
            .window(100)
            .retry_after(Duration::from_millis(200))
            .durable(1)
            .start()
            .expect("producer")
    };
    {
        let p = start();
        assert_eq!(p.stats().restored, 0);
        for n in 1..=5 {
            for id in &ids {
                p.send_blocking(id, Item(n)).expect("stored");
            }
        }
        p.flush_blocking(Duration::from_secs(20))
            .expect("confirmed");
        // 6..=8 handled, their answers lost; 9..=10 never handled.
        world.mode.store(LOSE_ANSWER, Ordering::Relaxed);
        for n in 6..=8 {
            for id in &ids {
                p.send_blocking(id, Item(n)).expect("stored");
            }
        }
        assert!(wait_until(Duration::from_secs(10), || ids
            .iter()
            .all(|id| world.of(id).len() == 8)));
        world.mode.store(HOLD, Ordering::Relaxed);
        for n in 9..=10 {
            for id in &ids {
                p.send_blocking(id, Item(n)).expect("stored");
            }
        }
        assert_eq!(p.stats().confirmed, 15);
        // Dropped: the process's memory of 6..=10 is gone.
    }
    std::thread::sleep(Duration::from_millis(300));
    world.mode.store(NORMAL, Ordering::Relaxed);
    let p = start();
    let st = p.stats();
    assert_eq!(st.restored, 15, "{st:?}");
    p.flush_blocking(Duration::from_secs(20))
        .expect("resent and confirmed");
    assert_exact(&world, &ids, 10);
    // Nothing is left in the queue: a third start restores nothing.
    drop(p);
    std::thread::sleep(Duration::from_millis(300));
    let p = start();
    assert_eq!(p.stats().restored, 0);
    for id in &ids {
        p.send_blocking(id, Item(11)).expect("stored");
    }
    p.flush_blocking(Duration::from_secs(20))
        .expect("confirmed");
    assert_exact(&world, &ids, 11);
}

#[test]
fn a_bad_producer_id_or_entity_is_refused() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let world = World::new();
    let c = cluster(&server, "pb1");
    let s = sinks(&c, &world);
    assert!(Producer::<Item>::builder(&s, "a.b").start().is_err());
    let p = Producer::<Item>::builder(&s, "ok")
        .start()
        .expect("producer");
    match p.try_send("", Item(1)) {
        Err(ProducerError::BadEntity(Item(1))) => {}
        other => panic!("{other:?}"),
    }
    let _ = HB;
}
