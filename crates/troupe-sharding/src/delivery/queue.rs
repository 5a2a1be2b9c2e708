//! The durable producer queue: a key-value bucket of the cluster's
//! transport per producer (over NATS a JetStream stream,
//! `KV_troupe_producer_<id>`), holding every message accepted and not yet
//! confirmed.
//!
//! Protocol:
//! 1. *Store.* Before `send` returns `Ok`, the message is put under
//!    `m.<epoch>.<seq>` (both 16 hex digits): a record of its entity,
//!    epoch, sequence number and postcard bytes. A put that fails is
//!    reported to the caller and the message is not accepted.
//! 2. *Remove.* Once confirmed, its key is deleted (after the
//!    confirmation; a delete that fails leaves a record that a restart
//!    resends, which the entity answers as a duplicate or as stale).
//! 3. *Load.* A producer that starts with the queue reads every live
//!    record, sorted by entity, epoch and sequence number, and resends
//!    them before anything new in their streams.
//!
//! Records read back are checked: one that does not decode is counted,
//! logged and left alone (never delivered, never deleted).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use troupe_remote::transport::kv::{Bucket, BucketConfig, KvError};
use troupe_remote::transport::Transport;

/// One stored message, read back.
pub(crate) struct Stored {
    pub key: String,
    pub entity: String,
    pub epoch: u64,
    pub seq: u64,
    pub msg: Vec<u8>,
}

#[derive(Serialize, Deserialize)]
struct Record<'a> {
    entity: &'a str,
    epoch: u64,
    seq: u64,
    msg: &'a [u8],
}

#[derive(Deserialize)]
struct OwnedRecord {
    entity: String,
    epoch: u64,
    seq: u64,
    msg: Vec<u8>,
}

/// The bucket of producer `id`.
pub(crate) fn bucket_name(id: &str) -> String {
    format!("troupe_producer_{id}")
}

/// The key of a message.
pub(crate) fn key(epoch: u64, seq: u64) -> String {
    format!("m.{epoch:016x}.{seq:016x}")
}

/// One producer's queue.
pub(crate) struct Queue {
    bucket: Bucket,
}

impl Queue {
    /// Opens (or creates) producer `id`'s bucket.
    pub(crate) async fn open(
        transport: &Arc<dyn Transport>,
        id: &str,
        replicas: usize,
    ) -> Result<Queue, KvError> {
        let config = BucketConfig {
            name: bucket_name(id),
            max_age: Duration::ZERO,
            replicas,
        };
        let bucket = transport.key_value(&config).await?;
        Ok(Queue { bucket })
    }

    /// Every live record, sorted by entity, epoch and sequence number;
    /// and how many could not be read.
    pub(crate) async fn load(&self) -> Result<(Vec<Stored>, u64), KvError> {
        let keys: Vec<String> = self.bucket.keys().await?.collect().await;
        let mut out = Vec::with_capacity(keys.len());
        let mut bad = 0u64;
        for k in keys {
            let Some(entry) = self.bucket.get_leader(&k).await? else {
                continue;
            };
            match postcard::from_bytes::<OwnedRecord>(&entry.value) {
                Ok(r) if key(r.epoch, r.seq) == k => out.push(Stored {
                    key: k,
                    entity: r.entity,
                    epoch: r.epoch,
                    seq: r.seq,
                    msg: r.msg,
                }),
                _ => bad += 1,
            }
        }
        out.sort_by(|a, b| (&a.entity, a.epoch, a.seq).cmp(&(&b.entity, b.epoch, b.seq)));
        Ok((out, bad))
    }

    /// Stores one message; its key.
    pub(crate) async fn store(
        &self,
        entity: &str,
        epoch: u64,
        seq: u64,
        msg: &[u8],
    ) -> Result<String, KvError> {
        let value = postcard::to_allocvec(&Record {
            entity,
            epoch,
            seq,
            msg,
        })
        .map_err(|e| KvError::Other(e.to_string()))?;
        let k = key(epoch, seq);
        self.bucket.put(&k, Bytes::from(value)).await?;
        Ok(k)
    }

    /// Deletes a confirmed message's record.
    pub(crate) async fn remove(&self, key: &str) -> Result<(), KvError> {
        self.bucket.delete(key, None).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_remote::transport::memory::MemoryNetwork;

    #[test]
    fn records_come_back_sorted_and_removed_ones_do_not() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let t: Arc<dyn Transport> = Arc::new(MemoryNetwork::new().connect());
            let q = Queue::open(&t, "p1", 1).await.expect("open");
            let k2 = q.store("b", 9, 2, b"two").await.expect("store");
            q.store("b", 9, 1, b"one").await.expect("store");
            q.store("a", 3, 7, b"seven").await.expect("store");
            q.store("b", 9, 3, b"three").await.expect("store");
            q.remove(&k2).await.expect("remove");
            let (got, bad) = q.load().await.expect("load");
            assert_eq!(bad, 0);
            let seen: Vec<(&str, u64, u64, &[u8])> = got
                .iter()
                .map(|s| (s.entity.as_str(), s.epoch, s.seq, s.msg.as_slice()))
                .collect();
            assert_eq!(
                seen,
                vec![
                    ("a", 3, 7, &b"seven"[..]),
                    ("b", 9, 1, &b"one"[..]),
                    ("b", 9, 3, &b"three"[..]),
                ]
            );
        });
    }
}
