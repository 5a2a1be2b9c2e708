//! Delivery accounting on a link: every tell a sender's node accepted ends,
//! on the sender, confirmed, refused by the peer, or counted lost (see
//! `protocol/stats.rs`); these tests make the peer refuse, restart and lose
//! tells, and check the sender's buckets against what the receiver saw.
//!
//! They run the link/ack protocol on the in-memory transport
//! (`transport::memory`), so they need no server; the tests against a
//! real nats-server (`remote.rs`, `server_loss.rs`, `hostile.rs`) cover the
//! NATS transport.

mod common;

use common::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;
use troupe::{Actor, ActorSystem, Context, MailboxConfig, Overflow, SpawnOptions};
use troupe_remote::transport::memory::MemoryNetwork;
use troupe_remote::transport::Transport;
use troupe_remote::{Node, NodeStats, RemoteRef};

const SYNC: Duration = Duration::from_millis(20);
const T: Duration = Duration::from_secs(10);

fn node(net: &MemoryNetwork, name: &str) -> Node {
    Node::builder_on(net.connect(), name)
        .insecure()
        .ack_period(SYNC)
        .connect()
        .unwrap()
}

/// A counter exposed as `counter@b`, node `a`, and a's reference to it;
/// `seen` sums what the counter received.
fn counter_pair(
    server: &MemoryNetwork,
    system: &ActorSystem,
) -> (Arc<AtomicU64>, Node, Node, RemoteRef<Add>) {
    let seen = Arc::new(AtomicU64::new(0));
    let counter = system.spawn(Counter::new(seen.clone()));
    let b = node(server, "b");
    b.expose("counter", &counter).tell::<Add>().serve().unwrap();
    let a = node(server, "a");
    let add = a.lookup::<Add>("counter@b").unwrap();
    (seen, b, a, add)
}

fn buckets(s: &NodeStats) -> u64 {
    s.tells_confirmed + s.tells_refused_by_peer + s.frames_lost + s.tells_unconfirmed
}

#[test]
fn tells_the_peer_does_not_deliver_are_reported_as_refused() {
    let server = MemoryNetwork::new();
    let system = ActorSystem::builder().threads(2).build();
    let (seen, b, a, add) = counter_pair(&server, &system);
    let nobody = a.lookup::<Add>("nobody@b").unwrap();
    let blob = a.lookup::<Blob>("counter@b").unwrap(); // not exposed for Blob
    for i in 1..=100 {
        add.tell(Add(i)).unwrap();
        if i % 10 == 0 {
            nobody.tell(Add(i)).unwrap();
        }
        if i % 20 == 0 {
            blob.tell(Blob(vec![1, 2, 3])).unwrap();
        }
    }
    assert!(a.settle(T), "{:?}", a.stats());
    let (s, r) = (a.stats(), b.stats());
    assert_eq!(s.tells_confirmed, 100, "{s:?}");
    assert_eq!(s.tells_refused_by_peer, 15, "{s:?}");
    assert_eq!(s.frames_lost, 0, "{s:?}");
    assert_eq!(
        (r.unknown_target, r.unknown_type, r.frames_missed),
        (10, 5, 0)
    );
    assert!(wait_until(T, || seen.load(Ordering::Relaxed) == 100));
    system.shutdown();
}

/// Blocks on its first message until the test lets it go.
struct Stuck(Arc<Mutex<mpsc::Receiver<()>>>, Arc<AtomicU64>);
impl Actor for Stuck {
    type Msg = CounterMsg;
    fn handle(&mut self, _: CounterMsg, _: &mut Context<'_, Self>) {
        if self.1.fetch_add(1, Ordering::Relaxed) == 0 {
            let _ = self.0.lock().unwrap().recv_timeout(T);
        }
    }
}

#[test]
fn a_full_mailbox_on_the_peer_shows_as_refused_by_the_peer() {
    let server = MemoryNetwork::new();
    let system = ActorSystem::builder().threads(2).build();
    let (release, gate) = mpsc::channel();
    let handled = Arc::new(AtomicU64::new(0));
    let stuck = system.spawn_with(
        Stuck(Arc::new(Mutex::new(gate)), handled.clone()),
        SpawnOptions::new().mailbox(MailboxConfig::bounded(10, Overflow::Reject)),
    );
    let b = node(&server, "b");
    b.expose("stuck", &stuck).tell::<Add>().serve().unwrap();
    let a = node(&server, "a");
    let add = a.lookup::<Add>("stuck@b").unwrap();
    add.tell(Add(0)).unwrap();
    assert!(wait_until(T, || handled.load(Ordering::Relaxed) == 1));
    for i in 1..=100 {
        add.tell(Add(i)).unwrap();
    }
    assert!(a.settle(T), "{:?}", a.stats());
    release.send(()).unwrap();
    let (s, r) = (a.stats(), b.stats());
    eprintln!("full mailbox: sender {s:?}\nreceiver {r:?}");
    assert_eq!(s.tells_refused_by_peer, r.refused, "{s:?}");
    assert_eq!(s.tells_refused_by_peer, 90, "10 fit the mailbox: {s:?}");
    assert_eq!(s.tells_confirmed, 11, "{s:?}");
    assert_eq!(s.frames_lost, 0);
    system.shutdown();
}

#[test]
fn a_peer_restarted_under_the_same_name_makes_the_unconfirmed_hole_lost() {
    let server = MemoryNetwork::new();
    let system = ActorSystem::builder().threads(2).build();
    let (_seen, b, a, add) = counter_pair(&server, &system);
    for i in 1..=100 {
        add.tell(Add(i)).unwrap();
    }
    assert!(a.settle(T), "{:?}", a.stats());
    assert_eq!(a.stats().tells_confirmed, 100);

    // The peer goes away: tells to it go nowhere and stay unconfirmed.
    drop(b);
    for i in 101..=150 {
        add.tell(Add(i)).unwrap();
    }
    assert!(a.flush(T));
    std::thread::sleep(SYNC * 5);
    let s = a.stats();
    assert_eq!(s.tells_unconfirmed, 50, "{s:?}");
    assert!(!a.settle(SYNC * 3), "nothing can confirm them");

    // A new process under the same name: a new link state on its side,
    // starting after the hole, which the sender counts lost, not silence.
    let seen2 = Arc::new(AtomicU64::new(0));
    let counter2 = system.spawn(Counter::new(seen2.clone()));
    let b2 = node(&server, "b");
    b2.expose("counter", &counter2)
        .tell::<Add>()
        .serve()
        .unwrap();
    for i in 151..=160 {
        add.tell(Add(i)).unwrap();
    }
    assert!(a.settle(T), "{:?}", a.stats());
    let s = a.stats();
    assert_eq!(
        (s.tells_confirmed, s.frames_lost, s.tells_refused_by_peer),
        (110, 50, 0),
        "{s:?}"
    );
    assert_eq!(buckets(&s), 160);
    assert!(wait_until(T, || seen2.load(Ordering::Relaxed) == 10));
    assert_eq!(
        b2.stats().frames_missed,
        0,
        "its state began with what it saw"
    );

    // The sender restarts too: a new epoch, so the receiver starts a new
    // link state rather than read its numbers as old ones.
    drop(add);
    drop(a);
    let a2 = node(&server, "a");
    let add2 = a2.lookup::<Add>("counter@b").unwrap();
    for i in 1..=5 {
        add2.tell(Add(i)).unwrap();
    }
    assert!(a2.settle(T), "{:?}", a2.stats());
    assert_eq!(a2.stats().tells_confirmed, 5);
    assert_eq!(b2.stats().frames_missed, 0);
    system.shutdown();
}

#[test]
fn a_quiet_link_costs_little() {
    let server = MemoryNetwork::new();
    let a = node(&server, "a");
    // A peer that never answers: probes back off to one per 32 periods.
    let ghost = a.lookup::<Add>("counter@ghost").unwrap();
    ghost.tell(Add(1)).unwrap();
    std::thread::sleep(SYNC * 100);
    let s = a.stats();
    assert_eq!(s.tells_unconfirmed, 1);
    assert!((3..=10).contains(&s.probes_sent), "{s:?}");
}

/// The next NATS message on `sub`: its link frame's (epoch, first) and how
/// many tells it holds.
async fn next_batch(sub: &mut troupe_remote::transport::Subscription) -> (u64, u64, u64) {
    use futures::StreamExt;
    use troupe_remote::envelope::{Frames, Kind};
    let msg = tokio::time::timeout(T, sub.next()).await.unwrap().unwrap();
    let frames: Vec<_> = Frames::new(&msg.payload, 1 << 20)
        .map(|f| f.unwrap())
        .collect();
    assert_eq!(frames[0].kind, Kind::Link);
    assert!(frames[1..].iter().all(|f| f.kind == Kind::Tell));
    (
        frames[0].type_id,
        frames[0].correlation,
        frames.len() as u64 - 1,
    )
}

#[test]
fn a_tail_lost_in_transit_is_revealed_by_a_probe() {
    use troupe_remote::envelope::LinkAck;
    let server = MemoryNetwork::new();
    let a = node(&server, "a");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // A hand-made peer "b" that reads batches and acks what it chooses.
        let b = std::sync::Arc::new(server.connect());
        let mut sub = b
            .subscribe(&troupe_remote::node_subject("default", "b"))
            .await
            .unwrap();
        let ack = |epoch, upto, received| {
            let mut out = Vec::new();
            LinkAck {
                epoch,
                upto,
                receiver: "b".into(),
                base: 1,
                received,
                dropped: 0,
            }
            .encode(&mut out);
            let b = b.clone();
            async move {
                b.publish(&a_subject(), out.into()).await.unwrap();
            }
        };
        let add = a.lookup::<Add>("counter@b").unwrap();
        for i in 1..=10 {
            add.tell(Add(i)).unwrap();
        }
        let (mut epoch, mut got) = (0, 0);
        while got < 10 {
            let (e, first, tells) = next_batch(&mut sub).await;
            assert_eq!(first, got + 1, "numbers run on from batch to batch");
            (epoch, got) = (e, got + tells);
        }
        ack(epoch, 10, 10).await;
        let until = |f: fn(&NodeStats) -> bool| {
            let a = &a;
            async move {
                let end = std::time::Instant::now() + T;
                while !f(&a.stats()) {
                    assert!(std::time::Instant::now() < end, "{:?}", a.stats());
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            }
        };
        until(|s| s.tells_confirmed == 10 && s.tells_unconfirmed == 0).await;

        // Five more tells, which the peer swallows: lost in transit.
        for i in 11..=15 {
            add.tell(Add(i)).unwrap();
        }
        let mut swallowed = 0;
        while swallowed < 5 {
            swallowed += next_batch(&mut sub).await.2;
        }
        assert_eq!(a.stats().tells_unconfirmed, 5);
        // The link goes quiet: the sender probes with its next number.
        let probe = next_batch(&mut sub).await;
        assert_eq!(probe, (epoch, 16, 0), "a lone link frame, first = 16");
        // The peer answers with what it has: 10 received up to 15.
        ack(epoch, 15, 10).await;
        until(|s| s.frames_lost == 5 && s.tells_unconfirmed == 0).await;
        assert_eq!(a.stats().tells_confirmed, 10);
        // An ack of another epoch (an earlier "a") changes nothing.
        ack(epoch ^ 2, 15, 15).await;
        tokio::time::sleep(SYNC * 3).await;
        let s = a.stats();
        assert_eq!((s.tells_confirmed, s.frames_lost), (10, 5), "{s:?}");
    });
}

fn a_subject() -> String {
    troupe_remote::node_subject("default", "a")
}

#[test]
fn a_peer_that_leaves_acks_what_it_took() {
    let server = MemoryNetwork::new();
    let system = ActorSystem::builder().threads(2).build();
    let seen = Arc::new(AtomicU64::new(0));
    let counter = system.spawn(Counter::new(seen.clone()));
    // Its link task acks only when it leaves.
    let b = Node::builder_on(server.connect(), "b")
        .insecure()
        .ack_period(Duration::from_secs(600))
        .connect()
        .unwrap();
    b.expose("counter", &counter).tell::<Add>().serve().unwrap();
    let a = node(&server, "a");
    let add = a.lookup::<Add>("counter@b").unwrap();
    for i in 1..=50 {
        add.tell(Add(i)).unwrap();
    }
    assert!(wait_until(T, || seen.load(Ordering::Relaxed) == 50));
    assert_eq!(a.stats().tells_unconfirmed, 50);
    drop(b);
    assert!(a.settle(T), "{:?}", a.stats());
    let s = a.stats();
    assert_eq!((s.tells_confirmed, s.frames_lost), (50, 0), "{s:?}");
    system.shutdown();
}

#[test]
fn tells_lost_between_two_nodes_show_as_a_gap_and_are_counted_lost() {
    let net = MemoryNetwork::new();
    let system = ActorSystem::builder().threads(2).build();
    let (seen, b, a, add) = counter_pair(&net, &system);
    for i in 1..=10 {
        add.tell(Add(i)).unwrap();
    }
    assert!(a.settle(T), "{:?}", a.stats());
    // Everything to b's inbox is lost for a while: five tells (and any
    // probe) vanish in transit.
    let to_b = troupe_remote::node_subject("default", "b");
    net.drop_when(move |subject, _| subject == to_b);
    for i in 11..=15 {
        add.tell(Add(i)).unwrap();
    }
    assert!(a.flush(T));
    net.heal();
    for i in 16..=20 {
        add.tell(Add(i)).unwrap();
    }
    assert!(a.settle(T), "{:?}", a.stats());
    let (s, r) = (a.stats(), b.stats());
    assert_eq!((s.tells_confirmed, s.frames_lost), (15, 5), "{s:?}");
    assert_eq!(buckets(&s), 20);
    assert_eq!(r.frames_missed, 5, "{r:?}");
    assert!(wait_until(T, || seen.load(Ordering::Relaxed) == 15));
    system.shutdown();
}

#[test]
fn a_sender_cut_off_keeps_its_tells_unconfirmed_until_it_is_back() {
    let net = MemoryNetwork::new();
    let system = ActorSystem::builder().threads(2).build();
    let seen = Arc::new(AtomicU64::new(0));
    let counter = system.spawn(Counter::new(seen.clone()));
    let b = node(&net, "b");
    b.expose("counter", &counter).tell::<Add>().serve().unwrap();
    let conn = Arc::new(net.connect());
    let a = Node::builder_on(conn.clone(), "a")
        .insecure()
        .ack_period(SYNC)
        .connect()
        .unwrap();
    let add = a.lookup::<Add>("counter@b").unwrap();
    conn.set_connected(false);
    assert!(add.tell(Add(1)).is_err(), "no tell is taken while down");
    assert!(!a.is_connected());
    conn.set_connected(true);
    for i in 1..=5 {
        add.tell(Add(i)).unwrap();
    }
    assert!(a.settle(T), "{:?}", a.stats());
    assert_eq!(a.stats().tells_confirmed, 5);
    assert!(wait_until(T, || seen.load(Ordering::Relaxed) == 5));
    system.shutdown();
}
