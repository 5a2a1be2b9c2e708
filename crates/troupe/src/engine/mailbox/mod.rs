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
//! The bounded flavour keeps its state word apart from its ring, so a push
//! that passed the `CLOSED` check can land in the ring after the actor's final
//! drain. The push closes that race with the RMW it already does: after the
//! ring push it sets `SCHEDULED` with a `fetch_or` and looks at the previous
//! bits. The finalizer sets `STOPPED` with a `fetch_or` on the same word before
//! it drains. Both RMWs are AcqRel on one word, so one reads the other: if the
//! push's came first, the drain sees the pushed message; if the finalizer's
//! came first, the pusher sees `STOPPED` and takes out whatever is left in the
//! ring itself (the ring is MPMC, so a second consumer is safe), dropping and
//! counting it before its send returns ([`Pushed::stranded`]). No extra atomic
//! per message. A message accepted by such a racing send is therefore counted
//! by the time the send returns (perhaps just after `join` returned: the send
//! and the stop were concurrent); one accepted before the stop is accounted
//! for before `join` returns, as with the unbounded mailbox. `tests/loom.rs`
//! models this protocol (the ring itself, crossbeam's `ArrayQueue`, does not
//! run under loom, so the model uses a locked queue in its place).
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

/// A push that took the message.
pub(crate) struct Pushed<T> {
    /// The actor was idle: the pusher now holds its task and must schedule it.
    pub(crate) schedule: bool,
    /// A `DropOldest` mailbox evicted this message to make room (or a
    /// `DropNewest` one dropped the new message).
    pub(crate) evicted: Option<T>,
    /// A bounded push landed after the actor's final drain may have run: the
    /// pusher must empty the ring with [`Mailbox::take_stranded`], dropping
    /// and counting what it finds.
    pub(crate) stranded: bool,
}

/// Why a push did not take the message.
pub(crate) enum PushError<T> {
    Full(T),
    Closed(T),
}

impl<T> Mailbox<T> {
    /// Inline, so that a spawn writes the mailbox straight into its cell:
    /// returned through memory, its 40 bytes were read back in 16-byte
    /// loads from the 8-byte stores that wrote them, a store-forwarding
    /// stall that perf put at a quarter of a spawn's own time.
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
    /// for room only if `may_block` (and on a plain thread).
    #[inline]
    pub(crate) fn push(&self, value: T, may_block: bool) -> Result<Pushed<T>, PushError<T>> {
        match self {
            Mailbox::Unbounded(q) => match q.push(value) {
                Ok(schedule) => Ok(Pushed {
                    schedule,
                    evicted: None,
                    stranded: false,
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
                // One RMW, as before: whether we own the task, and whether
                // the final drain may have missed us (module docs).
                let prev = st.notify_bits();
                Ok(Pushed {
                    schedule: prev & state::SCHEDULED == 0,
                    evicted,
                    stranded: prev & state::STOPPED != 0,
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

    /// After a push that came back [`Pushed::stranded`]: takes out a message
    /// left in a stopped bounded mailbox. Safe from any thread: only a
    /// bounded mailbox (an MPMC ring) is ever stranded, and by then its actor
    /// is finalized, so the only other consumer is its final drain.
    pub(crate) fn take_stranded(&self) -> Option<T> {
        match self {
            Mailbox::Unbounded(_) => None,
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
