//! Overtime: a turn that goes on past its budget while other work waits,
//! on at most half the workers at once.
//!
//! Why: a handler cannot be preempted, so a sender actor whose one handler
//! makes 500,000 tells holds its worker for all of them. A fan-in receiver
//! that yields at each budget end (64 messages) to the visible work (more
//! such senders) gets 64 messages per sender handler, and its backlog grows
//! to the whole run (issue 39: every 31-slot block then allocated by a
//! sender and freed by the receiver, 100 MB of queue). The receiver's share
//! of a worker was decided by the length of other actors' handlers.
//!
//! The rule (`WorkerLocal::may_work_overtime`, `ActorCell::run`): at a budget
//! end with other work visible, a turn on a pool's own worker thread goes
//! on instead of yielding when
//! * the worker's LIFO slot is empty (its task cannot be stolen: the turn
//!   yields to it, as before, which keeps ping-pong shapes as they were), and
//! * the worker holds, or takes now, one of the pool's `threads / 2`
//!   overtime places ([`Overtime::try_enter`]; a 1-worker pool has none).
//!
//! The worker then hands every task of its local deque to the injector
//! (oldest first), so the waiting work is where every other worker looks,
//! in order. At least `threads - threads / 2` workers are never in overtime:
//! they serve the injector and the deques with the usual budget and fairness
//! rules, so no queued task waits on an overtime turn. A turn in overtime
//! whose mailbox runs dry spins a bounded while (`OVERTIME_SPIN_STEPS`, a few
//! microseconds, only `spin_loop` hints and loads) for the next claim before
//! it releases, since its senders are running elsewhere; a turn that handled
//! nothing since its last look does not spin (a half-written slot goes back
//! to the deque as before). The place is given back when the turn ends
//! (`WorkerLocal::end_overtime`, after every task).
//!
//! Cost: nothing per message; per overtime turn one compare-and-swap to
//! enter and one `fetch_sub` to leave, on this pool-wide word; per budget
//! end of such a turn, a look at the local deque. Turns that never use a
//! full budget while other work is visible (ring, ping-pong, spawns) never
//! reach this code.
//!
//! `tests/loom.rs` checks the cap (`at_most_half_the_workers_work_overtime`)
//! with a mutation (`OvertimeMutation::CheckThenAdd`) that lets two workers
//! past a cap of one.

use crate::engine::sync::parking::AtomicUsize;
use std::sync::atomic::Ordering;

/// Steps of the spin an overtime turn makes on a dry mailbox before it
/// releases: step `k` spins `2^k` hints, then looks (one load of the tail
/// word). 8 steps: 255 hints, a few microseconds.
pub(crate) const OVERTIME_SPIN_STEPS: u32 = 8;

/// A deliberate error in the cap for the loom model (`tests/loom.rs`).
#[cfg(loom)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OvertimeMutation {
    /// The protocol as written.
    None,
    /// Check the count with a load, then add with a separate `fetch_add`:
    /// two workers that both load a count under the cap both enter.
    CheckThenAdd,
}

/// The pool's count of workers in overtime (see the module docs).
pub struct Overtime {
    held: AtomicUsize,
    #[cfg(loom)]
    mutation: OvertimeMutation,
}

impl Default for Overtime {
    fn default() -> Self {
        Self::new()
    }
}

impl Overtime {
    /// No worker in overtime.
    pub fn new() -> Self {
        Overtime {
            held: AtomicUsize::new(0),
            #[cfg(loom)]
            mutation: OvertimeMutation::None,
        }
    }

    /// A count carrying a deliberate protocol error (loom models).
    #[cfg(loom)]
    pub fn with_mutation(mutation: OvertimeMutation) -> Self {
        Overtime {
            mutation,
            ..Self::new()
        }
    }

    /// The most workers of a `threads`-worker pool in overtime at once.
    #[inline]
    pub fn cap(threads: usize) -> usize {
        threads / 2
    }

    /// Takes one of the `threads / 2` places; `false` when all are held
    /// (the caller yields as it would without overtime). One CAS per
    /// success; a failed CAS means another worker entered or left.
    pub fn try_enter(&self, threads: usize) -> bool {
        let cap = Self::cap(threads);
        if cap == 0 {
            return false;
        }
        let mut n = self.held.load(Ordering::Relaxed);
        #[cfg(loom)]
        if self.mutation == OvertimeMutation::CheckThenAdd {
            if n >= cap {
                return false;
            }
            self.held.fetch_add(1, Ordering::AcqRel);
            return true;
        }
        loop {
            if n >= cap {
                return false;
            }
            match self
                .held
                .compare_exchange_weak(n, n + 1, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(now) => n = now,
            }
        }
    }

    /// Gives back a place taken by [`try_enter`](Self::try_enter).
    pub fn leave(&self) {
        let was = self.held.fetch_sub(1, Ordering::AcqRel);
        debug_assert!(was > 0, "overtime left without a place");
    }

    /// Workers in overtime now (tests).
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn at_most_half_the_workers_work_overtime() {
        for (threads, cap) in [(1, 0), (2, 1), (3, 1), (4, 2), (16, 8), (64, 32)] {
            let o = Overtime::new();
            let entered = (0..threads).filter(|_| o.try_enter(threads)).count();
            assert_eq!(entered, cap, "{threads} workers");
            assert_eq!(o.held(), cap);
            if cap > 0 {
                // A place given back is a place for the next.
                o.leave();
                assert!(o.try_enter(threads));
                assert!(!o.try_enter(threads));
            }
        }
    }
}
