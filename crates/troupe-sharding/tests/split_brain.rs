//! A partition in which both sides still reach the ownership store: three
//! nodes on an in-memory network split into {a, b} and {c}, the store
//! (the network's key-value buckets) shared by both. Without a split-brain
//! strategy each side takes the other's shards over, again and again (the
//! fencing keeps one live instance per entity, but shards move instead of
//! serving); with `SplitBrain::KeepMajority`, c leaves the quorum and gives
//! its shards up, a and b keep them all, and once the partition heals c
//! joins again and gets its share back.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use troupe_cluster::{Cluster, SplitBrain};
use troupe_remote::transport::memory::MemoryNetwork;
use troupe_sharding::ownership::bucket::BucketOwnership;
use troupe_sharding::ownership::OwnershipStore;
use troupe_sharding::Sharding;

const ASK: Duration = Duration::from_secs(5);
const LIMIT: Duration = Duration::from_secs(30);

struct Three {
    net: MemoryNetwork,
    ids: [u64; 3],
    cs: Vec<Arc<Cluster>>,
    ss: Vec<Sharding<Counter>>,
    store: BucketOwnership,
    tracker: Tracker,
}

fn three(strategy: SplitBrain) -> Three {
    let net = MemoryNetwork::new();
    let tracker = Tracker::default();
    let mut ids = [0; 3];
    let mut cs = Vec::new();
    for (i, name) in ["a", "b", "c"].into_iter().enumerate() {
        let t = net.connect();
        ids[i] = t.id();
        cs.push(Arc::new(
            Cluster::builder_on(t, name)
                .insecure()
                .heartbeat(HB)
                .split_brain(strategy)
                .connect()
                .expect("connect"),
        ));
    }
    let ss = start_settled(&cs, &tracker);
    let store = BucketOwnership::open(&cs[0]).expect("store");
    Three {
        net,
        ids,
        cs,
        ss,
        store,
        tracker,
    }
}

impl Three {
    fn owned_by(&self, node: &str) -> usize {
        self.store
            .owners("counter", SHARDS)
            .expect("owners")
            .iter()
            .filter(|o| o.node.as_deref() == Some(node))
            .count()
    }

    fn split(&self) {
        self.net
            .partition(&[&[self.ids[0], self.ids[1]], &[self.ids[2]]]);
    }

    /// Takeovers on (a and b, c).
    fn takeovers(&self) -> (u64, u64) {
        let t = |i: usize| self.ss[i].stats().takeovers;
        (t(0) + t(1), t(2))
    }

    /// Every entity answers through `via`.
    fn all_answer(&self, via: usize) {
        for i in 0..20 {
            let id = format!("e-{i}");
            assert!(
                self.ss[via].entity(&id).ask(Count, ASK).is_ok(),
                "{id} through {via}: {:?}",
                self.ss[via].stats()
            );
        }
    }
}

#[test]
fn keep_majority_leaves_the_shards_with_the_majority_until_healed() {
    let t = three(SplitBrain::KeepMajority);
    t.all_answer(0);
    assert!(t.owned_by("c") > 0, "c took its share at the start");
    t.split();
    // c hears nobody: it leaves the quorum and gives its shards up; a
    // and b take them over.
    assert!(
        wait_until(LIMIT, || !t.cs[2].in_quorum()
            && t.ss[2].stats().shards_owned == 0
            && t.owned_by("a") + t.owned_by("b") == SHARDS as usize),
        "a {} b {} c {} shards; c in quorum: {}",
        t.owned_by("a"),
        t.owned_by("b"),
        t.owned_by("c"),
        t.cs[2].in_quorum()
    );
    assert!(t.cs[0].in_quorum() && t.cs[1].in_quorum());
    t.all_answer(0);
    // And it stays so: c takes nothing back while the partition lasts.
    let before = t.takeovers();
    std::thread::sleep(HB * 10);
    assert_eq!(t.takeovers(), before, "shards moved during the partition");
    assert_eq!(t.owned_by("c"), 0);
    assert_eq!(t.cs[2].stats().quorum_left, 1);
    // Healed: c joins again and gets shards back by hand-over.
    t.net.heal_partition();
    assert!(
        wait_until(LIMIT, || t.cs[2].in_quorum() && t.owned_by("c") > 0),
        "c did not come back: owns {}, in quorum {}",
        t.owned_by("c"),
        t.cs[2].in_quorum()
    );
    t.all_answer(2);
    assert_eq!(t.tracker.max_live(), 1, "never two live activations");
    assert_eq!(t.takeovers().1, 0, "c never took a shard over");
}

/// The control: the same partition with no strategy moves shards back
/// and forth between the sides, each taking the other's over (the fencing
/// still keeps one live instance per entity).
#[test]
fn without_a_strategy_both_sides_take_each_others_shards() {
    let t = three(SplitBrain::Off);
    t.all_answer(0);
    t.split();
    assert!(
        wait_until(LIMIT, || {
            let (ab, c) = t.takeovers();
            ab > 0 && c > 0
        }),
        "takeovers (a and b, c): {:?}",
        t.takeovers()
    );
    assert!(t.cs[2].in_quorum(), "Off never leaves the quorum");
    t.net.heal_partition();
    assert_eq!(t.tracker.max_live(), 1, "never two live activations");
}
