//! The key-value bucket's conditional writes keep one contract on every
//! transport (`transport/kv.rs`): a stale revision is `WrongRevision`,
//! for `update` and for `delete`, on the memory store and over NATS.
//! (A delete's refusal over NATS once came back as `Other`, and a
//! graceful stop left its name's key behind: `troupe-cluster`'s
//! name_lock test.)

use std::time::Duration;

use bytes::Bytes;
use troupe_remote::transport::kv::{Bucket, BucketConfig, KvError};
use troupe_remote::transport::memory::MemoryNetwork;
use troupe_remote::transport::nats::NatsOptions;
use troupe_remote::transport::Transport;
use troupe_test_nats::NatsServer;

fn config() -> BucketConfig {
    BucketConfig {
        name: "contract".to_string(),
        max_age: Duration::ZERO,
        replicas: 1,
    }
}

async fn conditional_writes(kv: Bucket) {
    let v = |s: &'static str| Bytes::from_static(s.as_bytes());
    let r1 = kv.create("k", v("one")).await.expect("create");
    assert_eq!(kv.create("k", v("two")).await, Err(KvError::Exists));
    let r2 = kv.update("k", v("two"), r1).await.expect("update at r1");
    assert_eq!(
        kv.update("k", v("three"), r1).await,
        Err(KvError::WrongRevision),
        "an update at a stale revision"
    );
    assert_eq!(
        kv.delete("k", Some(r1)).await,
        Err(KvError::WrongRevision),
        "a delete at a stale revision"
    );
    let now = kv.get_leader("k").await.expect("get").expect("live");
    assert_eq!((now.revision, now.value), (r2, v("two")));
    kv.delete("k", Some(r2)).await.expect("delete at r2");
    assert!(kv.get_leader("k").await.expect("get").is_none());
    // A deleted key can be created again.
    kv.create("k", v("four"))
        .await
        .expect("create after delete");
}

fn on_runtime(f: impl std::future::Future<Output = ()>) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f);
}

#[test]
fn the_memory_bucket_keeps_the_contract() {
    on_runtime(async {
        let t = MemoryNetwork::new().connect();
        conditional_writes(t.key_value(&config()).await.expect("bucket")).await;
    });
}

#[test]
fn the_nats_bucket_keeps_the_contract() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    on_runtime(async move {
        let t = NatsOptions::new(server.url())
            .connect("contract", "n1")
            .await
            .expect("connect");
        conditional_writes(t.key_value(&config()).await.expect("bucket")).await;
    });
}
