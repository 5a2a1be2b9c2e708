//! Sharded entities on real nats-servers (JetStream): several nodes in one
//! process, each its own `Cluster` on one server. Skips without
//! nats-server unless `TROUPE_REQUIRE_NATS=1`.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::*;
use troupe_sharding::envelope::{EntityTell, ShardTell, Tag};
use troupe_test_nats::NatsServer;

const ASK: Duration = Duration::from_secs(5);

#[test]
fn every_node_reaches_every_entity_and_each_activates_once() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let tracker = Tracker::default();
    let (_cs, ss) = three_counters(&server, "n", &tracker);

    let ids: Vec<String> = (0..30).map(|i| format!("user-{i}")).collect();
    const PER: u64 = 20;
    // Every node tells every entity, in order, from a plain thread.
    std::thread::scope(|scope| {
        for (n, s) in ss.iter().enumerate() {
            let ids = &ids;
            scope.spawn(move || {
                for seq in 1..=PER {
                    for id in ids {
                        s.entity(id)
                            .tell(Add {
                                from: n as u32,
                                seq,
                            })
                            .expect("accepted");
                    }
                }
            });
        }
    });
    let want = 3 * PER;
    for id in &ids {
        // Asks may overtake tells: wait for all of them.
        for s in &ss {
            assert!(
                wait_until(Duration::from_secs(10), || s
                    .entity(id)
                    .ask(Count, ASK)
                    .is_ok_and(|n| n == want)),
                "{id} did not count {want} from {}",
                ss.iter().position(|x| std::ptr::eq(x, s)).unwrap()
            );
        }
        let r = tracker.get(id);
        assert_eq!(r.activations, 1, "{id}: {r:?}");
        assert_eq!(r.delivered, want, "{id}: {r:?}");
    }
    assert_eq!(tracker.fifo_violations(), 0);
    assert_eq!(tracker.max_live(), 1);
    // Each entity runs on exactly one node.
    let mut seen = HashSet::new();
    let mut total = 0;
    for s in &ss {
        for id in s.local_entities() {
            total += 1;
            seen.insert(id);
        }
    }
    assert_eq!((seen.len(), total), (ids.len(), ids.len()));
    let stats: Vec<_> = ss.iter().map(|s| s.stats()).collect();
    assert_eq!(stats.iter().map(|s| s.activations).sum::<u64>(), 30);
    assert_eq!(
        stats.iter().map(|s| s.shards_owned).sum::<u64>(),
        u64::from(SHARDS)
    );
    for s in &stats {
        assert_eq!(
            (s.expired, s.buffer_full, s.entity_gone, s.fencing_refusals),
            (0, 0, 0, 0),
            "{s:?}"
        );
    }
}

/// An `EntityTell<Add>` with the id's bytes and the message's bytes of
/// the test's choosing (postcard writes a `&[u8]` as a string's length
/// and bytes, and a `[u8; 3]` as three bytes: `[0, 1, 0]` is an `Add`
/// and a byte more).
#[derive(serde::Serialize)]
struct RawEntityTell<'a> {
    entity: &'a [u8],
    msg: [u8; 3],
}

impl troupe_remote::EncodesAs<EntityTell<Add>> for RawEntityTell<'_> {}

#[test]
fn hostile_envelopes_are_counted_not_obeyed() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let tracker = Tracker::default();
    let c1 = cluster(&server, "h1");
    let c2 = cluster(&server, "h2");
    let s1 = counters(&c1, &tracker).start().expect("start");
    // h2 is a peer that does not host the type: it gets no shard.
    settle_peers(&[&c1], &[&s1], 1);
    assert_eq!(s1.stats().shards_owned, u64::from(SHARDS));
    let raw = c2
        .node()
        .lookup::<ShardTell>("shard-region-counter@h1")
        .expect("lookup");
    let add = postcard::to_allocvec(&Add { from: 0, seq: 1 }).unwrap();
    let bad = [
        ShardTell {
            entity: "x".repeat(300),
            tag: Tag::of(troupe_remote::type_id("sharding.test.Add")),
            hops: 0,
            payload: add.clone(),
        },
        ShardTell {
            entity: String::new(),
            tag: Tag::of(troupe_remote::type_id("sharding.test.Add")),
            hops: 0,
            payload: add.clone(),
        },
        ShardTell {
            entity: "e".into(),
            tag: Tag::of(troupe_remote::type_id("sharding.test.Add")),
            hops: 200,
            payload: add.clone(),
        },
        ShardTell {
            entity: "e".into(),
            tag: Tag::of(12345),
            hops: 0,
            payload: add.clone(),
        },
        ShardTell {
            entity: "e".into(),
            tag: Tag::of(troupe_remote::type_id("sharding.test.Add")),
            hops: 0,
            payload: vec![0xff; 3],
        },
    ];
    for b in bad {
        raw.tell(b).expect("sent");
    }
    // An entity reference's envelope, `EntityTell<Add>`, from a hostile
    // peer: a long id, an empty one, a message that does not decode, one
    // with a byte after it, an id that is not UTF-8.
    let typed = c2
        .node()
        .lookup::<EntityTell<Add>>("shard-region-counter@h1")
        .expect("lookup");
    let add = |entity: &str| EntityTell {
        entity: entity.to_string(),
        msg: Add { from: 0, seq: 1 },
    };
    for b in [add(&"x".repeat(300)), add("")] {
        typed.tell(b).expect("sent");
    }
    for (entity, msg) in [
        (&b"e"[..], [0xff; 3]),
        (b"e", [0, 1, 0]),
        (&[0xff, b'e'], [0, 1, 0]),
    ] {
        typed.tell_as(&RawEntityTell { entity, msg }).expect("sent");
    }
    let want = (5, 1, 3);
    assert!(
        wait_until(Duration::from_secs(10), || {
            let s = s1.stats();
            (s.bad_envelopes, s.unknown_types, s.undecodable) == want
        }),
        "{:?}",
        s1.stats()
    );
    // The id that is not UTF-8 is refused by the node as undecodable.
    assert!(wait_until(Duration::from_secs(10), || c1
        .node()
        .stats()
        .undecodable
        == 1));
    // The entity "e" was activated by the envelopes that passed the id
    // check, and nothing reached it.
    assert_eq!(tracker.get("e").delivered, 0);
    assert_eq!(tracker.get(&"x".repeat(300)).activations, 0);
}

#[test]
fn idle_entities_passivate_and_come_back_on_the_next_message() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let tracker = Tracker::default();
    let c = cluster(&server, "p1");
    let s = counters(&c, &tracker)
        .idle_timeout(Some(Duration::from_millis(300)))
        .start()
        .expect("start");
    settle(&[&c], &[&s]);
    let e = s.entity("sleepy");
    e.tell(Add { from: 0, seq: 1 }).unwrap();
    assert_eq!(e.ask(Count, ASK), Ok(1));
    assert!(wait_until(Duration::from_secs(10), || s
        .stats()
        .passivations
        == 1
        && tracker.get("sleepy").live == 0));
    assert!(s.local_entities().is_empty());
    // A fresh instance: its count starts again.
    assert_eq!(e.ask(Count, ASK), Ok(0));
    let r = tracker.get("sleepy");
    assert_eq!((r.activations, r.live, r.max_live), (2, 1, 1));
    assert_eq!(s.local_entities(), vec!["sleepy".to_string()]);
}

#[test]
fn the_entity_table_is_capped() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let tracker = Tracker::default();
    let c = cluster(&server, "cap1");
    let s = counters(&c, &tracker)
        .max_entities(2)
        .start()
        .expect("start");
    settle(&[&c], &[&s]);
    assert_eq!(s.entity("a").ask(Count, ASK), Ok(0));
    assert_eq!(s.entity("b").ask(Count, ASK), Ok(0));
    // A third passivates the least recently used (`a`, never used since
    // it started) instead of being refused.
    assert_eq!(s.entity("c").ask(Count, ASK), Ok(0));
    assert!(wait_until(Duration::from_secs(5), || s.local_entities()
        == ["b".to_string(), "c".to_string()]));
    let st = s.stats();
    assert_eq!(
        (st.evictions, st.passivations, st.entities_refused),
        (1, 1, 0),
        "{st:?}"
    );
    assert_eq!(tracker.get("a").live, 0);
    assert_eq!(tracker.get("c").activations, 1);
}
