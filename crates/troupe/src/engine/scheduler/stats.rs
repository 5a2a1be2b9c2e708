//! Per-worker counters: tasks run, steals, parks, and time spent idle
//! (parked; a worker searching for work counts as busy, so that no clock is
//! read outside parking), for the metrics the observability layer exports.
//!
//! Invariants: each `WorkerStats` is written only by its own worker thread
//! (a relaxed load and store, no read-modify-write), on its own cache line;
//! any thread reads. Nothing is written unless the pool was built with
//! metrics on (`PoolStats::on`), so with metrics off a worker pays one
//! predictable branch per task and no clock read.

use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// A counter with one writer.
#[derive(Default)]
pub(crate) struct Counter(AtomicU64);

impl Counter {
    /// Adds `n`; only the owning worker calls this.
    #[inline]
    pub(crate) fn bump(&self, n: u64) {
        self.0.store(
            self.0.load(Ordering::Relaxed).wrapping_add(n),
            Ordering::Relaxed,
        );
    }

    /// The value now.
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// One worker's counters.
#[derive(Default)]
pub(crate) struct WorkerStats {
    /// Tasks (actor turns) run.
    pub(crate) tasks: Counter,
    /// Tasks stolen from another worker's deque.
    pub(crate) steals: Counter,
    /// Times the worker parked.
    pub(crate) parks: Counter,
    /// Nanoseconds spent parked.
    pub(crate) idle_ns: Counter,
}

/// A pool's per-worker counters.
pub(crate) struct PoolStats {
    /// Whether the workers count at all.
    pub(crate) on: bool,
    /// When the pool started (busy time = elapsed - idle).
    pub(crate) started: Instant,
    pub(crate) workers: Box<[CachePadded<WorkerStats>]>,
}

impl PoolStats {
    pub(crate) fn new(threads: usize, on: bool) -> Self {
        PoolStats {
            on,
            started: Instant::now(),
            workers: (0..threads).map(|_| CachePadded::default()).collect(),
        }
    }
}
