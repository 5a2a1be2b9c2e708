//! The operators' controls (`controls.rs`) on three nodes of the
//! in-memory transport (no server needed): a drained node hands its
//! shards over and gets them back when undrained; a node marked down
//! loses its shards to the others while it runs; a pause keeps a joining
//! node empty until the resume, even when a node dies during the pause
//! (its shards go to the nodes that held shards before).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use troupe_cluster::Cluster;
use troupe_remote::transport::memory::MemoryNetwork;
use troupe_sharding::controls;
use troupe_sharding::ownership::bucket::BucketOwnership;
use troupe_sharding::ownership::OwnershipStore;

const ASK: Duration = Duration::from_secs(5);
const LIMIT: Duration = Duration::from_secs(30);

fn cluster(net: &MemoryNetwork, name: &str) -> Arc<Cluster> {
    Arc::new(
        Cluster::builder_on(net.connect(), name)
            .insecure()
            .heartbeat(HB)
            .connect()
            .expect("connect"),
    )
}

/// How many of the kind's shard records name `node`.
fn owned_by(store: &dyn OwnershipStore, node: &str) -> usize {
    store
        .owners("counter", SHARDS)
        .expect("owners")
        .iter()
        .filter(|o| o.node.as_deref() == Some(node))
        .count()
}

#[test]
fn drain_moves_a_nodes_shards_away_and_undrain_brings_them_back() {
    let net = MemoryNetwork::new();
    let tracker = Tracker::default();
    let cs: Vec<_> = ["c1", "c2", "c3"]
        .iter()
        .map(|n| cluster(&net, n))
        .collect();
    let ss = start_settled(&cs, &tracker);
    let store = BucketOwnership::open(&cs[0]).expect("store");
    assert!(owned_by(&store, "c2") > 0, "placement gives c2 shards");

    controls::set_drained(&store, "counter", "c2", true).expect("drain");
    assert!(
        wait_until(LIMIT, || owned_by(&store, "c2") == 0
            && ss[1].stats().shards_owned == 0
            && owned_by(&store, "c1") + owned_by(&store, "c3")
                == SHARDS as usize),
        "c2 still owns {} shards",
        owned_by(&store, "c2")
    );
    // Every entity is still served, by c1 and c3 only.
    for i in 0..30 {
        let id = format!("d-{i}");
        assert_eq!(ss[1].entity(&id).ask(Count, ASK), Ok(0), "{id}");
    }
    assert!(ss[1].local_entities().is_empty());

    controls::set_drained(&store, "counter", "c2", false).expect("undrain");
    assert!(
        wait_until(LIMIT, || owned_by(&store, "c2") > 0),
        "c2 got no shard back"
    );
}

#[test]
fn a_node_marked_down_loses_its_shards_while_it_runs() {
    let net = MemoryNetwork::new();
    let tracker = Tracker::default();
    let cs: Vec<_> = ["k1", "k2", "k3"]
        .iter()
        .map(|n| cluster(&net, n))
        .collect();
    let ss = start_settled(&cs, &tracker);
    let store = BucketOwnership::open(&cs[0]).expect("store");
    assert!(owned_by(&store, "k3") > 0);
    controls::mark_down(&store, "counter", "k3").expect("down");
    assert!(
        wait_until(LIMIT, || owned_by(&store, "k3") == 0
            && ss[2].stats().shards_owned == 0),
        "k3 still owns {} shards",
        owned_by(&store, "k3")
    );
    assert!(controls::read(&store, "counter").unwrap().is_down("k3"));
    for i in 0..20 {
        let id = format!("k-{i}");
        assert_eq!(ss[0].entity(&id).ask(Count, ASK), Ok(0), "{id}");
    }
    assert!(ss[2].local_entities().is_empty());
}

#[test]
fn a_pause_keeps_a_joining_node_empty_until_the_resume() {
    let net = MemoryNetwork::new();
    let tracker = Tracker::default();
    let (a, b) = (cluster(&net, "p1"), cluster(&net, "p2"));
    // Paused before any coordinator runs: each one's first tick reads it.
    let store = BucketOwnership::open(&a).expect("store");
    controls::set_paused(&store, "counter", true).expect("pause");
    // p1 alone claims every (free) shard.
    let sa = counters(&a, &tracker).start().expect("start");
    assert!(
        wait_until(LIMIT, || owned_by(&store, "p1") == SHARDS as usize),
        "p1 claimed {} shards",
        owned_by(&store, "p1")
    );
    let sb = counters(&b, &tracker).start().expect("start");
    settle(&[&a, &b], &[&sa, &sb]);
    // Settled under the pause, and still nothing moved to p2: many ticks.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(owned_by(&store, "p2"), 0, "a shard moved while paused");
    assert_eq!(sb.stats().shards_owned, 0);
    controls::set_paused(&store, "counter", false).expect("resume");
    assert!(
        wait_until(LIMIT, || owned_by(&store, "p2") > 0),
        "p2 got no shard after the resume"
    );
}

#[test]
fn a_node_dying_while_paused_leaves_its_shards_to_the_holders_not_a_joiner() {
    let net = MemoryNetwork::new();
    let tracker = Tracker::default();
    let mut cs = vec![cluster(&net, "h1"), cluster(&net, "h2")];
    let mut ss = start_settled(&cs, &tracker);
    let store = BucketOwnership::open(&cs[0]).expect("store");
    controls::set_paused(&store, "counter", true).expect("pause");
    // h3 joins under the pause and settles empty.
    let c3 = cluster(&net, "h3");
    let s3 = counters(&c3, &tracker).start().expect("start");
    settle(&[&cs[0], &cs[1], &c3], &[&ss[0], &ss[1], &s3]);
    assert_eq!(owned_by(&store, "h3"), 0, "a shard moved while paused");
    let had = owned_by(&store, "h2");
    assert!(had > 0, "placement gave h2 shards");
    // h2 dies (no hand-over): its shards have no live owner and must be
    // claimed, by h1, the one node left that held shards.
    ss.pop().expect("h2").halt();
    drop(cs.pop());
    assert!(
        wait_until(LIMIT, || owned_by(&store, "h1") == SHARDS as usize),
        "h1 owns {}, h3 {}, of {SHARDS}",
        owned_by(&store, "h1"),
        owned_by(&store, "h3")
    );
    assert_eq!(owned_by(&store, "h3"), 0);
    assert_eq!(s3.stats().shards_owned, 0);
    controls::set_paused(&store, "counter", false).expect("resume");
    assert!(
        wait_until(LIMIT, || owned_by(&store, "h3") > 0),
        "h3 got no shard after the resume"
    );
}
