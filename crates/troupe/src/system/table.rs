//! The system's table of live actors: what keeps every cell alive while it
//! may run, and how shutdown reaches idle actors.
//!
//! Sharded by spawning thread (16 mutex-guarded slabs) so concurrent spawns
//! rarely contend. An entry is an `Arc<dyn Stoppable>`; it is removed by the
//! actor's finalizer, and the removed `Arc` is handed back to the worker
//! that finalized, which drops it once it no longer borrows the cell (it may
//! be the last reference). A scheduler task is a raw pointer to a cell, so
//! this entry is what makes tasks sound: see `engine::scheduler::Task`.

use crate::actor::lifecycle::Stoppable;
use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use slab::Slab;
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const SHARDS: usize = 16;

static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's actor-table shard.
    static SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
}

fn my_shard() -> usize {
    SHARD.with(|s| {
        let mut v = s.get();
        if v == usize::MAX {
            v = NEXT_SHARD.fetch_add(1, Ordering::Relaxed) % SHARDS;
            s.set(v);
        }
        v
    })
}

/// One shard: live actors by slab key.
type Shard = CachePadded<Mutex<Slab<Arc<dyn Stoppable>>>>;

/// Every live actor of one system; keys are `shard << 32 | slab key`.
pub(crate) struct ActorTable {
    shards: Box<[Shard]>,
}

impl ActorTable {
    pub(crate) fn new() -> Self {
        ActorTable {
            shards: (0..SHARDS)
                .map(|_| CachePadded::new(Mutex::new(Slab::new())))
                .collect(),
        }
    }

    /// Inserts the actor `make` builds from its key.
    pub(crate) fn insert(&self, make: &mut dyn FnMut(u64) -> Arc<dyn Stoppable>) {
        let shard = my_shard();
        let mut slab = self.shards[shard].lock();
        let entry = slab.vacant_entry();
        let key = ((shard as u64) << 32) | entry.key() as u64;
        entry.insert(make(key));
    }

    /// Removes and returns the entry under `key`.
    pub(crate) fn remove(&self, key: u64) -> Option<Arc<dyn Stoppable>> {
        let shard = (key >> 32) as usize;
        self.shards[shard]
            .lock()
            .try_remove((key & 0xFFFF_FFFF) as usize)
    }

    /// Every live actor now (for shutdown).
    pub(crate) fn snapshot(&self) -> Vec<Arc<dyn Stoppable>> {
        let mut all = Vec::new();
        for shard in self.shards.iter() {
            all.extend(shard.lock().iter().map(|(_, t)| t.clone()));
        }
        all
    }
}
