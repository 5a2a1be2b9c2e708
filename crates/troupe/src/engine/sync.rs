//! The one door through which the lock-free parts reach atomics and cells.
//!
//! Under `cfg(loom)` these are loom's model-checked types, so the loom tests in
//! `tests/loom.rs` explore every interleaving of the mailbox and of the actor's
//! state word; otherwise they are the standard library's. Only the code whose
//! correctness rests on memory ordering (the mailbox and the state word) goes
//! through here.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

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
