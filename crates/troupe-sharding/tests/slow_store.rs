//! Ownership reads that take longer than a tick (a node flooded with
//! tells reads its records behind the flood): the coordinator's ticks
//! start at a fixed rate, so each `Verified` renews the region's lease
//! before the last one runs out, and no tell waits in the buffer. When a
//! tick started a whole tick after the last one *ended*, reads of 1.15
//! ticks let the 3-tick lease lapse for 0.45 tick in every cycle, and the
//! tells of those windows were buffered. In-memory transport and store.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use troupe_cluster::Cluster;
use troupe_remote::transport::memory::MemoryNetwork;
use troupe_sharding::ownership::{MemoryOwnership, OwnershipStore, ShardOwner, StoreError};

/// A store whose `owners` read takes `delay_ms` longer.
struct Slow {
    inner: MemoryOwnership,
    delay_ms: AtomicU64,
}

impl OwnershipStore for Slow {
    fn owners(&self, kind: &str, shards: u32) -> Result<Vec<ShardOwner>, StoreError> {
        std::thread::sleep(Duration::from_millis(self.delay_ms.load(Ordering::Relaxed)));
        self.inner.owners(kind, shards)
    }
    fn owner(&self, kind: &str, shard: u32) -> Result<ShardOwner, StoreError> {
        self.inner.owner(kind, shard)
    }
    fn claim(&self, kind: &str, shard: u32, node: &str, expected: u64) -> Result<u64, StoreError> {
        self.inner.claim(kind, shard, node, expected)
    }
    fn release(&self, kind: &str, shard: u32, token: u64) -> Result<u64, StoreError> {
        self.inner.release(kind, shard, token)
    }
    fn remembered(&self, kind: &str, shard: u32) -> Result<Vec<String>, StoreError> {
        self.inner.remembered(kind, shard)
    }
    fn remember(
        &self,
        kind: &str,
        shard: u32,
        token: u64,
        ids: &[String],
    ) -> Result<(), StoreError> {
        self.inner.remember(kind, shard, token, ids)
    }
    fn members(&self, kind: &str) -> Result<(Vec<String>, u64), StoreError> {
        self.inner.members(kind)
    }
    fn set_members(&self, kind: &str, nodes: &[String], expected: u64) -> Result<u64, StoreError> {
        self.inner.set_members(kind, nodes, expected)
    }
}

const TICK: Duration = Duration::from_millis(200);

/// One node on the memory transport, its ownership in a [`Slow`] store
/// (no delay yet), ticking every `tick`, settled.
fn slow_node(
    tick: Duration,
    tracker: &Tracker,
) -> (Arc<Slow>, Arc<Cluster>, troupe_sharding::Sharding<Counter>) {
    let net = MemoryNetwork::new();
    let store = Arc::new(Slow {
        inner: MemoryOwnership::new(),
        delay_ms: AtomicU64::new(0),
    });
    let node = Arc::new(
        Cluster::builder_on(net.connect(), "s1")
            .insecure()
            .heartbeat(HB)
            .connect()
            .expect("connect"),
    );
    let sharding = counters(&node, tracker)
        .tick(tick)
        .store(store.clone())
        .start()
        .expect("start");
    settle(&[&node], &[&sharding]);
    (store, node, sharding)
}

#[test]
fn reads_longer_than_a_tick_do_not_let_the_lease_lapse() {
    let tracker = Tracker::default();
    let (store, _node, sharding) = slow_node(TICK, &tracker);
    let entity = sharding.entity("busy");
    entity.tell(Add { from: 1, seq: 1 }).expect("tell");
    assert_delivered(&tracker, 1, Duration::from_secs(10), String::new);

    // Reads of 1.15 ticks: ticks now start 1.15 ticks apart and each
    // renewal comes 2.3 ticks after the last one began (lease: 3 ticks).
    store.delay_ms.store(230, Ordering::Relaxed);
    let before = sharding.stats();
    let end = Instant::now() + Duration::from_millis(2500);
    let mut seq = 1;
    while Instant::now() < end {
        seq += 1;
        entity.tell(Add { from: 1, seq }).expect("tell");
        std::thread::sleep(Duration::from_millis(2));
    }
    store.delay_ms.store(0, Ordering::Relaxed);
    assert_delivered(&tracker, seq, Duration::from_secs(10), || {
        format!("stats {:?}", sharding.stats())
    });
    let after = sharding.stats();
    assert_eq!(
        after.buffered - before.buffered,
        0,
        "tells waited for a lapsed lease; stats {after:?}"
    );
    assert_eq!(tracker.fifo_violations(), 0);
}

/// Reads of 2 ticks: each renewal comes 2 ticks after its read began,
/// so the 3-tick lease holds for one tick and lapses for the next, and
/// the region buffers what comes meanwhile. When the next `Verified`
/// renews the lease, what is buffered for an entity must reach it before
/// anything newer: a tell that lands between the renewal and the retry
/// of the buffer (the coordinator sends `Verified`, then `Tick`) waits
/// behind the entity's buffered ones instead of overtaking them. A sender
/// on this node tells without pause, so tells land in that window; with
/// the newer tell delivered at once, a sender's order broke (the direct
/// tests' passivation churn on a loaded machine).
#[test]
fn tells_buffered_in_a_lapse_keep_their_order() {
    let tracker = Tracker::default();
    let (store, _node, sharding) = slow_node(Duration::from_millis(20), &tracker);
    store.delay_ms.store(40, Ordering::Relaxed);
    let ids = ["a", "b", "c"];
    let refs: Vec<_> = ids.iter().map(|id| sharding.entity(id)).collect();
    let end = Instant::now() + Duration::from_millis(2500);
    let mut seq = 0;
    while Instant::now() < end {
        seq += 1;
        for r in &refs {
            let mut m = Add { from: 7, seq };
            while let Err(e) = r.tell(m) {
                m = e.into_inner();
                std::thread::yield_now();
            }
        }
        // At most a few thousand tells ahead of the entities (a debug
        // build handles fewer than the sender sends).
        while seq * ids.len() as u64 > tracker.delivered() + 3000 && Instant::now() < end {
            std::thread::yield_now();
        }
    }
    store.delay_ms.store(0, Ordering::Relaxed);
    let sent = seq * ids.len() as u64;
    assert_delivered(&tracker, sent, Duration::from_secs(20), || {
        format!("stats {:?}", sharding.stats())
    });
    let stats = sharding.stats();
    assert!(stats.buffered > 0, "the lease never lapsed: {stats:?}");
    assert_eq!(
        tracker.fifo_violations(),
        0,
        "a tell overtook one buffered before it: {stats:?}"
    );
}
