//! The system's table of live actors: what keeps every cell alive while it
//! may run, and how shutdown reaches idle actors.
//!
//! Sharded by spawning thread (16 slabs, each behind a `ShortLock`) so concurrent spawns
//! rarely contend. An entry is an `Arc<dyn Stoppable>`; it is removed by the
//! actor's finalizer, and the removed `Arc` is handed back to the worker
//! that finalized, which drops it once it no longer borrows the cell (it may
//! be the last reference; then the worker keeps the cell's memory for the
//! next spawn, `actor::recycle`). A scheduler task is a raw pointer to a cell, so
//! this entry is what makes tasks sound: see `engine::scheduler::Task`.
//!
//! The live count and the stopped count are kept per shard, under the
//! shard's lock, instead of in shared atomics: a spawn is one uncontended
//! lock and a stop another, with no further read-modify-write on a word
//! every worker writes. The system sums the shards when it needs a total
//! (shutdown, `live_actors`).

use crate::actor::lifecycle::Stoppable;
use crate::actor::runtime::Retired;
use crate::engine::lock::ShortLock;
use crate::engine::shard::{self, SHARDS};
use crossbeam_utils::CachePadded;
use slab::Slab;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// One shard: live actors by slab key, and how many have left it; and
/// the runtime references that enrolments on this shard took.
#[derive(Default)]
struct Shard {
    live: Slab<Arc<dyn Stoppable>>,
    stopped: u64,
    /// Each enrolled cell's reference to the runtime, counted here, in the
    /// lock pass that enrols it, instead of in a pass of its own
    /// (`actor::runtime_ref`: an enrolment's share of the holder count).
    holders: isize,
    /// The holder count has been closed: enrolments count elsewhere.
    closed: bool,
}

/// Every live actor of one system; keys are `shard << 32 | slab key`.
pub(crate) struct ActorTable {
    shards: Box<[CachePadded<ShortLock<Shard>>]>,
}

impl ActorTable {
    pub(crate) fn new() -> Self {
        ActorTable {
            shards: (0..SHARDS)
                .map(|_| CachePadded::new(ShortLock::new(Shard::default())))
                .collect(),
        }
    }

    /// Inserts a live actor; returns its key, and whether its runtime
    /// reference was counted here (`false` once the count is closed: the
    /// caller counts it in the closed count).
    pub(crate) fn insert(&self, actor: Arc<dyn Stoppable>) -> (u64, bool) {
        let shard = shard::this_thread();
        let mut guard = self.shards[shard].lock();
        let slot = guard.live.insert(actor);
        let counted = !guard.closed;
        if counted {
            guard.holders += 1;
        }
        (((shard as u64) << 32) | slot as u64, counted)
    }

    /// Closes the enrolments' share of the holder count: every shard is
    /// marked closed under its lock; returns the sum of their counts.
    pub(crate) fn close_holders(&self) -> isize {
        let mut sum = 0;
        for shard in self.shards.iter() {
            let mut guard = shard.lock();
            debug_assert!(!guard.closed, "closed once");
            guard.closed = true;
            sum += std::mem::take(&mut guard.holders);
        }
        sum
    }

    /// Removes the entry under `key`; also returns whether the shard is
    /// now empty with someone waiting for no live actor (the caller wakes
    /// them). `waiters` counts those threads; it is read under the shard's
    /// lock, after the removal.
    ///
    /// With `release_unique`, an entry that is the cell's only reference
    /// (no other strong and no weak one) also has the cell's runtime
    /// reference uncounted from this shard, in this lock pass, as its
    /// enrolment counted it (`actor::runtime_ref`). Nobody can make a new
    /// reference from none, so the caller's drop of the entry will be the
    /// cell's drop, which must then not release the runtime reference
    /// again, nor use the runtime: once this lock is released, the runtime
    /// may go. Not done once the count is closed, nor when a waiter must be
    /// woken (the caller uses the runtime for that).
    pub(crate) fn remove(
        &self,
        key: u64,
        release_unique: bool,
        waiters: &AtomicUsize,
    ) -> (Retired, bool) {
        let shard = (key >> 32) as usize;
        let mut guard = self.shards[shard].lock();
        let mut entry = guard.live.try_remove((key & 0xFFFF_FFFF) as usize);
        // A waiter counts itself before it reads the shards; if it read this
        // shard before our removal, its lock came first, so our load here
        // sees its count (see `wait_no_live`).
        let wake = guard.live.is_empty() && waiters.load(Ordering::SeqCst) > 0;
        let mut holder_released = false;
        if let Some(e) = &mut entry {
            guard.stopped += 1;
            if release_unique && !wake && !guard.closed && is_sole_reference(e) {
                guard.holders -= 1;
                holder_released = true;
            }
        }
        (
            Retired {
                entry,
                holder_released,
            },
            wake,
        )
    }

    /// The enrolments' share of the runtime's holder count, before the
    /// close.
    #[cfg(test)]
    pub(crate) fn holders(&self) -> isize {
        self.shards.iter().map(|s| s.lock().holders).sum()
    }

    /// Actors alive now (a sum over the shards, each read under its lock).
    pub(crate) fn live(&self) -> usize {
        self.shards.iter().map(|s| s.lock().live.len()).sum()
    }

    /// Actors that have left the table so far.
    pub(crate) fn stopped(&self) -> u64 {
        self.shards.iter().map(|s| s.lock().stopped).sum()
    }

    /// The live actor under `key`, if any: the stall watchdog's look-up of
    /// a running turn (`watchdog.rs`; keys are reused, so it checks the
    /// actor's id).
    pub(crate) fn get(&self, key: u64) -> Option<Arc<dyn Stoppable>> {
        let shard = self.shards.get((key >> 32) as usize)?;
        shard.lock().live.get((key & 0xFFFF_FFFF) as usize).cloned()
    }

    /// Every live actor now (for shutdown).
    pub(crate) fn snapshot(&self) -> Vec<Arc<dyn Stoppable>> {
        let mut all = Vec::new();
        for shard in self.shards.iter() {
            all.extend(shard.lock().live.iter().map(|(_, t)| t.clone()));
        }
        all
    }
}

/// Whether `arc` is its allocation's only reference, strong or weak, in a
/// way that orders every other holder's last access before our next one.
///
/// `Arc::get_mut` is the check: it locks the weak count (a compare-and-swap
/// from 1 to `usize::MAX`, Acquire) before it reads the strong count
/// (Acquire), so a `Weak` cannot be upgraded between the two reads, and
/// every earlier holder's drop (a Release decrement) happens before the
/// caller's drop of the contents. Two separate `Relaxed` reads of
/// `strong_count` and `weak_count` give neither: a `Weak` upgraded after the
/// first and dropped before the second passed them while its holder still
/// held a strong reference, and the cell was dropped in place under it
/// (issue 24; `tests/loom_unique.rs` models both checks).
#[inline]
fn is_sole_reference<T: ?Sized>(arc: &mut Arc<T>) -> bool {
    Arc::get_mut(arc).is_some()
}
