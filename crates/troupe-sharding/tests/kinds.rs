//! Async entities, and remembered entities that come back after a move.
//! Real nats-server (JetStream); skips without it unless
//! `TROUPE_REQUIRE_NATS=1`.

mod common;

use std::time::Duration;

use common::*;
use troupe::{Async, AsyncActor, AsyncContext};
use troupe_sharding::ClusterSharding;
use troupe_test_nats::NatsServer;

const ASK: Duration = Duration::from_secs(5);

/// A counter whose handler awaits a timer before it counts.
struct Slow {
    handled: u64,
}

impl AsyncActor for Slow {
    type Msg = Msg;
    async fn handle(&mut self, m: Msg, _ctx: &mut AsyncContext<Self>) {
        match m {
            Msg::Add(_) => {
                troupe::timer::sleep(Duration::from_millis(1)).await;
                self.handled += 1;
            }
            Msg::Count(r) => {
                r.reply(self.handled);
            }
        }
    }
}

#[test]
fn async_entities_are_sharded_like_sync_ones() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let cs: Vec<_> = (1..=2)
        .map(|i| cluster(&server, &format!("a{i}")))
        .collect();
    let ss: Vec<_> = cs
        .iter()
        .map(|c| {
            c.sharding("slow", |_| Async::new(Slow { handled: 0 }))
                .tell::<Add>()
                .ask::<Count>(|_, r| Msg::Count(r))
                .tick(Duration::from_millis(150))
                .start()
                .expect("start")
        })
        .collect();
    assert!(wait_until(Duration::from_secs(20), || cs
        .iter()
        .all(|c| c.peers().len() == 1)
        && ss.iter().all(|s| s.settled())));
    std::thread::sleep(Duration::from_millis(300));
    let ids: Vec<String> = (0..10).map(|i| format!("slow-{i}")).collect();
    for s in &ss {
        for id in &ids {
            for seq in 1..=5 {
                s.entity(id).tell(Add { from: 0, seq }).unwrap();
            }
        }
    }
    for id in &ids {
        assert!(
            wait_until(Duration::from_secs(10), || ss[1].entity(id).ask(Count, ASK)
                == Ok(10)),
            "{id}"
        );
    }
    let running: usize = ss.iter().map(|s| s.local_entities().len()).sum();
    assert_eq!(running, ids.len());
    assert!(
        ss.iter().all(|s| s.stats().activations > 0),
        "both nodes run some"
    );
}

#[test]
fn remembered_entities_start_again_on_the_next_owner() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let tracker = Tracker::default();
    let c1 = cluster(&server, "m1");
    let c2 = cluster(&server, "m2");
    let s1 = counters(&c1, &tracker)
        .remember_entities(true)
        .start()
        .unwrap();
    let s2 = counters(&c2, &tracker)
        .remember_entities(true)
        .start()
        .unwrap();
    settle(&[&c1, &c2], &[&s1, &s2]);
    let ids: Vec<String> = (0..20).map(|i| format!("kept-{i}")).collect();
    for id in &ids {
        assert_eq!(s1.entity(id).ask(Count, ASK), Ok(0));
    }
    let on2 = s2.local_entities();
    assert!(!on2.is_empty());
    // m2 leaves: its entities start on m1 without any message.
    s2.leave();
    drop(c2);
    assert!(
        wait_until(Duration::from_secs(10), || s1.local_entities().len()
            == ids.len()),
        "{:?}",
        s1.local_entities()
    );
    for id in &on2 {
        let r = tracker.get(id);
        assert_eq!((r.activations, r.live), (2, 1), "{id}");
    }
    assert_eq!(tracker.max_live(), 1);
}
