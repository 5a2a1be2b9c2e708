//! [`RuntimeRef`]: how actors, parallel actors and system handles keep their
//! system's [`Runtime`] alive, without a reference count that every core
//! writes.
//!
//! A cell needs its runtime for its whole life, even after its actor has
//! stopped (a late message is counted as dropped there). With an
//! `Arc<Runtime>` in every cell, every spawn and every cell's drop was an
//! atomic read-modify-write on the one line that holds the runtime's count,
//! and with actors spawned and stopped on two workers at once that line
//! went back and forth between the cores: taking the count away made
//! `actor_creation` 1.7x faster on the 2-core machine
//! (`bench/results/2026-11-26-runtime-ref/`).
//!
//! Here the count is sharded ([`Holders`]): a reference taken or dropped on
//! a thread is counted in that thread's shard (`engine::shard`), under the
//! shard's short lock, so each worker writes a line of its own. A shard's
//! count is a difference (a reference taken on one thread may be dropped on
//! another) and may be negative; the sum over the shards is the number of
//! references. The sum matters only to find the last reference, and the last
//! one cannot go while the system's owner ([`ActorSystem`]) holds its own.
//! So the owner's drop *closes* the count: holding every shard's lock at
//! once, it moves the sum into one atomic (`remaining`) and marks the
//! shards closed. From then on every take and drop goes to `remaining`, and
//! the drop that takes it to zero frees the runtime, as the last `Arc`
//! would.
//!
//! A new actor's reference is not counted in a pass of its own: the
//! system's table counts it in the lock pass that enrols the cell (its
//! shards carry a share of the count, `Host::enroll`,
//! `RuntimeRef::for_enrolment`), and the close takes that share too
//! (`Host::close_holders`). A spawn then costs no more lock passes than
//! before. The give-back is folded the same way when it can be: if the
//! table's entry is a stopped cell's only reference (no other strong or
//! weak one, so none can ever be made), the retirement uncounts the cell's
//! reference in its lock pass (`ActorTable::remove`), and the cell, whose
//! drop follows, neither releases it again nor touches the runtime
//! (`ActorCell::rt_released`). Otherwise the cell's drop releases it, on
//! the dropping thread's shard.
//!
//! Invariants:
//! * A shard's count and `closed` flag change only under its lock. The
//!   close marks every shard while holding all of their locks, then the
//!   table's shards one by one, so a take, drop or enrolment either lands
//!   in a shard before its mark (and is in the sum) or sees `closed` after
//!   it (and goes to `remaining`). Before it marks anything, the close
//!   stores a large bias in `remaining`, and it replaces the bias by the
//!   sum only at the end: a drop that goes to `remaining` meanwhile cannot
//!   take it to zero.
//! * Before the close, the owner's reference keeps the sum at one or more,
//!   and no shard operation frees anything. After it, `remaining` is the
//!   number of live references; a take needs a live reference, so it never
//!   raises `remaining` from zero.
//! * The runtime is freed exactly once: by the drop that moves `remaining`
//!   from 1 to 0 (release, then an acquire load, as `Arc`'s drop does), or
//!   by the close itself if its sum is zero (it never is: the owner's
//!   reference is counted until the owner drops it after closing).
//!
//! [`ActorSystem`]: crate::ActorSystem

use super::runtime::Runtime;
use crate::engine::lock::ShortLock;
use crate::engine::shard::{self, SHARDS};
use crossbeam_utils::CachePadded;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicIsize, Ordering};

/// What `remaining` holds while a close is summing the shards.
const BIAS: isize = isize::MAX / 2;

/// One shard of the holder count.
#[derive(Default)]
struct Count {
    /// References taken minus references dropped on this shard's threads.
    n: isize,
    /// The count has moved to `Holders::remaining`.
    closed: bool,
}

/// The sharded count of a runtime's references. See the module docs.
pub(crate) struct Holders {
    shards: Box<[CachePadded<ShortLock<Count>>]>,
    /// The number of references, once closed.
    remaining: AtomicIsize,
}

impl Holders {
    /// A count with one reference, the owner's, taken on this thread.
    pub(crate) fn new() -> Self {
        let h = Holders {
            shards: (0..SHARDS)
                .map(|_| CachePadded::new(ShortLock::new(Count::default())))
                .collect(),
            remaining: AtomicIsize::new(0),
        };
        h.shards[shard::this_thread()].lock().n = 1;
        h
    }

    /// Counts one more reference; the caller holds one already.
    #[inline]
    pub(crate) fn take(&self) {
        let mut c = self.shards[shard::this_thread()].lock();
        if !c.closed {
            c.n += 1;
            return;
        }
        drop(c);
        // The caller's reference keeps `remaining` above zero.
        self.remaining.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one reference fewer; `true` if it was the last (the caller
    /// then frees what is counted).
    #[inline]
    #[must_use]
    pub(crate) fn release(&self) -> bool {
        let mut c = self.shards[shard::this_thread()].lock();
        if !c.closed {
            c.n -= 1;
            return false;
        }
        drop(c);
        self.release_closed()
    }

    #[cold]
    fn release_closed(&self) -> bool {
        if self.remaining.fetch_sub(1, Ordering::Release) != 1 {
            return false;
        }
        // Every other holder's last use happens before this free. An
        // acquire load of the count, not a fence: ThreadSanitizer does not
        // model fences (it reported this free racing a holder's shard lock,
        // from a tokio dispatcher's thread), and std's `Arc` does the same
        // under it. Once per runtime.
        let _ = self.remaining.load(Ordering::Acquire);
        true
    }

    /// The references counted in this count's own shards, before the
    /// close (the enrolments' share is in the system's table).
    #[cfg(test)]
    pub(crate) fn open_sum(&self) -> isize {
        self.shards.iter().map(|s| s.lock().n).sum()
    }

    /// Moves the count into `remaining`, for good (the owner, once). The
    /// caller still holds its reference and releases it afterwards.
    /// `enrolled` closes the share that enrolments count in the system's
    /// table (`Host::close_holders`) and returns it.
    pub(crate) fn close(&self, enrolled: impl FnOnce() -> isize) {
        // Every shard at once, in order, on the stack (no allocation under
        // the locks); nothing else holds two of them (`engine::lock`).
        let mut all: [_; SHARDS] = std::array::from_fn(|i| self.shards[i].lock());
        debug_assert!(!all[0].closed, "a runtime's count is closed once");
        // Stored before any shard here or in the table is marked closed, so
        // a take or drop that sees a mark finds `remaining` far above zero
        // until the sums below are in (published by the shard locks).
        self.remaining.store(BIAS, Ordering::Relaxed);
        let mut sum: isize = 0;
        for c in all.iter_mut() {
            sum += c.n;
            c.closed = true;
        }
        drop(all);
        sum += enrolled();
        // The owner's reference is in `sum`: this never reaches zero.
        self.remaining.fetch_add(sum - BIAS, Ordering::AcqRel);
    }
}

/// A counted pointer to a system's runtime: what an actor's cell, a
/// parallel actor and a [`SystemHandle`](crate::SystemHandle) hold. Cloning
/// and dropping touch only the calling thread's shard of the count.
pub(crate) struct RuntimeRef(NonNull<Runtime>);

// SAFETY: a `RuntimeRef` only gives out `&Runtime`, which is `Sync`; the
// runtime is freed once, by the last reference's drop, on whatever thread
// that is, which `Runtime: Send` allows.
unsafe impl Send for RuntimeRef {}
// SAFETY: as above.
unsafe impl Sync for RuntimeRef {}

// `Runtime` must be shareable between threads for the impls above.
const _: fn() = || {
    fn is_send_sync<T: Send + Sync>() {}
    is_send_sync::<Runtime>();
};

impl RuntimeRef {
    /// The owner's reference to a new runtime.
    pub(crate) fn new(rt: Runtime) -> Self {
        RuntimeRef(NonNull::from(Box::leak(Box::new(rt))))
    }

    /// The owner is gone: from now on the last reference's drop frees the
    /// runtime (see the module docs). Called once, by the owner, which then
    /// drops its own reference.
    pub(crate) fn close(&self) {
        self.holders.close(|| self.host.close_holders());
    }

    /// A reference for a cell that is about to be enrolled: the enrolment
    /// counts it (`Host::enroll`), in the lock pass that enrols the cell,
    /// or says it did not and the caller takes it (`Holders::take`).
    ///
    /// # Safety
    /// The reference is not counted until then: nothing may drop it before
    /// its cell's enrolment, so it must be the last thing a cell is built
    /// with before `enroll`, with nothing that can unwind in between.
    #[inline]
    pub(crate) unsafe fn for_enrolment(&self) -> Self {
        RuntimeRef(self.0)
    }
}

impl std::ops::Deref for RuntimeRef {
    type Target = Runtime;

    #[inline]
    fn deref(&self) -> &Runtime {
        // SAFETY: this reference is counted, so the runtime is not freed
        // while it exists (the module's invariants).
        unsafe { self.0.as_ref() }
    }
}

impl Clone for RuntimeRef {
    #[inline]
    fn clone(&self) -> Self {
        self.holders.take();
        RuntimeRef(self.0)
    }
}

impl Drop for RuntimeRef {
    #[inline]
    fn drop(&mut self) {
        if self.holders.release() {
            // SAFETY: that was the last reference (the count says so, once):
            // nobody else can reach the runtime, which `new` leaked from a
            // `Box`.
            drop(unsafe { Box::from_raw(self.0.as_ptr()) });
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    /// Many threads take and drop references before, during and after the
    /// close: the count says "last" exactly once, at the very end.
    #[test]
    fn the_last_reference_is_found_exactly_once() {
        for round in 0..20 {
            let h = Arc::new(Holders::new());
            let lasts = Arc::new(AtomicUsize::new(0));
            let threads = 8;
            // Each thread starts with a reference the owner took for it.
            for _ in 0..threads {
                h.take();
            }
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let (h, lasts) = (h.clone(), lasts.clone());
                    std::thread::spawn(move || {
                        // Take and drop (sometimes on another thread's
                        // shard: a reference moved between threads).
                        for i in 0..2_000 {
                            h.take();
                            if (i + t + round) % 3 == 0 {
                                let h2 = h.clone();
                                let l2 = lasts.clone();
                                std::thread::spawn(move || {
                                    if h2.release() {
                                        l2.fetch_add(1, Ordering::SeqCst);
                                    }
                                })
                                .join()
                                .unwrap();
                            } else if h.release() {
                                lasts.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                        // Its own reference.
                        if h.release() {
                            lasts.fetch_add(1, Ordering::SeqCst);
                        }
                    })
                })
                .collect();
            // The owner closes while the threads run, then drops its own.
            std::thread::sleep(std::time::Duration::from_micros(200 * (round % 5)));
            h.close(|| 0);
            let owner_last = h.release();
            for t in handles {
                t.join().unwrap();
            }
            let total = lasts.load(Ordering::SeqCst) + usize::from(owner_last);
            assert_eq!(
                total, 1,
                "round {round}: the last reference found {total} times"
            );
            assert_eq!(h.remaining.load(Ordering::SeqCst), 0);
        }
    }

    /// Before the close nothing is ever "last", even when a shard's count
    /// goes below zero; after it, the owner's drop is.
    #[test]
    fn nothing_is_last_before_the_close() {
        let h = Holders::new();
        h.take();
        let other = std::thread::scope(|s| s.spawn(|| h.release()).join().unwrap());
        assert!(
            !other,
            "a drop on another shard (count -1 there) is not last"
        );
        h.close(|| 0);
        assert_eq!(h.remaining.load(Ordering::SeqCst), 1);
        assert!(h.release(), "the owner's drop after the close is the last");
    }
}
