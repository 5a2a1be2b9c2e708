//! D3 and D5 on a real JetStream bucket.
//!
//! D3: the reads that decide ownership (the coordinator's owner records
//! and member list, the region's fencing check) are answered by the
//! bucket stream's leader (`$JS.API.STREAM.MSG.GET`), never by a direct
//! get (`$JS.API.DIRECT.GET`), which any replica of an R3 bucket may
//! answer from a state behind the leader's. The test listens on both API
//! subjects of the ownership bucket while a node ticks and activates.
//!
//! D5: a deposed owner's remembered-entities write, under its older
//! token, is refused and leaves the new owner's list in place.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use troupe::{Actor, Context};
use troupe_cluster::Cluster;
use troupe_remote::remote;
use troupe_sharding::ownership::bucket::BucketOwnership;
use troupe_sharding::ownership::{OwnershipStore, StoreError};
use troupe_sharding::ClusterSharding;
use troupe_test_nats::NatsServer;

#[remote("sharding.leader.Ping")]
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Ping;

struct Quiet;
impl Actor for Quiet {
    type Msg = Ping;
    fn handle(&mut self, _: Ping, _: &mut Context<'_, Self>) {}
}

/// Counts the messages on `subject` seen through `cluster`'s transport.
fn count(cluster: &Cluster, subject: &str) -> Arc<AtomicU64> {
    let n = Arc::new(AtomicU64::new(0));
    let (t, subject, seen) = (
        cluster.node().transport().clone(),
        subject.to_string(),
        n.clone(),
    );
    let handle = troupe_remote::runtime::handle().expect("runtime");
    let sub = troupe_remote::runtime::block_on(&handle, async move { t.subscribe(&subject).await })
        .expect("runtime")
        .expect("subscribe");
    handle.spawn(async move {
        let mut sub = sub;
        while sub.next().await.is_some() {
            seen.fetch_add(1, Ordering::Relaxed);
        }
    });
    n
}

#[test]
fn ownership_reads_come_from_the_stream_leader() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let cluster = Arc::new(
        Cluster::builder(&server.url(), "l1")
            .insecure()
            .heartbeat(Duration::from_millis(200))
            .connect()
            .expect("connect"),
    );
    let stream = format!("KV_troupe-shards-{}", cluster.node().cluster());
    let direct = count(&cluster, &format!("$JS.API.DIRECT.GET.{stream}.>"));
    let direct_numbered = count(&cluster, &format!("$JS.API.DIRECT.GET.{stream}"));
    let leader = count(&cluster, &format!("$JS.API.STREAM.MSG.GET.{stream}"));
    let sharding = cluster
        .sharding("leader", |_| Quiet)
        .tell::<Ping>()
        .shards(8)
        .tick(Duration::from_millis(50))
        .start()
        .expect("start");
    for i in 0..20 {
        sharding.entity(&format!("e{i}")).tell(Ping).expect("tell");
    }
    std::thread::sleep(Duration::from_secs(1));
    let (d, l) = (
        direct.load(Ordering::Relaxed) + direct_numbered.load(Ordering::Relaxed),
        leader.load(Ordering::Relaxed),
    );
    assert!(l > 20, "the ticks read through the leader ({l} reads)");
    assert_eq!(d, 0, "{d} ownership reads were direct gets (any replica)");
}

#[test]
fn a_deposed_owner_cannot_overwrite_the_remembered_list() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let cluster = Cluster::builder(&server.url(), "r1")
        .insecure()
        .connect()
        .expect("connect");
    let store = BucketOwnership::open(&cluster).expect("bucket");
    store
        .remember("cart", 2, 5, &["old".into()])
        .expect("first owner");
    store
        .remember("cart", 2, 9, &["new".into()])
        .expect("new owner");
    assert_eq!(
        store.remember("cart", 2, 5, &["stale".into()]),
        Err(StoreError::Conflict),
        "the deposed owner's write"
    );
    assert_eq!(store.remembered("cart", 2).expect("read"), vec!["new"]);
}
