//! Mailboxes: where an actor's messages wait until a worker runs the actor.
//!
//! Two flavours sit side by side, chosen per actor at spawn
//! ([`MailboxConfig`]):
//! * `unbounded`: a lock-free segmented MPSC queue, the default. No
//!   allocation per message in steady state (blocks of slots are recycled).
//! * `bounded`: a preallocated lock-free ring with an [`Overflow`] policy.
//!
//! Each flavour also carries the actor's state word (`state.rs`): the
//! unbounded queue inside its tail word, the bounded ring beside it. The
//! mailbox is where "is there work?" and "who runs the actor?" are decided
//! together, so its API is: `push` (and learn whether to schedule),
//! `pop`, `try_release`, `request_stop`, `flags`, `mark_stopped`.
//!
//! Invariants every flavour keeps: FIFO per sender, no message lost or
//! duplicated, exactly one consumer at a time (the worker holding the actor's
//! `SCHEDULED` bit), a push after `CLOSED` is refused with the message handed
//! back, and `is_empty` callable from any thread without touching memory the
//! consumer may free.

pub(crate) mod bounded;
pub(crate) mod unbounded;

pub use bounded::Overflow;

use crate::engine::state::{self, ActorState};
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
        /// Maximum number of waiting messages.
        capacity: usize,
        /// What a send does when the mailbox is full.
        policy: Overflow,
    },
}

impl MailboxConfig {
    /// A bounded mailbox of `capacity` messages with `policy` on overflow.
    /// A capacity of 0 is raised to 1 (a mailbox must hold the message that
    /// wakes its actor).
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

/// A push that took the message.
pub(crate) struct Pushed<T> {
    /// The actor was idle: the pusher now holds its task and must schedule it.
    pub(crate) schedule: bool,
    /// A `DropOldest` mailbox evicted this message to make room (or a
    /// `DropNewest` one dropped the new message).
    pub(crate) evicted: Option<T>,
}

/// Why a push did not take the message.
pub(crate) enum PushError<T> {
    Full(T),
    Closed(T),
}

impl<T> Mailbox<T> {
    pub(crate) fn new(config: MailboxConfig) -> Self {
        match config {
            MailboxConfig::Unbounded => Mailbox::Unbounded(Unbounded::new()),
            MailboxConfig::Bounded { capacity, policy } => Mailbox::Bounded(Box::new((
                Bounded::new(capacity, policy),
                ActorState::new_scheduled(),
            ))),
        }
    }

    /// Pushes a message (unless the actor is closed or the bounded mailbox
    /// is full; the error hands the message back). A `Block` mailbox waits
    /// for room only if `may_block` (and on a plain thread).
    #[inline]
    pub(crate) fn push(&self, value: T, may_block: bool) -> Result<Pushed<T>, PushError<T>> {
        match self {
            Mailbox::Unbounded(q) => match q.push(value) {
                Ok(schedule) => Ok(Pushed {
                    schedule,
                    evicted: None,
                }),
                Err(v) => Err(PushError::Closed(v)),
            },
            Mailbox::Bounded(b) => {
                let (q, st) = &**b;
                if st.is_closed() {
                    return Err(PushError::Closed(value));
                }
                let evicted = q.push(value, may_block).map_err(|e| match e {
                    BoundedPushError::Full(v) => PushError::Full(v),
                    BoundedPushError::Closed(v) => PushError::Closed(v),
                })?;
                Ok(Pushed {
                    schedule: st.notify(),
                    evicted,
                })
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

    /// The final drain's pop: as [`pop`](Self::pop), but waits for a slot
    /// that a sender has claimed and not yet written instead of stopping at
    /// it, so that once the mailbox is closed, `None` means every accepted
    /// message has been taken out. (The bounded ring's pop already waits for
    /// a half-written slot.)
    ///
    /// # Safety
    /// As for [`pop`](Self::pop).
    pub(crate) unsafe fn pop_final(&self) -> Option<T> {
        match self {
            // SAFETY: forwarded caller contract.
            Mailbox::Unbounded(q) => unsafe { q.pop_final() },
            Mailbox::Bounded(b) => b.0.pop(),
        }
    }

    /// Gives up the actor's task if nothing is waiting and no stop is
    /// requested.
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
                let bits = st.load();
                if bits & state::STOP_ANY != 0 {
                    return Release::Stop(bits);
                }
                if q.len() > 0 {
                    return Release::NotEmpty;
                }
                // Separate words: release, then re-check (see `state.rs`).
                let prev = st.release();
                if (q.len() > 0 || prev & state::STOP_ANY != 0) && st.reacquire() {
                    return Release::NotEmpty;
                }
                Release::Released
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
