//! Message chains (SObjectizer's mchains): a queue that plain threads and
//! tests receive from, and that anything can send to (it is a
//! [`Recipient`]), so an actor's output can be observed from a test.
//!
//! Protocol:
//! - One mutex guards the queue and the `closed` flag; `not_empty` wakes
//!   receivers, `not_full` wakes senders blocked on a full bounded chain.
//!   Each chain also keeps the notifiers of the [`select`]s waiting on it and
//!   pings them after every push and on close.
//! - Receivers pop one message at a time under the lock and run the handler
//!   with the lock released, so a handler may send to the same chain.
//!
//! Invariants:
//! - FIFO: messages are received in the order their sends succeeded.
//! - A send succeeds or hands the message back ([`SendError`]); a
//!   message dropped by an overflow policy is counted in
//!   [`MChain::dropped`].
//! - After [`MChain::close`] every send fails with `Closed`. With
//!   [`Close::RetainContent`] receivers still get what was queued, then see
//!   [`ReceiveStatus::Closed`]; with [`Close::DropContent`] the queued
//!   messages are dropped (outside the lock) at once.
//! - A `Block` chain never blocks a worker thread of an actor system: an
//!   actor sending to a full `Block` chain gets `Full` back instead.

use crate::actor::SendError;
use crate::engine::deadline;
use crate::engine::mailbox::Overflow;
use crate::engine::scheduler::is_worker_thread;
use crate::messaging::recipient::{Deliver, Recipient};
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How [`MChain::close`] treats messages still queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Close {
    /// Drop them now.
    DropContent,
    /// Keep them for receivers; they see `Closed` once the chain is empty.
    RetainContent,
}

/// Wakes a thread blocked in [`select`] when any of its chains changes.
struct Notify {
    seq: Mutex<u64>,
    cv: Condvar,
}

impl Notify {
    fn ping(&self) {
        *self.seq.lock() += 1;
        self.cv.notify_one();
    }
}

struct State<M> {
    queue: VecDeque<M>,
    closed: bool,
    selectors: Vec<Arc<Notify>>,
    /// Senders waiting on `not_full`: every pop wakes one while any waits
    /// (waking only on a full -> not-full edge would strand the others).
    blocked_senders: usize,
}

struct Inner<M> {
    state: Mutex<State<M>>,
    not_empty: Condvar,
    not_full: Condvar,
    capacity: Option<usize>,
    overflow: Overflow,
    dropped: AtomicU64,
}

/// A message chain for messages of type `M`. Cloning gives another handle to
/// the same chain; any number of threads may send and receive.
///
/// ```
/// use std::time::Duration;
/// use troupe::mchain::{MChain, Receive, ReceiveStatus};
///
/// let chain = MChain::unbounded();
/// for n in 0..5 { chain.send(n).unwrap(); }
/// let mut sum = 0;
/// let r = chain.receive(Receive::new().handle_n(3), |n: u32| sum += n);
/// assert_eq!((r.handled, sum), (3, 0 + 1 + 2));
/// // The rest, then a timeout on the empty chain.
/// let r = chain.receive(Receive::new().empty_timeout(Duration::from_millis(10)), |n| sum += n);
/// assert_eq!((r.handled, r.status), (2, ReceiveStatus::EmptyTimeout));
/// ```
pub struct MChain<M> {
    inner: Arc<Inner<M>>,
}

impl<M> Clone for MChain<M> {
    fn clone(&self) -> Self {
        MChain {
            inner: self.inner.clone(),
        }
    }
}

impl<M> fmt::Debug for MChain<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.inner.state.lock();
        write!(
            f,
            "MChain(len={}, capacity={:?}, closed={})",
            st.queue.len(),
            self.inner.capacity,
            st.closed
        )
    }
}

/// Why [`MChain::recv_timeout`] returned no message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecvError {
    /// Nothing arrived in time.
    Timeout,
    /// The chain is closed and empty.
    Closed,
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecvError::Timeout => "no message arrived within the timeout",
            RecvError::Closed => "the chain is closed and empty",
        })
    }
}

impl std::error::Error for RecvError {}

/// Parameters of [`MChain::receive`] and [`select`]: when to stop.
/// Without any limit, receiving goes on until the chain is closed and empty
/// (`handle_all`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Receive {
    handle_n: Option<usize>,
    extract_n: Option<usize>,
    empty_timeout: Option<Duration>,
    total_time: Option<Duration>,
}

impl Receive {
    /// No limits: receive until the chain is closed and empty.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stop after `n` messages were handled.
    pub fn handle_n(mut self, n: usize) -> Self {
        self.handle_n = Some(n);
        self
    }

    /// Receive until closed (the default; spelled out for readers).
    pub fn handle_all(mut self) -> Self {
        self.handle_n = None;
        self
    }

    /// Stop after `n` messages were taken from the chain, handled or not
    /// (a handler returning `false` did not handle its message).
    pub fn extract_n(mut self, n: usize) -> Self {
        self.extract_n = Some(n);
        self
    }

    /// Stop when the chain stays empty for `d`.
    pub fn empty_timeout(mut self, d: Duration) -> Self {
        self.empty_timeout = Some(d);
        self
    }

    /// Stop after `d` in total, whatever happens.
    pub fn total_time(mut self, d: Duration) -> Self {
        self.total_time = Some(d);
        self
    }

    /// Don't wait at all: take what is queued now (within the limits).
    pub fn no_wait(self) -> Self {
        self.empty_timeout(Duration::ZERO)
    }
}

/// Why a receive stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReceiveStatus {
    /// `handle_n` messages were handled.
    HandledLimit,
    /// `extract_n` messages were extracted.
    ExtractLimit,
    /// The chain (every chain, for a select) is closed and empty.
    Closed,
    /// The chain stayed empty for the `empty_timeout`.
    EmptyTimeout,
    /// The `total_time` ran out.
    TotalTime,
}

/// What a receive did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReceiveResult {
    /// Messages taken from the chain(s).
    pub extracted: usize,
    /// Of those, messages handled (the handler did not return `false`).
    pub handled: usize,
    /// Why it stopped.
    pub status: ReceiveStatus,
}

/// What a receive handler returns: `()` (handled) or `bool` (whether it was).
pub trait Handled {
    /// Whether the message counts as handled.
    fn handled(self) -> bool;
}

impl Handled for () {
    fn handled(self) -> bool {
        true
    }
}

impl Handled for bool {
    fn handled(self) -> bool {
        self
    }
}

enum Pop<M> {
    Msg(M),
    Empty,
    Closed,
}

impl<M: Send + 'static> MChain<M> {
    /// An unbounded chain.
    pub fn unbounded() -> Self {
        Self::make(None, Overflow::Reject)
    }

    /// A chain holding at most `capacity` messages (at least 1); `overflow`
    /// says what a send to a full chain does.
    pub fn bounded(capacity: usize, overflow: Overflow) -> Self {
        Self::make(Some(capacity.max(1)), overflow)
    }

    fn make(capacity: Option<usize>, overflow: Overflow) -> Self {
        MChain {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    queue: VecDeque::with_capacity(capacity.unwrap_or(0).min(1024)),
                    closed: false,
                    selectors: Vec::new(),
                    blocked_senders: 0,
                }),
                not_empty: Condvar::new(),
                not_full: Condvar::new(),
                capacity,
                overflow,
                dropped: AtomicU64::new(0),
            }),
        }
    }

    /// Sends a message (see [`Overflow`] for a full bounded chain).
    pub fn send(&self, msg: M) -> Result<(), SendError<M>> {
        let inner = &*self.inner;
        let mut st = inner.state.lock();
        if st.closed {
            return Err(SendError::Closed(msg));
        }
        let mut evicted = None;
        if let Some(cap) = inner.capacity {
            if st.queue.len() >= cap {
                match inner.overflow {
                    Overflow::Reject => return Err(SendError::Full(msg)),
                    Overflow::DropNewest => {
                        inner.dropped.fetch_add(1, Ordering::Relaxed);
                        drop(st);
                        drop(msg);
                        return Ok(());
                    }
                    Overflow::DropOldest => {
                        evicted = st.queue.pop_front();
                        inner.dropped.fetch_add(1, Ordering::Relaxed);
                    }
                    Overflow::Block | Overflow::BlockFor(_) => {
                        if is_worker_thread() {
                            return Err(SendError::Full(msg));
                        }
                        let until = match inner.overflow {
                            Overflow::BlockFor(d) => deadline::after(d),
                            _ => None,
                        };
                        st.blocked_senders += 1;
                        deadline::wait_while(&inner.not_full, &mut st, until, |st| {
                            st.queue.len() >= cap && !st.closed
                        });
                        st.blocked_senders -= 1;
                        if st.closed {
                            return Err(SendError::Closed(msg));
                        }
                        if st.queue.len() >= cap {
                            return Err(SendError::Full(msg));
                        }
                    }
                }
            }
        }
        st.queue.push_back(msg);
        Self::wake_receivers(inner, st);
        drop(evicted);
        Ok(())
    }

    fn wake_receivers(inner: &Inner<M>, st: MutexGuard<'_, State<M>>) {
        let selectors = if st.selectors.is_empty() {
            None
        } else {
            Some(st.selectors.clone())
        };
        drop(st);
        inner.not_empty.notify_one();
        if let Some(sel) = selectors {
            for n in sel {
                n.ping();
            }
        }
    }

    fn pop(&self) -> Pop<M> {
        let inner = &*self.inner;
        let mut st = inner.state.lock();
        match st.queue.pop_front() {
            Some(m) => {
                let sender_waits = st.blocked_senders > 0;
                drop(st);
                if sender_waits {
                    inner.not_full.notify_one();
                }
                Pop::Msg(m)
            }
            None if st.closed => Pop::Closed,
            None => Pop::Empty,
        }
    }

    /// Waits until a message, close, or `deadline` (`None`: forever).
    fn pop_wait(&self, deadline: Option<Instant>) -> Pop<M> {
        let inner = &*self.inner;
        let mut st = inner.state.lock();
        loop {
            if let Some(m) = st.queue.pop_front() {
                let sender_waits = st.blocked_senders > 0;
                let more = !st.queue.is_empty();
                drop(st);
                if sender_waits {
                    inner.not_full.notify_one();
                }
                if more {
                    // Several receivers may wait; pass the wake-up along.
                    inner.not_empty.notify_one();
                }
                return Pop::Msg(m);
            }
            if st.closed {
                return Pop::Closed;
            }
            match deadline {
                None => inner.not_empty.wait(&mut st),
                Some(d) => {
                    if Instant::now() >= d || inner.not_empty.wait_until(&mut st, d).timed_out() {
                        if let Some(m) = st.queue.pop_front() {
                            let wake = st.blocked_senders > 0;
                            drop(st);
                            if wake {
                                inner.not_full.notify_one();
                            }
                            return Pop::Msg(m);
                        }
                        return if st.closed { Pop::Closed } else { Pop::Empty };
                    }
                }
            }
        }
    }

    /// Takes one message if there is one.
    pub fn try_recv(&self) -> Option<M> {
        match self.pop() {
            Pop::Msg(m) => Some(m),
            _ => None,
        }
    }

    /// Waits up to `timeout` for one message.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<M, RecvError> {
        match self.pop_wait(deadline::after(timeout)) {
            Pop::Msg(m) => Ok(m),
            Pop::Empty => Err(RecvError::Timeout),
            Pop::Closed => Err(RecvError::Closed),
        }
    }

    /// Receives and handles messages on this thread until a limit of
    /// `params` is reached (SObjectizer's `receive(from(chain)...)`).
    pub fn receive<H: Handled>(
        &self,
        params: Receive,
        mut handler: impl FnMut(M) -> H,
    ) -> ReceiveResult {
        let start = Instant::now();
        let total_deadline = params.total_time.and_then(|d| start.checked_add(d));
        let mut r = ReceiveResult {
            extracted: 0,
            handled: 0,
            status: ReceiveStatus::Closed,
        };
        loop {
            if let Some(s) = limit_reached(&params, &r) {
                r.status = s;
                return r;
            }
            if total_deadline.is_some_and(|t| Instant::now() >= t) {
                r.status = ReceiveStatus::TotalTime;
                return r;
            }
            let now = Instant::now();
            let deadline = earliest(
                params.empty_timeout.and_then(|d| now.checked_add(d)),
                total_deadline,
            );
            match self.pop_wait(deadline) {
                Pop::Msg(m) => {
                    r.extracted += 1;
                    if handler(m).handled() {
                        r.handled += 1;
                    }
                }
                Pop::Closed => {
                    r.status = ReceiveStatus::Closed;
                    return r;
                }
                Pop::Empty => {
                    r.status = match total_deadline {
                        Some(t) if Instant::now() >= t => ReceiveStatus::TotalTime,
                        _ => ReceiveStatus::EmptyTimeout,
                    };
                    return r;
                }
            }
        }
    }

    /// Closes the chain: sends fail from now on; see [`Close`] for what
    /// happens to queued messages. Wakes every waiting receiver and sender.
    pub fn close(&self, mode: Close) {
        let inner = &*self.inner;
        let mut st = inner.state.lock();
        st.closed = true;
        let dropped = match mode {
            Close::DropContent => std::mem::take(&mut st.queue),
            Close::RetainContent => VecDeque::new(),
        };
        let selectors = st.selectors.clone();
        drop(st);
        inner.not_empty.notify_all();
        inner.not_full.notify_all();
        for n in selectors {
            n.ping();
        }
        drop(dropped);
    }

    /// Messages queued now.
    pub fn len(&self) -> usize {
        self.inner.state.lock().queue.len()
    }

    /// Whether no message is queued now.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the chain was closed.
    pub fn is_closed(&self) -> bool {
        self.inner.state.lock().closed
    }

    /// Messages dropped by the `DropNewest`/`DropOldest` policies so far.
    pub fn dropped(&self) -> u64 {
        self.inner.dropped.load(Ordering::Relaxed)
    }

    /// This chain as a [`Recipient`]: point an actor's output or a timer here.
    pub fn recipient(&self) -> Recipient<M> {
        Recipient::new(self.clone())
    }
}

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

fn limit_reached(p: &Receive, r: &ReceiveResult) -> Option<ReceiveStatus> {
    if p.handle_n.is_some_and(|n| r.handled >= n) {
        return Some(ReceiveStatus::HandledLimit);
    }
    if p.extract_n.is_some_and(|n| r.extracted >= n) {
        return Some(ReceiveStatus::ExtractLimit);
    }
    None
}

impl<M: Send + 'static> Deliver<M> for MChain<M> {
    fn deliver(&self, msg: M) -> Result<(), SendError<M>> {
        self.send(msg)
    }

    fn is_closed(&self) -> bool {
        MChain::is_closed(self)
    }
}

impl<M: Send + 'static> From<&MChain<M>> for Recipient<M> {
    fn from(c: &MChain<M>) -> Self {
        c.recipient()
    }
}

/// One chain and its handler, for [`select`]. Make it with [`case`].
pub trait SelectCase {
    /// Takes one message and handles it: `Some(handled)` if there was one.
    /// `None` if the chain is empty; `closed` tells whether it is also closed.
    fn try_handle(&mut self, closed: &mut bool) -> Option<bool>;
    /// Starts pinging `n` when the chain changes (private machinery).
    #[doc(hidden)]
    fn register(&self, n: &Arc<dyn std::any::Any + Send + Sync>);
    /// Stops pinging `n`.
    #[doc(hidden)]
    fn unregister(&self, n: &Arc<dyn std::any::Any + Send + Sync>);
}

struct Case<'a, M, F> {
    chain: &'a MChain<M>,
    handler: F,
}

/// A [`select`] case: messages of `chain` go to `handler`.
pub fn case<'a, M, H, F>(chain: &'a MChain<M>, handler: F) -> impl SelectCase + 'a
where
    M: Send + 'static,
    H: Handled,
    F: FnMut(M) -> H + 'a,
{
    Case { chain, handler }
}

impl<M: Send + 'static, H: Handled, F: FnMut(M) -> H> SelectCase for Case<'_, M, F> {
    fn try_handle(&mut self, closed: &mut bool) -> Option<bool> {
        match self.chain.pop() {
            Pop::Msg(m) => Some((self.handler)(m).handled()),
            Pop::Empty => {
                *closed = false;
                None
            }
            Pop::Closed => {
                *closed = true;
                None
            }
        }
    }

    fn register(&self, n: &Arc<dyn std::any::Any + Send + Sync>) {
        if let Ok(n) = n.clone().downcast::<Notify>() {
            self.chain.inner.state.lock().selectors.push(n);
        }
    }

    fn unregister(&self, n: &Arc<dyn std::any::Any + Send + Sync>) {
        let ptr = Arc::as_ptr(n) as *const ();
        self.chain
            .inner
            .state
            .lock()
            .selectors
            .retain(|s| Arc::as_ptr(s) as *const () != ptr);
    }
}

/// Receives from several chains at once (of any message types), handling
/// each message with its case's handler, until a limit of `params` is reached
/// or every chain is closed and empty. Chains are polled in order, starting
/// after the one that last delivered, so a busy chain cannot starve the rest.
///
/// ```
/// use std::time::Duration;
/// use troupe::mchain::{case, select, MChain, Receive};
///
/// let numbers = MChain::unbounded();
/// let words = MChain::unbounded();
/// numbers.send(1u32).unwrap();
/// words.send("one").unwrap();
/// numbers.send(2u32).unwrap();
/// let (mut sum, mut seen) = (0, Vec::new());
/// let r = select(
///     Receive::new().handle_n(3).empty_timeout(Duration::from_secs(1)),
///     &mut [&mut case(&numbers, |n| sum += n), &mut case(&words, |w| seen.push(w))],
/// );
/// assert_eq!(r.handled, 3);
/// assert_eq!((sum, seen), (3, vec!["one"]));
/// ```
pub fn select(params: Receive, cases: &mut [&mut dyn SelectCase]) -> ReceiveResult {
    let start = Instant::now();
    let total_deadline = params.total_time.and_then(|d| start.checked_add(d));
    let notify = Arc::new(Notify {
        seq: Mutex::new(0),
        cv: Condvar::new(),
    });
    let any: Arc<dyn std::any::Any + Send + Sync> = notify.clone();
    for c in cases.iter() {
        c.register(&any);
    }
    let mut r = ReceiveResult {
        extracted: 0,
        handled: 0,
        status: ReceiveStatus::Closed,
    };
    let mut next = 0;
    let mut empty_since = Instant::now();
    'outer: loop {
        if let Some(s) = limit_reached(&params, &r) {
            r.status = s;
            break;
        }
        if total_deadline.is_some_and(|t| Instant::now() >= t) {
            r.status = ReceiveStatus::TotalTime;
            break;
        }
        // Read the change counter before polling: a push after our poll
        // bumps it, so the wait below returns at once.
        let seen = *notify.seq.lock();
        let mut all_closed = !cases.is_empty();
        for i in 0..cases.len() {
            let k = (next + i) % cases.len();
            let mut closed = false;
            if let Some(handled) = cases[k].try_handle(&mut closed) {
                r.extracted += 1;
                r.handled += handled as usize;
                next = k + 1;
                empty_since = Instant::now();
                continue 'outer;
            }
            all_closed &= closed;
        }
        if all_closed {
            r.status = ReceiveStatus::Closed;
            break;
        }
        let deadline = earliest(
            params
                .empty_timeout
                .and_then(|d| empty_since.checked_add(d)),
            total_deadline,
        );
        let mut seq = notify.seq.lock();
        while *seq == seen {
            match deadline {
                None => notify.cv.wait(&mut seq),
                Some(d) => {
                    if notify.cv.wait_until(&mut seq, d).timed_out() && *seq == seen {
                        r.status = match total_deadline {
                            Some(t) if Instant::now() >= t => ReceiveStatus::TotalTime,
                            _ => ReceiveStatus::EmptyTimeout,
                        };
                        drop(seq);
                        break 'outer;
                    }
                }
            }
        }
    }
    for c in cases.iter() {
        c.unregister(&any);
    }
    r
}
