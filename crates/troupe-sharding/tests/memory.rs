//! Sharding on the in-memory transport: the ownership store is the
//! transport's key-value bucket, so no server is needed and this always
//! runs.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use troupe_cluster::Cluster;
use troupe_remote::transport::memory::MemoryNetwork;

const ASK: Duration = Duration::from_secs(5);

fn cluster(net: &MemoryNetwork, name: &str) -> Arc<Cluster> {
    Arc::new(
        Cluster::builder_on(net.connect(), name)
            .insecure()
            .heartbeat(HB)
            .connect()
            .expect("connect"),
    )
}

#[test]
fn entities_are_sharded_over_the_memory_transports_bucket() {
    let net = MemoryNetwork::new();
    let tracker = Tracker::default();
    let (a, b) = (cluster(&net, "m1"), cluster(&net, "m2"));
    let sa = counters(&a, &tracker).start().expect("start on m1");
    let sb = counters(&b, &tracker).start().expect("start on m2");
    settle(&[&a, &b], &[&sa, &sb]);
    let ids: Vec<String> = (0..40).map(|i| format!("mem-{i}")).collect();
    for seq in 1..=20 {
        for id in &ids {
            sa.entity(id).tell(Add { from: 1, seq }).expect("tell");
        }
    }
    // Tells are asynchronous (an ask may overtake them): wait for all.
    let all = 20 * ids.len() as u64;
    assert_delivered(&tracker, all, Duration::from_secs(20), String::new);
    for id in &ids {
        assert_eq!(sb.entity(id).ask(Count, ASK), Ok(20), "entity {id}");
        let r = tracker.get(id);
        assert_eq!(r.activations, 1, "entity {id} activated once");
        assert_eq!(r.fifo_violations, 0, "entity {id} in order");
    }
    let (on_a, on_b) = (sa.local_entities().len(), sb.local_entities().len());
    assert_eq!(on_a + on_b, ids.len());
    assert!(
        on_a > 0 && on_b > 0,
        "both nodes own shards: {on_a} / {on_b}"
    );
    assert_eq!(tracker.delivered(), all);
}
