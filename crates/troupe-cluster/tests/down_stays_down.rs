//! Down stays down (issue 38, item 4): a node declared down in one
//! incarnation never comes back in it. Its heartbeats are ignored by the
//! node that declared it down, which answers with a notice on
//! `troupe.<ns>.downed.<node>`; the downed node rejoins as a new
//! incarnation, and only that one is a peer again.
//!
//! On the in-memory transport: `a`'s heartbeats and pings to it are lost
//! (`MemoryNetwork::drop_when`) until `b` declares it down, while `a`
//! itself runs on, connected. Then the loss heals.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use troupe_cluster::Cluster;
use troupe_remote::transport::memory::MemoryNetwork;

const HB: Duration = Duration::from_millis(100);
const T: Duration = Duration::from_secs(20);

fn cluster(net: &MemoryNetwork, name: &str) -> Cluster {
    Cluster::builder_on(net.connect(), name)
        .insecure()
        .heartbeat(HB)
        .connect()
        .expect("connect")
}

fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    f()
}

#[test]
fn a_node_declared_down_rejoins_only_as_a_new_incarnation() {
    let net = MemoryNetwork::new();
    let a = cluster(&net, "a");
    let b = cluster(&net, "b");
    assert!(wait_until(T, || a.peers() == ["b"] && b.peers() == ["a"]));
    let first = a.incarnation();
    assert_eq!(b.peer_incarnations(), [("a".to_string(), first)]);
    let told = Arc::new(AtomicU64::new(0));
    {
        let told = told.clone();
        a.on_self_down(move |old, new| {
            assert_ne!(old, new);
            told.store(old, Ordering::SeqCst);
        });
    }

    // a's heartbeats and b's pings to a are lost: b declares a down.
    net.drop_when(|subject, _| {
        subject == "troupe.default.hb.a" || subject == "troupe.default.node.a"
    });
    assert!(
        wait_until(T, || b.stats().nodes_down == 1),
        "b declares a down"
    );
    assert!(b.peers().is_empty());
    // Heal: a's heartbeats of its first incarnation reach b again. b
    // ignores them (down stays down) and tells a, which rejoins.
    net.heal();
    assert!(
        wait_until(T, || a.incarnation() != first && b.peers() == ["a"]),
        "a rejoins as a new incarnation: a's {} (was {first}), b holds {:?}",
        a.incarnation(),
        b.peer_incarnations()
    );
    let second = a.incarnation();
    assert_eq!(b.peer_incarnations(), [("a".to_string(), second)]);
    assert_eq!(told.load(Ordering::SeqCst), first, "the hook heard of it");
    let (sa, sb) = (a.stats(), b.stats());
    assert!(sb.downed_heartbeats >= 1, "{sb:?}");
    assert_eq!(sa.rejoins, 1, "{sa:?}");
    // a's own heartbeats of its first incarnation, still on their way
    // after the rejoin, are its own: not bad input.
    assert_eq!((sa.bad_heartbeats, sa.bad_downed_notices), (0, 0), "{sa:?}");
    // And b does not flap: the first incarnation stays down, one Down.
    std::thread::sleep(HB * 5);
    assert_eq!(b.stats().nodes_down, 1);
    assert_eq!(b.peer_incarnations(), [("a".to_string(), second)]);
}
