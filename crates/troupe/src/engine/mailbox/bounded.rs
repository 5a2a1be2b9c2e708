//! The bounded mailbox: a fixed-capacity lock-free ring (crossbeam's
//! `ArrayQueue`, allocated once at spawn) with an overflow policy.
//!
//! * `Reject`: a push into a full mailbox fails and hands the message back.
//! * `DropNewest`: the push succeeds; the new message is dropped and counted.
//! * `DropOldest`: the push always succeeds; the oldest message is evicted,
//!   dropped and counted (an evicted ask fails its asker at once).
//! * `Block` / `BlockFor(d)`: a plain thread waits for space (at most `d`).
//!   A worker thread never waits (that would stall every actor on it): it
//!   gets the `Full` error instead.
//!
//! Blocking protocol: a sender that must wait takes `lock`, bumps `waiters`,
//! retries the push, and only then sleeps on `space`, still holding the lock
//! until the condvar releases it. The consumer pops, then (after a SeqCst fence
//! pairing with the sender's) reads `waiters` and, if non-zero, takes the lock
//! and notifies. Either the sender's retry sees the freed slot or the consumer
//! sees the waiter, so no sender sleeps next to free space.
//!
//! # Budget (audited for issue 39; shared lines written, per message)
//! A send to a busy actor, policy `Reject`, `DropNewest` or `Block` with
//! room: three RMWs on lines other senders write, and possible retries:
//! * the push window's `fetch_add(SENDER + EPOCH)` on the state word
//!   (`state_word.rs`), never retried;
//! * the ring's claim, crossbeam `ArrayQueue::push`: loads of `tail`, of
//!   the slot's stamp and of `head` (the full check), then a
//!   `compare_exchange_weak` on `tail`. It fails, and the send backs off
//!   and retries, each time another send claimed between the load and the
//!   CAS: with `k` senders pushing at once, up to `k - 1` retries per
//!   send. Then a plain store of the value and a Release store of the stamp;
//! * the window's `fetch_sub(SENDER)` on the state word, never retried;
//! * a send that finds the actor idle adds one `fetch_or(SCHEDULED)`
//!   (the race for the task: exactly one racer wins).
//!
//! `DropOldest` on a full ring adds a CAS on `head` (the eviction) and a
//! `fetch_add` on `evicted`; `DropNewest` on a full ring, the `fetch_add`
//! on `evicted` only.
//!
//! The consumer's pop: a CAS on `head` (one consumer, so it does not
//! retry, but the line is read by every send's full check) and a store to
//! `popped`. With a `Block` policy, a SeqCst fence and a load of `waiters`
//! per pop, and a lock and `notify_all` only when a sender waits. The
//! release: a load of the state word, the ring's length (two loads), one
//! CAS.
//!
//! Wake-ups: none per message. A `Block` sender that finds the ring full
//! takes `lock` and sleeps on `space`; each pop that finds `waiters > 0`
//! wakes all of them (they retry under the lock, one at a time).
//!
//! So a bounded send costs three shared-line RMWs against the unbounded
//! mailbox's one, and its ring claim can retry under contention where the
//! unbounded claim cannot. Left as it is: the push window is what makes
//! the final drain exact with a third-party ring, and a ring with a
//! `fetch_add` claim (which must then handle a claim past a full ring) is
//! a rewrite with no measurement yet showing the bounded path hot.

use crate::engine::deadline;
use crossbeam_queue::ArrayQueue;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// What a bounded queue (an actor's mailbox, an [`MChain`](crate::mchain::MChain))
/// does with a message that finds it full.
///
/// ```
/// use troupe::{MailboxConfig, Overflow};
/// let cfg = MailboxConfig::bounded(1024, Overflow::DropOldest);
/// # let _ = cfg;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overflow {
    /// Refuse the new message: the send returns `SendError::Full` with it.
    Reject,
    /// Accept the send and drop the new message (counted), as SObjectizer's
    /// `limit_then_drop`.
    DropNewest,
    /// Accept the new message and drop the oldest one waiting (counted).
    DropOldest,
    /// Make a plain-thread sender wait for space as long as it takes; a
    /// sender running on a worker gets `SendError::Full` at once instead of
    /// blocking the worker.
    Block,
    /// As `Block`, waiting at most this long before `SendError::Full`.
    BlockFor(Duration),
}

impl Overflow {
    fn blocks(self) -> bool {
        matches!(self, Overflow::Block | Overflow::BlockFor(_))
    }
}

pub(crate) struct Bounded<T> {
    queue: ArrayQueue<T>,
    policy: Overflow,
    /// Messages evicted by `DropOldest`.
    evicted: AtomicU64,
    /// Messages popped by the consumer (its only writer).
    popped: AtomicU64,
    waiters: AtomicUsize,
    closed: AtomicBool,
    lock: Mutex<()>,
    space: Condvar,
}

/// Why a bounded push did not take the message.
pub(crate) enum BoundedPushError<T> {
    Full(T),
    /// The actor stopped while a blocked sender waited.
    Closed(T),
}

impl<T> Bounded<T> {
    /// A ring of `capacity` slots (at least 1: a capacity of 0 is raised to
    /// 1, as documented on `MailboxConfig::bounded`).
    pub(crate) fn new(capacity: usize, policy: Overflow) -> Self {
        Bounded {
            queue: ArrayQueue::new(capacity.max(1)),
            policy,
            evicted: AtomicU64::new(0),
            popped: AtomicU64::new(0),
            waiters: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            lock: Mutex::new(()),
            space: Condvar::new(),
        }
    }

    /// Pushes according to the policy. A `Block` push waits only on a plain
    /// thread and when `may_block`; otherwise it fails with `Full`.
    /// Returns the evicted message for `DropOldest`, so the caller drops it
    /// outside any lock and can count it.
    pub(crate) fn push(&self, value: T, may_block: bool) -> Result<Option<T>, BoundedPushError<T>> {
        match self.policy {
            Overflow::Reject => self
                .queue
                .push(value)
                .map(|()| None)
                .map_err(BoundedPushError::Full),
            Overflow::DropNewest => match self.queue.push(value) {
                Ok(()) => Ok(None),
                Err(v) => {
                    self.evicted.fetch_add(1, Ordering::Relaxed);
                    Ok(Some(v))
                }
            },
            Overflow::DropOldest => {
                let old = self.queue.force_push(value);
                if old.is_some() {
                    self.evicted.fetch_add(1, Ordering::Relaxed);
                }
                Ok(old)
            }
            Overflow::Block | Overflow::BlockFor(_) => {
                let value = match self.queue.push(value) {
                    Ok(()) => return Ok(None),
                    Err(v) if !may_block || crate::engine::scheduler::is_worker_thread() => {
                        return Err(BoundedPushError::Full(v))
                    }
                    Err(v) => v,
                };
                let deadline = match self.policy {
                    Overflow::BlockFor(d) => deadline::after(d),
                    _ => None,
                };
                self.push_blocking(value, deadline).map(|()| None)
            }
        }
    }

    fn push_blocking(
        &self,
        value: T,
        deadline: Option<Instant>,
    ) -> Result<(), BoundedPushError<T>> {
        let mut guard = self.lock.lock();
        self.waiters.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let mut value = Some(value);
        let mut closed = false;
        deadline::wait_while(&self.space, &mut guard, deadline, |_| {
            if self.closed.load(Ordering::Acquire) {
                closed = true;
                return false;
            }
            match self.queue.push(value.take().expect("kept until pushed")) {
                Ok(()) => false,
                Err(v) => {
                    value = Some(v);
                    true
                }
            }
        });
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        match value {
            None => Ok(()),
            Some(v) if closed => Err(BoundedPushError::Closed(v)),
            Some(v) => Err(BoundedPushError::Full(v)),
        }
    }

    /// Wakes blocked senders for good: the actor has stopped.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let _guard = self.lock.lock();
        self.space.notify_all();
    }

    #[inline]
    pub(crate) fn pop(&self) -> Option<T> {
        let v = self.queue.pop();
        if v.is_some() {
            // Single writer (the consumer): no read-modify-write needed.
            let n = self.popped.load(Ordering::Relaxed);
            self.popped.store(n + 1, Ordering::Relaxed);
        }
        if v.is_some() && self.policy.blocks() {
            fence(Ordering::SeqCst);
            if self.waiters.load(Ordering::SeqCst) > 0 {
                let _guard = self.lock.lock();
                self.space.notify_all();
            }
        }
        v
    }

    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }

    pub(crate) fn capacity(&self) -> usize {
        self.queue.capacity()
    }

    pub(crate) fn popped(&self) -> u64 {
        self.popped.load(Ordering::Relaxed)
    }

    pub(crate) fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }
}
