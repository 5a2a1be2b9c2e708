//! Which of a sharded structure's 16 shards the calling thread uses.
//!
//! Structures that every spawn and every stop touch (the actor table, the
//! runtime's holder count) are split into [`SHARDS`] cache-padded shards,
//! and each thread keeps to one of them, chosen round-robin the first time
//! it asks. Threads that do the work (the workers) then write lines no
//! other core writes, instead of bouncing one shared line between cores.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many shards a sharded structure has.
pub(crate) const SHARDS: usize = 16;

static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's shard (`usize::MAX` until first asked).
    static SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// The calling thread's shard, in `0..SHARDS`; the same for the thread's
/// whole life.
#[inline]
pub(crate) fn this_thread() -> usize {
    SHARD.with(|s| {
        let mut v = s.get();
        if v == usize::MAX {
            v = NEXT_SHARD.fetch_add(1, Ordering::Relaxed) % SHARDS;
            s.set(v);
        }
        v
    })
}
