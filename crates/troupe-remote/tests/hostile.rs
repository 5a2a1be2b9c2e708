//! Hostile input on a node's subject from a plain NATS client (not a node):
//! well-formed frames with numbers chosen to hurt. The node must keep
//! answering, count what it refused, and keep its counters meaningful.

mod common;

use common::*;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;
use troupe::ActorSystem;
use troupe_remote::envelope::encode_link;
use troupe_remote::Node;
use troupe_test_nats::NatsServer;

const T: Duration = Duration::from_secs(5);

/// A plain NATS client on its own small runtime.
struct Raw {
    rt: tokio::runtime::Runtime,
    client: async_nats::Client,
}

impl Raw {
    fn connect(url: &str) -> Raw {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = rt.block_on(async_nats::connect(url)).unwrap();
        Raw { rt, client }
    }

    /// Publishes each payload as one NATS message, then flushes.
    fn publish(&self, subject: &str, payloads: Vec<Vec<u8>>) {
        self.rt.block_on(async {
            for p in payloads {
                self.client
                    .publish(subject.to_string(), p.into())
                    .await
                    .unwrap();
            }
            self.client.flush().await.unwrap();
        });
    }
}

fn link(epoch: u64, first: u64, sender: &str) -> Vec<u8> {
    let mut out = Vec::new();
    encode_link(&mut out, epoch, first, sender);
    out
}

/// Issue 25, finding 1: four well-formed link frames used to panic the
/// node's I/O thread (the gap overflowed `frames_missed`, then `ilog2(0)`),
/// after which asks got `NoResponders` while `is_connected` said true.
#[test]
fn four_link_frames_do_not_make_a_node_deaf() {
    let Some(server) = NatsServer::start_or_skip() else {
        return;
    };
    let system = ActorSystem::builder().threads(1).build();
    let counter = system.spawn(Counter::new(Arc::new(AtomicU64::new(0))));
    let b = Node::builder(&server.url(), "b")
        .insecure()
        .connect()
        .unwrap();
    b.expose("counter", &counter)
        .tell::<Add>()
        .ask::<Sum>(CounterMsg::Sum)
        .serve()
        .unwrap();
    let a = Node::builder(&server.url(), "a")
        .insecure()
        .connect()
        .unwrap();
    let sum = a.lookup::<Sum>("counter@b").unwrap();
    assert_eq!(sum.ask(Sum, T), Ok(0));

    let raw = Raw::connect(&server.url());
    raw.publish(
        &b.subject(),
        vec![
            link(7, 1, "y"),
            link(7, 1000, "y"), // 999 numbers "missed"
            link(9, 1, "x"),
            link(9, (u64::MAX - 999) + 2, "x"), // 2^64 + 1 - 999
        ],
    );
    assert!(wait_until(T, || b.stats().link_frames == 4));

    assert_eq!(sum.ask(Sum, T), Ok(0), "the node still answers asks");
    assert!(a.ping("b", T).is_ok());
    let s = b.stats();
    assert_eq!(s.panics, 0);
    assert_eq!(s.frames_missed, 999, "the counter keeps its meaning");
    assert_eq!(s.bad_frames, 1, "the impossible jump is counted as bad");
    // Tells still flow, and the forged links left the real one alone.
    let add = a.lookup::<Add>("counter@b").unwrap();
    add.tell(Add(5)).unwrap();
    assert!(wait_until(T, || sum.ask(Sum, T) == Ok(5)));
    assert!(a.settle(T));
    assert_eq!(a.stats().tells_confirmed, 1);
}

/// Issue 25, finding 4: link frames from 100,000 made-up sender names cost
/// tens of MiB and made the node ack nodes that do not exist; link states
/// were never dropped.
#[test]
fn made_up_sender_names_do_not_grow_the_link_table() {
    let Some(server) = NatsServer::start_or_skip() else {
        return;
    };
    let system = ActorSystem::builder().threads(1).build();
    let counter = system.spawn(Counter::new(Arc::new(AtomicU64::new(0))));
    let b = Node::builder(&server.url(), "b")
        .insecure()
        .ack_period(Duration::from_millis(5))
        .link_idle(Duration::ZERO) // the floor: 64 periods
        .max_links(64)
        .connect()
        .unwrap();
    b.expose("counter", &counter)
        .tell::<Add>()
        .ask::<Sum>(CounterMsg::Sum)
        .serve()
        .unwrap();
    let raw = Raw::connect(&server.url());
    const NAMES: u64 = 20_000;
    let batches: Vec<Vec<u8>> = (0..NAMES / 100)
        .map(|m| {
            // 100 links a message: each link frame ends the run before it.
            (0..100)
                .flat_map(|i| link(1, 1, &format!("fake{}", m * 100 + i)))
                .collect()
        })
        .collect();
    raw.publish(&b.subject(), batches);
    assert!(wait_until(T, || b.stats().link_frames == NAMES));
    let s = b.stats();
    assert!(s.links <= 64, "{s:?}");
    assert_eq!(s.links_refused, NAMES - 64);
    assert_eq!(s.panics, 0);
    // Acked once, then quiet: every state is dropped after 64 periods.
    assert!(wait_until(T, || b.stats().links == 0), "{:?}", b.stats());
    assert!(b.stats().acks_sent <= 2 * 64, "{:?}", b.stats());
    // A real sender gets a link state again.
    let a = Node::builder(&server.url(), "a")
        .insecure()
        .connect()
        .unwrap();
    let add = a.lookup::<Add>("counter@b").unwrap();
    add.tell(Add(1)).unwrap();
    assert!(a.settle(T));
    assert_eq!(a.stats().tells_confirmed, 1);
}

/// Issue 25, finding 3 (troupe-remote's half): with a cluster key, a
/// client that is not a node cannot get a tell delivered, a link state
/// made or an ask served; every such message is counted.
#[test]
fn with_a_cluster_key_a_plain_client_achieves_nothing() {
    use troupe_remote::auth::ClusterKey;
    use troupe_remote::envelope::{append_seal, encode_frame, Header, Kind};
    use troupe_remote::RemoteMessage;

    let Some(server) = NatsServer::start_or_skip() else {
        return;
    };
    let system = ActorSystem::builder().threads(1).build();
    let seen = Arc::new(AtomicU64::new(0));
    let counter = system.spawn(Counter::new(seen.clone()));
    let keyed = |name: &str| {
        Node::builder(&server.url(), name)
            .secret("the cluster's secret")
            .ack_period(Duration::from_millis(10))
            .connect()
            .unwrap()
    };
    let b = keyed("b");
    b.expose("counter", &counter)
        .tell::<Add>()
        .ask::<Sum>(CounterMsg::Sum)
        .serve()
        .unwrap();
    let a = keyed("a");
    let add = a.lookup::<Add>("counter@b").unwrap();
    let sum = a.lookup::<Sum>("counter@b").unwrap();
    add.tell(Add(1)).unwrap();
    assert!(a.settle(T), "sealed tells are confirmed");
    assert_eq!(sum.ask(Sum, T), Ok(1), "sealed asks are served");
    assert!(a.ping("b", T).is_ok());

    // A batch of one tell, well-formed, from a plain client: unsealed, sealed
    // with another key, and sealed for another subject.
    let tell = |n: u64| {
        let mut out = link(5, 1, "mallory");
        let h = Header::new(
            Kind::Tell,
            Add::TYPE_ID,
            troupe_remote::type_id("counter"),
            0,
        );
        encode_frame(&mut out, h, &Add(n), 1 << 20).unwrap();
        out
    };
    let mut wrong_key = tell(100);
    append_seal(&mut wrong_key, &ClusterKey::new("a guess"), &b.subject());
    let mut wrong_subject = tell(1000);
    let key = ClusterKey::new("the cluster's secret");
    append_seal(&mut wrong_subject, &key, "troupe.default.node.a");
    let raw = Raw::connect(&server.url());
    raw.publish(&b.subject(), vec![tell(10), wrong_key, wrong_subject]);
    assert!(wait_until(T, || b.stats().unauthenticated == 3));
    // An unsealed ask gets a bad-frame answer at once.
    let mut ask = Vec::new();
    let h = Header::new(
        Kind::Ask,
        Sum::TYPE_ID,
        troupe_remote::type_id("counter"),
        9,
    );
    encode_frame(&mut ask, h, &Sum, 1 << 20).unwrap();
    let answer = raw.rt.block_on(async {
        let req = async_nats::Request::new()
            .payload(ask.into())
            .timeout(Some(T));
        raw.client.send_request(b.subject(), req).await
    });
    let answer = answer.expect("answered");
    assert_eq!(answer.payload[2], 7, "status: bad frame");
    let s = b.stats();
    assert_eq!(s.unauthenticated, 4);
    assert_eq!(s.delivered, 1, "only the node's own tell");
    assert_eq!(s.asks_served, 1);
    assert!(s.links <= 1, "no link state for mallory");
    assert_eq!(sum.ask(Sum, T), Ok(1));
}

/// A tell handler that panics (a bug) drops the rest of its batch, counted
/// in `panics`; the frames and deliveries before it stay counted (a batch
/// adds its counts to the node's once, at its end, and also when a panic
/// unwinds it). One NATS message: a link frame, then `Add(1..=5)`; the
/// handler panics on 3.
#[test]
fn a_batch_s_counts_survive_a_handler_s_panic() {
    use troupe_remote::envelope::{decode_body, encode_frame, Header, Kind};
    use troupe_remote::{RemoteMessage, TellOutcome};

    let Some(server) = NatsServer::start_or_skip() else {
        return;
    };
    let (system, seen, counter, b) = counter_on_b(&server.url(), 1);
    let to = counter.clone();
    b.expose("counter", &counter)
        .tell_with::<Add>(move |body| match decode_body::<u64>(body) {
            Ok(3) => panic!("a handler's bug"),
            Ok(n) => told(to.try_tell(CounterMsg::Add(Add(n)))),
            Err(_) => TellOutcome::Undecodable,
        })
        .ask::<Sum>(CounterMsg::Sum)
        .serve()
        .unwrap();
    let mut batch = link(5, 1, "mallory");
    for n in 1..=5u64 {
        let h = Header::new(
            Kind::Tell,
            Add::TYPE_ID,
            troupe_remote::type_id("counter"),
            0,
        );
        encode_frame(&mut batch, h, &Add(n), 1 << 20).unwrap();
    }
    let raw = Raw::connect(&server.url());
    raw.publish(&b.subject(), vec![batch]);
    assert!(wait_until(T, || b.stats().panics == 1));
    let s = b.stats();
    // The link frame and three tells read; two delivered.
    assert_eq!((s.frames_received, s.delivered), (4, 2), "{s:?}");
    assert!(wait_until(T, || seen
        .load(std::sync::atomic::Ordering::Relaxed)
        == 2));
    // The node goes on.
    let a = Node::builder(&server.url(), "a")
        .insecure()
        .connect()
        .unwrap();
    let sum = a.lookup::<Sum>("counter@b").unwrap();
    assert_eq!(sum.ask(Sum, T), Ok(3));
    system.shutdown();
}
