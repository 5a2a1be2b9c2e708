//! JetStream key-value buckets behind [`KvBucket`]: the NATS transport's
//! store (see [`kv`](super::kv) for what a bucket promises).
//!
//! Opening tries the bucket first and creates it only if that fails, so a
//! user whose operator created the bucket needs no `STREAM.CREATE`
//! permission; a create that fails (another node made it meanwhile) is
//! followed by one more open. Buckets keep one value per key (history 1),
//! on `config.replicas` JetStream replicas (clamped to 1..=5) when created.
//! `get` is JetStream's direct get where the bucket allows it (any replica
//! answers); `get_leader` asks the stream leader (`STREAM.MSG.GET`).

use async_nats::jetstream::consumer::{pull, DeliverPolicy, ReplayPolicy};
use async_nats::jetstream::kv::{
    Config, CreateErrorKind, Entry, Operation, Store, UpdateErrorKind,
};
use async_nats::jetstream::stream::LastRawMessageErrorKind;
use async_nats::Client;
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};

use super::kv::{Bucket, BucketConfig, KvBucket, KvEntry, KvError, KvKeys, KvOp, KvWatch};

struct NatsBucket {
    store: Store,
}

fn other(e: impl std::fmt::Display) -> KvError {
    KvError::Other(e.to_string())
}

/// Opens (or creates) the bucket `config.name` through `client`.
pub(super) async fn open(client: Client, config: &BucketConfig) -> Result<Bucket, KvError> {
    let js = async_nats::jetstream::new(client);
    let store = match js.get_key_value(config.name.as_str()).await {
        Ok(store) => store,
        Err(_) => {
            let create = Config {
                bucket: config.name.clone(),
                history: 1,
                max_age: config.max_age,
                num_replicas: config.replicas.clamp(1, 5),
                ..Default::default()
            };
            match js.create_key_value(create).await {
                Ok(store) => store,
                Err(_) => js
                    .get_key_value(config.name.as_str())
                    .await
                    .map_err(other)?,
            }
        }
    };
    Ok(std::sync::Arc::new(NatsBucket { store }))
}

fn entry_of(e: Entry) -> KvEntry {
    KvEntry {
        key: e.key,
        value: e.value,
        revision: e.revision,
        op: match e.operation {
            Operation::Put => KvOp::Put,
            Operation::Delete | Operation::Purge => KvOp::Delete,
        },
    }
}

impl KvBucket for NatsBucket {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<KvEntry>, KvError>> {
        async move {
            let e = self.store.entry(key).await.map_err(other)?;
            Ok(e.map(entry_of).filter(|e| e.op == KvOp::Put))
        }
        .boxed()
    }

    fn get_leader<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<KvEntry>, KvError>> {
        async move {
            let subject = format!("{}{key}", self.store.prefix);
            let m = match self
                .store
                .stream
                .get_last_raw_message_by_subject(&subject)
                .await
            {
                Ok(m) => m,
                Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => return Ok(None),
                Err(e) => return Err(other(e)),
            };
            // A delete or purge is a message with this header (the KV
            // convention async-nats reads the same way).
            let deleted = m
                .headers
                .get("KV-Operation")
                .is_some_and(|v| matches!(v.as_str(), "DEL" | "PURGE"));
            Ok((!deleted).then(|| KvEntry {
                key: key.to_string(),
                value: m.payload,
                revision: m.sequence,
                op: KvOp::Put,
            }))
        }
        .boxed()
    }

    fn put<'a>(&'a self, key: &'a str, value: Bytes) -> BoxFuture<'a, Result<u64, KvError>> {
        async move { self.store.put(key, value).await.map_err(other) }.boxed()
    }

    fn create<'a>(&'a self, key: &'a str, value: Bytes) -> BoxFuture<'a, Result<u64, KvError>> {
        async move {
            self.store.create(key, value).await.map_err(|e| {
                if e.kind() == CreateErrorKind::AlreadyExists {
                    KvError::Exists
                } else {
                    other(e)
                }
            })
        }
        .boxed()
    }

    fn update<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
        revision: u64,
    ) -> BoxFuture<'a, Result<u64, KvError>> {
        async move {
            self.store.update(key, value, revision).await.map_err(|e| {
                if e.kind() == UpdateErrorKind::WrongLastRevision {
                    KvError::WrongRevision
                } else {
                    other(e)
                }
            })
        }
        .boxed()
    }

    fn delete<'a>(
        &'a self,
        key: &'a str,
        expected: Option<u64>,
    ) -> BoxFuture<'a, Result<(), KvError>> {
        async move {
            // A delete's error kind is the update's (`DeleteErrorKind`
            // is an alias of `UpdateErrorKind` in async-nats).
            self.store
                .delete_expect_revision(key, expected)
                .await
                .map_err(|e| {
                    if e.kind() == UpdateErrorKind::WrongLastRevision {
                        KvError::WrongRevision
                    } else {
                        other(e)
                    }
                })
        }
        .boxed()
    }

    fn keys(&self) -> BoxFuture<'_, Result<KvKeys, KvError>> {
        async move {
            // Not `Store::keys`: it reads a *push* consumer that it
            // subscribes to only after creating it, so what the server
            // pushes in between is lost and the listing waits for the
            // ordered consumer's missed heartbeats (~10 s; seen in 1 of ~20
            // registry syncs on a loaded 2-core machine). A pull consumer
            // gets only what it asked for, after it subscribed.
            let consumer = self
                .store
                .stream
                .create_consumer(pull::OrderedConfig {
                    filter_subject: format!("{}>", self.store.prefix),
                    headers_only: true,
                    replay_policy: ReplayPolicy::Instant,
                    deliver_policy: DeliverPolicy::LastPerSubject,
                    ..Default::default()
                })
                .await
                .map_err(other)?;
            // The consumer holds one message per live subject when it is
            // made (`num_pending`): read exactly those. Writes made after
            // it may follow on the consumer, and their `pending` is no end
            // marker (seen: a listing that waited 3 s past its last key);
            // the watch that runs beside a listing sees those writes.
            let count = consumer.cached_info().num_pending as usize;
            if count == 0 {
                return Ok(futures::stream::empty().boxed());
            }
            let messages = consumer.messages().await.map_err(other)?;
            let prefix = self.store.prefix.clone();
            let keys = messages
                // An error item is the ordered consumer starting over; the
                // caller bounds the listing in time.
                .filter_map(|m| futures::future::ready(m.ok()))
                .take(count)
                .filter_map(move |message| {
                    let deleted = message
                        .headers
                        .as_ref()
                        .and_then(|h| h.get("KV-Operation"))
                        .is_some_and(|op| op.as_str() != "PUT");
                    let key = message
                        .subject
                        .strip_prefix(prefix.as_str())
                        .filter(|_| !deleted)
                        .map(str::to_string);
                    futures::future::ready(key)
                });
            Ok(keys.boxed())
        }
        .boxed()
    }

    fn watch_all(&self) -> BoxFuture<'_, Result<KvWatch, KvError>> {
        async move {
            let watch = self.store.watch_all().await.map_err(other)?;
            // The first error ends the stream: the watcher starts over.
            let entries = watch
                .take_while(|e| futures::future::ready(e.is_ok()))
                .filter_map(|e| async move { e.ok().map(entry_of) });
            Ok(entries.boxed())
        }
        .boxed()
    }
}
