//! The [`OwnershipStore`] on a key-value bucket of the cluster node's
//! transport ([`troupe_remote::transport::Transport::key_value`]): a
//! JetStream KV bucket over NATS, a map with the same rules on the memory
//! transport.
//!
//! One bucket per cluster, `troupe-shards-<cluster>`, values kept for
//! ever, on as many JetStream replicas as the node that created it asked
//! for ([`BucketOwnership::open_with_replicas`]; 3 on a 3-server cluster
//! keeps every record through one server's death). Owner records are `<kind>.owner.<shard>`,
//! holding `node/incarnation`, written only by a
//! conditional write: `create` when the claimer expects no record
//! (revision 0), `update(key, value, expected)` otherwise; the bucket
//! refuses either unless the key is as expected, which is the
//! compare-and-set every claim and release relies on. A release writes an
//! empty value (the key is never deleted, so its revision only grows).
//! Remembered ids are `<kind>.entities.<shard>`, a postcard list with the
//! writer's token, written revision-checked by the shard's owner (see
//! [`OwnershipStore::remember`]).
//!
//! Every read that decides ownership (the owner records, the member
//! list, the remembered list before its write) is answered by the
//! bucket stream's leader ([`KvBucket::get_leader`](troupe_remote::transport::kv::KvBucket::get_leader)),
//! not by JetStream's direct get, which any replica may answer from a
//! state behind the leader's.
//!
//! Calls block: each runs its future on the process's I/O runtime
//! ([`troupe_remote::runtime::handle`]) and waits for it with a timeout,
//! so they must not be made from one of that runtime's threads (the
//! coordinator and the region actor run on threads of their own).

use std::time::Duration;

use bytes::Bytes;
use futures::future::join_all;
use tokio::runtime::Handle;
use troupe_cluster::Cluster;
use troupe_remote::transport::kv::{Bucket, BucketConfig, KvEntry, KvError};

use super::{decode_ids, decode_remembered, encode_ids, members_key, owner_key};
use super::{remember_fenced, remembered_key};
use super::{OwnershipStore, ShardOwner, StoreError};

/// Shard ownership in a key-value bucket of the cluster's transport.
pub struct BucketOwnership {
    bucket: Bucket,
    handle: Handle,
    timeout: Duration,
}

fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

impl BucketOwnership {
    /// Opens (or creates) the cluster's bucket on the cluster node's
    /// transport. Fails if the transport has no key-value store (over
    /// NATS: JetStream is off, `nats-server -js`).
    pub fn open(cluster: &Cluster) -> Result<Self, StoreError> {
        Self::open_with_replicas(cluster, 1)
    }

    /// As [`open`](Self::open), creating a missing bucket with `replicas`
    /// JetStream replicas (1 to 5); an existing bucket keeps its count.
    pub fn open_with_replicas(cluster: &Cluster, replicas: usize) -> Result<Self, StoreError> {
        let transport = cluster.node().transport().clone();
        let handle = troupe_remote::runtime::handle().map_err(unavailable)?;
        let timeout = Duration::from_secs(5);
        let config = BucketConfig {
            name: format!("troupe-shards-{}", cluster.node().cluster()),
            max_age: Duration::ZERO,
            replicas,
        };
        let bucket = block(&handle, timeout, async move {
            transport.key_value(&config).await.map_err(|e| {
                unavailable(format!(
                    "cannot open the bucket {} (over NATS: is JetStream on?): {e}",
                    config.name
                ))
            })
        })??;
        Ok(BucketOwnership {
            bucket,
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

fn record(e: Option<KvEntry>) -> ShardOwner {
    match e {
        None => ShardOwner::NONE,
        Some(e) => ShardOwner::parse(&e.value, e.revision),
    }
}

/// The conditional write: create when `expected` is 0, update otherwise.
async fn write(bucket: &Bucket, key: &str, value: Bytes, expected: u64) -> Result<u64, StoreError> {
    let r = if expected == 0 {
        bucket.create(key, value).await
    } else {
        bucket.update(key, value, expected).await
    };
    r.map_err(|e| match e {
        KvError::Exists | KvError::WrongRevision => StoreError::Conflict,
        e => unavailable(e),
    })
}

impl OwnershipStore for BucketOwnership {
    fn owners(&self, kind: &str, shards: u32) -> Result<Vec<ShardOwner>, StoreError> {
        let bucket = self.bucket.clone();
        let keys: Vec<String> = (0..shards).map(|s| owner_key(kind, s)).collect();
        block(&self.handle, self.timeout, async move {
            let all = join_all(keys.iter().map(|k| bucket.get_leader(k))).await;
            all.into_iter()
                .map(|r| r.map(record).map_err(unavailable))
                .collect()
        })?
    }

    fn owner(&self, kind: &str, shard: u32) -> Result<ShardOwner, StoreError> {
        let bucket = self.bucket.clone();
        let key = owner_key(kind, shard);
        block(&self.handle, self.timeout, async move {
            bucket
                .get_leader(&key)
                .await
                .map(record)
                .map_err(unavailable)
        })?
    }

    fn claim(&self, kind: &str, shard: u32, node: &str, expected: u64) -> Result<u64, StoreError> {
        let bucket = self.bucket.clone();
        let key = owner_key(kind, shard);
        let value = Bytes::copy_from_slice(node.as_bytes());
        block(&self.handle, self.timeout, async move {
            write(&bucket, &key, value, expected).await
        })?
    }

    fn release(&self, kind: &str, shard: u32, token: u64) -> Result<u64, StoreError> {
        let bucket = self.bucket.clone();
        let key = owner_key(kind, shard);
        block(&self.handle, self.timeout, async move {
            write(&bucket, &key, Bytes::new(), token).await
        })?
    }

    fn remembered(&self, kind: &str, shard: u32) -> Result<Vec<String>, StoreError> {
        let bucket = self.bucket.clone();
        let key = remembered_key(kind, shard);
        let e = block(&self.handle, self.timeout, async move {
            bucket.get(&key).await.map_err(unavailable)
        })??;
        match e {
            None => Ok(Vec::new()),
            Some(e) => decode_remembered(&e.value)
                .map(|(_, ids)| ids)
                .ok_or_else(|| unavailable("undecodable remembered ids")),
        }
    }

    fn remember(
        &self,
        kind: &str,
        shard: u32,
        token: u64,
        ids: &[String],
    ) -> Result<(), StoreError> {
        let key = remembered_key(kind, shard);
        let read = || {
            let (bucket, key) = (self.bucket.clone(), key.clone());
            block(&self.handle, self.timeout, async move {
                bucket.get_leader(&key).await.map_err(unavailable)
            })?
            .map(|e| e.map(|e| (e.value.to_vec(), e.revision)))
        };
        let write = |value: Vec<u8>, expected: u64| {
            let (bucket, key) = (self.bucket.clone(), key.clone());
            block(&self.handle, self.timeout, async move {
                write(&bucket, &key, Bytes::from(value), expected).await
            })?
        };
        remember_fenced(token, ids, read, write)
    }

    fn members(&self, kind: &str) -> Result<(Vec<String>, u64), StoreError> {
        let bucket = self.bucket.clone();
        let key = members_key(kind);
        let e = block(&self.handle, self.timeout, async move {
            bucket.get_leader(&key).await.map_err(unavailable)
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
        let bucket = self.bucket.clone();
        let key = members_key(kind);
        block(&self.handle, self.timeout, async move {
            write(&bucket, &key, Bytes::from(b), expected).await
        })?
    }
}
