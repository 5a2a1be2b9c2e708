//! Parking idle workers and waking them, without lost wake-ups.
//!
//! Protocol (a Dekker pair on `sleeping` and the queues, both SeqCst):
//! * a worker about to park registers in `sleepers` and bumps `sleeping`, then
//!   re-checks every stealable queue; if it finds work it unregisters and goes
//!   back for it, else it parks;
//! * a thread that pushes a stealable task then reads `sleeping`; if some
//!   worker sleeps and none is searching, it pops one sleeper and unparks it.
//!
//! Either the pusher sees the sleeper or the sleeper's re-check sees the task.
//! Whether the parking worker was searching does not enter the argument: a
//! searcher leaves `searching` in the same step that registers it (before
//! the fence and the re-check), and a pusher that still saw it searching
//! read `searching` before that step, hence pushed before the re-check.
//!
//! `searching` only throttles wake-ups, and it is capped (tokio's and Go's
//! rule): a worker may start searching only while fewer than half the
//! workers search ([`Idle::try_start_searching`]), so the count never grows
//! past `threads / 2` (at least 1) however many workers run out of work at
//! once; the others go straight to the re-check and park. One searcher at a
//! time suffices for a wake-up: a searcher that finds work wakes the next
//! one if it was the last (`Idle::found_work`), and so does a worker that
//! takes a task in its re-check (`Idle::took_work_after_recheck`), since
//! pushes made while it still searched skipped their wake-ups. A woken worker starts out
//! searching (its waker counted it), and a waker only wakes when nobody
//! searches, so wake-ups respect the cap too. Parked workers block on a
//! futex-backed `Parker` with no timeout, so an idle system uses no CPU. A
//! tokio dispatcher's one worker is a task, not a thread: it registers as a
//! sleeper the same way and awaits a `Notify`, whose stored permit plays the
//! `Parker`'s part (an unpark before the wait is kept).
//!
//! `tests/loom.rs` checks the pair with this very `Idle` (under `cfg(loom)`
//! its atomics, fence and lock are loom's, and a worker's wake-ups are
//! counted): a push against a worker that parks, plain and while
//! searching, with a mutation (`ParkMutation::NotifyWithoutFence`) that
//! must lose the wake-up.

use crate::engine::sync::parking::{fence, AtomicUsize, Mutex};
use crate::engine::sync::{self, Event};
use crossbeam_utils::sync::Unparker;
use std::sync::atomic::Ordering;

/// How a sleeping worker is woken: a worker thread's `Unparker`, or the
/// `Notify` a tokio dispatcher's driver task awaits (`tokio_driver.rs`).
pub enum Unpark {
    /// A worker thread, parked on its `Parker`.
    Thread(Unparker),
    /// A tokio dispatcher's driver task, awaiting its `Notify`.
    #[cfg(feature = "async")]
    #[cfg_attr(loom, allow(private_interfaces))]
    Task(std::sync::Arc<super::tokio_driver::DriverShared>),
    /// A loom model's worker: counts the wake-ups it is sent (the model
    /// checks that a worker that parked got one).
    #[cfg(loom)]
    Model(std::sync::Arc<loom::sync::atomic::AtomicUsize>),
}

impl Unpark {
    /// Wakes the sleeper (a wake-up before it waits is kept).
    #[inline]
    pub fn unpark(&self) {
        sync::count(Event::Unpark);
        match self {
            Unpark::Thread(u) => u.unpark(),
            #[cfg(feature = "async")]
            Unpark::Task(d) => d.wake(),
            #[cfg(loom)]
            Unpark::Model(n) => {
                n.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
}

/// A deliberate error in the parking protocol for the loom model to catch
/// (`tests/loom.rs`); outside loom no `Idle` carries one.
#[cfg(loom)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParkMutation {
    /// The protocol as written.
    None,
    /// `notify_one` reads `sleeping` without the SeqCst fence after the
    /// push: the push and the sleeper's registration may each miss the
    /// other, and the sleeper is never woken.
    NotifyWithoutFence,
    /// [`Idle::took_work_after_recheck`] wakes nobody: pushes that skipped
    /// their wake-up because a worker was searching stay stranded when
    /// that worker takes one task in its re-check and runs it.
    NoWakeAfterRecheck,
}

/// The pool's idle words and sleeper set (see the module docs).
pub struct Idle {
    sleepers: Mutex<Vec<usize>>,
    sleeping: AtomicUsize,
    searching: AtomicUsize,
    #[cfg(loom)]
    mutation: ParkMutation,
}

impl Idle {
    /// Idle words for a pool of `threads` workers.
    pub fn new(threads: usize) -> Self {
        Idle {
            sleepers: Mutex::new(Vec::with_capacity(threads)),
            sleeping: AtomicUsize::new(0),
            searching: AtomicUsize::new(0),
            #[cfg(loom)]
            mutation: ParkMutation::None,
        }
    }

    /// Idle words carrying a deliberate protocol error (loom models).
    #[cfg(loom)]
    pub fn with_mutation(threads: usize, mutation: ParkMutation) -> Self {
        Idle {
            mutation,
            ..Self::new(threads)
        }
    }

    /// After a stealable push.
    #[inline]
    pub fn notify_one(&self, unparkers: &[Unpark]) {
        #[cfg(loom)]
        let fenced = self.mutation != ParkMutation::NotifyWithoutFence;
        #[cfg(not(loom))]
        let fenced = true;
        if fenced {
            fence(Ordering::SeqCst);
        }
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
            sync::searching_now(self.searching.fetch_add(1, Ordering::SeqCst) + 1);
            index
        };
        unparkers[index].unpark();
    }

    /// A worker ran out of local work: it becomes a searcher unless half
    /// the pool's `threads` (at least one) already search. `false`: it did
    /// not, and should go to the re-check and park.
    pub fn try_start_searching(&self, threads: usize) -> bool {
        let cap = (threads / 2).max(1);
        let mut n = self.searching.load(Ordering::SeqCst);
        loop {
            if n >= cap {
                return false;
            }
            match self
                .searching
                .compare_exchange_weak(n, n + 1, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => {
                    sync::searching_now(n + 1);
                    return true;
                }
                Err(now) => n = now,
            }
        }
    }

    /// Starts searching without the cap (a pool of one worker: the tokio
    /// dispatcher's driver).
    pub(crate) fn start_searching(&self) {
        sync::searching_now(self.searching.fetch_add(1, Ordering::SeqCst) + 1);
    }

    /// A searching worker found work. If it was the last searcher, wake
    /// another worker: there may be more work to spread.
    pub fn found_work(&self, unparkers: &[Unpark]) {
        if self.searching.fetch_sub(1, Ordering::SeqCst) == 1
            && self.sleeping.load(Ordering::SeqCst) > 0
        {
            self.wake_one(unparkers);
        }
    }

    /// A worker that registered as a sleeper took a task in its re-check
    /// (or woke without a waker having counted it). While it searched,
    /// pushers skipped their wake-ups on its account (`searching != 0`);
    /// the task it takes may be one of several such pushes, and the rest
    /// would wait in the queues while every other worker sleeps, as long
    /// as this worker's handler runs. So it wakes one sleeper unless
    /// another worker searches (tokio's `notify_if_work_pending` after its
    /// last searcher parks). Off the per-message path: only a worker
    /// leaving the park path takes it.
    pub fn took_work_after_recheck(&self, unparkers: &[Unpark]) {
        #[cfg(loom)]
        if self.mutation == ParkMutation::NoWakeAfterRecheck {
            return;
        }
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::SeqCst) == 0 || self.searching.load(Ordering::SeqCst) != 0 {
            return;
        }
        self.wake_one(unparkers);
    }

    /// A worker registers as a sleeper, leaving `searching` if it was
    /// `searching`. Returns with the worker registered; the caller must
    /// re-check the queues, maybe park, and then
    /// [`cancel_sleep`](Self::cancel_sleep).
    pub fn prepare_sleep(&self, index: usize, searching: bool) {
        let mut sleepers = self.sleepers.lock();
        sleepers.push(index);
        self.sleeping.fetch_add(1, Ordering::SeqCst);
        if searching {
            self.searching.fetch_sub(1, Ordering::SeqCst);
        }
        drop(sleepers);
        fence(Ordering::SeqCst);
    }

    /// Leaves the sleeper set (after finding work in the re-check, or after a
    /// wake-up). `true`: a waker removed us and counted us as searching;
    /// `false`: we removed ourselves and do not search.
    pub fn cancel_sleep(&self, index: usize) -> bool {
        let mut sleepers = self.sleepers.lock();
        match sleepers.iter().position(|&i| i == index) {
            Some(pos) => {
                sleepers.swap_remove(pos);
                self.sleeping.fetch_sub(1, Ordering::SeqCst);
                false
            }
            None => true,
        }
    }

    /// Workers searching now (tests).
    #[cfg(test)]
    pub(crate) fn searching(&self) -> usize {
        self.searching.load(Ordering::SeqCst)
    }

    /// Workers parked now (tests).
    #[cfg(test)]
    pub(crate) fn sleeping(&self) -> usize {
        self.sleeping.load(Ordering::SeqCst)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn at_most_half_the_workers_search() {
        for (threads, cap) in [(1, 1), (2, 1), (3, 1), (16, 8), (64, 32)] {
            let idle = Idle::new(threads);
            let started = (0..threads)
                .filter(|_| idle.try_start_searching(threads))
                .count();
            assert_eq!(started, cap, "{threads} workers");
            assert_eq!(idle.searching(), cap);
            // A searcher that parks makes room for one more.
            idle.prepare_sleep(0, true);
            assert!(idle.try_start_searching(threads));
            assert!(!idle.try_start_searching(threads));
            // One that parks without searching leaves the count alone.
            idle.prepare_sleep(1, false);
            assert_eq!(idle.searching(), cap);
            assert!(!idle.cancel_sleep(1), "removed itself: not searching");
            assert_eq!(idle.sleeping(), 1);
        }
    }

    #[test]
    fn a_woken_worker_counts_as_searching() {
        let idle = Idle::new(4);
        let parkers: Vec<_> = (0..4)
            .map(|_| crossbeam_utils::sync::Parker::new())
            .collect();
        let unparkers: Vec<_> = parkers
            .iter()
            .map(|p| Unpark::Thread(p.unparker().clone()))
            .collect();
        idle.prepare_sleep(3, false);
        // Nobody searches: the notify wakes worker 3 and counts it.
        idle.notify_one(&unparkers);
        assert_eq!(idle.sleeping(), 0);
        assert_eq!(idle.searching(), 1);
        assert!(idle.cancel_sleep(3), "a waker removed it");
    }
}
