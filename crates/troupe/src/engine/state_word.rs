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
//! # The bounded mailbox's state word
//! `epoch << EPOCH_SHIFT | senders << SENDERS_SHIFT | flags`: the flags
//! above; `senders`, how many sends are inside their push window now; and
//! `epoch`, how many push windows were ever opened (it only grows, wrapping
//! after 2^40 on 64-bit targets).
//!
//! A send opens its window with one `fetch_add(SENDER + EPOCH)` *before* it
//! touches the ring. If the previous word has `CLOSED`, it closes the window
//! and hands the message back: refused, nothing accepted. Otherwise it
//! pushes into the ring (and counts whatever its overflow policy evicts),
//! then closes the window with `fetch_sub(SENDER)`; if that word had
//! `SCHEDULED` clear, the actor is idle and the send races for its task with
//! a `fetch_or(SCHEDULED)`: exactly one racer sees the bit clear and
//! schedules.
//!
//! No lost wake-up. The worker releases the task with one compare-and-swap
//! from the word it loaded *before* it found the ring empty, to the same
//! word without `SCHEDULED`. A send whose window opened before that load
//! pushed before the load or is still inside its window; in the first case
//! the worker's Acquire load orders the push before its emptiness check
//! (which then fails), in the second the send's closing `fetch_sub` sees
//! `SCHEDULED` clear after the release and schedules. A window opened after
//! the load changed the epoch, so the release's compare-and-swap fails and
//! the worker looks again. Nothing is read after a successful release: the
//! actor may be finalized and its cell dropped (or recycled) the next
//! instant on another worker. (The protocol this replaces released first
//! and then re-read the ring and the word; that late read raced with the
//! cell's drop, issue 24.)
//!
//! Nothing accepted is stranded. The finalizer sets `STOPPED | CLOSED`,
//! then drains the ring until it is empty *and* no send is inside its
//! window (`senders == 0`). A send that opened its window before `CLOSED`
//! is waited for, so its message, and anything its policy evicted, is
//! counted before the finalizer publishes the stop; one that opened after
//! is refused. So every send that returned `Ok` is handled or counted as
//! dropped before the actor's `join` returns, and so before a shutdown
//! report is made.
//!
//! `tests/loom.rs` checks both arguments with the real state word, each
//! with a mutation that must fail.

use crate::engine::sync::{AtomicUsize, Ordering};

pub const SCHEDULED: usize = 1;
pub const CLOSED: usize = 1 << 1;
pub const STOP_DRAIN: usize = 1 << 2;
pub const STOP_NOW: usize = 1 << 3;
pub const SHUTDOWN: usize = 1 << 4;
pub const STOPPED: usize = 1 << 5;
pub const STOP_ANY: usize = STOP_DRAIN | STOP_NOW;
/// Every state bit above (the unbounded mailbox keeps a bit of its own
/// beside them in its tail word).
pub const FLAGS_USED: usize = SCHEDULED | CLOSED | STOP_DRAIN | STOP_NOW | SHUTDOWN | STOPPED;
/// The flag bits of a state word.
pub const FLAGS: usize = (1 << SENDERS_SHIFT) - 1;

const SENDERS_SHIFT: usize = 8;
/// One send inside its push window.
const SENDER: usize = 1 << SENDERS_SHIFT;
const EPOCH_SHIFT: usize = 24;
/// Sends inside their push window (16 bits: at most 65,535 at once).
const SENDERS: usize = ((1 << EPOCH_SHIFT) - 1) & !FLAGS;
/// One push window opened, ever.
const EPOCH: usize = 1 << EPOCH_SHIFT;

/// See the module docs.
pub struct ActorState(AtomicUsize);

impl ActorState {
    /// A new actor starts scheduled: its spawner holds its first task (which
    /// runs the `started` hook).
    pub fn new_scheduled() -> Self {
        ActorState(AtomicUsize::new(SCHEDULED))
    }

    /// The flag bits.
    #[inline]
    pub fn load(&self) -> usize {
        self.0.load(Ordering::Acquire) & FLAGS
    }

    /// Opens a send's push window. `false`: the actor is closed, the window
    /// is closed again, and the send must be refused.
    #[inline]
    pub fn begin_push(&self) -> bool {
        let prev = self.0.fetch_add(SENDER + EPOCH, Ordering::AcqRel);
        debug_assert!(prev & SENDERS != SENDERS, "65,535 sends at once");
        if prev & CLOSED != 0 {
            self.0.fetch_sub(SENDER, Ordering::Release);
            return false;
        }
        true
    }

    /// Closes a push window that pushed. True if the caller now owns the
    /// actor's task (it was idle) and must schedule it.
    #[inline]
    pub fn end_push(&self) -> bool {
        let prev = self.0.fetch_sub(SENDER, Ordering::AcqRel);
        prev & SCHEDULED == 0 && self.0.fetch_or(SCHEDULED, Ordering::AcqRel) & SCHEDULED == 0
    }

    /// Closes a push window that pushed nothing (the ring was full, or the
    /// actor closed while a blocked send waited).
    #[inline]
    pub fn abort_push(&self) {
        self.0.fetch_sub(SENDER, Ordering::Release);
    }

    /// Whether a send is inside its push window now (the final drain waits
    /// for none).
    #[inline]
    pub fn sends_in_flight(&self) -> bool {
        self.0.load(Ordering::Acquire) & SENDERS != 0
    }

    /// Sets stop bits (and `CLOSED`); returns true if the caller must
    /// schedule the actor so it sees them.
    pub fn request_stop(&self, bits: usize) -> bool {
        self.0.fetch_or(bits | CLOSED | SCHEDULED, Ordering::AcqRel) & SCHEDULED == 0
    }

    /// The running worker (holding the task) gives it up if nothing is
    /// waiting and no stop is requested: `Ok` if released, else the flags
    /// (`Err(flags)` with no stop bit: the ring was not empty, or a send
    /// opened its window; the caller still holds the task and looks again).
    /// `is_empty` is the ring's emptiness test, made after the word is read.
    /// Nothing is read after a successful release.
    #[inline]
    pub fn try_release(&self, is_empty: impl FnOnce() -> bool) -> Result<(), usize> {
        let word = self.0.load(Ordering::Acquire);
        if word & STOP_ANY != 0 || !is_empty() {
            return Err(word & FLAGS);
        }
        self.0
            .compare_exchange(word, word & !SCHEDULED, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| ())
            .map_err(|now| now & FLAGS)
    }

    /// The mutation `tests/loom.rs` must catch: the ring checked before the
    /// word is read, so a whole send between the two goes unseen.
    #[cfg(loom)]
    pub fn try_release_mutation_empty_first(
        &self,
        is_empty: impl FnOnce() -> bool,
    ) -> Result<(), usize> {
        let empty = is_empty();
        let word = self.0.load(Ordering::Acquire);
        if word & STOP_ANY != 0 || !empty {
            return Err(word & FLAGS);
        }
        self.0
            .compare_exchange(word, word & !SCHEDULED, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| ())
            .map_err(|now| now & FLAGS)
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

    /// A whole send: its window, then whether it took the task.
    fn send(st: &ActorState) -> Option<bool> {
        st.begin_push().then(|| st.end_push())
    }

    #[test]
    fn one_task_per_idle_period() {
        let st = ActorState::new_scheduled();
        // The spawner holds the first task; a send finds it scheduled.
        assert_eq!(send(&st), Some(false));
        assert_eq!(st.try_release(|| true), Ok(()));
        // Idle: the next send takes the task, the one after does not.
        assert_eq!(send(&st), Some(true));
        assert_eq!(send(&st), Some(false));
        // A non-empty ring keeps the task.
        assert_eq!(st.try_release(|| false), Err(SCHEDULED));
        assert_eq!(st.try_release(|| true), Ok(()));
        assert_eq!(st.load() & SCHEDULED, 0);
    }

    #[test]
    fn a_window_opened_after_the_load_fails_the_release() {
        let st = ActorState::new_scheduled();
        // The send opens (and even closes) its window between the worker's
        // load and its compare-and-swap: the epoch changed, so the release
        // fails, though `senders` is back to 0.
        let r = st.try_release(|| {
            assert!(st.begin_push());
            assert!(!st.end_push(), "the worker still holds the task");
            true
        });
        assert_eq!(r, Err(SCHEDULED));
        assert_eq!(st.load() & SCHEDULED, SCHEDULED);
    }

    #[test]
    fn a_stop_request_closes_and_schedules_an_idle_actor_once() {
        let st = ActorState::new_scheduled();
        assert_eq!(st.try_release(|| true), Ok(()));
        assert!(st.request_stop(STOP_DRAIN));
        assert_eq!(st.load() & CLOSED, CLOSED);
        assert!(!st.request_stop(STOP_NOW), "already scheduled by the first");
        assert_eq!(send(&st), None, "a closed actor refuses");
        assert!(!st.sends_in_flight(), "the refused window is closed");
        st.mark_stopped();
        assert_eq!(
            st.load() & (STOPPED | CLOSED | SCHEDULED),
            STOPPED | CLOSED | SCHEDULED
        );
        assert_eq!(st.try_release(|| true), Err(st.load()));
    }

    #[test]
    fn windows_are_counted_until_closed() {
        let st = ActorState::new_scheduled();
        assert!(st.begin_push());
        assert!(st.begin_push());
        assert!(st.sends_in_flight());
        st.abort_push();
        assert!(st.sends_in_flight());
        assert!(!st.end_push());
        assert!(!st.sends_in_flight());
        assert_eq!(st.load(), SCHEDULED, "the counts never reach the flags");
    }

    /// Sends race a worker's release: at any moment at most one of them
    /// holds the task, and every send that found the actor idle is matched
    /// by exactly one task.
    #[test]
    fn racing_sends_and_release_hand_out_one_task_at_a_time() {
        use std::sync::atomic::{AtomicUsize, Ordering as O};
        use std::sync::Arc;
        let rounds = if cfg!(miri) { 50 } else { 20_000 };
        let st = Arc::new(ActorState::new_scheduled());
        let holders = Arc::new(AtomicUsize::new(1)); // the spawner's task
        let sender = {
            let (st, holders) = (st.clone(), holders.clone());
            std::thread::spawn(move || {
                for _ in 0..rounds {
                    if send(&st) == Some(true) {
                        assert_eq!(holders.fetch_add(1, O::SeqCst), 0, "two tasks at once");
                        holders.fetch_sub(1, O::SeqCst);
                        while st.try_release(|| true).is_err() {
                            std::hint::spin_loop();
                        }
                    }
                }
            })
        };
        let mut held = true;
        for _ in 0..rounds {
            if held {
                holders.fetch_sub(1, O::SeqCst);
                if st.try_release(|| true).is_ok() {
                    held = false;
                } else {
                    holders.fetch_add(1, O::SeqCst);
                }
            } else if send(&st) == Some(true) {
                assert_eq!(holders.fetch_add(1, O::SeqCst), 0, "two tasks at once");
                held = true;
            }
        }
        sender.join().unwrap();
        if held {
            holders.fetch_sub(1, O::SeqCst);
        }
        assert_eq!(holders.load(O::SeqCst), 0);
    }
}
