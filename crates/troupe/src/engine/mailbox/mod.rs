//! Mailboxes: where an actor's messages wait until a worker runs the actor.
//!
//! Two flavours sit side by side, chosen per actor at spawn
//! ([`MailboxConfig`]):
//! * `unbounded`: a lock-free segmented MPSC queue, the default. No
//!   allocation per message in steady state (blocks of slots are recycled).
//! * `bounded`: a preallocated lock-free ring with an [`Overflow`] policy.
//!
//! Each flavour also carries the actor's state word (`state_word.rs`): the
//! unbounded queue inside its tail word, the bounded ring beside it. The
//! mailbox is where "is there work?" and "who runs the actor?" are decided
//! together, so its API is: `push` (and learn whether to schedule),
//! `pop`, `try_release`, `request_stop`, `flags`, `mark_stopped`.
//!
//! The bounded flavour keeps its state word apart from its ring. A send
//! opens a *push window* on that word before it touches the ring and
//! closes it after (one RMW each); the worker releases the actor with a
//! compare-and-swap from the word it read before it found the ring empty,
//! and reads nothing after; the final drain waits until no window is open.
//! So, as with the unbounded mailbox, a send that returned `Ok` (with what
//! its overflow policy evicted) is handled or counted before the actor's
//! `join` returns. The protocol and its argument are in `state_word.rs`.
//!
//! Invariants every flavour keeps: FIFO per sender, no message lost or
//! duplicated, exactly one consumer at a time (the worker holding the actor's
//! `SCHEDULED` bit), a push after `CLOSED` is refused with the message handed
//! back, and `is_empty` callable from any thread without touching memory the
//! consumer may free.

pub(crate) mod bounded;
pub(crate) mod unbounded;

pub use bounded::Overflow;

use crate::engine::state_word::{self as state, ActorState};
use bounded::{Bounded, BoundedPushError};
pub(crate) use unbounded::Release;
use unbounded::Unbounded;

/// Which mailbox an actor gets, chosen at spawn time.
///
/// ```
/// use troupe::{MailboxConfig, Overflow};
/// let cfg = MailboxConfig::bounded(1024, Overflow::DropOldest);
/// assert_eq!(cfg, MailboxConfig::Bounded { capacity: 1024, policy: Overflow::DropOldest });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MailboxConfig {
    /// Grows as needed (the default).
    #[default]
    Unbounded,
    /// Holds at most `capacity` messages; `policy` says what happens beyond.
    Bounded {
        /// Maximum number of waiting messages (0 is raised to 1, as in
        /// [`MailboxConfig::bounded`]).
        capacity: usize,
        /// What a send does when the mailbox is full.
        policy: Overflow,
    },
}

impl MailboxConfig {
    /// A bounded mailbox of `capacity` messages with `policy` on overflow.
    ///
    /// Clamp: a capacity of 0 is raised to 1 (a mailbox must hold the
    /// message that wakes its actor).
    ///
    /// ```
    /// use troupe::{MailboxConfig, Overflow};
    /// assert_eq!(
    ///     MailboxConfig::bounded(0, Overflow::Reject),
    ///     MailboxConfig::Bounded { capacity: 1, policy: Overflow::Reject }
    /// );
    /// ```
    pub fn bounded(capacity: usize, policy: Overflow) -> Self {
        let capacity = capacity.max(1);
        MailboxConfig::Bounded { capacity, policy }
    }
}

pub(crate) enum Mailbox<T> {
    Unbounded(Unbounded<T>),
    // Boxed: the ring's cache-padded indices would otherwise bloat every actor.
    Bounded(Box<(Bounded<T>, ActorState)>),
}

/// Why a push did not take the message.
pub(crate) enum PushError<T> {
    Full(T),
    Closed(T),
}

impl<T> Mailbox<T> {
    /// Inline, so that a spawn writes the mailbox straight into its cell:
    /// returned through memory, it was read back in 16-byte loads from the
    /// 8-byte stores that wrote it, a store-forwarding stall on every spawn
    /// (see `ActorCell::init`).
    #[inline]
    pub(crate) fn new(config: MailboxConfig) -> Self {
        match config {
            MailboxConfig::Unbounded => Mailbox::Unbounded(Unbounded::new()),
            MailboxConfig::Bounded { capacity, policy } => Self::bounded(capacity, policy),
        }
    }

    #[inline(never)]
    fn bounded(capacity: usize, policy: Overflow) -> Self {
        Mailbox::Bounded(Box::new((
            Bounded::new(capacity, policy),
            ActorState::new_scheduled(),
        )))
    }

    /// Pushes a message (unless the actor is closed or the bounded mailbox
    /// is full; the error hands the message back). A `Block` mailbox waits
    /// for room only if `may_block` (and on a plain thread). A message a
    /// bounded mailbox's policy drops to make room (`DropOldest`'s oldest,
    /// `DropNewest`'s new one) goes to `evicted` inside the push window, so
    /// that it is counted before the actor's final drain can finish.
    /// `Ok(true)`: the actor was idle and the caller now holds its task and
    /// must schedule it.
    #[inline]
    pub(crate) fn push(
        &self,
        value: T,
        may_block: bool,
        evicted: impl FnOnce(T),
    ) -> Result<bool, PushError<T>> {
        match self {
            Mailbox::Unbounded(q) => q.push(value).map_err(PushError::Closed),
            Mailbox::Bounded(b) => {
                let (q, st) = &**b;
                if !st.begin_push() {
                    return Err(PushError::Closed(value));
                }
                match q.push(value, may_block) {
                    Ok(old) => {
                        if let Some(old) = old {
                            evicted(old);
                        }
                        Ok(st.end_push())
                    }
                    Err(e) => {
                        st.abort_push();
                        Err(match e {
                            BoundedPushError::Full(v) => PushError::Full(v),
                            BoundedPushError::Closed(v) => PushError::Closed(v),
                        })
                    }
                }
            }
        }
    }

    /// Pops the oldest message.
    ///
    /// # Safety
    /// Only the current consumer (owner of the actor's `SCHEDULED` bit, or a
    /// holder of the only reference) may call this.
    #[inline]
    pub(crate) unsafe fn pop(&self) -> Option<T> {
        match self {
            // SAFETY: forwarded caller contract.
            Mailbox::Unbounded(q) => unsafe { q.pop() },
            Mailbox::Bounded(b) => b.0.pop(),
        }
    }

    /// The final drain's pop: as [`pop`](Self::pop), but waits for a
    /// message that a send has claimed room for (unbounded) or whose push
    /// window is open (bounded) instead of stopping before it, so that once
    /// the mailbox is closed, `None` means every accepted message has been
    /// taken out.
    ///
    /// # Safety
    /// As for [`pop`](Self::pop).
    pub(crate) unsafe fn pop_final(&self) -> Option<T> {
        match self {
            // SAFETY: forwarded caller contract.
            Mailbox::Unbounded(q) => unsafe { q.pop_final() },
            Mailbox::Bounded(b) => {
                let (q, st) = &**b;
                let backoff = crate::engine::sync::Backoff::new();
                loop {
                    if let Some(v) = q.pop() {
                        return Some(v);
                    }
                    // Read after the failed pop: a window still open may
                    // push; once none is open (and `CLOSED` refuses new
                    // ones), the ring's contents are final.
                    if !st.sends_in_flight() {
                        return q.pop();
                    }
                    backoff.snooze();
                }
            }
        }
    }

    /// Gives up the actor's task if nothing is waiting and no stop is
    /// requested. Reads nothing of the mailbox after a successful release:
    /// another worker may finalize the actor and drop its cell at once.
    ///
    /// # Safety
    /// As for [`pop`](Self::pop).
    #[inline]
    pub(crate) unsafe fn try_release(&self) -> Release {
        match self {
            // SAFETY: forwarded caller contract.
            Mailbox::Unbounded(q) => unsafe { q.try_release() },
            Mailbox::Bounded(b) => {
                let (q, st) = &**b;
                match st.try_release(|| q.len() == 0) {
                    Ok(()) => Release::Released,
                    Err(bits) if bits & state::STOP_ANY != 0 => Release::Stop(bits),
                    Err(_) => Release::NotEmpty,
                }
            }
        }
    }

    /// The actor's state flags.
    #[inline]
    pub(crate) fn flags(&self) -> usize {
        match self {
            Mailbox::Unbounded(q) => q.flags(),
            Mailbox::Bounded(b) => b.1.load(),
        }
    }

    /// Whether sends are refused.
    #[inline]
    pub(crate) fn is_closed(&self) -> bool {
        self.flags() & state::CLOSED != 0
    }

    /// Sets stop bits (and `CLOSED`); true if the caller must schedule the
    /// actor so it sees them.
    pub(crate) fn request_stop(&self, bits: usize) -> bool {
        match self {
            Mailbox::Unbounded(q) => q.request_stop(bits),
            Mailbox::Bounded(b) => b.1.request_stop(bits),
        }
    }

    /// Finalized for good; wakes senders blocked on a full bounded mailbox.
    pub(crate) fn mark_stopped(&self) {
        match self {
            Mailbox::Unbounded(q) => q.mark_stopped(),
            Mailbox::Bounded(b) => {
                b.1.mark_stopped();
                b.0.close();
            }
        }
    }

    /// Whether nothing is waiting; callable from any thread at any time.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Mailbox::Unbounded(q) => q.is_empty(),
            Mailbox::Bounded(b) => b.0.len() == 0,
        }
    }

    /// Messages popped by the consumer so far (a snapshot off the consumer;
    /// evictions not included).
    #[inline]
    pub(crate) fn popped(&self) -> u64 {
        match self {
            Mailbox::Unbounded(q) => q.popped(),
            Mailbox::Bounded(b) => b.0.popped(),
        }
    }

    /// Messages waiting (a snapshot).
    pub(crate) fn len(&self) -> usize {
        match self {
            Mailbox::Unbounded(q) => q.len(),
            Mailbox::Bounded(b) => b.0.len(),
        }
    }

    /// Capacity of a bounded mailbox.
    pub(crate) fn capacity(&self) -> Option<usize> {
        match self {
            Mailbox::Unbounded(_) => None,
            Mailbox::Bounded(b) => Some(b.0.capacity()),
        }
    }

    /// Messages dropped by a `DropOldest` or `DropNewest` policy so far.
    pub(crate) fn evicted(&self) -> u64 {
        match self {
            Mailbox::Unbounded(_) => 0,
            Mailbox::Bounded(b) => b.0.evicted(),
        }
    }
}
