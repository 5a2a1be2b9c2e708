//! Receipts (`RemoteRef::tell_confirmed`) and a peer declared down
//! (`Node::peer_down`), one test per outcome of `protocol/receipts.rs`'s
//! protocol, on the in-memory transport (its `drop_when` loses messages
//! on purpose). Every count is exact.

mod common;

use common::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;
use troupe::{Actor, ActorSystem, Context, MailboxConfig, Overflow, SpawnOptions};
use troupe_remote::transport::memory::MemoryNetwork;
use troupe_remote::{Delivered, Node, NodeStats, RemoteRef, TellRefusal, Undelivered};

const SYNC: Duration = Duration::from_millis(20);
const T: Duration = Duration::from_secs(10);

fn node(net: &MemoryNetwork, name: &str) -> Node {
    Node::builder_on(net.connect(), name)
        .insecure()
        .ack_period(SYNC)
        .connect()
        .unwrap()
}

fn counter_pair(
    net: &MemoryNetwork,
    system: &ActorSystem,
) -> (Arc<AtomicU64>, Arc<AtomicU64>, Node, Node, RemoteRef<Add>) {
    let seen = Arc::new(AtomicU64::new(0));
    let counter = Counter::new(seen.clone());
    let disorder = counter.disorder.clone();
    let counter = system.spawn(counter);
    let b = node(net, "b");
    b.expose("counter", &counter).tell::<Add>().serve().unwrap();
    let a = node(net, "a");
    let add = a.lookup::<Add>("counter@b").unwrap();
    (seen, disorder, b, a, add)
}

fn buckets(s: &NodeStats) -> u64 {
    s.tells_confirmed + s.tells_refused_by_peer + s.frames_lost + s.tells_unconfirmed
}

fn receipts(s: &NodeStats) -> (u64, u64, u64, u64, u64) {
    (
        s.receipts_delivered,
        s.receipts_refused,
        s.receipts_lost,
        s.receipts_unknown,
        s.receipts_waiting,
    )
}

#[test]
fn step_3_confirmed_tells_say_delivered_and_keep_their_order_among_plain_tells() {
    let net = MemoryNetwork::new();
    let system = ActorSystem::builder().threads(2).build();
    let (seen, disorder, b, a, add) = counter_pair(&net, &system);
    let mut pending = Vec::new();
    for i in 1..=1000 {
        if i % 10 == 0 {
            pending.push(add.tell_confirmed(Add(i), T).unwrap());
        } else {
            add.tell(Add(i)).unwrap();
        }
    }
    for r in pending {
        assert_eq!(r.wait(), Ok(Delivered));
    }
    assert!(a.settle(T));
    assert!(wait_until(T, || seen.load(Ordering::Relaxed) == 1000));
    assert_eq!(disorder.load(Ordering::Relaxed), 0, "one link, one order");
    let s = a.stats();
    assert_eq!(receipts(&s), (100, 0, 0, 0, 0), "{s:?}");
    assert_eq!(s.tells_confirmed, 1000);
    assert_eq!(b.stats().receipts_issued, 100);
    system.shutdown();
}

#[test]
fn step_3_a_receipt_can_be_awaited() {
    let net = MemoryNetwork::new();
    let system = ActorSystem::builder().threads(2).build();
    let (_seen, _d, _b, a, add) = counter_pair(&net, &system);
    let receipt = add.tell_confirmed(Add(1), T).unwrap();
    let got = a.runtime().block_on(async move { receipt.await });
    assert_eq!(got, Ok(Delivered));
    system.shutdown();
}

#[test]
fn step_3_a_refusal_carries_the_peer_s_reason() {
    let net = MemoryNetwork::new();
    let system = ActorSystem::builder().threads(2).build();
    let (_seen, _d, _b, a, _add) = counter_pair(&net, &system);
    let nobody = a.lookup::<Add>("nobody@b").unwrap();
    let blob = a.lookup::<Blob>("counter@b").unwrap(); // not exposed for Blob
    let r1 = nobody.tell_confirmed(Add(1), T).unwrap();
    let r2 = blob.tell_confirmed(Blob(vec![1]), T).unwrap();
    assert_eq!(
        r1.wait(),
        Err(Undelivered::Refused(TellRefusal::UnknownTarget))
    );
    assert_eq!(
        r2.wait(),
        Err(Undelivered::Refused(TellRefusal::UnknownType))
    );
    assert_eq!(receipts(&a.stats()), (0, 2, 0, 0, 0));
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
fn step_3_a_full_mailbox_is_refused_by_the_actor_and_said_so() {
    let net = MemoryNetwork::new();
    let system = ActorSystem::builder().threads(2).build();
    let (release, gate) = mpsc::channel();
    let handled = Arc::new(AtomicU64::new(0));
    let stuck = system.spawn_with(
        Stuck(Arc::new(Mutex::new(gate)), handled.clone()),
        SpawnOptions::new().mailbox(MailboxConfig::bounded(10, Overflow::Reject)),
    );
    let b = node(&net, "b");
    b.expose("stuck", &stuck).tell::<Add>().serve().unwrap();
    let a = node(&net, "a");
    let add = a.lookup::<Add>("stuck@b").unwrap();
    add.tell(Add(0)).unwrap();
    assert!(wait_until(T, || handled.load(Ordering::Relaxed) == 1));
    let all: Vec<_> = (1..=20)
        .map(|i| add.tell_confirmed(Add(i), T).unwrap())
        .collect();
    let got: Vec<_> = all.into_iter().map(|r| r.wait()).collect();
    release.send(()).unwrap();
    assert!(got[..10].iter().all(|g| *g == Ok(Delivered)), "{got:?}");
    assert!(
        got[10..]
            .iter()
            .all(|g| *g == Err(Undelivered::Refused(TellRefusal::Actor))),
        "{got:?}"
    );
    system.shutdown();
}

#[test]
fn step_3_a_tell_lost_in_transit_is_reported_lost() {
    let net = MemoryNetwork::new();
    let system = ActorSystem::builder().threads(2).build();
    let (seen, _d, _b, a, add) = counter_pair(&net, &system);
    add.tell(Add(1)).unwrap();
    assert!(a.settle(T));
    // The next message to b is lost.
    let lose = Arc::new(AtomicBool::new(true));
    {
        let lose = lose.clone();
        net.drop_when(move |subject, _| {
            subject.ends_with(".node.b") && lose.swap(false, Ordering::SeqCst)
        });
    }
    let r = add.tell_confirmed(Add(2), T).unwrap();
    // A probe tells b how far a has counted; b's ack shows 2 never came.
    assert_eq!(r.wait(), Err(Undelivered::Lost));
    let s = a.stats();
    assert_eq!(receipts(&s), (0, 0, 1, 0, 0), "{s:?}");
    assert_eq!((s.tells_confirmed, s.frames_lost), (1, 1), "{s:?}");
    assert_eq!(seen.load(Ordering::Relaxed), 1);
    system.shutdown();
}

#[test]
fn step_6_a_silent_peer_gives_unknown_at_the_deadline() {
    let net = MemoryNetwork::new();
    let system = ActorSystem::builder().threads(2).build();
    let (_seen, _d, _b, a, add) = counter_pair(&net, &system);
    // Every ack to a is lost: b delivers, a cannot know.
    net.drop_when(|subject, _| subject.ends_with(".node.a"));
    let started = std::time::Instant::now();
    let r = add
        .tell_confirmed(Add(1), Duration::from_millis(200))
        .unwrap();
    assert_eq!(r.wait(), Err(Undelivered::Unknown));
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(receipts(&a.stats()), (0, 0, 0, 1, 0));
    system.shutdown();
}

#[test]
fn step_5_tells_unconfirmed_to_a_peer_declared_down_become_lost() {
    let net = MemoryNetwork::new();
    let system = ActorSystem::builder().threads(2).build();
    let (_seen, _d, _b, a, add) = counter_pair(&net, &system);
    for i in 1..=10 {
        add.tell(Add(i)).unwrap();
    }
    assert!(a.settle(T));
    // b goes silent (as a dead node would): nothing from a reaches it.
    net.drop_when(|subject, _| subject.ends_with(".node.b"));
    for i in 11..=60 {
        add.tell(Add(i)).unwrap();
    }
    let r = add.tell_confirmed(Add(61), T).unwrap();
    assert!(a.flush(T));
    assert_eq!(a.stats().tells_unconfirmed, 51);
    assert_eq!(a.peer_down("b"), 51);
    assert_eq!(r.wait(), Err(Undelivered::Lost));
    let s = a.stats();
    assert_eq!(s.tells_unconfirmed, 0, "{s:?}");
    assert_eq!(
        (s.tells_confirmed, s.frames_lost, s.tells_lost_to_down),
        (10, 51, 51)
    );
    assert_eq!(buckets(&s), 61);
    assert_eq!(receipts(&s), (0, 0, 1, 0, 0));
    assert_eq!(a.peer_down("b"), 0, "nothing twice");
    assert_eq!(a.peer_down("nobody"), 0);
    system.shutdown();
}

#[test]
fn step_5_a_restart_after_a_down_counts_nothing_twice() {
    let net = MemoryNetwork::new();
    let system = ActorSystem::builder().threads(2).build();
    let (_seen, _d, b, a, add) = counter_pair(&net, &system);
    net.drop_when(|subject, _| subject.ends_with(".node.b"));
    for i in 1..=20 {
        add.tell(Add(i)).unwrap();
    }
    assert!(a.flush(T));
    assert_eq!(a.peer_down("b"), 20);
    // b comes back as a new process under the same name.
    drop(b);
    net.heal();
    let seen = Arc::new(AtomicU64::new(0));
    let counter = system.spawn(Counter::new(seen.clone()));
    let b2 = node(&net, "b");
    b2.expose("counter", &counter)
        .tell::<Add>()
        .serve()
        .unwrap();
    let r = add.tell_confirmed(Add(21), T).unwrap();
    assert_eq!(r.wait(), Ok(Delivered));
    assert!(a.settle(T));
    let s = a.stats();
    assert_eq!((s.tells_confirmed, s.frames_lost), (1, 20), "{s:?}");
    assert_eq!(buckets(&s), 21);
    system.shutdown();
}
