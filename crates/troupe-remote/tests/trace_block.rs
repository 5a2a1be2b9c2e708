//! A frame's trace block read as hostile input, with no feature: a valid
//! block is validated and the tell delivered; a frame flagged as carrying a
//! block that is malformed is a bad frame, counted, and the node goes on.

mod common;

use common::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe::ActorSystem;
use troupe_remote::envelope::{encode_frame_traced, encode_link, Header, Kind};
use troupe_remote::trace_context::{TraceContext, FLAG_TRACE};
use troupe_remote::transport::memory::MemoryNetwork;
use troupe_remote::transport::Transport;
use troupe_remote::{type_id, Node, RemoteMessage};

const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn batch(first: u64, n: u64, trace: Option<&TraceContext<'_>>) -> Vec<u8> {
    let mut out = Vec::new();
    encode_link(&mut out, 7, first, "raw");
    let h = Header::new(Kind::Tell, Add::TYPE_ID, type_id("counter"), 0);
    encode_frame_traced(&mut out, h, trace, &Add(n), 1 << 20).unwrap();
    out
}

#[test]
fn a_malformed_trace_block_is_a_counted_bad_frame() {
    let net = MemoryNetwork::new();
    let system = ActorSystem::builder().threads(1).build();
    let seen = Arc::new(AtomicU64::new(0));
    let counter = system.spawn(Counter::new(seen.clone()));
    let b = Node::builder_on(net.connect(), "b")
        .insecure()
        .connect()
        .unwrap();
    b.expose("counter", &counter).tell::<Add>().serve().unwrap();

    let tc = TraceContext {
        traceparent: TP,
        tracestate: "k=v",
    };
    let good = batch(1, 1, Some(&tc));
    // The same frame with its block's traceparent length byte broken.
    let mut bad = batch(2, 2, Some(&tc));
    let tell_at = bad.len() - (good.len() - troupe_remote::envelope::link_frame_len("raw"));
    assert_eq!(bad[tell_at + 3], FLAG_TRACE);
    bad[tell_at + 32] = 54;
    let good_again = batch(3, 3, Some(&tc));

    let raw = net.connect();
    let subject = b.subject();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        for p in [good, bad, good_again] {
            raw.publish(&subject, p.into()).await.unwrap();
        }
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen.load(Ordering::SeqCst) < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let s = b.stats();
    assert_eq!(seen.load(Ordering::SeqCst), 2, "{s:?}");
    assert_eq!(s.delivered, 2, "{s:?}");
    assert_eq!(s.bad_frames, 1, "{s:?}");
    system.shutdown();
}
