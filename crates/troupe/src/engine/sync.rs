//! The one door through which the lock-free parts reach atomics and cells.
//!
//! Under `cfg(loom)` these are loom's model-checked types, so the loom tests in
//! `tests/loom.rs` explore every interleaving of the mailbox and of the actor's
//! state word; otherwise they are the standard library's. Only the code whose
//! correctness rests on memory ordering (the mailbox and the state word) goes
//! through here, plus the scheduler's idle words ([`counted`], never loom's:
//! no loom model builds a pool).
//!
//! With the `contention` feature (never under loom), every atomic here is a
//! thin wrapper that counts its read-modify-writes, failed compare-exchanges
//! and stores per call site into the calling thread's own counter block
//! ([`contention`]); the scheduler adds its events ([`count`]). Counting
//! writes only thread-owned memory, so it adds no shared-line traffic; with
//! the feature off the wrappers do not exist and [`count`] is empty.

#[cfg(all(feature = "contention", not(loom)))]
pub mod contention;

/// The standard atomics, counted under the `contention` feature. The
/// scheduler's words, which no loom model covers, use these directly.
pub(crate) mod counted {
    #[cfg(all(feature = "contention", not(loom)))]
    pub(crate) use super::contention::atomics::{AtomicPtr, AtomicUsize};
    // Under loom the parking code takes loom's fence instead.
    #[cfg_attr(loom, allow(unused_imports))]
    pub(crate) use std::sync::atomic::fence;
    // Under loom only the scheduler's `AtomicUsize` is used from here.
    #[cfg(not(all(feature = "contention", not(loom))))]
    #[cfg_attr(loom, allow(unused_imports))]
    pub(crate) use std::sync::atomic::{AtomicPtr, AtomicUsize};
}

#[cfg(not(loom))]
pub(crate) use counted::{AtomicPtr, AtomicUsize};

/// What the scheduler's parking (`scheduler/park.rs`) is built from: the
/// counted atomics, a SeqCst `fence` and `parking_lot`'s lock; under loom,
/// loom's, so that `tests/loom.rs` model-checks the Dekker pair with the
/// real [`Idle`](crate::engine::scheduler::park::Idle).
pub(crate) mod parking {
    #[cfg(not(loom))]
    pub(crate) use super::counted::{fence, AtomicUsize};
    #[cfg(loom)]
    pub(crate) use loom::sync::atomic::{fence, AtomicUsize};
    #[cfg(not(loom))]
    pub(crate) use parking_lot::Mutex;

    /// loom's mutex with `parking_lot`'s signature (no poisoning).
    #[cfg(loom)]
    pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

    #[cfg(loom)]
    impl<T> Mutex<T> {
        pub(crate) fn new(value: T) -> Self {
            Mutex(loom::sync::Mutex::new(value))
        }

        pub(crate) fn lock(&self) -> loom::sync::MutexGuard<'_, T> {
            self.0.lock().unwrap_or_else(|e| e.into_inner())
        }
    }
}
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::Ordering;

/// A scheduler event the `contention` build counts (see [`count`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(all(feature = "contention", not(loom))), allow(dead_code))]
pub(crate) enum Event {
    /// A task pushed onto a pool's global injector.
    InjectorPush,
    /// `Pool::notify` called (after a stealable push).
    Notify,
    /// A sleeping worker unparked (`Unpark::unpark`).
    Unpark,
    /// A worker parked on its futex.
    Park,
    /// A worker started searching (injector, then stealing).
    Search,
    /// A worker did not search because half the workers already were.
    SearchCapped,
    /// A task put in the scheduling worker's LIFO slot.
    LifoPlace,
    /// A task pushed onto the scheduling worker's stealable deque.
    DequePush,
    /// A successful steal from another worker's deque (a task changes worker).
    Steal,
    /// A turn that used its budget and went back to a queue (other work was visible).
    BudgetYield,
    /// A turn that used its budget and went on (nothing else was visible).
    BudgetContinue,
    /// A turn that found only a half-written slot and went back to a queue.
    HalfWritten,
    /// A task handed out of a LIFO slot to the stealable deque because its
    /// scheduler's turn went on (`WorkerLocal::spill_lifo`).
    LifoSpill,
}

/// Counts `event` on the calling thread (the `contention` build only).
#[inline(always)]
pub(crate) fn count(event: Event) {
    #[cfg(all(feature = "contention", not(loom)))]
    contention::event(event);
    #[cfg(not(all(feature = "contention", not(loom))))]
    let _ = event;
}

/// Records that `n` workers are searching now (the gauge of the most at once).
#[inline(always)]
pub(crate) fn searching_now(n: usize) {
    #[cfg(all(feature = "contention", not(loom)))]
    contention::searching_now(n);
    #[cfg(not(all(feature = "contention", not(loom))))]
    let _ = n;
}

/// An `UnsafeCell` with loom's closure-based access API, so the same code runs
/// under the model checker and in production.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self(std::cell::UnsafeCell::new(value))
    }

    /// Runs `f` with a mutable pointer to the contents.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// Spin-then-yield back-off for the rare waits inside the mailbox.
#[cfg(not(loom))]
pub(crate) use crossbeam_utils::Backoff;

/// Under loom every wait must yield to the model's scheduler.
#[cfg(loom)]
pub(crate) struct Backoff;

#[cfg(loom)]
impl Backoff {
    pub(crate) fn new() -> Self {
        Backoff
    }
    pub(crate) fn snooze(&self) {
        loom::thread::yield_now();
    }
    pub(crate) fn spin(&self) {
        loom::thread::yield_now();
    }
}
