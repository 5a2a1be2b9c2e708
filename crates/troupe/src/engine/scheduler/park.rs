//! Parking idle workers and waking them, without lost wake-ups.
//!
//! Protocol (a Dekker pair on `sleeping` and the queues, both SeqCst):
//! * a worker about to park registers in `sleepers` and bumps `sleeping`, then
//!   re-checks every stealable queue; if it finds work it unregisters and goes
//!   back to searching, else it parks;
//! * a thread that pushes a stealable task then reads `sleeping`; if some
//!   worker sleeps and none is searching, it pops one sleeper and unparks it.
//!
//! Either the pusher sees the sleeper or the sleeper's re-check sees the task.
//! `searching` only throttles wake-ups (one searcher at a time suffices: a
//! searcher that finds work wakes the next one, `Idle::found_work`). Parked
//! workers block on a futex-backed `Parker` with no timeout, so an idle system
//! uses no CPU. A tokio dispatcher's one worker is a task, not a thread: it
//! registers as a sleeper the same way and awaits a `Notify`, whose stored
//! permit plays the `Parker`'s part (an unpark before the wait is kept).

use crossbeam_utils::sync::Unparker;
use parking_lot::Mutex;
use std::sync::atomic::{fence, AtomicUsize, Ordering};

/// How a sleeping worker is woken: a worker thread's `Unparker`, or the
/// `Notify` a tokio dispatcher's driver task awaits (`tokio_driver.rs`).
pub(crate) enum Unpark {
    Thread(Unparker),
    #[cfg(feature = "async")]
    Task(std::sync::Arc<super::tokio_driver::DriverShared>),
}

impl Unpark {
    #[inline]
    pub(crate) fn unpark(&self) {
        match self {
            Unpark::Thread(u) => u.unpark(),
            #[cfg(feature = "async")]
            Unpark::Task(d) => d.wake(),
        }
    }
}

pub(crate) struct Idle {
    sleepers: Mutex<Vec<usize>>,
    sleeping: AtomicUsize,
    searching: AtomicUsize,
}

impl Idle {
    pub(crate) fn new(threads: usize) -> Self {
        Idle {
            sleepers: Mutex::new(Vec::with_capacity(threads)),
            sleeping: AtomicUsize::new(0),
            searching: AtomicUsize::new(0),
        }
    }

    /// After a stealable push.
    #[inline]
    pub(crate) fn notify_one(&self, unparkers: &[Unpark]) {
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) == 0 || self.searching.load(Ordering::SeqCst) != 0 {
            return;
        }
        self.wake_one(unparkers);
    }

    fn wake_one(&self, unparkers: &[Unpark]) {
        let index = {
            let mut sleepers = self.sleepers.lock();
            let Some(index) = sleepers.pop() else { return };
            self.sleeping.fetch_sub(1, Ordering::SeqCst);
            // The woken worker starts out searching.
            self.searching.fetch_add(1, Ordering::SeqCst);
            index
        };
        unparkers[index].unpark();
    }

    /// A worker ran out of local work and starts searching.
    pub(crate) fn start_searching(&self) {
        self.searching.fetch_add(1, Ordering::SeqCst);
    }

    /// A searching worker found work. If it was the last searcher, wake
    /// another worker: there may be more work to spread.
    pub(crate) fn found_work(&self, unparkers: &[Unpark]) {
        if self.searching.fetch_sub(1, Ordering::SeqCst) == 1
            && self.sleeping.load(Ordering::SeqCst) > 0
        {
            self.wake_one(unparkers);
        }
    }

    /// A searching worker registers as a sleeper. Returns with the worker
    /// registered; the caller must re-check the queues and then either
    /// [`cancel_sleep`](Self::cancel_sleep) or park.
    pub(crate) fn prepare_sleep(&self, index: usize) {
        let mut sleepers = self.sleepers.lock();
        sleepers.push(index);
        self.sleeping.fetch_add(1, Ordering::SeqCst);
        self.searching.fetch_sub(1, Ordering::SeqCst);
        drop(sleepers);
        fence(Ordering::SeqCst);
    }

    /// Leaves the sleeper set (after finding work in the re-check, or after a
    /// wake-up). Returns to the searching state either way: if a waker
    /// already removed us it has counted us as searching.
    pub(crate) fn cancel_sleep(&self, index: usize) {
        let mut sleepers = self.sleepers.lock();
        if let Some(pos) = sleepers.iter().position(|&i| i == index) {
            sleepers.swap_remove(pos);
            self.sleeping.fetch_sub(1, Ordering::SeqCst);
            self.searching.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Workers parked now (tests).
    #[cfg(test)]
    pub(crate) fn sleeping(&self) -> usize {
        self.sleeping.load(Ordering::SeqCst)
    }
}
