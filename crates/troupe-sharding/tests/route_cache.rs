//! The sending thread's kept routing table (shared.rs, `Routes`) follows
//! every route change: two threads tell entities on every shard through
//! one node while a third node joins (shards move to it from both). Every
//! tell accepted (`Ok`) is handled once, or refused by the node that was
//! to buffer it (its buffer full while the shard moved: the sending
//! node's link counts it as refused by the peer, or lost on the way);
//! never lost unknown to its sender, never twice. Once the routing tables name the new owners,
//! no region forwards any more: the senders go to the owners directly (a
//! thread that kept a stale table would send to the old owner, which
//! forwards). Real nats-server (JetStream); skips without it unless
//! `TROUPE_REQUIRE_NATS=1`.

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::*;
use troupe_sharding::EntityRef;
use troupe_test_nats::NatsServer;

/// Tells accepted per entity, and how many came back refused.
fn send(
    through: &[EntityRef<Counter>],
    from: u32,
    stop: &AtomicBool,
) -> (HashMap<String, u64>, u64) {
    let mut accepted: HashMap<String, u64> = HashMap::new();
    let mut refused = 0;
    let mut seq = 0;
    while !stop.load(Ordering::Relaxed) {
        seq += 1;
        for e in through {
            match e.tell(Add { from, seq }) {
                Ok(()) => *accepted.entry(e.id().to_string()).or_default() += 1,
                Err(_) => refused += 1,
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    (accepted, refused)
}

#[test]
fn tells_follow_every_route_change_and_arrive_once() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let tracker = Tracker::default();
    let (c1, c2) = (cluster(&server, "k1"), cluster(&server, "k2"));
    let s1 = counters(&c1, &tracker).start().expect("start");
    let s2 = counters(&c2, &tracker).start().expect("start");
    settle(&[&c1, &c2], &[&s1, &s2]);
    assert!(s2.stats().shards_owned > 0, "k2 owns shards");

    // Two senders, 150 ids each, together on every shard, all through k1.
    let ids: Vec<Vec<String>> = (0..2)
        .map(|t| (0..150).map(|i| format!("user-{}", t * 150 + i)).collect())
        .collect();
    let shards: HashSet<u32> = ids.iter().flatten().map(|id| s1.shard_of(id)).collect();
    assert_eq!(shards.len(), SHARDS as usize, "every shard is exercised");
    let refs: Vec<Vec<EntityRef<Counter>>> = ids
        .iter()
        .map(|ids| ids.iter().map(|id| s1.entity(id)).collect())
        .collect();

    let stop = AtomicBool::new(false);
    let (sent, window, k3) = std::thread::scope(|scope| {
        let stop = &stop;
        let senders: Vec<_> = refs
            .iter()
            .enumerate()
            .map(|(t, r)| scope.spawn(move || send(r, t as u32, stop)))
            .collect();
        // Stops the senders however this closure ends (a panic in the
        // scope would otherwise wait for them forever).
        let _stop = StopOnDrop(stop);
        std::thread::sleep(Duration::from_millis(300));
        // A join: shards move from k1 and k2 to k3.
        let c3 = cluster(&server, "k3");
        let s3 = counters(&c3, &tracker).start().expect("start");
        settle(&[&c1, &c2, &c3], &[&s1, &s2, &s3]);
        assert!(s3.stats().shards_owned > 0, "k3 took shards");
        // Every table names the owners now: nothing is forwarded while
        // the senders go on.
        let forwarded = || s1.stats().forwarded + s2.stats().forwarded + s3.stats().forwarded;
        // Tells that reached an old owner before the move (queued in its
        // region's mailbox or its inbox) are forwarded as it works
        // through them, seconds later on a loaded machine: first a quiet
        // 300 ms (10 s at most). A stale route never goes quiet.
        let quiet_by = Instant::now() + Duration::from_secs(10);
        let mut last = forwarded();
        while Instant::now() < quiet_by {
            std::thread::sleep(Duration::from_millis(300));
            let now = forwarded();
            if now == last {
                break;
            }
            last = now;
        }
        let (before, direct) = (forwarded(), s3.stats().delivered_direct);
        // 500 ms, and until k3 has been told directly (15 s at most: on
        // a loaded machine k3's lease may lapse for a while, and its
        // tells wait in its buffer meanwhile; a full `cargo test` run
        // once took longer than 5 s).
        std::thread::sleep(Duration::from_millis(500));
        wait_until(Duration::from_millis(14_500), || {
            s3.stats().delivered_direct > direct
        });
        let window = (before, forwarded(), direct, s3.stats().delivered_direct);
        stop.store(true, Ordering::Relaxed);
        let sent: Vec<_> = senders.into_iter().map(|h| h.join().unwrap()).collect();
        (sent, window, (c3, s3))
    });
    let (before, after, direct, direct_after) = window;
    assert_eq!(after, before, "a sender went by a stale route");
    assert!(direct_after > direct, "k3 is told directly");
    let mut accepted: HashMap<String, u64> = HashMap::new();
    let mut refused = 0;
    for (a, r) in sent {
        accepted.extend(a);
        refused += r;
    }
    let total: u64 = accepted.values().sum();
    assert!(total > 0, "nothing accepted");
    // An accepted tell is handled once, or refused by the node that was
    // to buffer it (its buffer full while the shard moved), which the
    // sending node's link counts as refused by the peer, or dropped by
    // NATS on the way (a slow consumer on a loaded machine), which it
    // counts as lost: never lost unknown to its sender.
    let (c3, s3) = &k3;
    let refused_by_peer = || [&c1, &c2, c3].into_iter().map(not_delivered).sum::<u64>();
    let accounted = || tracker.delivered() + refused_by_peer() == total;
    let report = || {
        let wrong: Vec<_> = ids
            .iter()
            .flatten()
            .map(|id| {
                (
                    id,
                    tracker.get(id).delivered,
                    accepted.get(id).copied().unwrap_or(0),
                )
            })
            .filter(|(_, d, a)| d != a)
            .collect();
        let stats: Vec<_> = [&s1, &s2, s3].iter().map(|s| s.stats()).collect();
        format!(
            "{total} accepted, {refused} refused, {} delivered, {} refused by the peer or lost; \
             {} ids differ, (id, delivered, accepted): {:?}; shardings: {stats:?}",
            tracker.delivered(),
            refused_by_peer(),
            wrong.len(),
            &wrong[..wrong.len().min(4)],
        )
    };
    assert!(
        wait_until(Duration::from_secs(20), accounted),
        "{}",
        report()
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(accounted(), "a tell was delivered twice: {}", report());
    // Per entity: never more than accepted; exactly that without refusals.
    for id in ids.iter().flatten() {
        let (d, a) = (
            tracker.get(id).delivered,
            accepted.get(id).copied().unwrap_or(0),
        );
        assert!(d <= a, "{id}: {d} delivered of {a} accepted");
        if refused_by_peer() == 0 {
            assert_eq!(d, a, "{id}");
        }
    }
    assert_eq!(tracker.max_live(), 1, "never two live activations");
    // Every accepted tell is counted on the striped counter (and the
    // ones refused after the count: a full buffer).
    let tells = s1.stats().tells;
    assert!(
        (total..=total + refused).contains(&tells),
        "{tells} counted, {total} accepted"
    );
}

/// Sets the flag when dropped.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
