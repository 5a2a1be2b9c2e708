//! Sharded counters on three nodes in one process, against a nats-server
//! this example starts (JetStream on). Every node counts into every
//! counter; each counter runs on one node; then a node leaves and its
//! counters move.
//!
//! ```text
//! cargo run -p troupe-sharding --example sharded_counter
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use troupe::{Actor, Context, ReplyTo};
use troupe_cluster::Cluster;
use troupe_remote::remote;
use troupe_sharding::{ClusterSharding, Sharding};

#[remote("example.counter.Add")]
#[derive(Serialize, Deserialize)]
struct Add(u64);

#[remote("example.counter.Get", reply = u64)]
#[derive(Serialize, Deserialize)]
struct Get;

enum Msg {
    Add(Add),
    Get(ReplyTo<u64>),
}
impl From<Add> for Msg {
    fn from(a: Add) -> Self {
        Msg::Add(a)
    }
}

struct Counter {
    total: u64,
}
impl Actor for Counter {
    type Msg = Msg;
    fn handle(&mut self, m: Msg, _: &mut Context<'_, Self>) {
        match m {
            Msg::Add(Add(n)) => self.total += n,
            Msg::Get(r) => {
                r.reply(self.total);
            }
        }
    }
}

fn node(url: &str, name: &str) -> (Arc<Cluster>, Sharding<Counter>) {
    let cluster = Arc::new(
        Cluster::builder(url, name)
            .insecure()
            .heartbeat(Duration::from_millis(250))
            .connect()
            .expect("connect"),
    );
    let counters = cluster
        .sharding("counter", |_id| Counter { total: 0 })
        .tell::<Add>()
        .ask::<Get>(|_, r| Msg::Get(r))
        .tick(Duration::from_millis(100))
        .start()
        .expect("sharding");
    (cluster, counters)
}

fn main() {
    let Some(server) = troupe_test_nats::NatsServer::builder()
        .jetstream()
        .start_or_skip()
    else {
        return;
    };
    let url = server.url();
    let mut nodes: Vec<_> = ["a", "b", "c"].iter().map(|n| node(&url, n)).collect();
    let end = Instant::now() + Duration::from_secs(20);
    while !nodes
        .iter()
        .all(|(c, s)| c.peers().len() == 2 && s.settled())
    {
        assert!(Instant::now() < end, "the cluster did not settle");
        std::thread::sleep(Duration::from_millis(20));
    }

    let ids: Vec<String> = (0..9).map(|i| format!("counter-{i}")).collect();
    for (_, s) in &nodes {
        for id in &ids {
            s.entity(id).tell(Add(1)).expect("accepted");
        }
    }
    let ask = Duration::from_secs(5);
    for id in &ids {
        // Asks may overtake tells: wait for all three.
        let end = Instant::now() + Duration::from_secs(5);
        while nodes[0].1.entity(id).ask(Get, ask) != Ok(3) {
            assert!(Instant::now() < end, "{id} did not reach 3");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    for (c, s) in &nodes {
        println!("{} runs {:?}", c.name(), s.local_entities());
    }

    // Node c leaves: its counters stop there and start again elsewhere
    // (their totals were not persisted, so they start from zero).
    let (c, s) = nodes.pop().expect("three nodes");
    let moved = s.local_entities();
    s.leave();
    drop(c);
    for id in &moved {
        let end = Instant::now() + Duration::from_secs(5);
        while nodes[0].1.entity(id).ask(Get, ask) != Ok(0) {
            assert!(Instant::now() < end, "{id} did not move");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    for (c, s) in &nodes {
        println!("after c left: {} runs {:?}", c.name(), s.local_entities());
    }
    println!("ok: {} counters moved from c", moved.len());
}
