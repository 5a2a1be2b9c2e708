//! One worker thread: its queues and its loop.
//!
//! Loop: take the next local task (LIFO slot, then the local deque, then a
//! batch from the injector); when there is none, search (injector, then steal
//! a batch from a random victim) for at most `SEARCH_PASSES` passes with a
//! bounded spin between them and never a `sched_yield`, then park (see
//! `park.rs`). At most half the workers search at once (`park.rs`); a worker
//! over the cap goes straight to parking's re-check.
//!
//! Fairness: every `FAIRNESS_INTERVAL` turns the worker moves its LIFO slot
//! onto its deque and takes the *oldest* task instead (injector first, then
//! the bottom of its own deque), so a pair of actors messaging each other
//! through the LIFO slot cannot starve older work. A turn that used its
//! budget while other work was visible here ([`WorkerLocal::other_work_visible`])
//! goes onto the (stealable) deque and the worker takes the LIFO slot, the
//! injector or its oldest task next ([`WorkerLocal::yield_task`]); with
//! nothing else visible the turn goes on, and nothing is pushed or woken.
//!
//! The LIFO slot is not stealable, so a task placed there waits for the rest
//! of its scheduler's handler. That is what ping-pong wants (the handler ends
//! right after its tell), not fan-in (a handler that goes on telling the
//! actor it woke): the first tell this thread makes to a *busy* actor after
//! a placement moves the placed task to the deque, where thieves see it
//! ([`tell_to_busy`]: a thread-local read and a look at the slot per tell
//! to a busy actor; nothing per ping-pong hop).
//!
//! The `WorkerLocal` lives on the worker thread's stack for the thread's whole
//! life; `CURRENT` points at it while the loop runs and is cleared before it
//! is dropped.

use super::watch::TurnSlot;
use super::{Pool, Task};
use crate::engine::sync::{self, Event};
use crossbeam_deque::{Steal, Worker as Deque};
use crossbeam_utils::sync::Parker;
use crossbeam_utils::Backoff;
use std::cell::Cell;
use std::ptr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

const FAIRNESS_INTERVAL: u32 = 61;
/// Steal passes (over the injector and every victim) before parking, with
/// a spin between them that doubles up to 64 `spin_loop` hints (about
/// 800 hints in all, some tens of microseconds): long enough that a
/// conversation spread over two workers does not pay a futex wake-up per
/// hop, bounded, and never a `sched_yield`.
const SEARCH_PASSES: u32 = 16;

thread_local! {
    static CURRENT: Cell<*const WorkerLocal> = const { Cell::new(ptr::null()) };
}

/// Called after a tell that found its actor busy (no task to schedule):
/// if this thread is a worker whose LIFO slot holds a task, that task was
/// placed there by the running turn (a turn starts with the slot empty:
/// `next_local` takes it first or moves it to the deque), and the turn goes
/// on telling; the task moves to the stealable deque, so that a receiver it
/// woke does not wait for the rest of the handler. Nothing is read or
/// written per hop of a ping-pong: only tells to busy actors look.
#[inline(always)]
pub(crate) fn tell_to_busy() {
    let w = CURRENT.with(|c| c.get());
    if w.is_null() {
        return;
    }
    // SAFETY: as in `current_for`: non-null only inside this thread's run loop.
    let w = unsafe { &*w };
    if w.lifo_occupied() {
        w.spill_lifo();
    }
}

/// The calling thread's worker, if it is a worker of pool `pool_id`.
///
/// The returned reference must not leave the calling function's frame (it is
/// only valid while the worker loop that installed it runs on this thread,
/// which encloses every call made on a worker thread).
#[inline]
pub(crate) fn current_for<'a>(pool_id: usize) -> Option<&'a WorkerLocal> {
    let w = CURRENT.with(|c| c.get());
    if w.is_null() {
        return None;
    }
    // `CURRENT` is non-null only while `WorkerLocal::run` (or a manual
    // pool's `run_one`) executes on this thread, with `w` pointing at its
    // borrowed `self`, which cannot move or drop during the call.
    // SAFETY: any code calling us runs inside that call, so `*w` is alive.
    let w = unsafe { &*w };
    (w.pool.id == pool_id).then_some(w)
}

/// The CPU the calling worker thread is pinned to (`None` off a worker or on
/// an unpinned pool).
pub(crate) fn current_pinned_cpu() -> Option<usize> {
    let w = CURRENT.with(|c| c.get());
    if w.is_null() {
        return None;
    }
    // SAFETY: as in `current_for`: non-null only inside this thread's run loop.
    unsafe { &*w }.cpu
}

/// Whether the calling thread is a pool's own worker thread, running its
/// loop for the thread's whole life (not a thread driving a manual pool's
/// worker for a while).
pub(crate) fn is_pool_thread() -> bool {
    let w = CURRENT.with(|c| c.get());
    // SAFETY: as in `current_for`: non-null only inside this thread's run loop.
    !w.is_null() && unsafe { &*w }.own_thread.get()
}

/// The id of the actor whose turn runs on the calling thread, if it is a
/// worker of a watched pool running one (a blocking ask's asker,
/// `watch.rs`).
pub(crate) fn current_actor() -> Option<u64> {
    let w = CURRENT.with(|c| c.get());
    if w.is_null() {
        return None;
    }
    // SAFETY: as in `current_for`: non-null only inside this thread's run loop.
    unsafe { &*w }.turn_slot()?.own_actor()
}

/// Whether the calling thread is a worker of any pool (such a thread must not
/// block waiting for mailbox space).
pub(crate) fn is_worker_thread() -> bool {
    !CURRENT.with(|c| c.get()).is_null()
}

/// Whether the calling thread may block waiting (on a reply, say): any
/// thread but a worker of a pool that runs actors (one without
/// [`PoolConfig::blocking`](super::PoolConfig)), where a wait would stall
/// every actor queued behind it.
pub(crate) fn may_block_here() -> bool {
    let w = CURRENT.with(|c| c.get());
    if w.is_null() {
        return true;
    }
    // SAFETY: as in `current_for`: non-null only inside this thread's run loop.
    unsafe { &*w }.pool.blocking
}

/// A worker's own state. Not shared: other threads see only its stealer and
/// unparker, held by the pool.
pub(crate) struct WorkerLocal {
    pub(crate) pool: Arc<Pool>,
    index: usize,
    deque: Deque<Task>,
    lifo: Cell<Option<Task>>,
    tick: Cell<u32>,
    parker: Parker,
    rng: Cell<u32>,
    /// The CPU this worker is pinned to, if any.
    pub(crate) cpu: Option<usize>,
    /// The pool counts per-worker metrics (`stats.rs`); a copy of
    /// `pool.stats.on` on this worker's stack.
    counting: bool,
    /// Set by `run`: this thread is the worker's own (`is_pool_thread`).
    own_thread: Cell<bool>,
}

struct ClearCurrent;

impl Drop for ClearCurrent {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(ptr::null()));
    }
}

impl WorkerLocal {
    pub(crate) fn new(
        pool: Arc<Pool>,
        index: usize,
        deque: Deque<Task>,
        parker: Parker,
        cpu: Option<usize>,
    ) -> Self {
        WorkerLocal {
            counting: pool.stats.on,
            pool,
            index,
            deque,
            lifo: Cell::new(None),
            tick: Cell::new(0),
            parker,
            rng: Cell::new(0x9E37_79B9 ^ (index as u32 + 1).wrapping_mul(0x85EB_CA6B)),
            cpu,
            own_thread: Cell::new(false),
        }
    }

    /// This worker's turn slot, if its pool is watched (`watch.rs`).
    #[inline(always)]
    pub(crate) fn turn_slot(&self) -> Option<&TurnSlot> {
        match &self.pool.watch {
            None => None,
            Some(slots) => Some(slots.get(self.index)),
        }
    }

    /// Message budget of one actor turn.
    #[inline]
    pub(crate) fn throughput(&self) -> usize {
        self.pool.throughput
    }

    /// Schedules from this worker: into the LIFO slot; a task already there
    /// moves to the (stealable) deque.
    #[inline]
    pub(crate) fn schedule_local(&self, task: Task) {
        // `Pool::schedule`, the only caller, sends shared-queue pools' tasks
        // to the injector before getting here.
        debug_assert!(!self.pool.shared_queue);
        sync::count(Event::LifoPlace);
        if let Some(old) = self.lifo.replace(Some(task)) {
            sync::count(Event::DequePush);
            self.deque.push(old);
            self.pool.notify();
        }
    }

    /// Schedules onto the local deque, leaving the LIFO slot alone.
    pub(crate) fn push_local(&self, task: Task) {
        if self.pool.shared_queue {
            return self.pool.inject(task);
        }
        sync::count(Event::DequePush);
        self.deque.push(task);
        self.pool.notify();
    }

    /// Puts back a task whose turn found only a half-written slot: onto
    /// the local deque, no wake-up (this worker is awake and comes back to
    /// it after what else it has; a thief may take it meanwhile).
    pub(crate) fn requeue_local(&self, task: Task) {
        if self.pool.shared_queue {
            sync::count(Event::InjectorPush);
            return self.pool.injector.push(task);
        }
        sync::count(Event::DequePush);
        self.deque.push(task);
    }

    /// Whether a turn that used its budget should give way: another task
    /// waits in this worker's LIFO slot, its deque or the injector (a
    /// thief's work elsewhere is another worker's business). A worker that
    /// is not a pool's own thread (a manual pool, the tokio driver, which
    /// must give its thread back) always gives way.
    #[inline]
    pub(crate) fn other_work_visible(&self) -> bool {
        if !self.own_thread.get() {
            return true;
        }
        self.lifo_occupied() || !self.deque.is_empty() || !self.pool.injector.is_empty()
    }

    /// Whether the LIFO slot holds a task (a load; the slot is unchanged).
    #[inline(always)]
    fn lifo_occupied(&self) -> bool {
        let t = self.lifo.take();
        let occupied = t.is_some();
        self.lifo.set(t);
        occupied
    }

    /// Moves the LIFO slot's task to the stealable deque, with a notify.
    #[cold]
    #[inline(never)]
    fn spill_lifo(&self) {
        if let Some(t) = self.lifo.take() {
            sync::count(Event::LifoSpill);
            sync::count(Event::DequePush);
            self.deque.push(t);
            self.pool.notify();
        }
    }

    /// Sends a task that used its whole budget while other work was
    /// visible behind that work: onto the local deque (stealable, with a
    /// notify), and this worker next takes its LIFO slot, the injector or
    /// its oldest task. A shared-queue pool, and a worker that is not a
    /// pool's own thread (the tokio driver, the test kit's manual pool,
    /// whose order stays as it was), send it to the back of the injector.
    pub(crate) fn yield_task(&self, task: Task) {
        if self.pool.shared_queue || !self.own_thread.get() {
            return self.pool.inject(task);
        }
        sync::count(Event::DequePush);
        if !self.lifo_occupied() {
            // A fairness turn next: it takes the injector's or the deque's
            // oldest task, which is not this one (one of them held another).
            self.tick.set(FAIRNESS_INTERVAL - 1);
        }
        self.deque.push(task);
        self.pool.notify();
    }

    pub(crate) fn run(self) {
        self.own_thread.set(true);
        CURRENT.with(|c| c.set(&self));
        let _clear = ClearCurrent;
        loop {
            if let Some(task) = self.next_local() {
                self.count(|s| &s.tasks);
                task.run(&self);
                continue;
            }
            match self.search() {
                Some(task) => {
                    self.count(|s| &s.tasks);
                    task.run(&self)
                }
                None => return,
            }
        }
    }

    /// Runs one task of a manual pool (`Pool::manual`) on the calling
    /// thread, as its worker; `false` if no task was queued. While it runs,
    /// this thread counts as the pool's worker (sends from handlers go to
    /// the LIFO slot, a `Block` mailbox does not block).
    pub(crate) fn run_one(&self) -> bool {
        let prev = CURRENT.with(|c| c.replace(self));
        struct Restore(*const WorkerLocal);
        impl Drop for Restore {
            fn drop(&mut self) {
                CURRENT.with(|c| c.set(self.0));
            }
        }
        let _restore = Restore(prev);
        match self.next_local() {
            Some(task) => {
                task.run(self);
                true
            }
            None => false,
        }
    }

    fn next_local(&self) -> Option<Task> {
        if self.pool.shared_queue {
            // One task at a time from the shared queue: no batching into a
            // local deque, so every worker sees every task.
            return steal_one(|| self.pool.injector.steal());
        }
        let tick = self.tick.get().wrapping_add(1);
        self.tick.set(tick);
        if tick % FAIRNESS_INTERVAL == 0 {
            if let Some(t) = self.lifo.take() {
                self.deque.push(t);
            }
            if let Some(t) = steal_one(|| self.pool.injector.steal()) {
                return Some(t);
            }
            if let Some(t) = steal_one(|| self.pool.stealers[self.index].steal()) {
                return Some(t);
            }
        }
        if let Some(t) = self.lifo.take() {
            return Some(t);
        }
        if let Some(t) = self.deque.pop() {
            return Some(t);
        }
        steal_one(|| self.pool.injector.steal_batch_and_pop(&self.deque))
    }

    /// Bumps one of this worker's counters if the pool counts.
    #[inline]
    fn count(&self, which: impl FnOnce(&super::stats::WorkerStats) -> &super::stats::Counter) {
        if self.counting {
            which(&self.pool.stats.workers[self.index]).bump(1);
        }
    }

    fn steal_any(&self) -> Option<Task> {
        if self.pool.shared_queue {
            return steal_one(|| self.pool.injector.steal());
        }
        if let Some(t) = steal_one(|| self.pool.injector.steal_batch_and_pop(&self.deque)) {
            return Some(t);
        }
        let n = self.pool.stealers.len();
        let start = self.next_random() as usize % n;
        for k in 0..n {
            let victim = (start + k) % n;
            if victim == self.index {
                continue;
            }
            if let Some(t) =
                steal_one(|| self.pool.stealers[victim].steal_batch_and_pop(&self.deque))
            {
                self.count(|s| &s.steals);
                sync::count(Event::Steal);
                return Some(t);
            }
        }
        None
    }

    /// Searches, then parks, until it finds a task (`Some`) or the pool shuts
    /// down (`None`). A search is at most `SEARCH_PASSES` steal passes, and
    /// only while fewer than half the workers search; then the worker parks
    /// (`park.rs`: register, re-check every queue, park).
    fn search(&self) -> Option<Task> {
        let idle = &self.pool.idle;
        let threads = self.pool.threads();
        // Counted in `idle.searching` (by us, or by the waker that woke us).
        let mut searching = false;
        loop {
            if !searching {
                searching = idle.try_start_searching(threads);
                sync::count(if searching {
                    Event::Search
                } else {
                    Event::SearchCapped
                });
            }
            if searching {
                let backoff = Backoff::new();
                for _ in 0..SEARCH_PASSES {
                    if let Some(t) = self.steal_any() {
                        idle.found_work(&self.pool.unparkers);
                        return Some(t);
                    }
                    if self.pool.shutdown.load(Ordering::Acquire) {
                        return None;
                    }
                    // Spins only: never `sched_yield`.
                    backoff.spin();
                }
            }
            idle.prepare_sleep(self.index, searching);
            let parked =
                !self.pool.has_stealable_work() && !self.pool.shutdown.load(Ordering::SeqCst);
            if parked {
                sync::count(Event::Park);
                if self.counting {
                    // Two clock reads per park, none per task: idle time
                    // is time parked (a searching worker counts as busy).
                    let t0 = std::time::Instant::now();
                    self.parker.park();
                    let w = &self.pool.stats.workers[self.index];
                    w.parks.bump(1);
                    w.idle_ns.bump(t0.elapsed().as_nanos() as u64);
                } else {
                    self.parker.park();
                }
            }
            searching = idle.cancel_sleep(self.index);
            if !searching {
                // The re-check saw work (or a shutdown), or we woke with
                // nobody having counted us: take work, searcher or not.
                if let Some(t) = self.steal_any() {
                    idle.took_work_after_recheck(&self.pool.unparkers);
                    return Some(t);
                }
                if self.pool.shutdown.load(Ordering::Acquire) {
                    return None;
                }
            }
        }
    }

    fn next_random(&self) -> u32 {
        // xorshift32: cheap victim selection.
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.rng.set(x);
        x
    }
}

#[inline]
fn steal_one(mut f: impl FnMut() -> Steal<Task>) -> Option<Task> {
    loop {
        match f() {
            Steal::Success(t) => return Some(t),
            Steal::Empty => return None,
            Steal::Retry => std::hint::spin_loop(),
        }
    }
}
