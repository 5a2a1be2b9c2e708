//! The bounded mailbox: a fixed-capacity lock-free ring (crossbeam's
//! `ArrayQueue`, allocated once at spawn) with an overflow policy.
//!
//! * `Reject`: a push into a full mailbox fails and hands the message back.
//! * `DropOldest`: the push always succeeds; the oldest message is evicted,
//!   dropped and counted (an evicted ask fails its asker at once).
//! * `Block`: a plain thread waits for space. A worker thread never waits
//!   (that would stall every actor on it): it gets the `Full` error instead.
//!
//! Blocking protocol: a sender that must wait takes `lock`, bumps `waiters`,
//! retries the push, and only then sleeps on `space`, still holding the lock
//! until the condvar releases it. The consumer pops, then (after a SeqCst fence
//! pairing with the sender's) reads `waiters` and, if non-zero, takes the lock
//! and notifies. Either the sender's retry sees the freed slot or the consumer
//! sees the waiter, so no sender sleeps next to free space.

use crossbeam_queue::ArrayQueue;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// What a bounded mailbox does when a message arrives and it is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OverflowPolicy {
    /// Refuse the new message: the send returns `SendError::Full` with it.
    Reject,
    /// Accept the new message and drop the oldest one waiting (counted).
    DropOldest,
    /// Make a plain-thread sender wait for space; an actor sender (running on
    /// a worker) gets `SendError::Full` instead of blocking the worker.
    Block,
}

pub(crate) struct Bounded<T> {
    queue: ArrayQueue<T>,
    policy: OverflowPolicy,
    /// Messages evicted by `DropOldest`.
    evicted: AtomicU64,
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
    pub(crate) fn new(capacity: usize, policy: OverflowPolicy) -> Self {
        Bounded {
            queue: ArrayQueue::new(capacity.max(1)),
            policy,
            evicted: AtomicU64::new(0),
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
            OverflowPolicy::Reject => self
                .queue
                .push(value)
                .map(|()| None)
                .map_err(BoundedPushError::Full),
            OverflowPolicy::DropOldest => {
                let old = self.queue.force_push(value);
                if old.is_some() {
                    self.evicted.fetch_add(1, Ordering::Relaxed);
                }
                Ok(old)
            }
            OverflowPolicy::Block => {
                let value = match self.queue.push(value) {
                    Ok(()) => return Ok(None),
                    Err(v) if !may_block || crate::scheduler::is_worker_thread() => {
                        return Err(BoundedPushError::Full(v))
                    }
                    Err(v) => v,
                };
                self.push_blocking(value).map(|()| None)
            }
        }
    }

    fn push_blocking(&self, mut value: T) -> Result<(), BoundedPushError<T>> {
        let mut guard = self.lock.lock();
        self.waiters.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let result = loop {
            if self.closed.load(Ordering::Acquire) {
                break Err(BoundedPushError::Closed(value));
            }
            match self.queue.push(value) {
                Ok(()) => break Ok(()),
                Err(v) => {
                    value = v;
                    self.space.wait(&mut guard);
                }
            }
        };
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        result
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
        if v.is_some() && self.policy == OverflowPolicy::Block {
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

    pub(crate) fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }
}
