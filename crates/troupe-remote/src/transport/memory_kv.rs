//! The in-memory transport's key-value buckets: a map with revisions,
//! conditional writes, a max age and watches, kept by the
//! [`MemoryNetwork`](super::memory::MemoryNetwork) so every connection
//! sees one bucket per name (see [`kv`](super::kv) for the promises).
//!
//! Invariants:
//! - One lock holds the map, the revision counter and the watchers: a
//!   write takes the next revision and hands the entry to every watcher
//!   before it unlocks, so watchers see writes in revision order.
//! - A value older than `max_age` is treated as absent by `get`, `keys`
//!   and `create`, and dropped when met; no delete is announced for it,
//!   as JetStream announces none.
//! - A watcher whose stream was dropped is removed at the next write.
//! - Made for tests: a bucket ignores its connection's state (a
//!   connection taken down still reads and writes it), and remembers the
//!   last revision of every key ever deleted.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use parking_lot::Mutex;
use tokio::sync::mpsc;

use super::kv::{Bucket, KvBucket, KvEntry, KvError, KvKeys, KvOp, KvWatch};

struct Value {
    value: Bytes,
    revision: u64,
    at: Instant,
}

#[derive(Default)]
struct State {
    revision: u64,
    /// Live values; a deleted key keeps its last revision in `deleted`.
    values: HashMap<String, Value>,
    deleted: HashMap<String, u64>,
    watchers: Vec<mpsc::UnboundedSender<KvEntry>>,
}

struct MemBucket {
    max_age: Duration,
    state: Mutex<State>,
}

/// A new, empty bucket whose values live `max_age` (zero: for ever).
pub(super) fn bucket(max_age: Duration) -> Bucket {
    Arc::new(MemBucket {
        max_age,
        state: Mutex::new(State::default()),
    })
}

impl MemBucket {
    fn expired(&self, v: &Value, now: Instant) -> bool {
        !self.max_age.is_zero() && now.duration_since(v.at) > self.max_age
    }

    /// The key's last revision (live, deleted or expired), dropping an
    /// expired value; `live` says whether it holds a value.
    fn last(&self, st: &mut State, key: &str) -> (Option<u64>, bool) {
        let now = Instant::now();
        if let Some(v) = st.values.get(key) {
            if !self.expired(v, now) {
                return (Some(v.revision), true);
            }
            let rev = v.revision;
            st.values.remove(key);
            st.deleted.insert(key.to_string(), rev);
        }
        (st.deleted.get(key).copied(), false)
    }

    /// Writes under the lock: the new revision, announced to watchers.
    fn write(&self, st: &mut State, key: &str, value: Option<Bytes>) -> u64 {
        st.revision += 1;
        let revision = st.revision;
        let entry = KvEntry {
            key: key.to_string(),
            value: value.clone().unwrap_or_default(),
            revision,
            op: if value.is_some() {
                KvOp::Put
            } else {
                KvOp::Delete
            },
        };
        match value {
            Some(value) => {
                st.deleted.remove(key);
                st.values.insert(
                    key.to_string(),
                    Value {
                        value,
                        revision,
                        at: Instant::now(),
                    },
                );
            }
            None => {
                st.values.remove(key);
                st.deleted.insert(key.to_string(), revision);
            }
        }
        st.watchers.retain(|w| w.send(entry.clone()).is_ok());
        revision
    }
}

fn ready<T: Send + 'static>(r: T) -> BoxFuture<'static, T> {
    futures::future::ready(r).boxed()
}

impl KvBucket for MemBucket {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<KvEntry>, KvError>> {
        let mut st = self.state.lock();
        let (_, live) = self.last(&mut st, key);
        let entry = if live {
            st.values.get(key).map(|v| KvEntry {
                key: key.to_string(),
                value: v.value.clone(),
                revision: v.revision,
                op: KvOp::Put,
            })
        } else {
            None
        };
        ready(Ok(entry))
    }

    fn put<'a>(&'a self, key: &'a str, value: Bytes) -> BoxFuture<'a, Result<u64, KvError>> {
        let mut st = self.state.lock();
        ready(Ok(self.write(&mut st, key, Some(value))))
    }

    fn create<'a>(&'a self, key: &'a str, value: Bytes) -> BoxFuture<'a, Result<u64, KvError>> {
        let mut st = self.state.lock();
        let r = match self.last(&mut st, key) {
            (_, true) => Err(KvError::Exists),
            _ => Ok(self.write(&mut st, key, Some(value))),
        };
        ready(r)
    }

    fn update<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
        revision: u64,
    ) -> BoxFuture<'a, Result<u64, KvError>> {
        let mut st = self.state.lock();
        let r = match self.last(&mut st, key) {
            (Some(last), _) if last == revision => Ok(self.write(&mut st, key, Some(value))),
            (None, _) if revision == 0 => Ok(self.write(&mut st, key, Some(value))),
            _ => Err(KvError::WrongRevision),
        };
        ready(r)
    }

    fn delete<'a>(
        &'a self,
        key: &'a str,
        expected: Option<u64>,
    ) -> BoxFuture<'a, Result<(), KvError>> {
        let mut st = self.state.lock();
        let r = match (expected, self.last(&mut st, key)) {
            (Some(want), (last, _)) if last != Some(want) => Err(KvError::WrongRevision),
            _ => {
                self.write(&mut st, key, None);
                Ok(())
            }
        };
        ready(r)
    }

    fn keys(&self) -> BoxFuture<'_, Result<KvKeys, KvError>> {
        let st = self.state.lock();
        let now = Instant::now();
        let mut keys: Vec<String> = st
            .values
            .iter()
            .filter(|(_, v)| !self.expired(v, now))
            .map(|(k, _)| k.clone())
            .collect();
        keys.sort();
        ready(Ok(futures::stream::iter(keys).boxed()))
    }

    fn watch_all(&self) -> BoxFuture<'_, Result<KvWatch, KvError>> {
        let (tx, mut rx) = mpsc::unbounded_channel();
        self.state.lock().watchers.push(tx);
        let stream = futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed();
        ready(Ok(stream))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::tests::rt;

    #[test]
    fn conditional_writes_keep_the_rules_and_the_watch_sees_them_in_order() {
        rt().block_on(async {
            let kv = bucket(Duration::ZERO);
            let mut watch = kv.watch_all().await.unwrap();
            let r1 = kv.create("n.a", Bytes::from_static(b"1")).await.unwrap();
            assert_eq!(
                kv.create("n.a", Bytes::from_static(b"2")).await,
                Err(KvError::Exists)
            );
            assert_eq!(
                kv.update("n.a", Bytes::from_static(b"2"), r1 + 7).await,
                Err(KvError::WrongRevision)
            );
            let r2 = kv
                .update("n.a", Bytes::from_static(b"2"), r1)
                .await
                .unwrap();
            assert_eq!(
                kv.delete("n.a", Some(r1)).await,
                Err(KvError::WrongRevision)
            );
            let got = kv.get("n.a").await.unwrap().unwrap();
            assert_eq!((&got.value[..], got.revision), (&b"2"[..], r2));
            kv.delete("n.a", Some(r2)).await.unwrap();
            assert_eq!(kv.get("n.a").await.unwrap(), None);
            // A deleted key may be created again.
            kv.create("n.a", Bytes::from_static(b"3")).await.unwrap();
            let mut seen = Vec::new();
            for _ in 0..4 {
                let e = watch.next().await.unwrap();
                seen.push((e.op, e.revision));
            }
            assert_eq!(
                seen,
                [
                    (KvOp::Put, 1),
                    (KvOp::Put, 2),
                    (KvOp::Delete, 3),
                    (KvOp::Put, 4)
                ]
            );
            let keys: Vec<String> = kv.keys().await.unwrap().collect().await;
            assert_eq!(keys, ["n.a"]);
        });
    }

    #[test]
    fn values_older_than_max_age_are_gone() {
        rt().block_on(async {
            let kv = bucket(Duration::from_millis(20));
            kv.put("k", Bytes::from_static(b"v")).await.unwrap();
            assert!(kv.get("k").await.unwrap().is_some());
            tokio::time::sleep(Duration::from_millis(60)).await;
            assert_eq!(kv.get("k").await.unwrap(), None);
            let keys: Vec<String> = kv.keys().await.unwrap().collect().await;
            assert!(keys.is_empty());
            kv.create("k", Bytes::from_static(b"w")).await.unwrap();
        });
    }
}
