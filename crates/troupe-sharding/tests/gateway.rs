//! The shard gateway (`gateway.rs`), step by step, against a real
//! nats-server: a tell and an ask by kind and id through the gateway of a
//! node that does not own the entity reach it; each refusal comes back by
//! name and is counted; a tell the gateway refuses is counted and harms
//! nothing after it. The clients' end-to-end tests (clients/*) cover the
//! same over CBOR from Python, Go and TypeScript.

mod common;

use std::time::Duration;

use common::{cluster, settle, wait_until, Add, Count, Tracker};
use troupe_remote::portable::{decode_cbor, encode_cbor};
use troupe_remote::RemoteMessage;
use troupe_sharding::gateway::{Gateway, GatewayAsk, GatewayReply, GatewayTell, Payload, GATEWAY};

fn cbor<T: serde::Serialize>(v: &T) -> Payload {
    let mut out = Vec::new();
    encode_cbor(v, &mut out).unwrap();
    Payload(out)
}

fn ask(kind: &str, id: &str, type_name: &str, body: Payload) -> GatewayAsk {
    GatewayAsk {
        kind: kind.into(),
        id: id.into(),
        type_name: type_name.into(),
        body,
        timeout_ms: 5000,
    }
}

#[test]
fn tells_and_asks_by_kind_and_id_through_any_node_and_refusals_by_name() {
    let Some(server) = troupe_test_nats::NatsServer::builder()
        .jetstream()
        .start_or_skip()
    else {
        return;
    };
    let tracker = Tracker::default();
    let (a, b) = (cluster(&server, "gw-a"), cluster(&server, "gw-b"));
    let sa = common::counters(&a, &tracker).start().expect("start a");
    let sb = common::counters(&b, &tracker).start().expect("start b");
    settle(&[&a, &b], &[&sa, &sb]);
    let gateway = Gateway::builder()
        .tell::<Add, _>(&sb)
        .ask::<Count, _>(&sb)
        .serve(&b)
        .expect("gateway");
    // A third node, as a client would be: tells and asks gw-b's gateway.
    let client = troupe_remote::Node::builder(&server.url(), "gw-client")
        .insecure()
        .connect()
        .expect("client");
    let tell = client
        .lookup::<GatewayTell>(&format!("{GATEWAY}@gw-b"))
        .expect("tell ref");
    let asker = client
        .lookup::<GatewayAsk>(&format!("{GATEWAY}@gw-b"))
        .expect("ask ref");
    // Ids on shards owned by both nodes: some owned by gw-a.
    let ids: Vec<String> = (0..12).map(|i| format!("gw-{i}")).collect();
    for id in &ids {
        for seq in 1..=3 {
            let add = Add { from: 9, seq };
            tell.tell(GatewayTell {
                kind: "counter".into(),
                id: id.clone(),
                type_name: Add::NAME.into(),
                body: cbor(&add),
            })
            .expect("sent");
        }
    }
    let count = |id: &str| -> u64 {
        match asker.ask(
            ask("counter", id, Count::NAME, cbor(&Count)),
            Duration::from_secs(10),
        ) {
            Ok(GatewayReply::Ok(b)) => decode_cbor::<u64>(&b.0).unwrap(),
            other => panic!("{other:?}"),
        }
    };
    for id in &ids {
        assert!(
            wait_until(Duration::from_secs(20), || count(id) == 3),
            "{id}: {}",
            count(id)
        );
    }
    let owned_by_a = ids
        .iter()
        .filter(|id| sa.local_entities().contains(id))
        .count();
    assert!(owned_by_a > 0, "no entity on gw-a: the test routes nothing");

    // Each refusal, by name, and counted.
    let refused = |a: GatewayAsk| asker.ask(a, Duration::from_secs(10)).unwrap();
    assert_eq!(
        refused(ask("no-such-kind", "x", Count::NAME, cbor(&Count))),
        GatewayReply::UnknownKind
    );
    assert_eq!(
        refused(ask("counter", "x", "no.such.Type", cbor(&Count))),
        GatewayReply::UnknownType
    );
    assert_eq!(
        refused(ask("counter", "x", Add::NAME, cbor(&Count))),
        GatewayReply::UnknownType,
        "Add is a tell, not an ask"
    );
    assert_eq!(
        refused(ask("counter", "", Count::NAME, cbor(&Count))),
        GatewayReply::BadId
    );
    assert_eq!(
        refused(ask("counter", &"x".repeat(257), Count::NAME, cbor(&Count))),
        GatewayReply::BadId
    );
    assert_eq!(
        refused(ask("counter", "x", Count::NAME, Payload(vec![0xff, 0x00]))),
        GatewayReply::Undecodable
    );
    // Refused tells: counted, and the next good tell still lands.
    for (kind, id, type_name, body) in [
        (
            "no-such-kind",
            "gw-0",
            Add::NAME,
            cbor(&Add { from: 9, seq: 4 }),
        ),
        ("counter", "", Add::NAME, cbor(&Add { from: 9, seq: 4 })),
        ("counter", "gw-0", Add::NAME, Payload(vec![0x01])),
        ("counter", "gw-0", Count::NAME, cbor(&Count)),
    ] {
        tell.tell(GatewayTell {
            kind: kind.into(),
            id: id.into(),
            type_name: type_name.into(),
            body,
        })
        .expect("sent");
    }
    tell.tell(GatewayTell {
        kind: "counter".into(),
        id: "gw-0".into(),
        type_name: Add::NAME.into(),
        body: cbor(&Add { from: 9, seq: 4 }),
    })
    .expect("sent");
    assert!(wait_until(Duration::from_secs(20), || count("gw-0") == 4));
    assert!(
        wait_until(Duration::from_secs(10), || {
            let s = gateway.stats();
            (s.unknown_kind, s.unknown_type, s.bad_id, s.undecodable) == (2, 3, 3, 2)
        }),
        "{:?}",
        gateway.stats()
    );
    let s = gateway.stats();
    assert_eq!(s.tells, 12 * 3 + 5);
    assert_eq!(s.tells_routed, 12 * 3 + 1);
    assert_eq!(tracker.fifo_violations(), 0);
    drop(gateway);
}
