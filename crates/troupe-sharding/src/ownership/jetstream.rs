//! The [`OwnershipStore`] on a JetStream KV bucket: the only module of
//! this crate that names an async-nats type.
//!
//! One bucket per cluster, `troupe-shards-<cluster>` (history 1, file
//! storage), on the cluster node's own NATS connection. Owner records are
//! `<kind>.owner.<shard>`, written with `update(key, value, expected)`:
//! the server refuses the write unless the key's last revision is
//! `expected` (0: the key must not exist), which is the compare-and-set
//! every claim and release relies on. Remembered ids are
//! `<kind>.entities.<shard>`, a postcard list, put by the shard's owner.
//!
//! Calls block: each runs its future on the process's I/O runtime
//! ([`troupe_remote::runtime::handle`]) and waits for it with a timeout,
//! so they must not be made from one of that runtime's threads (the
//! coordinator and the region actor run on threads of their own).

use std::time::Duration;

use async_nats::jetstream::{self, kv, stream};
use bytes::Bytes;
use futures::future::join_all;
use tokio::runtime::Handle;
use troupe_cluster::Cluster;
use troupe_remote::transport::nats::NatsTransport;

use super::{decode_ids, encode_ids, members_key, owner_key, remembered_key};
use super::{OwnershipStore, ShardOwner, StoreError};

/// Shard ownership in a JetStream KV bucket.
pub struct JetStreamOwnership {
    kv: kv::Store,
    handle: Handle,
    timeout: Duration,
}

fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

impl JetStreamOwnership {
    /// Opens (or creates) the cluster's bucket, on the cluster node's NATS
    /// connection. Fails if the node does not run on NATS or JetStream is
    /// off (`nats-server -js`).
    pub fn open(cluster: &Cluster, replicas: usize) -> Result<Self, StoreError> {
        let transport = cluster.node().transport();
        let client = transport
            .as_any()
            .downcast_ref::<NatsTransport>()
            .ok_or_else(|| unavailable("the cluster's node does not run on NATS"))?
            .client()
            .clone();
        let handle = troupe_remote::runtime::handle().map_err(unavailable)?;
        let timeout = Duration::from_secs(5);
        let bucket = format!("troupe-shards-{}", cluster.node().cluster());
        let kv = block(&handle, timeout, async move {
            let js = jetstream::new(client);
            let config = kv::Config {
                bucket: bucket.clone(),
                history: 1,
                storage: stream::StorageType::File,
                num_replicas: replicas.max(1),
                ..Default::default()
            };
            match js.create_key_value(config).await {
                Ok(kv) => Ok(kv),
                Err(_) => js.get_key_value(&bucket).await.map_err(|e| {
                    unavailable(format!(
                        "cannot open the KV bucket {bucket} (is JetStream on?): {e}"
                    ))
                }),
            }
        })??;
        Ok(JetStreamOwnership {
            kv,
            handle,
            timeout,
        })
    }
}

/// Runs `f` on the I/O runtime and waits at most `timeout` for it.
fn block<T: Send + 'static>(
    handle: &Handle,
    timeout: Duration,
    f: impl std::future::Future<Output = T> + Send + 'static,
) -> Result<T, StoreError> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    handle.spawn(async move {
        let r = tokio::time::timeout(timeout, f).await;
        let _ = tx.send(r);
    });
    match rx.recv() {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(_)) => Err(unavailable(format!("no answer within {timeout:?}"))),
        Err(_) => Err(unavailable("the I/O runtime dropped the call")),
    }
}

fn record(e: Option<kv::Entry>) -> ShardOwner {
    match e {
        None => ShardOwner::NONE,
        Some(e) => ShardOwner {
            node: std::str::from_utf8(&e.value)
                .ok()
                .filter(|n| !n.is_empty())
                .map(str::to_string),
            revision: e.revision,
        },
    }
}

async fn write(
    kv: &kv::Store,
    key: String,
    value: Bytes,
    expected: u64,
) -> Result<u64, StoreError> {
    match kv.update(&key, value, expected).await {
        Ok(r) => Ok(r),
        Err(e) => {
            let text = e.to_string();
            if e.kind() == kv::UpdateErrorKind::WrongLastRevision
                || text.contains("wrong last sequence")
            {
                Err(StoreError::Conflict)
            } else {
                Err(unavailable(text))
            }
        }
    }
}

impl OwnershipStore for JetStreamOwnership {
    fn owners(&self, kind: &str, shards: u32) -> Result<Vec<ShardOwner>, StoreError> {
        let kv = self.kv.clone();
        let keys: Vec<String> = (0..shards).map(|s| owner_key(kind, s)).collect();
        block(&self.handle, self.timeout, async move {
            let all = join_all(keys.into_iter().map(|k| {
                let kv = kv.clone();
                async move { kv.entry(k).await }
            }))
            .await;
            all.into_iter()
                .map(|r| r.map(record).map_err(unavailable))
                .collect()
        })?
    }

    fn owner(&self, kind: &str, shard: u32) -> Result<ShardOwner, StoreError> {
        let kv = self.kv.clone();
        let key = owner_key(kind, shard);
        block(&self.handle, self.timeout, async move {
            kv.entry(key).await.map(record).map_err(unavailable)
        })?
    }

    fn claim(&self, kind: &str, shard: u32, node: &str, expected: u64) -> Result<u64, StoreError> {
        let kv = self.kv.clone();
        let key = owner_key(kind, shard);
        let value = Bytes::copy_from_slice(node.as_bytes());
        block(&self.handle, self.timeout, async move {
            write(&kv, key, value, expected).await
        })?
    }

    fn release(&self, kind: &str, shard: u32, token: u64) -> Result<u64, StoreError> {
        let kv = self.kv.clone();
        let key = owner_key(kind, shard);
        block(&self.handle, self.timeout, async move {
            write(&kv, key, Bytes::new(), token).await
        })?
    }

    fn remembered(&self, kind: &str, shard: u32) -> Result<Vec<String>, StoreError> {
        let kv = self.kv.clone();
        let key = remembered_key(kind, shard);
        let bytes = block(&self.handle, self.timeout, async move {
            kv.get(key).await.map_err(unavailable)
        })??;
        match bytes {
            None => Ok(Vec::new()),
            Some(b) => decode_ids(&b).ok_or_else(|| unavailable("undecodable remembered ids")),
        }
    }

    fn remember(&self, kind: &str, shard: u32, ids: &[String]) -> Result<(), StoreError> {
        let b = encode_ids(ids).ok_or_else(|| unavailable("too many remembered ids"))?;
        let kv = self.kv.clone();
        let key = remembered_key(kind, shard);
        block(&self.handle, self.timeout, async move {
            kv.put(key, Bytes::from(b))
                .await
                .map(|_| ())
                .map_err(unavailable)
        })?
    }

    fn members(&self, kind: &str) -> Result<(Vec<String>, u64), StoreError> {
        let kv = self.kv.clone();
        let key = members_key(kind);
        let e = block(&self.handle, self.timeout, async move {
            kv.entry(key).await.map_err(unavailable)
        })??;
        match e {
            None => Ok((Vec::new(), 0)),
            Some(e) => decode_ids(&e.value)
                .map(|ids| (ids, e.revision))
                .ok_or_else(|| unavailable("undecodable member list")),
        }
    }

    fn set_members(&self, kind: &str, nodes: &[String], expected: u64) -> Result<u64, StoreError> {
        let b = encode_ids(nodes).ok_or_else(|| unavailable("member list too long"))?;
        let kv = self.kv.clone();
        let key = members_key(kind);
        block(&self.handle, self.timeout, async move {
            write(&kv, key, Bytes::from(b), expected).await
        })?
    }
}
