//! The registry's loops: `mirror` keeps the cache a mirror of the bucket
//! through its watch (re-syncing from a snapshot at every start of the
//! watch), and `refresh` re-puts this node's own entries every ttl/3 (see
//! [`crate::registry`] for the protocol).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use troupe_remote::transport::kv::KvOp;

use crate::bad_input::Inlet;
use crate::core::Inner;
use crate::wire::{self, decode, RegEntry};
use crate::ClusterError;

impl Inner {
    /// Re-reads the whole bucket into a fresh cache (the watch runs already).
    pub(crate) async fn sync_registry(self: Arc<Self>) -> Result<(), ClusterError> {
        let snapshot = tokio::time::timeout(Duration::from_secs(5), async {
            let mut keys = self.kv.keys().await.map_err(|e| e.to_string())?;
            let mut maps = crate::registry::Maps::default();
            while let Some(k) = keys.next().await {
                if wire::is_lock_key(&k) {
                    continue;
                }
                if let Ok(Some(e)) = self.kv.get(&k).await {
                    maps.apply(&k, e.revision, self.registry_value(&k, &e.value));
                }
            }
            Ok::<_, String>(maps)
        })
        .await
        .map_err(|_| ClusterError::Registry("registry snapshot took over 5 s".into()))?
        .map_err(ClusterError::Registry)?;
        // Entries of nodes this node knows are down are not resurrected.
        let mut live = snapshot;
        {
            let old = self.cache.maps.read();
            for (k, rev) in &old.deleted {
                live.apply(k, *rev, None);
            }
        }
        *self.cache.maps.write() = live;
        self.counters.resyncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    pub(crate) async fn mirror(self: Arc<Self>) {
        loop {
            let watch = self.kv.watch_all().await;
            match watch {
                Ok(mut w) => {
                    // A failed snapshot leaves the cache as it was, missing
                    // what was written before this watch began: start over.
                    if let Err(e) = self.clone().sync_registry().await {
                        tracing::warn!(node = %self.name, error = %e, "registry re-sync failed; retrying");
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        continue;
                    }
                    loop {
                        tokio::select! {
                            next = w.next() => match next {
                                Some(e) if wire::is_lock_key(&e.key) => {}
                                Some(e) => {
                                    let value = match e.op {
                                        KvOp::Put => self.registry_value(&e.key, &e.value),
                                        KvOp::Delete => None,
                                    };
                                    self.cache.maps.write().apply(&e.key, e.revision, value);
                                }
                                _ => break,
                            },
                            _ = self.resync.notified() => {
                                self.republish_own().await;
                                break;
                            }
                        }
                    }
                }
                Err(e) => {
                    tracing::debug!(node = %self.name, error = %e, "registry watch not started")
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A registry value, if it decodes and matches its key (a member key
    /// names its node and actor); `None` (a delete, for the cache) and
    /// counted otherwise.
    fn registry_value(&self, key: &str, value: &[u8]) -> Option<RegEntry> {
        let value = self.open(Inlet::RegistryValue, &wire::kv_seal_subject(key), value)?;
        let Some(e) = decode::<RegEntry>(value) else {
            self.bad(Inlet::RegistryValue, key, &"did not decode");
            return None;
        };
        if let Some(crate::registry::Key::Member { member, .. }) = crate::registry::Key::parse(key)
        {
            if member.split_once('.') != Some((e.node.as_str(), e.actor.as_str())) {
                self.bad(
                    Inlet::RegistryValue,
                    key,
                    &"names another node or actor than its key",
                );
                return None;
            }
        }
        Some(e)
    }

    pub(crate) async fn republish_own(&self) {
        let own: Vec<(String, Bytes)> = self
            .own
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (k, v) in own {
            let _ = self.kv.put(&k, v).await;
        }
    }

    pub(crate) async fn refresh(self: Arc<Self>) {
        let mut tick = tokio::time::interval(self.ttl / 3);
        tick.tick().await;
        loop {
            tick.tick().await;
            self.republish_own().await;
        }
    }
}
