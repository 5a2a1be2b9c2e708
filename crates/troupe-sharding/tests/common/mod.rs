//! What the sharding tests share: a counting entity, a tracker of live
//! activations across every node of the process, and node set-up.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use troupe::{Actor, Context, ReplyTo};
use troupe_cluster::Cluster;
use troupe_remote::remote;
use troupe_sharding::{ClusterSharding, Sharding, ShardingBuilder};
use troupe_test_nats::NatsServer;

pub const HB: Duration = Duration::from_millis(200);
pub const SHARDS: u32 = 64;

/// One message from sender `from`, its `seq`-th to this entity.
#[remote("sharding.test.Add")]
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Add {
    pub from: u32,
    pub seq: u64,
}

/// How many `Add`s this instance handled.
#[remote("sharding.test.Count", reply = u64)]
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Count;

pub enum Msg {
    Add(Add),
    Count(ReplyTo<u64>),
}
impl From<Add> for Msg {
    fn from(a: Add) -> Self {
        Msg::Add(a)
    }
}

/// Per id, across every node of the process.
#[derive(Default, Debug, Clone)]
pub struct Record {
    pub live: i64,
    pub max_live: i64,
    pub activations: u64,
    pub delivered: u64,
    pub fifo_violations: u64,
}

#[derive(Default, Clone)]
pub struct Tracker(
    pub Arc<Mutex<HashMap<String, Record>>>,
    /// Milliseconds each instance takes to stop (widens hand-over races).
    pub Arc<std::sync::atomic::AtomicU64>,
);

impl Tracker {
    pub fn get(&self, id: &str) -> Record {
        self.0.lock().get(id).cloned().unwrap_or_default()
    }
    pub fn max_live(&self) -> i64 {
        self.0
            .lock()
            .values()
            .map(|r| r.max_live)
            .max()
            .unwrap_or(0)
    }
    pub fn delivered(&self) -> u64 {
        self.0.lock().values().map(|r| r.delivered).sum()
    }
    pub fn fifo_violations(&self) -> u64 {
        self.0.lock().values().map(|r| r.fifo_violations).sum()
    }
}

pub struct Counter {
    id: String,
    tracker: Tracker,
    handled: u64,
    last: HashMap<u32, u64>,
}

impl Actor for Counter {
    type Msg = Msg;
    fn started(&mut self, _: &mut Context<'_, Self>) {
        let mut t = self.tracker.0.lock();
        let r = t.entry(self.id.clone()).or_default();
        r.live += 1;
        r.max_live = r.max_live.max(r.live);
        r.activations += 1;
    }
    fn handle(&mut self, m: Msg, _: &mut Context<'_, Self>) {
        match m {
            Msg::Add(a) => {
                self.handled += 1;
                let mut t = self.tracker.0.lock();
                let r = t.entry(self.id.clone()).or_default();
                r.delivered += 1;
                let last = self.last.entry(a.from).or_insert(0);
                if a.seq <= *last {
                    r.fifo_violations += 1;
                }
                *last = a.seq;
            }
            Msg::Count(reply) => {
                reply.reply(self.handled);
            }
        }
    }
    fn stopped(&mut self, _: &mut Context<'_, Self>) {
        let slow = self.tracker.1.load(std::sync::atomic::Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(slow));
        self.tracker
            .0
            .lock()
            .entry(self.id.clone())
            .or_default()
            .live -= 1;
    }
}

pub fn cluster(server: &NatsServer, name: &str) -> Arc<Cluster> {
    Arc::new(
        Cluster::builder(&server.url(), name)
            .insecure()
            .heartbeat(HB)
            .connect()
            .expect("connect"),
    )
}

/// The counter sharding type on `cluster`, before `start`.
pub fn counters(cluster: &Arc<Cluster>, tracker: &Tracker) -> ShardingBuilder<Counter> {
    let tracker = tracker.clone();
    cluster
        .sharding("counter", move |id| Counter {
            id: id.to_string(),
            tracker: tracker.clone(),
            handled: 0,
            last: HashMap::new(),
        })
        .tell::<Add>()
        .ask::<Count>(|_, r| Msg::Count(r))
        .shards(SHARDS)
        .tick(Duration::from_millis(150))
}

pub fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    f()
}

/// Nodes `{prefix}1`..`{prefix}3` of the counter sharding type, started
/// and settled.
pub fn three_counters(
    server: &NatsServer,
    prefix: &str,
    tracker: &Tracker,
) -> (Vec<Arc<Cluster>>, Vec<Sharding<Counter>>) {
    let cs: Vec<_> = (1..=3)
        .map(|i| cluster(server, &format!("{prefix}{i}")))
        .collect();
    let ss = start_settled(&cs, tracker);
    (cs, ss)
}

/// The counter sharding type started on each of `cs`, and settled.
pub fn start_settled(cs: &[Arc<Cluster>], tracker: &Tracker) -> Vec<Sharding<Counter>> {
    let ss: Vec<_> = cs
        .iter()
        .map(|c| counters(c, tracker).start().expect("start"))
        .collect();
    settle(
        &cs.iter().collect::<Vec<_>>(),
        &ss.iter().collect::<Vec<_>>(),
    );
    ss
}

/// The tells `c`'s links know were not delivered: refused by the peer,
/// or lost on the way (NATS drops a slow consumer's messages; the peer's
/// acks show the gap).
pub fn not_delivered(c: &Arc<Cluster>) -> u64 {
    let st = c.node().stats();
    st.tells_refused_by_peer + st.frames_lost
}

/// Waits (at most `limit`) until the entities have handled `n` tells in
/// all; `context` tells more when they fall short (the nodes' figures).
pub fn assert_delivered(tracker: &Tracker, n: u64, limit: Duration, context: impl Fn() -> String) {
    assert!(
        wait_until(limit, || tracker.delivered() == n),
        "delivered {} of {n}; {}",
        tracker.delivered(),
        context()
    );
}

/// Counts exactly: every one of the `sent` accepted tells is handled once,
/// and no entity ever ran twice at a time. `context` tells more when the
/// count falls short (the nodes' figures then).
pub fn assert_handled_once(tracker: &Tracker, sent: u64, context: impl Fn() -> String) {
    assert_delivered(tracker, sent, Duration::from_secs(20), context);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(tracker.delivered(), sent, "a tell was handled twice");
    assert_eq!(tracker.max_live(), 1, "never two live activations");
}

/// Waits until every node sees the others and every sharding has settled.
pub fn settle(clusters: &[&Arc<Cluster>], shardings: &[&Sharding<Counter>]) {
    settle_peers(clusters, shardings, clusters.len() - 1)
}

/// As `settle`, where each node sees `peers` others.
pub fn settle_peers(clusters: &[&Arc<Cluster>], shardings: &[&Sharding<Counter>], peers: usize) {
    let n = peers + 1;
    assert!(
        wait_until(Duration::from_secs(20), || {
            clusters.iter().all(|c| c.peers().len() == n - 1)
                && shardings.iter().all(|s| s.settled())
        }),
        "the cluster did not settle"
    );
    // One more tick everywhere, so every routing table names the owners.
    std::thread::sleep(Duration::from_millis(300));
}
