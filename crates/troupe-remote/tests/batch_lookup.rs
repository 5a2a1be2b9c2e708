//! One batch of tells that changes actor and type from frame to frame: the
//! inbox keeps its last `(target, type)` lookup for the frames after it
//! (`protocol/inbox.rs`), and must look up again whenever either changes.
//! In-memory transport: runs with only Rust installed.

mod common;

use common::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use troupe::ActorSystem;
use troupe_remote::envelope::{encode_frame, encode_link, Header, Kind};
use troupe_remote::transport::memory::MemoryNetwork;
use troupe_remote::{Node, RemoteMessage};

const T: Duration = Duration::from_secs(10);

/// Frames to `x` (takes `Add` and `Blob`) and `y` (takes `Add` only), in
/// one NATS message. Keyed on the target alone, the lookup would decode
/// `y`'s `Blob` as an `Add` (undecodable, not unknown); keyed on the type
/// alone, it would hand `y`'s adds to `x`.
#[test]
fn a_batch_looks_up_again_when_the_target_or_the_type_changes() {
    let system = ActorSystem::builder().threads(1).build();
    let (seen_x, seen_y) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let x = system.spawn(Counter::new(seen_x.clone()));
    let y = system.spawn(Counter::new(seen_y.clone()));
    let net = MemoryNetwork::new();
    let b = Node::builder_on(net.connect(), "b")
        .insecure()
        .connect()
        .unwrap();
    b.expose("x", &x)
        .tell::<Add>()
        .tell::<Blob>()
        .ask::<Sum>(CounterMsg::Sum)
        .serve()
        .unwrap();
    b.expose("y", &y)
        .tell::<Add>()
        .ask::<Sum>(CounterMsg::Sum)
        .serve()
        .unwrap();

    let mut batch = Vec::new();
    encode_link(&mut batch, 7, 1, "raw");
    frame(&mut batch, "x", &Add(1));
    frame(&mut batch, "x", &Add(2));
    frame(&mut batch, "y", &Add(10));
    frame(&mut batch, "y", &Blob(vec![1, 2, 3]));
    frame(&mut batch, "x", &Blob(vec![4, 5, 6, 7]));
    frame(&mut batch, "x", &Add(3));
    frame(&mut batch, "y", &Add(11));
    frame(&mut batch, "nobody", &Add(99));
    frame(&mut batch, "y", &Add(12));

    let raw = net.connect();
    let subject = b.subject();
    troupe_remote::runtime::handle()
        .unwrap()
        .block_on(async {
            use troupe_remote::transport::Transport;
            raw.publish(&subject, batch.into()).await?;
            raw.flush().await
        })
        .unwrap();

    let a = Node::builder_on(net.connect(), "a")
        .insecure()
        .connect()
        .unwrap();
    let sum = |n: &str| {
        a.lookup::<Sum>(&format!("{n}@b"))
            .unwrap()
            .ask(Sum, T)
            .unwrap()
    };
    assert!(wait_until(T, || {
        seen_x.load(Ordering::Relaxed) == 4 && seen_y.load(Ordering::Relaxed) == 3
    }));
    // x: adds 1 + 2 + 3 and a 4-byte blob; y: adds 10 + 11 + 12.
    assert_eq!((sum("x"), sum("y")), (10, 33));
    let s = b.stats();
    assert_eq!(
        (s.delivered, s.unknown_type, s.unknown_target, s.undecodable),
        (7, 1, 1, 0),
        "{s:?}"
    );
}

/// Appends a tell of `body` to the actor exposed as `to`.
fn frame<M: RemoteMessage>(out: &mut Vec<u8>, to: &str, body: &M) {
    let h = Header::new(Kind::Tell, M::TYPE_ID, troupe_remote::type_id(to), 0);
    encode_frame(out, h, body, 1 << 20).unwrap();
}
