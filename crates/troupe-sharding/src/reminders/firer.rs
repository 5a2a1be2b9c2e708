//! A node's firer: the index of the kind's reminders (followed by a
//! watch on the bucket, on the I/O runtime) and the thread that claims
//! and fires the due ones of the shards this node owns (the module docs
//! of [`crate::reminders`], steps 2 to 4).
//!
//! Invariants: the index holds, per key, the record of the highest
//! revision seen (a write seen late never replaces a newer one); a due
//! time is told only after this node's revision-checked write from the
//! indexed revision succeeded.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use futures::StreamExt;
use parking_lot::Mutex;
use troupe::Actor;
use troupe_remote::transport::kv::{Bucket, KvEntry, KvError, KvOp};

use super::record::Record;
use super::{block, unix_ms, Counters, Reminder, Reminders, RemindersError, MAX_INDEXED};
use crate::placement::shard_of;
use crate::sharding::{EntityRef, Sharding};
use crate::shared::Shared;

/// Per key: the record and its revision.
type Index = HashMap<String, (Record, u64)>;

/// This node's firing of one kind's reminders; dropping it stops it.
pub struct Firer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    follow: tokio::task::JoinHandle<()>,
}

impl Drop for Firer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.follow.abort();
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

/// Applies one write to the index.
fn apply(index: &Mutex<Index>, stats: &Counters, e: KvEntry) {
    let mut ix = index.lock();
    if ix.get(&e.key).is_some_and(|(_, rev)| *rev >= e.revision) {
        return;
    }
    match e.op {
        KvOp::Delete => {
            ix.remove(&e.key);
        }
        KvOp::Put => match Record::decode(&e.key, &e.value) {
            Some(r) if ix.len() < MAX_INDEXED || ix.contains_key(&e.key) => {
                ix.insert(e.key, (r, e.revision));
            }
            Some(_) => Counters::add(&stats.over_cap),
            None => {
                Counters::add(&stats.bad_records);
                ix.remove(&e.key);
            }
        },
    }
}

/// Follows the bucket into the index: a watch first (so nothing written
/// during the load is missed), then every key's value; again after the
/// watch ends.
async fn follow(bucket: Bucket, index: Arc<Mutex<Index>>, stats: Arc<Counters>) {
    loop {
        let watch = bucket.watch_all().await;
        let mut watch = match watch {
            Ok(w) => w,
            Err(_) => {
                Counters::add(&stats.store_errors);
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
        };
        match bucket.keys().await {
            Ok(mut keys) => {
                while let Some(k) = keys.next().await {
                    match bucket.get(&k).await {
                        Ok(Some(e)) => apply(&index, &stats, e),
                        Ok(None) => {}
                        Err(_) => Counters::add(&stats.store_errors),
                    }
                }
            }
            Err(_) => Counters::add(&stats.store_errors),
        }
        while let Some(e) = watch.next().await {
            apply(&index, &stats, e);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(super) fn start<A: Actor>(
    reminders: Reminders,
    sharding: &Sharding<A>,
    poll: Duration,
) -> Result<Firer, RemindersError>
where
    A::Msg: From<Reminder>,
{
    if sharding.shared().kind != reminders.kind {
        return Err(RemindersError::OtherKind(sharding.shared().kind.clone()));
    }
    let index: Arc<Mutex<Index>> = Arc::default();
    let follow = reminders.handle.spawn(follow(
        reminders.bucket.clone(),
        index.clone(),
        reminders.stats.clone(),
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let mut f = Fire {
        reminders,
        shared: sharding.shared().clone(),
        probe: sharding.entity("reminders"),
        index,
        stop: stop.clone(),
        poll,
    };
    let thread = std::thread::Builder::new()
        .name(format!("reminders-{}", f.shared.kind))
        .spawn(move || f.run())
        .map_err(|e| super::store(&e))?;
    Ok(Firer {
        stop,
        thread: Some(thread),
        follow,
    })
}

struct Fire<A: Actor> {
    reminders: Reminders,
    shared: Arc<Shared<A>>,
    /// An entity reference of the sharding, for its siblings.
    probe: EntityRef<A>,
    index: Arc<Mutex<Index>>,
    stop: Arc<AtomicBool>,
    poll: Duration,
}

impl<A: Actor> Fire<A>
where
    A::Msg: From<Reminder>,
{
    fn run(&mut self) {
        while !self.stop.load(Ordering::Acquire) {
            std::thread::park_timeout(self.poll);
            if self.stop.load(Ordering::Acquire) || self.shared.stopped.load(Ordering::Acquire) {
                continue;
            }
            self.round();
        }
    }

    /// One check: claims and fires what is due on the shards owned here.
    fn round(&mut self) {
        let now = unix_ms(SystemTime::now());
        let mut due: Vec<(String, Record, u64)> = self
            .index
            .lock()
            .iter()
            .filter(|(_, (r, _))| r.due_ms <= now)
            .map(|(k, (r, rev))| (k.clone(), r.clone(), *rev))
            .collect();
        if due.is_empty() {
            return;
        }
        due.sort_by_key(|(_, r, _)| r.due_ms);
        let sh = self.shared.clone();
        let mut mine: HashMap<u32, bool> = HashMap::new();
        for (key, rec, rev) in due {
            if self.stop.load(Ordering::Acquire) || sh.stopped.load(Ordering::Acquire) {
                return;
            }
            let shard = shard_of(&rec.id, sh.config.shards);
            let owned =
                *mine
                    .entry(shard)
                    .or_insert_with(|| match sh.store.owner(&sh.kind, shard) {
                        Ok(o) => o.node.as_deref() == Some(sh.node.as_str()),
                        Err(_) => {
                            Counters::add(&self.reminders.stats.store_errors);
                            false
                        }
                    });
            if owned {
                self.claim_and_fire(key, rec, rev, now);
            }
        }
    }

    fn claim_and_fire(&mut self, key: String, rec: Record, rev: u64, now: u64) {
        let stats = self.reminders.stats.clone();
        let bucket = self.reminders.bucket.clone();
        let next = rec.next_after(now);
        let k = key.clone();
        let value = next.map(|due_ms| {
            Record {
                due_ms,
                ..rec.clone()
            }
            .encode()
        });
        let claimed = block(&self.reminders.handle, async move {
            match value {
                Some(v) => bucket.update(&k, Bytes::from(v), rev).await.map(Some),
                None => bucket.delete(&k, Some(rev)).await.map(|()| None),
            }
        });
        match claimed {
            Ok(Ok(new_rev)) => {
                {
                    let mut ix = self.index.lock();
                    match (new_rev, next) {
                        (Some(r), Some(due_ms)) => {
                            let e = ix.entry(key).or_insert_with(|| (rec.clone(), 0));
                            if e.1 < r {
                                *e = (
                                    Record {
                                        due_ms,
                                        ..rec.clone()
                                    },
                                    r,
                                );
                            }
                        }
                        _ => {
                            ix.remove(&key);
                        }
                    }
                }
                let fire = Reminder {
                    name: rec.name,
                    due_ms: rec.due_ms,
                };
                match self.probe.sibling(&rec.id).tell(fire) {
                    Ok(()) => Counters::add(&stats.fired),
                    Err(_) => {
                        Counters::add(&stats.refused);
                        tracing::warn!(kind = %self.shared.kind, "a claimed reminder was refused");
                    }
                }
            }
            Ok(Err(KvError::WrongRevision)) | Ok(Err(KvError::Exists)) => {
                // Another node claimed it (or it was replaced or
                // cancelled): read it again.
                Counters::add(&stats.conflicts);
                self.refresh(&key);
            }
            Ok(Err(_)) | Err(_) => {
                Counters::add(&stats.store_errors);
                self.refresh(&key);
            }
        }
    }

    /// Re-reads `key` from the bucket's leader into the index.
    fn refresh(&mut self, key: &str) {
        let bucket = self.reminders.bucket.clone();
        let k = key.to_string();
        match block(&self.reminders.handle, async move {
            bucket.get_leader(&k).await
        }) {
            Ok(Ok(Some(e))) => apply(&self.index, &self.reminders.stats, e),
            Ok(Ok(None)) => {
                self.index.lock().remove(key);
            }
            _ => Counters::add(&self.reminders.stats.store_errors),
        }
    }
}
