//! A tell then an ask from one sender to one entity: in order when the
//! entity's shard is owned by the sender's node (both go through its
//! region's mailbox, one queue), which is what the guide promises; to an
//! owner on another node the guide says they are not ordered (the tell
//! rides the outbox, the ask a request of its own). Runs on the
//! in-memory transport.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use troupe_cluster::Cluster;
use troupe_remote::transport::memory::MemoryNetwork;

/// Every entity, told 3 times and asked at once with no pause, answers
/// 3: the ask never overtakes the tells, also for entities not yet
/// active (their first tell activates them) and right after the start
/// (the tells wait in the buffer until the shard is claimed, the ask
/// behind them).
#[test]
fn a_tell_then_an_ask_arrive_in_order_on_the_owner() {
    let net = MemoryNetwork::new();
    let tracker = Tracker::default();
    let c = Arc::new(
        Cluster::builder_on(net.connect(), "o1")
            .insecure()
            .heartbeat(HB)
            .connect()
            .expect("connect"),
    );
    let s = counters(&c, &tracker).start().expect("start");
    for i in 0..200 {
        let e = s.entity(&format!("o-{i}"));
        for seq in 1..=3 {
            e.tell(Add { from: 1, seq }).expect("tell");
        }
        assert_eq!(e.ask(Count, Duration::from_secs(5)), Ok(3), "entity o-{i}");
    }
    assert_eq!(tracker.delivered(), 600);
}
