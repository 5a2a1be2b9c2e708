//! The lock for the lifecycle's short critical sections: the actor table's
//! shards, each actor's exit record, and the shards of a runtime's holder
//! count.
//!
//! Every spawn and every stop passes through such a lock a few times, and
//! each pass is a handful of instructions (a slab insert, a watcher pushed
//! or taken out). A `parking_lot` mutex pays two atomic read-modify-writes
//! per pass (its unlock is a compare-and-swap, so that it can see parked
//! waiters); this lock's unlock is a plain release store, so a pass costs
//! one. It never parks: a thread that finds it taken spins briefly, then
//! yields its time slice until the lock is free (`crossbeam`'s `Backoff`),
//! so a holder preempted on a crowded machine gets the core back instead of
//! being spun against.
//!
//! Rule: nothing may block, call user code or take another lock while
//! holding one. The one exception is the close of a runtime's holder count
//! (`actor::runtime_ref`), which takes all 16 of that count's shards in
//! order and holds them for a few instructions; no other code holds two.
//! Waiting for a condition (a joiner waiting for an actor's stop) parks
//! outside it (`actor::lifecycle`).
//!
//! Measured in `bench/results/2026-11-26-short-lock/`: `spawn_and_await`
//! and `actor_creation` A/B against the `parking_lot` mutex.

use crossbeam_utils::Backoff;
use spin::mutex::{SpinMutex, SpinMutexGuard};

/// A test-and-set lock whose unlock is one release store (the `spin`
/// crate's), with a spin-then-yield back-off when taken.
pub(crate) struct ShortLock<T>(SpinMutex<T>);

/// Access to what a [`ShortLock`] guards; unlocks when dropped.
pub(crate) type ShortGuard<'a, T> = SpinMutexGuard<'a, T>;

impl<T> ShortLock<T> {
    pub(crate) const fn new(value: T) -> Self {
        ShortLock(SpinMutex::new(value))
    }

    /// Takes the lock: one compare-and-swap when it is free.
    #[inline]
    pub(crate) fn lock(&self) -> ShortGuard<'_, T> {
        match self.0.try_lock() {
            Some(g) => g,
            None => self.lock_contended(),
        }
    }

    #[cold]
    #[inline(never)]
    fn lock_contended(&self) -> ShortGuard<'_, T> {
        let backoff = Backoff::new();
        loop {
            backoff.snooze();
            if !self.0.is_locked() {
                if let Some(g) = self.0.try_lock() {
                    return g;
                }
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Four threads add under the lock; a lost update would show in the sum.
    #[test]
    fn excludes_under_contention() {
        let lock = Arc::new(ShortLock::new(0u64));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let lock = lock.clone();
                std::thread::spawn(move || {
                    for _ in 0..100_000 {
                        let mut g = lock.lock();
                        // A non-atomic read-modify-write with a window.
                        let v = *g;
                        std::hint::black_box(());
                        *g = v + 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*lock.lock(), 400_000);
    }
}
