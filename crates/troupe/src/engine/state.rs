//! The actor's state bits: who may run the actor, and whether it is stopping.
//! The unbounded mailbox keeps them in the low bits of its tail word (see
//! `mailbox/unbounded.rs`); a bounded mailbox keeps them in an [`ActorState`]
//! beside its ring, with the protocol below.
//!
//! Bits: `SCHEDULED` (a task for the actor exists: queued or running),
//! `CLOSED` (sends are refused), `STOP_DRAIN` (stop once the mailbox is empty),
//! `STOP_NOW` (stop after the current message), `SHUTDOWN` (the stop comes
//! from system shutdown), `STOPPED` (finalized; `SCHEDULED` then stays set for
//! good so nobody schedules it again).
//!
//! The no-lost-wake-up argument. A sender pushes its message, then does
//! `fetch_or(SCHEDULED)` (AcqRel); if the bit was clear it owns the new task
//! and schedules it. The worker that finishes a turn does
//! `fetch_sub(SCHEDULED)` (AcqRel; the bit is known set), then checks the mailbox's indices, and if
//! a message is there tries `fetch_or(SCHEDULED)` itself. Both sides use RMWs
//! on the same word, so they are ordered: if the sender's RMW came first, the
//! worker's RMW reads from it and therefore sees the sender's push; if the
//! worker's came first, the sender sees the bit clear and schedules. Exactly
//! one of the racing `fetch_or`s wins, so there is never more than one task.
//! `tests/loom.rs` checks this with the real mailbox.

use crate::engine::sync::{AtomicUsize, Ordering};

pub const SCHEDULED: usize = 1;
pub const CLOSED: usize = 1 << 1;
pub const STOP_DRAIN: usize = 1 << 2;
pub const STOP_NOW: usize = 1 << 3;
pub const SHUTDOWN: usize = 1 << 4;
pub const STOPPED: usize = 1 << 5;
pub const STOP_ANY: usize = STOP_DRAIN | STOP_NOW;

/// See the module docs.
pub struct ActorState(AtomicUsize);

impl ActorState {
    /// A new actor starts scheduled: its spawner holds its first task (which
    /// runs the `started` hook).
    pub fn new_scheduled() -> Self {
        ActorState(AtomicUsize::new(SCHEDULED))
    }

    #[inline]
    pub fn load(&self) -> usize {
        self.0.load(Ordering::Acquire)
    }

    #[inline]
    pub fn is_closed(&self) -> bool {
        self.load() & CLOSED != 0
    }

    /// After a bounded push: sets `SCHEDULED` and returns the previous bits.
    /// `prev & SCHEDULED == 0`: the caller owns the actor's task. `prev &
    /// STOPPED != 0`: the actor's final drain may already have run, so the
    /// caller must take out what it may have left (see `mailbox/mod.rs`).
    #[inline]
    pub fn notify_bits(&self) -> usize {
        self.0.fetch_or(SCHEDULED, Ordering::AcqRel)
    }

    /// Sets stop bits (and `CLOSED`); returns true if the caller must
    /// schedule the actor so it sees them.
    pub fn request_stop(&self, bits: usize) -> bool {
        self.0.fetch_or(bits | CLOSED | SCHEDULED, Ordering::AcqRel) & SCHEDULED == 0
    }

    /// The running worker gives up the task; returns the previous bits.
    /// (`fetch_sub` of the known-set bit is one `lock xadd`, where a
    /// `fetch_and` whose result is used becomes a CAS loop.)
    #[inline]
    pub fn release(&self) -> usize {
        self.0.fetch_sub(SCHEDULED, Ordering::AcqRel)
    }

    /// After `release`, found more to do: try to take the task back. True if
    /// this caller owns it again (no sender scheduled it meanwhile).
    #[inline]
    pub fn reacquire(&self) -> bool {
        self.0.fetch_or(SCHEDULED, Ordering::AcqRel) & SCHEDULED == 0
    }

    /// Finalized: closed, stopped, and scheduled forever.
    pub fn mark_stopped(&self) {
        self.0
            .fetch_or(STOPPED | CLOSED | SCHEDULED, Ordering::AcqRel);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A send's `fetch_or`: whether it took the task.
    fn takes(st: &ActorState) -> bool {
        st.notify_bits() & SCHEDULED == 0
    }

    #[test]
    fn one_task_per_idle_period() {
        let st = ActorState::new_scheduled();
        // The spawner holds the first task; a send finds it scheduled.
        assert!(!takes(&st));
        let prev = st.release();
        assert_eq!(prev & SCHEDULED, SCHEDULED);
        // Idle: the next send takes the task, the one after does not.
        assert!(takes(&st));
        assert!(!takes(&st));
        // The worker releases, finds more, takes it back once.
        st.release();
        assert!(st.reacquire());
        assert!(!st.reacquire());
    }

    #[test]
    fn a_stop_request_closes_and_schedules_an_idle_actor_once() {
        let st = ActorState::new_scheduled();
        st.release();
        assert!(st.request_stop(STOP_DRAIN));
        assert!(st.is_closed());
        assert!(!st.request_stop(STOP_NOW), "already scheduled by the first");
        st.mark_stopped();
        assert_eq!(
            st.load() & (STOPPED | CLOSED | SCHEDULED),
            STOPPED | CLOSED | SCHEDULED
        );
        assert!(!takes(&st), "a stopped actor is never scheduled again");
    }

    /// Two threads race sends against a worker's release/reacquire: at any
    /// moment at most one of them holds the task, and every send that found
    /// the actor idle is matched by exactly one task.
    #[test]
    fn racing_notify_and_release_hand_out_one_task_at_a_time() {
        use std::sync::atomic::{AtomicUsize, Ordering as O};
        use std::sync::Arc;
        let rounds = if cfg!(miri) { 50 } else { 20_000 };
        let st = Arc::new(ActorState::new_scheduled());
        let holders = Arc::new(AtomicUsize::new(1)); // the spawner's task
        let sender = {
            let (st, holders) = (st.clone(), holders.clone());
            std::thread::spawn(move || {
                let mut took = 0;
                for _ in 0..rounds {
                    if takes(&st) {
                        took += 1;
                        assert_eq!(holders.fetch_add(1, O::SeqCst), 0, "two tasks at once");
                        holders.fetch_sub(1, O::SeqCst);
                        st.release();
                    }
                }
                took
            })
        };
        for _ in 0..rounds {
            holders.fetch_sub(1, O::SeqCst);
            st.release();
            if st.reacquire() {
                assert_eq!(holders.fetch_add(1, O::SeqCst), 0, "two tasks at once");
            } else {
                // The sender holds it now; wait for it to give it back.
                while !st.reacquire() {
                    std::hint::spin_loop();
                }
                assert_eq!(holders.fetch_add(1, O::SeqCst), 0, "two tasks at once");
            }
        }
        let _ = sender.join().unwrap();
        assert_eq!(holders.load(O::SeqCst), 1);
    }
}
