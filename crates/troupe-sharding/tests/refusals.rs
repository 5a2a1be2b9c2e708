//! Refusals the sender sees: remote tells that the owner's region would
//! have to buffer, beyond its buffer's bound, are refused by the owner's
//! inbox (the sender's link counts them `tells_refused_by_peer`) instead of
//! being confirmed and then dropped. Counts exactly. Runs on the in-memory
//! transport with an in-memory store.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use troupe_cluster::Cluster;
use troupe_remote::transport::memory::MemoryNetwork;
use troupe_sharding::ownership::MemoryOwnership;
use troupe_sharding::placement::desired_owner;

/// The owner's buffer.
const BUFFER: usize = 20;
/// Tells sent while the owner can only buffer them.
const SENT: u64 = 50;

#[test]
fn tells_beyond_the_owners_buffer_are_refused_to_the_sender() {
    let net = MemoryNetwork::new();
    let tracker = Tracker::default();
    let store = Arc::new(MemoryOwnership::new());
    let node = |name: &str| {
        let c = Arc::new(
            Cluster::builder_on(net.connect(), name)
                .insecure()
                .heartbeat(HB)
                .connect()
                .expect("connect"),
        );
        let s = counters(&c, &tracker)
            .store(store.clone())
            .buffer(BUFFER)
            .buffer_timeout(Duration::from_secs(60))
            .start()
            .expect("start");
        (c, s)
    };
    let (c1, s1) = node("f1");
    let (c2, s2) = node("f2");
    settle(&[&c1, &c2], &[&s1, &s2]);
    // Entities owned by node 2, none active yet.
    let names = ["f1".to_string(), "f2".to_string()];
    let ids: Vec<String> = (0..)
        .map(|i| format!("cold-{i}"))
        .filter(|id| desired_owner(&names, s1.shard_of(id)) == Some("f2"))
        .take(10)
        .collect();
    let before = c1.node().stats();

    // With the store down node 2 cannot activate (no fencing read): its
    // region buffers every tell. Routing tables stay as they were.
    store.set_down(true);
    for seq in 1..=SENT / ids.len() as u64 {
        for id in &ids {
            s1.entity(id).tell(Add { from: 1, seq }).expect("tell");
        }
    }
    // Node 1's link hears what became of each.
    assert!(
        wait_until(Duration::from_secs(20), || {
            let st = c1.node().stats();
            st.tells_confirmed + st.tells_refused_by_peer + st.frames_lost
                - before.tells_confirmed
                - before.tells_refused_by_peer
                - before.frames_lost
                == SENT
        }),
        "node 1 accounted for {:?} of {SENT}",
        c1.node().stats()
    );
    let after = c1.node().stats();
    let confirmed = after.tells_confirmed - before.tells_confirmed;
    let refused = after.tells_refused_by_peer - before.tells_refused_by_peer;
    assert_eq!(after.frames_lost, before.frames_lost, "{after:?}");
    assert_eq!(
        (confirmed, refused),
        (BUFFER as u64, SENT - BUFFER as u64),
        "the owner confirms what its buffer holds and refuses the rest: {after:?}, {:?}",
        s2.stats()
    );
    assert_eq!(
        s2.stats().buffer_full,
        SENT - BUFFER as u64,
        "{:?}",
        s2.stats()
    );

    // The store returns: every confirmed tell is delivered, none twice.
    store.set_down(false);
    assert_handled_once(&tracker, BUFFER as u64, || format!("{:?}", s2.stats()));
    let st = s2.stats();
    assert_eq!((st.expired, st.entity_gone), (0, 0), "{st:?}");
    assert_eq!(tracker.fifo_violations(), 0);
}
