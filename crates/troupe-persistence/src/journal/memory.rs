//! An in-memory store: a [`Journal`], a [`SnapshotStore`] and a
//! [`StateStore`] in one process's memory, for unit tests and for users'
//! tests of their persistent actors. Share one [`MemoryStore`] (in an
//! `Arc`) between two actor systems to model a restart: what one stored,
//! the next recovers.
//!
//! Fault injection, to test what callers see when the store fails:
//! [`MemoryStore::fail_appends`] makes the next appends fail with
//! [`PersistError::Unavailable`] (storing nothing), and
//! [`MemoryStore::hold_appends`] makes appends wait until the returned
//! [`Hold`] is dropped (to observe that no reply leaves before the store
//! has the events).
//!
//! Snapshots are kept oldest first, all of them until
//! [`SnapshotStore::retain`] drops the oldest; deletion
//! ([`Journal::delete_through`]) takes whole appends and never the last.
//!
//! Invariant: every operation takes the one lock once, so an append is
//! atomic: checked and stored, or refused, as a whole.

use super::{
    check_numbering, EventRecord, Journal, Revisioned, Snapshot, SnapshotStore, StateStore,
};
use crate::error::PersistError;
use crate::id::PersistenceId;
use futures::future::BoxFuture;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::watch;

/// A store in memory (see the module docs).
///
/// ```
/// use troupe_persistence::journal::{memory::MemoryStore, Journal};
/// use troupe_persistence::PersistenceId;
///
/// let store = MemoryStore::new();
/// let id = PersistenceId::new("cart", "1").unwrap();
/// let last = futures::executor::block_on(store.append(&id, 0, vec![])).unwrap();
/// assert_eq!(last, 0);
/// ```
#[derive(Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    failing: AtomicU64,
    waiting: AtomicUsize,
    appended: AtomicU64,
    gate: Mutex<Option<watch::Receiver<()>>>,
}

#[derive(Default)]
struct Inner {
    journals: HashMap<PersistenceId, Journaled>,
    /// Oldest first.
    snapshots: HashMap<PersistenceId, Vec<Snapshot>>,
    states: HashMap<PersistenceId, Revisioned>,
}

/// One id's journal: its stored events and where they stand.
#[derive(Default)]
struct Journaled {
    /// The events not deleted, in order.
    events: Vec<EventRecord>,
    /// Each append's last event number, for the appends not deleted
    /// (deletion takes whole appends only).
    appends: Vec<u64>,
    /// The last event number appended, deleted or not.
    last: u64,
    /// Events through this one are deleted.
    deleted: u64,
}

/// While alive, appends to its [`MemoryStore`] wait; dropping it lets them
/// go on.
pub struct Hold {
    _open: watch::Sender<()>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Arc<Self> {
        Arc::new(MemoryStore::default())
    }

    /// Makes the next `n` appends fail with [`PersistError::Unavailable`],
    /// storing nothing.
    pub fn fail_appends(&self, n: u64) {
        self.failing.store(n, Ordering::SeqCst);
    }

    /// Makes appends wait until the returned [`Hold`] is dropped.
    pub fn hold_appends(&self) -> Hold {
        let (tx, rx) = watch::channel(());
        *self.gate.lock() = Some(rx);
        Hold { _open: tx }
    }

    /// How many appends are waiting on a [`Hold`] now.
    pub fn appends_waiting(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }

    /// How many appends have stored events, in all.
    pub fn appends(&self) -> u64 {
        self.appended.load(Ordering::SeqCst)
    }

    /// The stored events of `id`, in order.
    pub fn events(&self, id: &PersistenceId) -> Vec<EventRecord> {
        self.inner
            .lock()
            .journals
            .get(id)
            .map(|j| j.events.clone())
            .unwrap_or_default()
    }

    /// The latest snapshot of `id`.
    pub fn snapshot(&self, id: &PersistenceId) -> Option<Snapshot> {
        self.inner
            .lock()
            .snapshots
            .get(id)
            .and_then(|s| s.last().cloned())
    }

    /// The kept snapshots of `id`, the latest first.
    pub fn snapshots(&self, id: &PersistenceId) -> Vec<Snapshot> {
        let inner = self.inner.lock();
        let kept = inner.snapshots.get(id).map_or(&[][..], |s| &s[..]);
        kept.iter().rev().cloned().collect()
    }
}

impl Journal for MemoryStore {
    fn append<'a>(
        &'a self,
        id: &'a PersistenceId,
        expected: u64,
        events: Vec<EventRecord>,
    ) -> BoxFuture<'a, Result<u64, PersistError>> {
        Box::pin(async move {
            let gate = self.gate.lock().clone();
            if let Some(mut gate) = gate {
                self.waiting.fetch_add(1, Ordering::SeqCst);
                // Returns (with an error) when the `Hold` is dropped.
                let _ = gate.changed().await;
                self.waiting.fetch_sub(1, Ordering::SeqCst);
                let mut g = self.gate.lock();
                if g.as_ref().is_some_and(|r| r.has_changed().is_err()) {
                    *g = None;
                }
            }
            let failing = self
                .failing
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
            if failing.is_ok() {
                return Err(PersistError::Unavailable {
                    id: id.to_string(),
                    reason: "a failure injected by MemoryStore::fail_appends".into(),
                });
            }
            let mut inner = self.inner.lock();
            let journal = inner.journals.entry(id.clone()).or_default();
            let found = journal.last;
            if found != expected {
                return Err(PersistError::Conflict {
                    id: id.to_string(),
                    expected,
                    found: Some(found),
                });
            }
            let last = check_numbering(id, expected, &events)?;
            if !events.is_empty() {
                journal.events.extend(events);
                journal.appends.push(last);
                journal.last = last;
            }
            self.appended.fetch_add(1, Ordering::SeqCst);
            Ok(last)
        })
    }

    fn read<'a>(
        &'a self,
        id: &'a PersistenceId,
        from: u64,
    ) -> BoxFuture<'a, Result<Vec<EventRecord>, PersistError>> {
        Box::pin(async move {
            let inner = self.inner.lock();
            Ok(inner
                .journals
                .get(id)
                .map(|j| j.events.iter().filter(|e| e.seq >= from).cloned().collect())
                .unwrap_or_default())
        })
    }

    fn delete_through<'a>(
        &'a self,
        id: &'a PersistenceId,
        seq: u64,
    ) -> BoxFuture<'a, Result<u64, PersistError>> {
        Box::pin(async move {
            let mut inner = self.inner.lock();
            let Some(j) = inner.journals.get_mut(id) else {
                return Ok(0);
            };
            // Whole appends, never the last one.
            let whole = j.appends.partition_point(|&last| last <= seq);
            let n = whole.min(j.appends.len().saturating_sub(1));
            if let Some(&through) = n.checked_sub(1).and_then(|i| j.appends.get(i)) {
                j.appends.drain(..n);
                j.events.retain(|e| e.seq > through);
                j.deleted = through;
            }
            Ok(j.deleted)
        })
    }
}

impl SnapshotStore for MemoryStore {
    fn save<'a>(
        &'a self,
        id: &'a PersistenceId,
        snapshot: Snapshot,
    ) -> BoxFuture<'a, Result<(), PersistError>> {
        Box::pin(async move {
            let mut inner = self.inner.lock();
            inner
                .snapshots
                .entry(id.clone())
                .or_default()
                .push(snapshot);
            Ok(())
        })
    }

    fn load<'a>(
        &'a self,
        id: &'a PersistenceId,
    ) -> BoxFuture<'a, Result<Option<Snapshot>, PersistError>> {
        Box::pin(async move { Ok(self.snapshot(id)) })
    }

    fn history<'a>(
        &'a self,
        id: &'a PersistenceId,
    ) -> BoxFuture<'a, Result<Vec<Snapshot>, PersistError>> {
        Box::pin(async move { Ok(self.snapshots(id)) })
    }

    fn retain<'a>(
        &'a self,
        id: &'a PersistenceId,
        keep: usize,
    ) -> BoxFuture<'a, Result<(), PersistError>> {
        Box::pin(async move {
            if let Some(kept) = self.inner.lock().snapshots.get_mut(id) {
                let drop = kept.len().saturating_sub(keep.max(1));
                kept.drain(..drop);
            }
            Ok(())
        })
    }
}

impl StateStore for MemoryStore {
    fn get<'a>(
        &'a self,
        id: &'a PersistenceId,
    ) -> BoxFuture<'a, Result<Option<Revisioned>, PersistError>> {
        Box::pin(async move { Ok(self.inner.lock().states.get(id).cloned()) })
    }

    fn put<'a>(
        &'a self,
        id: &'a PersistenceId,
        expected: u64,
        bytes: Vec<u8>,
    ) -> BoxFuture<'a, Result<u64, PersistError>> {
        Box::pin(async move {
            let mut inner = self.inner.lock();
            let found = inner.states.get(id).map_or(0, |s| s.revision);
            if found != expected {
                return Err(PersistError::StateConflict {
                    id: id.to_string(),
                    expected,
                });
            }
            let revision = found + 1;
            inner
                .states
                .insert(id.clone(), Revisioned { revision, bytes });
            Ok(revision)
        })
    }
}
