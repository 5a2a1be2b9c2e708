//! The process-wide timer thread: runs a closure at a deadline, or every
//! period, for the layers above (message timers in `messaging::timer`,
//! `time_limit` states, ask deadlines). It knows nothing of messages.
//!
//! One timer thread (`troupe-timer`, started on first use) serves every
//! timer from a binary heap ordered by (deadline, creation order). It parks
//! on a condvar until the earliest deadline, or without a timeout when no
//! timer is pending (an idle process pays nothing).
//!
//! Protocol and invariants:
//! - Scheduling pushes an entry under the heap lock and wakes the thread only
//!   when the new entry becomes the earliest. A timer whose deadline does not
//!   fit in an `Instant` (a `Duration::MAX` delay) is never queued: it stays
//!   active until cancelled and never fires.
//! - A timer fires in deadline order; timers with the same deadline fire in
//!   the order they were created. Calls happen on the timer thread, outside
//!   the lock, so a call may schedule timers. A panicking call is caught and
//!   logged; it stops that timer only.
//! - Cancellation ([`TimerHandle::cancel`] or dropping the handle) moves the
//!   timer's state word `ACTIVE -> CANCELLED`; a one-shot fires only if it
//!   wins `ACTIVE -> DONE` first, a periodic one only while still `ACTIVE`,
//!   so a cancel that returns `true` prevents every later call. A cancelled
//!   entry stays in the heap until its deadline or until cancelled entries
//!   outnumber live ones, when the heap is rebuilt without them: memory stays
//!   within twice the live timers (plus a small constant), even for a pattern
//!   that re-arms a long timeout on every message.
//! - A periodic timer re-arms at `previous deadline + period`, not at "now +
//!   period", so lateness does not accumulate into drift; if the thread fell
//!   more than a period behind, the missed ticks are skipped, not bunched.
//!   It stops by itself once its call returns `false` (a closed target).
//! - A thread may install a **virtual clock** (the test kit does, on the
//!   thread that runs its actors): timers scheduled from that thread then go
//!   to the virtual clock instead of the timer thread, its `now` moves only
//!   when the test advances it, and they fire on that thread, in the same
//!   (deadline, creation) order, when the test advances past them.

use parking_lot::{Condvar, Mutex};
use std::cell::{Cell, RefCell};
use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::fmt;
use std::rc::Rc;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

const ACTIVE: u8 = 0;
const CANCELLED: u8 = 1;
const DONE: u8 = 2;

/// Below this many entries the heap is never rebuilt to shed cancelled ones.
const COMPACT_MIN: usize = 1024;

struct TimerState {
    state: AtomicU8,
}

enum Action {
    Once(Box<dyn FnOnce() + Send>),
    /// Returns `false` when the target is gone and the timer should stop.
    Periodic {
        period: Duration,
        fire: Box<dyn FnMut() -> bool + Send>,
    },
}

struct Entry {
    deadline: Instant,
    seq: u64,
    state: Arc<TimerState>,
    action: Action,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.deadline == other.deadline && self.seq == other.seq
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    // BinaryHeap is a max-heap: reverse, so the earliest (deadline, seq) is on top.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        (other.deadline, other.seq).cmp(&(self.deadline, self.seq))
    }
}

struct Service {
    heap: Mutex<BinaryHeap<Entry>>,
    cv: Condvar,
    next_seq: AtomicU64,
    /// Cancelled entries still in the heap (approximate: a heuristic for
    /// compaction only).
    cancelled: AtomicI64,
    fired: AtomicU64,
}

fn service() -> &'static Service {
    static SERVICE: OnceLock<&'static Service> = OnceLock::new();
    SERVICE.get_or_init(|| {
        let s: &'static Service = Box::leak(Box::new(Service {
            heap: Mutex::new(BinaryHeap::new()),
            cv: Condvar::new(),
            next_seq: AtomicU64::new(0),
            cancelled: AtomicI64::new(0),
            fired: AtomicU64::new(0),
        }));
        std::thread::Builder::new()
            .name("troupe-timer".into())
            .spawn(move || s.run())
            .expect("cannot start the troupe-timer thread");
        s
    })
}

impl Service {
    fn schedule(&'static self, deadline: Option<Instant>, action: Action) -> TimerHandle {
        let state = Arc::new(TimerState {
            state: AtomicU8::new(ACTIVE),
        });
        let Some(deadline) = deadline else {
            // Beyond the clock's range: never fires, cancellable as usual.
            drop(action);
            return TimerHandle {
                state: Some(state),
                real: true,
            };
        };
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let mut heap = self.heap.lock();
        self.maybe_compact(&mut heap);
        let earliest = heap.peek().is_none_or(|e| deadline < e.deadline);
        heap.push(Entry {
            deadline,
            seq,
            state: state.clone(),
            action,
        });
        drop(heap);
        if earliest {
            self.cv.notify_one();
        }
        TimerHandle {
            state: Some(state),
            real: true,
        }
    }

    fn maybe_compact(&self, heap: &mut BinaryHeap<Entry>) {
        let cancelled = self.cancelled.load(Ordering::Relaxed);
        if heap.len() >= COMPACT_MIN && cancelled > 0 && cancelled as usize * 2 > heap.len() {
            let before = heap.len();
            heap.retain(|e| e.state.state.load(Ordering::Acquire) != CANCELLED);
            let removed = (before - heap.len()) as i64;
            self.cancelled.fetch_sub(removed, Ordering::Relaxed);
            if heap.capacity() > 4 * heap.len().max(COMPACT_MIN) {
                heap.shrink_to(2 * heap.len());
            }
        }
    }

    fn run(&'static self) {
        let mut due: Vec<Entry> = Vec::new();
        let mut heap = self.heap.lock();
        loop {
            let now = Instant::now();
            match heap.peek() {
                None => {
                    if heap.capacity() > 4 * COMPACT_MIN {
                        heap.shrink_to(COMPACT_MIN);
                    }
                    self.cv.wait(&mut heap);
                    continue;
                }
                Some(e) if e.deadline > now => {
                    let d = e.deadline;
                    self.cv.wait_until(&mut heap, d);
                    continue;
                }
                Some(_) => {}
            }
            while due.len() < 1024 {
                match heap.peek() {
                    Some(e) if e.deadline <= now => due.push(heap.pop().expect("peeked")),
                    _ => break,
                }
            }
            drop(heap);
            let mut rearm = Vec::new();
            for e in due.drain(..) {
                match fire(e, Instant::now) {
                    Fired::Discarded => {
                        self.cancelled.fetch_sub(1, Ordering::Relaxed);
                    }
                    Fired::Done => {
                        self.fired.fetch_add(1, Ordering::Relaxed);
                    }
                    Fired::Again(e) => {
                        self.fired.fetch_add(1, Ordering::Relaxed);
                        rearm.push(e);
                    }
                }
            }
            heap = self.heap.lock();
            for e in rearm {
                if e.state.state.load(Ordering::Acquire) == CANCELLED {
                    self.cancelled.fetch_sub(1, Ordering::Relaxed);
                } else {
                    heap.push(e);
                }
            }
        }
    }
}

/// What firing a due entry did.
enum Fired {
    /// It was cancelled: nothing ran.
    Discarded,
    /// It ran and is finished (a one-shot, or a periodic one whose target
    /// closed or whose next tick is beyond the clock's range).
    Done,
    /// A periodic one ran and is due again at the entry's new deadline.
    Again(Entry),
}

/// Fires a due entry: the one firing protocol of the timer thread and of
/// virtual clocks (see the module docs). `now` is read only to skip the
/// ticks a periodic timer fell behind on.
fn fire(mut e: Entry, now: impl FnOnce() -> Instant) -> Fired {
    match e.action {
        Action::Once(f) => {
            if e.state
                .state
                .compare_exchange(ACTIVE, DONE, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                fire_guarded(f);
                Fired::Done
            } else {
                Fired::Discarded
            }
        }
        Action::Periodic {
            period,
            ref mut fire,
        } => {
            if e.state.state.load(Ordering::Acquire) != ACTIVE {
                return Fired::Discarded;
            }
            if !fire_guarded(&mut **fire) {
                e.state.state.store(DONE, Ordering::Release);
                return Fired::Done;
            }
            match next_tick(e.deadline, period, now()) {
                Some(next) => {
                    e.deadline = next;
                    Fired::Again(e)
                }
                None => {
                    e.state.state.store(DONE, Ordering::Release);
                    Fired::Done
                }
            }
        }
    }
}

/// Runs a timer's action; a panic in it (a user's conversion or closure)
/// is logged and stops that timer only, never the timer thread.
fn fire_guarded<R: Default>(f: impl FnOnce() -> R) -> R {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => {
            tracing::error!("a timer's delivery panicked; the timer is stopped");
            R::default()
        }
    }
}

/// The first tick after `prev` on the grid `prev + k * period` that is
/// still ahead of `now` (or the very next one if it is).
/// `None` when that tick does not fit in an `Instant`.
fn next_tick(prev: Instant, period: Duration, now: Instant) -> Option<Instant> {
    let next = prev.checked_add(period)?;
    if next > now {
        return Some(next);
    }
    let behind = now.duration_since(prev).as_nanos();
    let k = behind / period.as_nanos().max(1) + 1;
    let k = u32::try_from(k).unwrap_or(u32::MAX);
    prev.checked_add(period.saturating_mul(k))
}

/// A scheduled timer. Dropping it cancels the timer (SObjectizer's
/// `timer_id_t`); [`detach`](Self::detach) lets it run unowned.
#[must_use = "dropping a TimerHandle cancels the timer; call .detach() to let it run"]
pub struct TimerHandle {
    state: Option<Arc<TimerState>>,
    /// On the timer thread (not a virtual clock): cancelling counts toward
    /// its heap compaction.
    real: bool,
}

impl fmt::Debug for TimerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TimerHandle(active={})", self.is_active())
    }
}

impl TimerHandle {
    /// Cancels the timer. Returns whether it was still active: `true` means
    /// it will not fire again (a one-shot never fired; a periodic one stops).
    pub fn cancel(&self) -> bool {
        match &self.state {
            Some(s) => {
                let won = s
                    .state
                    .compare_exchange(ACTIVE, CANCELLED, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok();
                if won && self.real {
                    service().cancelled.fetch_add(1, Ordering::Relaxed);
                }
                won
            }
            None => false,
        }
    }

    /// Whether the timer may still fire.
    pub fn is_active(&self) -> bool {
        self.state
            .as_ref()
            .is_some_and(|s| s.state.load(Ordering::Acquire) == ACTIVE)
    }

    /// Lets the timer run without a handle (it can no longer be cancelled;
    /// a periodic one stops when its target closes).
    pub fn detach(mut self) {
        self.state = None;
    }
}

impl Drop for TimerHandle {
    fn drop(&mut self) {
        self.cancel();
    }
}

/// Runs `f` at `deadline` (`None`: never, until cancelled): on the timer
/// thread, or on this thread's virtual clock if one is installed. Keep `f`
/// short: every other timer waits for it.
pub(crate) fn call_at(deadline: Option<Instant>, f: impl FnOnce() + Send + 'static) -> TimerHandle {
    schedule(deadline, Action::Once(Box::new(f)))
}

/// As [`call_at`], `delay` from the timer clock's [`now`] (never, if that
/// does not fit in an `Instant`).
pub(crate) fn call_after(delay: Duration, f: impl FnOnce() + Send + 'static) -> TimerHandle {
    call_at(now().checked_add(delay), f)
}

/// Calls `fire` after `first_delay`, then every `period` (at least 1 µs)
/// until it returns `false` or the timer is cancelled.
pub(crate) fn call_periodic(
    first_delay: Duration,
    period: Duration,
    fire: impl FnMut() -> bool + Send + 'static,
) -> TimerHandle {
    let period = period.max(Duration::from_micros(1));
    schedule(
        now().checked_add(first_delay),
        Action::Periodic {
            period,
            fire: Box::new(fire),
        },
    )
}

fn schedule(deadline: Option<Instant>, action: Action) -> TimerHandle {
    match VIRTUAL.with(|v| v.borrow().clone()) {
        Some(clock) => clock.schedule(deadline, action),
        None => service().schedule(deadline, action),
    }
}

/// The timer clock's now: this thread's virtual clock if one is installed,
/// else `Instant::now()`.
pub(crate) fn now() -> Instant {
    VIRTUAL.with(|v| match &*v.borrow() {
        Some(clock) => clock.now.get(),
        None => Instant::now(),
    })
}

thread_local! {
    /// The virtual clock installed on this thread, if any.
    static VIRTUAL: RefCell<Option<Rc<VirtualClock>>> = const { RefCell::new(None) };
}

/// A clock that moves only when told to, with its own timers (see the
/// module docs). Installed on one thread by [`VirtualClock::install`].
pub(crate) struct VirtualClock {
    now: Cell<Instant>,
    heap: RefCell<BinaryHeap<Entry>>,
    seq: Cell<u64>,
}

/// Uninstalls a virtual clock from its thread when dropped.
pub(crate) struct VirtualGuard {
    clock: Rc<VirtualClock>,
}

impl VirtualGuard {
    /// The installed clock.
    pub(crate) fn clock(&self) -> &VirtualClock {
        &self.clock
    }
}

impl Drop for VirtualGuard {
    fn drop(&mut self) {
        VIRTUAL.with(|v| {
            let mut v = v.borrow_mut();
            if v.as_ref().is_some_and(|c| Rc::ptr_eq(c, &self.clock)) {
                *v = None;
            }
        });
    }
}

impl VirtualClock {
    /// Installs a new virtual clock on this thread (replacing none: panics
    /// if one is installed already), starting at the real now.
    pub(crate) fn install() -> VirtualGuard {
        let clock = Rc::new(VirtualClock {
            now: Cell::new(Instant::now()),
            heap: RefCell::new(BinaryHeap::new()),
            seq: Cell::new(0),
        });
        VIRTUAL.with(|v| {
            let mut v = v.borrow_mut();
            assert!(
                v.is_none(),
                "a virtual clock is already installed on this thread"
            );
            *v = Some(clock.clone());
        });
        VirtualGuard { clock }
    }

    fn schedule(&self, deadline: Option<Instant>, action: Action) -> TimerHandle {
        let state = Arc::new(TimerState {
            state: AtomicU8::new(ACTIVE),
        });
        if let Some(deadline) = deadline {
            let seq = self.seq.get();
            self.seq.set(seq + 1);
            self.heap.borrow_mut().push(Entry {
                deadline,
                seq,
                state: state.clone(),
                action,
            });
        }
        TimerHandle {
            state: Some(state),
            real: false,
        }
    }

    /// The virtual now.
    pub(crate) fn now(&self) -> Instant {
        self.now.get()
    }

    /// The earliest pending deadline (cancelled timers included until they
    /// are reached).
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.heap.borrow().peek().map(|e| e.deadline)
    }

    /// Fires the earliest timer due at or before `limit`, moving `now` to its
    /// deadline; `false` if none is due. A cancelled one is discarded (and
    /// counts as fired: call again).
    pub(crate) fn fire_next(&self, limit: Instant) -> bool {
        let entry = {
            let mut heap = self.heap.borrow_mut();
            match heap.peek() {
                Some(e) if e.deadline <= limit => heap.pop().expect("peeked"),
                _ => return false,
            }
        };
        if entry.deadline > self.now.get() {
            self.now.set(entry.deadline);
        }
        let now = self.now.get();
        if let Fired::Again(mut e) = fire(entry, || now) {
            let seq = self.seq.get();
            self.seq.set(seq + 1);
            e.seq = seq;
            self.heap.borrow_mut().push(e);
        }
        true
    }

    /// Moves `now` forward to `to` (never back).
    pub(crate) fn set_now(&self, to: Instant) {
        if to > self.now.get() {
            self.now.set(to);
        }
    }
}

/// Timer statistics of the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerStats {
    /// Entries in the heap (live timers plus cancelled ones not yet shed).
    pub queued: usize,
    /// Firings so far (a periodic timer counts once per tick).
    pub fired: u64,
}

/// A snapshot of the process's timer statistics.
pub fn stats() -> TimerStats {
    let s = service();
    TimerStats {
        queued: s.heap.lock().len(),
        fired: s.fired.load(Ordering::Relaxed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_tick_keeps_the_grid() {
        let t0 = Instant::now();
        let p = Duration::from_millis(10);
        assert_eq!(next_tick(t0, p, t0), Some(t0 + p));
        // 35 ms late: the ticks at 10, 20, 30 are skipped, 40 is next.
        assert_eq!(
            next_tick(t0, p, t0 + Duration::from_millis(35)),
            Some(t0 + 4 * p)
        );
        assert_eq!(next_tick(t0, Duration::MAX, t0), None);
    }
}
