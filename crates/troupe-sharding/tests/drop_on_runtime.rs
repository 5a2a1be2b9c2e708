//! The last `Sharding` and `Cluster` handle dropped by a task of the
//! process's own I/O runtime (as a server's state on that runtime drops
//! what it holds): the drop returns at once and the runtime goes on
//! running. Before the fix, `Sharding`'s drop joined its coordinator,
//! whose leave waits for ownership reads on that same runtime's one
//! thread: it waited for itself, and the runtime stopped.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use troupe_cluster::Cluster;
use troupe_remote::transport::memory::MemoryNetwork;

fn cluster(net: &MemoryNetwork, name: &str) -> Arc<Cluster> {
    Arc::new(
        Cluster::builder_on(net.connect(), name)
            .insecure()
            .heartbeat(HB)
            .connect()
            .expect("connect"),
    )
}

/// Whether the I/O runtime runs a task within `limit`.
fn runtime_answers(limit: Duration) -> bool {
    let io = troupe_remote::runtime::handle().expect("the I/O runtime");
    let (tx, rx) = std::sync::mpsc::channel();
    io.spawn(async move {
        let _ = tx.send(());
    });
    rx.recv_timeout(limit).is_ok()
}

#[test]
fn the_last_sharding_and_cluster_dropped_on_the_io_runtime_block_nothing() {
    let net = MemoryNetwork::new();
    let tracker = Tracker::default();
    let (a, b) = (cluster(&net, "d1"), cluster(&net, "d2"));
    let sa = counters(&a, &tracker).start().expect("start on d1");
    let sb = counters(&b, &tracker).start().expect("start on d2");
    settle(&[&a, &b], &[&sa, &sb]);
    for i in 0..20 {
        sa.entity(&format!("drop-{i}"))
            .tell(Add { from: 1, seq: 1 })
            .expect("tell");
    }
    assert!(runtime_answers(Duration::from_secs(5)), "the runtime runs");

    // d1's last handles, dropped by a task of the I/O runtime.
    let io = troupe_remote::runtime::handle().expect("the I/O runtime");
    let (tx, rx) = std::sync::mpsc::channel();
    let start = Instant::now();
    io.spawn(async move {
        drop(sa);
        drop(a);
        let _ = tx.send(start.elapsed());
    });
    let took = rx.recv_timeout(Duration::from_secs(10));
    let answers = runtime_answers(Duration::from_secs(5));
    if took.is_err() || !answers {
        // The runtime is stuck: what is left here would wait for it as
        // it drops, so it is not dropped and the test fails at once.
        std::mem::forget((sb, b, net));
        panic!("the drop on the I/O runtime: returned {took:?}; the runtime runs tasks after it: {answers}");
    }
    let took = took.unwrap_or_default();
    assert!(
        took < Duration::from_secs(2),
        "the drop blocked the runtime's thread for {took:?}"
    );
    // The leave still happens, off the runtime: d2 takes every shard over
    // and the entities answer there.
    let end = Instant::now() + Duration::from_secs(20);
    while sb.local_entities().len() < 20 && Instant::now() < end {
        for i in 0..20 {
            let _ = sb
                .entity(&format!("drop-{i}"))
                .ask(Count, Duration::from_secs(2));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(sb.local_entities().len(), 20, "d2 hosts every entity");
    // And d2's handles dropped the same way, from the runtime.
    let (tx, rx) = std::sync::mpsc::channel();
    io.spawn(async move {
        drop(sb);
        drop(b);
        let _ = tx.send(());
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the second drop on the I/O runtime returned");
    assert!(runtime_answers(Duration::from_secs(5)));
}

/// A bare `Cluster` whose last handle a runtime task drops: the drop
/// returns at once (its goodbye is sent from a task), the runtime runs on,
/// and the peer drops the node from its peers.
#[test]
fn the_last_cluster_dropped_on_the_io_runtime_says_goodbye_without_blocking() {
    let net = MemoryNetwork::new();
    let (a, b) = (cluster(&net, "g1"), cluster(&net, "g2"));
    let end = Instant::now() + Duration::from_secs(10);
    while !b.peers().iter().any(|p| p == "g1") && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(b.peers().iter().any(|p| p == "g1"), "g2 sees g1");
    let io = troupe_remote::runtime::handle().expect("the I/O runtime");
    let (tx, rx) = std::sync::mpsc::channel();
    io.spawn(async move {
        let start = Instant::now();
        drop(a);
        let _ = tx.send(start.elapsed());
    });
    let took = rx.recv_timeout(Duration::from_secs(10));
    let answers = runtime_answers(Duration::from_secs(5));
    if took.is_err() || !answers {
        std::mem::forget((b, net));
        panic!("the cluster's drop on the I/O runtime: returned {took:?}; the runtime runs after it: {answers}");
    }
    assert!(took.unwrap_or_default() < Duration::from_secs(1));
    let gone = Instant::now();
    while b.peers().iter().any(|p| p == "g1") && gone.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        !b.peers().iter().any(|p| p == "g1"),
        "g2 still lists g1 5 s after the drop"
    );
}
