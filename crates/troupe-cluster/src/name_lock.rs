//! One live process per node name: the name is held by a key of the
//! registry bucket, taken with an atomic create.
//!
//! Protocol (key `lock.<node>`, value the holder's incarnation):
//! 1. A starting node `create`s the key (expected revision 0). The bucket
//!    accepts one `create` of a key: of two processes that start under one
//!    name at the same instant, one gets it and the other `Exists`.
//! 2. `Exists`: the key names a holder that runs, or one that died without
//!    deleting it (a SIGKILL). The starter reads the key's revision from
//!    the stream leader, waits [`wait`] (twice the down detection, plus a
//!    heartbeat), and reads it again: a live holder has rewritten it
//!    meanwhile (step 3), so a new revision means the name is taken
//!    (`NodeError::NameTaken`). The same revision: the holder is dead,
//!    and the starter takes the key over with `update` expecting that
//!    revision (of two starters only one can; the other is refused).
//! 3. The holder rewrites the key every heartbeat interval, each write
//!    expecting its last revision. A write refused for a wrong revision
//!    means another process took the name (this one was cut off longer
//!    than the wait): it is logged, and the holder stops rewriting.
//! 4. A graceful stop (the `Cluster` dropped) deletes the key, expecting
//!    the last revision, so a restart under the name waits for nothing.
//!
//! The value is the holder's current incarnation: a process that rejoins
//! under a new incarnation (`liveness.rs`, "Down stays down") writes the
//! new one at its next rewrite.
//!
//! The registry's mirror skips these keys ([`wire::is_lock_key`]). The
//! bucket's `max_age` (the registry ttl) removes a key nobody rewrites.
//! Every process under one name must use the same heartbeat settings, so
//! that a holder's rewrites come within its successor's wait.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use troupe_remote::transport::kv::{Bucket, KvError};
use troupe_remote::NodeError;

use crate::core::Inner;
use crate::wire;
use crate::ClusterError;

fn registry(e: KvError) -> ClusterError {
    ClusterError::Registry(e.to_string())
}

/// How long a starter waits for a holder's rewrite: twice the down
/// detection and a heartbeat.
pub(crate) fn wait(interval: Duration, down_after: f64) -> Duration {
    interval.mul_f64(down_after) * 2 + interval
}

/// Takes the name `name` for `incarnation`; the key's revision.
pub(crate) async fn acquire(
    kv: &Bucket,
    name: &str,
    incarnation: u64,
    wait: Duration,
) -> Result<u64, ClusterError> {
    let key = wire::lock_key(name);
    let value = Bytes::copy_from_slice(&incarnation.to_be_bytes());
    let taken = || ClusterError::Node(NodeError::NameTaken(name.to_string()));
    for _ in 0..4 {
        match kv.create(&key, value.clone()).await {
            Ok(rev) => return Ok(rev),
            Err(KvError::Exists) => {}
            Err(e) => return Err(registry(e)),
        }
        let Some(seen) = kv.get_leader(&key).await.map_err(registry)? else {
            continue; // deleted meanwhile: create again
        };
        tokio::time::sleep(wait).await;
        match kv.get_leader(&key).await.map_err(registry)? {
            None => continue,
            Some(now) if now.revision != seen.revision => return Err(taken()),
            Some(_) => {
                return match kv.update(&key, value.clone(), seen.revision).await {
                    Ok(rev) => Ok(rev),
                    Err(KvError::WrongRevision) => Err(taken()),
                    Err(e) => Err(registry(e)),
                }
            }
        }
    }
    Err(taken())
}

impl Inner {
    /// Rewrites the name's key every heartbeat interval (step 3).
    pub(crate) async fn hold_name(self: Arc<Self>) {
        let key = wire::lock_key(&self.name);
        let mut tick = tokio::time::interval(self.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            // The current incarnation: a rejoin (liveness.rs) renews it.
            let value = Bytes::copy_from_slice(&self.incarnation().to_be_bytes());
            let rev = self.name_rev.load(Ordering::Acquire);
            match self.kv.update(&key, value.clone(), rev).await {
                Ok(r) => self.name_rev.store(r, Ordering::Release),
                Err(KvError::WrongRevision) => {
                    if let Some(left_out) = self.bad_log.admit(Instant::now()) {
                        tracing::error!(node = %self.name, left_out, "another process took this node's name (this one was cut off longer than a successor waits): this process no longer holds it");
                    }
                    return;
                }
                Err(e) => {
                    tracing::debug!(node = %self.name, error = %e, "the name's key was not rewritten")
                }
            }
        }
    }

    /// Deletes the name's key if this process still holds it (step 4).
    ///
    /// The rewrite task is aborted before this runs, possibly after its
    /// last `update` reached the bucket but before the new revision was
    /// stored: a delete refused for a wrong revision reads the key from
    /// the leader and, if it still holds this incarnation, deletes it at
    /// the revision read.
    pub(crate) async fn release_name(&self) {
        let key = wire::lock_key(&self.name);
        let rev = self.name_rev.load(Ordering::Acquire);
        if self.kv.delete(&key, Some(rev)).await != Err(KvError::WrongRevision) {
            return;
        }
        if let Ok(Some(now)) = self.kv.get_leader(&key).await {
            let held = <[u8; 8]>::try_from(now.value.as_ref()).map(u64::from_be_bytes);
            if held.is_ok_and(|inc| inc == self.incarnation() || self.was_me(inc)) {
                let _ = self.kv.delete(&key, Some(now.revision)).await;
            }
        }
    }
}
