//! The ownership store goes down while a region activates entities: the
//! region keeps the shard (its coordinator still holds it) and the tells
//! wait in the buffer until the store answers the fencing read again. None
//! expires. Runs on the in-memory transport with an in-memory store.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use troupe_cluster::Cluster;
use troupe_remote::transport::memory::MemoryNetwork;
use troupe_sharding::ownership::MemoryOwnership;

#[test]
fn tells_wait_for_the_store_and_are_delivered_when_it_returns() {
    let net = MemoryNetwork::new();
    let tracker = Tracker::default();
    let store = Arc::new(MemoryOwnership::new());
    let node = Arc::new(
        Cluster::builder_on(net.connect(), "d1")
            .insecure()
            .heartbeat(HB)
            .connect()
            .expect("connect"),
    );
    let sharding = counters(&node, &tracker)
        .store(store.clone())
        .buffer_timeout(Duration::from_secs(5))
        .start()
        .expect("start");
    settle(&[&node], &[&sharding]);
    // One entity active before the outage: delivery to it needs no store.
    sharding
        .entity("warm")
        .tell(Add { from: 1, seq: 1 })
        .expect("tell");
    assert_delivered(&tracker, 1, Duration::from_secs(10), String::new);

    store.set_down(true);
    let ids: Vec<String> = (0..30).map(|i| format!("cold-{i}")).collect();
    for seq in 1..=5 {
        for id in &ids {
            sharding
                .entity(id)
                .tell(Add { from: 1, seq })
                .expect("tell");
        }
    }
    // Several coordinator ticks with the store down.
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(
        tracker.delivered(),
        1,
        "no activation without the fencing read"
    );
    assert!(sharding.stats().store_errors > 0);
    store.set_down(false);

    let all = 1 + 5 * ids.len() as u64;
    assert_delivered(&tracker, all, Duration::from_secs(20), || {
        format!("stats {:?}", sharding.stats())
    });
    let st = sharding.stats();
    assert_eq!(st.expired, 0, "stats {st:?}");
    assert_eq!(st.fencing_refusals, 0, "stats {st:?}");
    assert_eq!(tracker.fifo_violations(), 0);
    for id in &ids {
        assert_eq!(tracker.get(id).activations, 1, "entity {id}");
    }
    assert_eq!(sharding.local_entities().len(), ids.len() + 1);
}
