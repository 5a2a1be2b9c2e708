//! Message limits (SObjectizer's `limit_then_drop` / `limit_then_redirect` /
//! `limit_then_abort`): at most N messages of a kind pending for a
//! subscriber; beyond that, drop, redirect or reject, and count.
//!
//! A [`MessageLimit<M>`] sits in front of a target that takes
//! [`Limited<M>`] values: `limit.wrap(target)` is a [`Recipient<M>`] that
//! counts a slot, wraps the message with a guard, and sends it on. The guard
//! gives the slot back when the `Limited` is dropped or unwrapped with
//! [`Limited::into_inner`], i.e. when the subscriber has handled it, or when
//! the message is dropped undelivered (a stopped actor's mailbox, a refused
//! send).
//!
//! Invariants:
//! - `pending` never exceeds the limit: a slot is taken with a CAS that
//!   fails at the limit, so concurrent senders cannot overshoot.
//! - Every message offered is counted exactly once, as accepted, dropped,
//!   redirected or rejected ([`LimitStats`]).
//! - One `MessageLimit` can guard several targets (clones share the
//!   counter): that is a per-(actor, message kind) limit when the actor
//!   subscribes to several channels carrying that kind.
//!
//! ```
//! use std::sync::Arc;
//! use troupe::channel::Channel;
//! use troupe::limits::{Limited, LimitPolicy, MessageLimit};
//! use troupe::mchain::MChain;
//!
//! let frames: Channel<u32> = Channel::new();
//! let slow = MChain::unbounded();               // a subscriber that is not reading
//! let limit = MessageLimit::new(2, LimitPolicy::Drop);
//! frames.subscribe(limit.wrap(slow.recipient()));
//! for f in 0..5 { frames.publish(f); }
//! assert_eq!((limit.stats().accepted, limit.stats().dropped), (2, 3));
//! let first: Limited<Arc<u32>> = slow.try_recv().unwrap();
//! assert_eq!(**first, 0);
//! drop(first);                                  // handled: the slot is free again
//! frames.publish(5);
//! assert_eq!(limit.stats().accepted, 3);
//! ```

use crate::actor::SendError;
use crate::messaging::recipient::{Deliver, Recipient};
use std::fmt;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// What happens to a message that finds its limit reached.
pub enum LimitPolicy<M> {
    /// Drop it (counted); the sender sees success, as with SObjectizer's
    /// `limit_then_drop`.
    Drop,
    /// Send it to another recipient instead (counted).
    Redirect(Recipient<M>),
    /// Hand it back to the sender as [`SendError::Full`] (counted).
    Reject,
}

impl<M> Clone for LimitPolicy<M> {
    fn clone(&self) -> Self {
        match self {
            LimitPolicy::Drop => LimitPolicy::Drop,
            LimitPolicy::Redirect(r) => LimitPolicy::Redirect(r.clone()),
            LimitPolicy::Reject => LimitPolicy::Reject,
        }
    }
}

impl<M> fmt::Debug for LimitPolicy<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LimitPolicy::Drop => "Drop",
            LimitPolicy::Redirect(_) => "Redirect(..)",
            LimitPolicy::Reject => "Reject",
        })
    }
}

/// Counters of a [`MessageLimit`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LimitStats {
    /// Messages in flight now (sent on, not yet handled or dropped).
    pub pending: usize,
    /// Messages sent on to the target.
    pub accepted: u64,
    /// Messages dropped by the `Drop` policy.
    pub dropped: u64,
    /// Messages redirected by the `Redirect` policy.
    pub redirected: u64,
    /// Messages handed back by the `Reject` policy.
    pub rejected: u64,
}

struct Counter {
    max: usize,
    pending: AtomicUsize,
    accepted: AtomicU64,
    dropped: AtomicU64,
    redirected: AtomicU64,
    rejected: AtomicU64,
}

impl Counter {
    fn try_take(&self) -> bool {
        let mut cur = self.pending.load(Ordering::Relaxed);
        loop {
            if cur >= self.max {
                return false;
            }
            match self.pending.compare_exchange_weak(
                cur,
                cur + 1,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => cur = now,
            }
        }
    }
}

/// A limit on messages pending for a subscriber. Cloning shares the counter.
pub struct MessageLimit<M> {
    counter: Arc<Counter>,
    policy: LimitPolicy<M>,
}

impl<M> Clone for MessageLimit<M> {
    fn clone(&self) -> Self {
        MessageLimit {
            counter: self.counter.clone(),
            policy: self.policy.clone(),
        }
    }
}

impl<M> fmt::Debug for MessageLimit<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "MessageLimit(max={}, policy={:?}, {:?})",
            self.counter.max,
            self.policy,
            self.stats()
        )
    }
}

impl<M> MessageLimit<M> {
    /// At most `max` messages pending; beyond that, `policy`.
    pub fn new(max: usize, policy: LimitPolicy<M>) -> Self {
        MessageLimit {
            counter: Arc::new(Counter {
                max,
                pending: AtomicUsize::new(0),
                accepted: AtomicU64::new(0),
                dropped: AtomicU64::new(0),
                redirected: AtomicU64::new(0),
                rejected: AtomicU64::new(0),
            }),
            policy,
        }
    }

    /// The counters now.
    pub fn stats(&self) -> LimitStats {
        let c = &self.counter;
        LimitStats {
            pending: c.pending.load(Ordering::Acquire),
            accepted: c.accepted.load(Ordering::Relaxed),
            dropped: c.dropped.load(Ordering::Relaxed),
            redirected: c.redirected.load(Ordering::Relaxed),
            rejected: c.rejected.load(Ordering::Relaxed),
        }
    }

    /// The limit.
    pub fn max(&self) -> usize {
        self.counter.max
    }
}

impl<M: Send + 'static> MessageLimit<M> {
    /// A recipient of `M` that applies this limit in front of `target`.
    pub fn wrap(&self, target: impl Into<Recipient<Limited<M>>>) -> Recipient<M> {
        Recipient::new(Gate {
            limit: self.clone(),
            target: target.into(),
        })
    }
}

struct Gate<M> {
    limit: MessageLimit<M>,
    target: Recipient<Limited<M>>,
}

impl<M: Send + 'static> Deliver<M> for Gate<M> {
    fn deliver(&self, msg: M) -> Result<(), SendError<M>> {
        let c = &self.limit.counter;
        if c.try_take() {
            c.accepted.fetch_add(1, Ordering::Relaxed);
            let limited = Limited {
                msg: Some(msg),
                slot: Some(c.clone()),
            };
            // On failure the Limited comes back (or was dropped): either way
            // its guard gave the slot back.
            return self
                .target
                .send(limited)
                .map_err(|e| e.map(|mut l| l.msg.take().expect("a Limited holds its message")));
        }
        match &self.limit.policy {
            LimitPolicy::Drop => {
                c.dropped.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            LimitPolicy::Redirect(to) => {
                c.redirected.fetch_add(1, Ordering::Relaxed);
                to.send(msg)
            }
            LimitPolicy::Reject => {
                c.rejected.fetch_add(1, Ordering::Relaxed);
                Err(SendError::Full(msg))
            }
        }
    }

    fn is_closed(&self) -> bool {
        self.target.is_closed()
    }
}

/// A message under a [`MessageLimit`]: derefs to the message; its slot is
/// given back when it is dropped or unwrapped.
pub struct Limited<M> {
    // `None` only transiently, while a refused message is unwrapped.
    msg: Option<M>,
    slot: Option<Arc<Counter>>,
}

impl<M> Limited<M> {
    /// The message; gives the slot back now.
    pub fn into_inner(mut self) -> M {
        self.release();
        self.msg.take().expect("a Limited holds its message")
    }

    fn release(&mut self) {
        if let Some(c) = self.slot.take() {
            c.pending.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl<M> Deref for Limited<M> {
    type Target = M;
    fn deref(&self) -> &M {
        self.msg.as_ref().expect("a Limited holds its message")
    }
}

impl<M> Drop for Limited<M> {
    fn drop(&mut self) {
        self.release();
    }
}

impl<M: fmt::Debug> fmt::Debug for Limited<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Limited").field(&self.msg).finish()
    }
}
