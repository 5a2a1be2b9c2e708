//! Mailboxes: where an actor's messages wait until a worker runs the actor.
//!
//! Two flavours sit side by side, chosen per actor at spawn
//! ([`MailboxConfig`]):
//! * [`unbounded`]: a lock-free segmented MPSC queue, the default. No
//!   allocation per message in steady state (blocks of slots are recycled).
//! * [`bounded`]: a preallocated lock-free ring with an [`OverflowPolicy`].
//!
//! Invariants every flavour keeps: FIFO per sender, no message lost or
//! duplicated, exactly one consumer at a time (the worker holding the actor's
//! `SCHEDULED` bit), and `is_empty` callable from any thread without touching
//! memory the consumer may free.

pub(crate) mod bounded;
pub(crate) mod unbounded;

pub use bounded::OverflowPolicy;

use bounded::{Bounded, BoundedPushError};
use unbounded::Unbounded;

/// Which mailbox an actor gets, chosen at spawn time.
///
/// ```
/// use troupe::{MailboxConfig, OverflowPolicy};
/// let cfg = MailboxConfig::bounded(1024, OverflowPolicy::DropOldest);
/// assert_eq!(cfg, MailboxConfig::Bounded { capacity: 1024, policy: OverflowPolicy::DropOldest });
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
        policy: OverflowPolicy,
    },
}

impl MailboxConfig {
    /// A bounded mailbox of `capacity` messages with `policy` on overflow.
    pub fn bounded(capacity: usize, policy: OverflowPolicy) -> Self {
        MailboxConfig::Bounded { capacity, policy }
    }
}

pub(crate) enum Mailbox<T> {
    Unbounded(Unbounded<T>),
    // Boxed: the ring's cache-padded indices would otherwise bloat every actor.
    Bounded(Box<Bounded<T>>),
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
            MailboxConfig::Bounded { capacity, policy } => {
                Mailbox::Bounded(Box::new(Bounded::new(capacity, policy)))
            }
        }
    }

    /// Pushes a message. On `Ok(Some(old))` a `DropOldest` mailbox evicted
    /// `old`; the caller drops and counts it.
    #[inline]
    pub(crate) fn push(&self, value: T) -> Result<Option<T>, PushError<T>> {
        match self {
            Mailbox::Unbounded(q) => {
                q.push(value);
                Ok(None)
            }
            Mailbox::Bounded(q) => q.push(value).map_err(|e| match e {
                BoundedPushError::Full(v) => PushError::Full(v),
                BoundedPushError::Closed(v) => PushError::Closed(v),
            }),
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
            Mailbox::Bounded(q) => q.pop(),
        }
    }

    /// Whether nothing is waiting; callable from any thread at any time.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Mailbox::Unbounded(q) => q.is_empty(),
            Mailbox::Bounded(q) => q.len() == 0,
        }
    }

    /// Messages waiting (a snapshot).
    pub(crate) fn len(&self) -> usize {
        match self {
            Mailbox::Unbounded(q) => q.len(),
            Mailbox::Bounded(q) => q.len(),
        }
    }

    /// Capacity of a bounded mailbox.
    pub(crate) fn capacity(&self) -> Option<usize> {
        match self {
            Mailbox::Unbounded(_) => None,
            Mailbox::Bounded(q) => Some(q.capacity()),
        }
    }

    /// Releases senders blocked on a full bounded mailbox: the actor stopped.
    pub(crate) fn close(&self) {
        if let Mailbox::Bounded(q) = self {
            q.close();
        }
    }

    /// Messages evicted by a `DropOldest` policy so far.
    pub(crate) fn evicted(&self) -> u64 {
        match self {
            Mailbox::Unbounded(_) => 0,
            Mailbox::Bounded(q) => q.evicted(),
        }
    }
}
