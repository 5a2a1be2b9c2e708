//! D4 (issue 38): owner records name the node's incarnation, not only its
//! name. Two live processes under one name (the name lock's wait ran out
//! while the first was cut off: a partition it has not noticed) share one
//! ownership store. Each runs on its own in-memory network, so neither
//! hears the other: the second sees a record under its own name.
//!
//! Each entity keeps a fencing counter in the store (revision-checked,
//! as in `partition.rs`): on activation it takes the counter, and every
//! message it handles writes it expecting its token. Two live instances
//! of the entity make one of those writes fail: counted.
//!
//! Mutation: compare only the name in the coordinator (`step`'s
//! `r.incarnation == self.incarnation` dropped): the second process
//! adopts the first's record without rewriting it, both deliver, and
//! the fencing counter sees two live instances.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use troupe::{Actor, Context};
use troupe_cluster::Cluster;
use troupe_remote::remote;
use troupe_remote::transport::memory::MemoryNetwork;
use troupe_sharding::ownership::{MemoryOwnership, OwnershipStore, StoreError};
use troupe_sharding::{ClusterSharding, Sharding};

const FENCE: &str = "fence";

#[remote("sharding.incarnation.Hit")]
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Hit;

static VIOLATIONS: AtomicU64 = AtomicU64::new(0);
static HANDLED: AtomicU64 = AtomicU64::new(0);

struct Fenced {
    store: Arc<MemoryOwnership>,
    token: u64,
}

impl Fenced {
    fn fence(&mut self) {
        match self.store.claim(FENCE, 0, "x", self.token) {
            Ok(t) => self.token = t,
            Err(StoreError::Conflict) => {
                VIOLATIONS.fetch_add(1, Ordering::Relaxed);
                // Count once per overlap, then follow the counter.
                self.token = self.store.owner(FENCE, 0).map_or(0, |o| o.revision);
            }
            Err(e) => panic!("fencing counter: {e}"),
        }
    }
}

impl Actor for Fenced {
    type Msg = Hit;
    fn started(&mut self, _: &mut Context<'_, Self>) {
        self.token = self.store.owner(FENCE, 0).expect("read").revision;
        self.fence();
    }
    fn handle(&mut self, _: Hit, _: &mut Context<'_, Self>) {
        self.fence();
        HANDLED.fetch_add(1, Ordering::Relaxed);
    }
}

fn node(store: &Arc<MemoryOwnership>) -> (Arc<Cluster>, Sharding<Fenced>) {
    let net = MemoryNetwork::new();
    let cluster = Arc::new(
        Cluster::builder_on(net.connect(), "a")
            .insecure()
            .heartbeat(Duration::from_millis(100))
            .connect()
            .expect("connect"),
    );
    let fence = store.clone();
    let sharding = cluster
        .sharding("inc", move |_| Fenced {
            store: fence.clone(),
            token: 0,
        })
        .tell::<Hit>()
        .shards(1)
        .tick(Duration::from_millis(50))
        .idle_timeout(None)
        .store(store.clone())
        .start()
        .expect("start");
    (cluster, sharding)
}

fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    f()
}

#[test]
fn a_second_process_under_one_name_never_runs_an_entity_beside_the_first() {
    let store = Arc::new(MemoryOwnership::new());
    let (c1, s1) = node(&store);
    assert!(wait_until(Duration::from_secs(20), || {
        let _ = s1.entity("e").tell(Hit);
        HANDLED.load(Ordering::Relaxed) > 0
    }));
    let first = store.owner("inc", 0).expect("record");
    assert!(first.is("a", c1.incarnation()), "{first:?}");

    // The second process under the same name, cut off from the first.
    let (c2, s2) = node(&store);
    assert_ne!(c1.incarnation(), c2.incarnation());
    let end = Instant::now() + Duration::from_secs(3);
    while Instant::now() < end {
        let _ = s1.entity("e").tell(Hit);
        let _ = s2.entity("e").tell(Hit);
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(
        VIOLATIONS.load(Ordering::Relaxed),
        0,
        "two live instances of one entity (handled {})",
        HANDLED.load(Ordering::Relaxed)
    );
    let record = store.owner("inc", 0).expect("record");
    assert!(
        record.revision > first.revision && !record.is("a", 0),
        "the record was claimed anew under an incarnation: {record:?}"
    );
    drop((s2, s1, c2, c1));
}
