//! Nodes talking through a real nats-server on a free loopback port.

mod common;

use common::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use troupe::{ActorSystem, AskError, SendError};
use troupe_remote::{Node, NodeError};
use troupe_test_nats::NatsServer;

const T: Duration = Duration::from_secs(5);

fn serve(server: &NatsServer, system: &ActorSystem, node: &str) -> (Node, Arc<AtomicU64>) {
    serve_counting(server, system, node).0
}

/// Serves a counter as `counter@<node>`; gives its seen and disorder counts.
fn serve_counting(
    server: &NatsServer,
    system: &ActorSystem,
    node: &str,
) -> ((Node, Arc<AtomicU64>), Arc<AtomicU64>) {
    let seen = Arc::new(AtomicU64::new(0));
    let c = Counter::new(seen.clone());
    let disorder = c.disorder.clone();
    let counter = system.spawn(c);
    let node = Node::builder(&server.url(), node)
        .insecure()
        .connect()
        .unwrap();
    node.expose("counter", &counter)
        .tell::<Add>()
        .tell::<Blob>()
        .ask::<Sum>(CounterMsg::Sum)
        .ask::<Silent>(CounterMsg::Silent)
        .serve()
        .unwrap();
    ((node, seen), disorder)
}

#[test]
fn tells_arrive_in_order_and_asks_answer() {
    let Some(server) = NatsServer::start_or_skip() else {
        return;
    };
    let system = ActorSystem::builder().threads(2).build();
    let ((_b, seen), disorder) = serve_counting(&server, &system, "b");
    let a = Node::builder(&server.url(), "a")
        .insecure()
        .connect()
        .unwrap();
    let add = a.lookup::<Add>("counter@b").unwrap();
    for i in 1..=10_000u64 {
        add.tell(Add(i)).unwrap();
    }
    assert!(wait_until(T, || seen.load(Ordering::Relaxed) == 10_000));
    assert_eq!(disorder.load(Ordering::Relaxed), 0);
    let sum = add.retype::<Sum>().unwrap();
    assert_eq!(sum.ask(Sum, T), Ok(10_000 * 10_001 / 2));
    let stats = a.stats();
    assert_eq!(stats.frames_sent, 10_000);
    assert!(stats.batches_sent < 10_000, "no coalescing: {stats:?}");
    system.shutdown();
}

#[test]
fn ask_errors_are_distinct() {
    let Some(server) = NatsServer::start_or_skip() else {
        return;
    };
    let system = ActorSystem::builder().threads(2).build();
    let (b, _) = serve(&server, &system, "b");
    let a = Node::builder(&server.url(), "a")
        .insecure()
        .connect()
        .unwrap();
    // No such node: the server says no responders, at once.
    let nobody = a.lookup::<Sum>("counter@nobody").unwrap();
    let started = std::time::Instant::now();
    let no_node = nobody.ask(Sum, T).unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    // The node is there but exposes no such actor: the node says so.
    let no_actor = a
        .lookup::<Sum>("nobody@b")
        .unwrap()
        .ask(Sum, T)
        .unwrap_err();
    assert_eq!(no_node, AskError::NoResponders);
    assert_eq!(no_actor, AskError::NoResponders);
    // The actor is there but does not answer in time.
    let silent = a.lookup::<Silent>("counter@b").unwrap();
    assert_eq!(
        silent.ask(Silent, Duration::from_millis(200)),
        Err(AskError::Timeout)
    );
    assert_ne!(no_node, AskError::Timeout);
    assert_eq!(b.stats().unknown_target, 1);
    system.shutdown();
}

#[test]
fn clusters_on_one_server_do_not_see_each_other() {
    let Some(server) = NatsServer::start_or_skip() else {
        return;
    };
    let system = ActorSystem::builder().threads(2).build();
    let seen = Arc::new(AtomicU64::new(0));
    let counter = system.spawn(Counter::new(seen.clone()));
    let blue = Node::builder(&server.url(), "b")
        .insecure()
        .cluster("blue")
        .connect()
        .unwrap();
    blue.expose("counter", &counter)
        .ask::<Sum>(CounterMsg::Sum)
        .serve()
        .unwrap();
    // Same node name, other cluster: allowed, and it cannot reach blue's actor.
    let green = Node::builder(&server.url(), "b")
        .insecure()
        .cluster("green")
        .connect()
        .unwrap();
    let from_green = green.lookup::<Sum>("counter@b").unwrap();
    assert!(from_green.ask(Sum, T).is_err());
    let blue_client = Node::builder(&server.url(), "c")
        .insecure()
        .cluster("blue")
        .connect()
        .unwrap();
    assert_eq!(
        blue_client.lookup::<Sum>("counter@b").unwrap().ask(Sum, T),
        Ok(0)
    );
    system.shutdown();
}

#[test]
fn a_node_name_is_taken_once_per_cluster() {
    let Some(server) = NatsServer::start_or_skip() else {
        return;
    };
    let _first = Node::builder(&server.url(), "same")
        .insecure()
        .connect()
        .unwrap();
    match Node::builder(&server.url(), "same").insecure().connect() {
        Err(NodeError::NameTaken(n)) => assert_eq!(n, "same"),
        other => panic!(
            "expected NameTaken, got {:?}",
            other.map(|n| n.name().to_string())
        ),
    }
}

mod clash {
    pub mod one {
        #[troupe_remote::remote("test.Same")]
        #[derive(serde::Serialize, serde::Deserialize)]
        pub struct Same(pub u8);
    }
    pub mod two {
        #[troupe_remote::remote("test.Same")]
        #[derive(serde::Serialize, serde::Deserialize)]
        pub struct Same(pub u16);
    }
}

#[test]
fn a_type_id_clash_is_refused_at_start_naming_both() {
    let Some(server) = NatsServer::start_or_skip() else {
        return;
    };
    let err = Node::builder(&server.url(), "x")
        .insecure()
        .register::<clash::one::Same>()
        .register::<clash::two::Same>()
        .connect()
        .err()
        .expect("a clash must refuse the node");
    let text = err.to_string();
    assert!(matches!(err, NodeError::TypeClash { .. }), "{text}");
    assert!(
        text.contains("clash::one::Same") && text.contains("clash::two::Same"),
        "{text}"
    );
    // And at lookup time on a running node.
    let node = Node::builder(&server.url(), "y")
        .insecure()
        .register::<clash::one::Same>()
        .connect()
        .unwrap();
    assert!(matches!(
        node.lookup::<clash::two::Same>("a@b"),
        Err(NodeError::TypeClash { .. })
    ));
}

#[test]
fn an_oversized_message_is_handed_back() {
    let Some(server) = NatsServer::builder().max_payload(4096).start_or_skip() else {
        return;
    };
    let system = ActorSystem::builder().threads(2).build();
    let (_b, seen) = serve(&server, &system, "b");
    let a = Node::builder(&server.url(), "a")
        .insecure()
        .connect()
        .unwrap();
    // A frame header, and the link frame for "a" (header, length, name).
    assert_eq!(a.max_body(), 4096 - 32 - 34);
    let blob = a.lookup::<Blob>("counter@b").unwrap();
    let big = Blob(vec![7; 5000]);
    match blob.tell(big.clone()) {
        Err(SendError::Full(back)) => assert_eq!(back, big),
        other => panic!("expected the message back, got {other:?}"),
    }
    // Many messages that each fit go through in batches within the limit.
    for _ in 0..100 {
        blob.tell(Blob(vec![1; 1000])).unwrap();
    }
    assert!(wait_until(T, || seen.load(Ordering::Relaxed) == 100));
    system.shutdown();
}

#[test]
fn garbage_on_a_node_subject_is_counted_and_the_node_keeps_serving() {
    let Some(server) = NatsServer::start_or_skip() else {
        return;
    };
    let system = ActorSystem::builder().threads(2).build();
    let (b, seen) = serve(&server, &system, "b");
    let a = Node::builder(&server.url(), "a")
        .insecure()
        .connect()
        .unwrap();
    let client = a.transport().clone();
    let subject = b.subject();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // Garbage, a wrong version, a truncated frame, an unknown type id, an unknown target.
        let add = a.lookup::<Add>("counter@b").unwrap();
        let _ = add;
        client
            .publish(&subject, vec![0xff; 7].into())
            .await
            .unwrap();
        let mut wrong_version = vec![0u8; 40];
        wrong_version[0] = 9;
        client
            .publish(&subject, wrong_version.into())
            .await
            .unwrap();
        let v = troupe_remote::envelope::FORMAT_VERSION;
        let mut truncated = vec![v, 1, 0, 0];
        truncated.extend_from_slice(&100u32.to_le_bytes());
        truncated.extend_from_slice(&[0u8; 30]);
        client.publish(&subject, truncated.into()).await.unwrap();
        let mut unknown_type = vec![v, 1, 0, 0, 1, 0, 0, 0];
        unknown_type.extend_from_slice(&12345u64.to_le_bytes());
        unknown_type.extend_from_slice(&troupe_remote::type_id("counter").to_le_bytes());
        unknown_type.extend_from_slice(&0u64.to_le_bytes());
        unknown_type.push(1);
        client.publish(&subject, unknown_type.into()).await.unwrap();
        // A garbage request gets a prompt error reply, not a timeout.
        let reply = client
            .request(&subject, vec![1u8, 2, 3].into(), T)
            .await
            .unwrap();
        assert_eq!(reply[0..3], [v, 3, 7]); // version, Reply, BadFrame
        client.flush().await.unwrap();
    });
    let add = a.lookup::<Add>("counter@b").unwrap();
    add.tell(Add(5)).unwrap();
    assert!(wait_until(T, || seen.load(Ordering::Relaxed) == 1));
    let s = b.stats();
    assert_eq!(s.bad_frames, 4, "{s:?}"); // garbage, version, truncated, bad request
    assert_eq!(s.unknown_type, 1, "{s:?}");
    assert_eq!(s.delivered, 1, "{s:?}");
    system.shutdown();
}

#[test]
fn a_node_on_the_callers_runtime_asks_without_a_hop() {
    let Some(server) = NatsServer::start_or_skip() else {
        return;
    };
    let system = ActorSystem::builder().threads(2).build();
    let (_b, _) = serve(&server, &system, "b");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let a = Node::builder(&server.url(), "a")
            .insecure()
            .connect_async()
            .await
            .unwrap();
        let add = a.lookup::<Add>("counter@b").unwrap();
        add.tell(Add(40)).unwrap();
        add.tell(Add(2)).unwrap();
        let sum = add.retype::<Sum>().unwrap();
        let deadline = std::time::Instant::now() + T;
        loop {
            match sum.ask_async(Sum, T).await {
                Ok(42) => break,
                Ok(_) if std::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(5)).await
                }
                other => panic!("{other:?}"),
            }
        }
        let nobody = a.lookup::<Sum>("counter@nobody").unwrap();
        assert_eq!(nobody.ask_async(Sum, T).await, Err(AskError::NoResponders));
        // Dropped inside the runtime: must not block or panic.
        drop(a);
    });
    system.shutdown();
}

#[test]
fn nodes_and_references_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Node>();
    send_sync::<troupe_remote::RemoteRef<Add>>();
}

#[test]
fn a_flood_of_garbage_is_counted_exactly() {
    let Some(server) = NatsServer::start_or_skip() else {
        return;
    };
    let system = ActorSystem::builder().threads(2).build();
    let (b, seen) = serve(&server, &system, "b");
    let a = Node::builder(&server.url(), "a")
        .insecure()
        .connect()
        .unwrap();
    let client = a.transport().clone();
    let subject = b.subject();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        for i in 0..1000u32 {
            client
                .publish(&subject, i.to_le_bytes().to_vec().into())
                .await
                .unwrap();
        }
        client.flush().await.unwrap();
    });
    a.lookup::<Add>("counter@b").unwrap().tell(Add(1)).unwrap();
    assert!(wait_until(T, || seen.load(Ordering::Relaxed) == 1));
    assert!(
        wait_until(T, || b.stats().bad_frames == 1000),
        "{:?}",
        b.stats()
    );
    system.shutdown();
}
