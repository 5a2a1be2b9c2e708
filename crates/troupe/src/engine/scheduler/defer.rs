//! Deferred scheduling: a thread outside the pool that schedules many
//! actors in one burst (a node's inbox handling one batch of remote
//! tells) hands them to each pool, and wakes its workers, once, when the
//! burst ends, instead of one injector push and one wake-up per actor it
//! finds idle, each racing the workers that pop the injector.
//!
//! Protocol: while [`batch_wakes`] runs on a thread, a task that thread
//! schedules from outside the pool is kept in the thread's batch, per
//! pool (at most [`POOLS`] pools; a task for another, or one scheduled
//! while the thread's storage is gone, is injected at once). When the
//! outermost batch of the thread ends (returns or unwinds), each pool's
//! tasks are pushed to its injector in the order they were scheduled, then
//! the pool is notified once.
//!
//! Why no task is lost or run twice, and no wake-up is lost: a kept task
//! is the one task of its actor (its `SCHEDULED` bit stays set, so no
//! other is made meanwhile); the batch's end is run by a guard's `Drop`,
//! on return and on unwinding, and the guard is private (no caller can
//! forget it); each push is followed, on the same thread, by a `notify`
//! of its pool: the same push-then-notify pair as without a batch, only
//! later. The idle protocol (`park.rs`) needs nothing more: a worker that
//! parked before the notify is woken by it, one that had not yet parked
//! re-checks the queues after registering and finds the tasks; a woken
//! worker that finds work and was the last one searching wakes another
//! (`Idle::found_work`), so one wake-up spreads a burst. No atomic is
//! added: the batch is the thread's own state, and the kept tasks' vectors
//! are reused (no allocation per message once warm).
//!
//! The cost: the actors of a batch wait for its end. A batch must not
//! block: a thread that waits inside one for an actor it told in it waits
//! for ever.
//!
//! # Holds
//!
//! A batch can also keep something its thread took once for all the
//! batch's messages, instead of once per message: a [`BatchHold`] (for
//! troupe-sharding's inbox, the read side of its table of entities, so
//! that a batch of a thousand tells pays for one lock instead of a
//! thousand). [`hold_in_batch`] takes it (runs the caller's `take`) the
//! first time in a batch and registers it; later calls in the same batch
//! find it registered and take nothing; the outermost batch's end
//! releases every hold it registered, on its thread, in the order taken
//! (also on unwinding: the guard's `Drop`). [`let_go_in_batch`] releases
//! one early (a writer waits for it). Registered holds are kept in the
//! thread's batch, in a reused vector: no atomic and no allocation per
//! message.

use std::cell::RefCell;
use std::sync::Arc;

use super::{Pool, Task};

/// Most pools one batch keeps tasks for; a task for another is injected
/// at once.
const POOLS: usize = 4;

#[derive(Default)]
struct Batch {
    /// Nested batches on this thread; 0: none.
    depth: u32,
    /// Pools with tasks kept for the batch's end, in the order scheduled.
    pools: [Option<(Arc<Pool>, Vec<Task>)>; POOLS],
    /// Emptied task vectors, kept for their capacity.
    spare: Vec<Vec<Task>>,
    /// What the batch holds (taken in it, released at its end), in the
    /// order taken; each once.
    holds: Vec<Arc<dyn BatchHold>>,
}

/// Something a thread takes once per batch and releases when the batch
/// ends: see [`hold_in_batch`].
pub trait BatchHold: Send + Sync {
    /// Releases what the batch took. Called once per take, on the thread
    /// that took it, when its batch ends (or from [`let_go_in_batch`]).
    /// It must not panic (it may run while the thread unwinds) and must
    /// not block.
    fn release(&self);
}

/// Whether `a` and `b` are the same hold (the same allocation).
fn same(a: &Arc<dyn BatchHold>, b: *const ()) -> bool {
    std::ptr::eq(Arc::as_ptr(a).cast::<()>(), b)
}

/// If a batch ([`batch_wakes`]) is open on this thread: makes sure it
/// holds `hold`, running `take` (which takes it: a lock, say) unless the
/// batch holds it already, and returns `true`; the batch's end releases
/// it ([`BatchHold::release`]). With no batch open, runs nothing and
/// returns `false`: the caller takes and releases for itself.
///
/// `take` runs outside the batch's own state and may block (to take a
/// lock); it must not panic. While the batch holds `hold`, whatever
/// `hold` guards may be read on this thread as taken.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// use troupe::{batch_wakes, hold_in_batch, BatchHold};
///
/// #[derive(Default)]
/// struct Taken(AtomicUsize);
/// impl BatchHold for Taken {
///     fn release(&self) {
///         self.0.fetch_sub(1, Ordering::Relaxed);
///     }
/// }
/// let taken = Arc::new(Taken::default());
/// batch_wakes(|| {
///     for _ in 0..1000 {
///         assert!(hold_in_batch(&taken, || {
///             taken.0.fetch_add(1, Ordering::Relaxed);
///         }));
///     }
///     assert_eq!(taken.0.load(Ordering::Relaxed), 1, "taken once per batch");
/// });
/// assert_eq!(taken.0.load(Ordering::Relaxed), 0, "released at its end");
/// assert!(!hold_in_batch(&taken, || unreachable!("no batch is open")));
/// ```
pub fn hold_in_batch<H: BatchHold + 'static>(hold: &Arc<H>, take: impl FnOnce()) -> bool {
    let me = Arc::as_ptr(hold).cast::<()>();
    let state = BATCH
        .try_with(|b| {
            let b = b.try_borrow().ok()?;
            if b.depth == 0 {
                return None;
            }
            Some(b.holds.iter().any(|h| same(h, me)))
        })
        .ok()
        .flatten();
    match state {
        None => false,
        Some(true) => true,
        Some(false) => {
            take();
            let held: Arc<dyn BatchHold> = hold.clone();
            let kept = BATCH.try_with(|b| match b.try_borrow_mut() {
                Ok(mut b) if b.depth > 0 => {
                    b.holds.push(held);
                    None
                }
                _ => Some(held),
            });
            match kept {
                // Registered: the batch's end releases it.
                Ok(None) => true,
                // Cannot happen (the batch was open and its state free
                // above, on this thread); give back what `take` took.
                Ok(Some(held)) => {
                    held.release();
                    false
                }
                Err(_) => {
                    hold.release();
                    false
                }
            }
        }
    }
}

/// Releases `hold` now if this thread's open batch holds it (and takes it
/// off the batch's list, so its end does not release it again); returns
/// whether it did. For a holder that sees a writer waiting for it.
pub fn let_go_in_batch<H: BatchHold + 'static>(hold: &Arc<H>) -> bool {
    let me = Arc::as_ptr(hold).cast::<()>();
    let found = BATCH
        .try_with(|b| {
            let mut b = b.try_borrow_mut().ok()?;
            let at = b.holds.iter().position(|h| same(h, me))?;
            Some(b.holds.remove(at))
        })
        .ok()
        .flatten();
    match found {
        Some(h) => {
            h.release();
            true
        }
        None => false,
    }
}

thread_local! {
    static BATCH: RefCell<Batch> = RefCell::default();
}

impl Pool {
    /// Pushes to the global queue and wakes a worker, or keeps the task
    /// for the end of this thread's batch if one is open.
    pub(crate) fn inject_batched(self: &Arc<Self>, task: Task) {
        if let Some(task) = keep(self, task) {
            self.inject(task);
        }
    }
}

/// Keeps `task` in this thread's batch; gives it back if there is no
/// batch (or no room): the caller injects it now.
fn keep(pool: &Arc<Pool>, task: Task) -> Option<Task> {
    let mut task = Some(task);
    let _ = BATCH.try_with(|b| {
        let Ok(mut b) = b.try_borrow_mut() else {
            return;
        };
        if b.depth == 0 {
            return;
        }
        let b = &mut *b;
        let mut free = None;
        for (i, slot) in b.pools.iter_mut().enumerate() {
            match slot {
                Some((p, tasks)) if Arc::ptr_eq(p, pool) => {
                    tasks.extend(task.take());
                    return;
                }
                None if free.is_none() => free = Some(i),
                _ => {}
            }
        }
        if let Some(i) = free {
            let mut tasks = b.spare.pop().unwrap_or_default();
            tasks.extend(task.take());
            b.pools[i] = Some((pool.clone(), tasks));
        }
    });
    task
}

/// Runs `f`, keeping the actors its thread schedules until `f` returns:
/// then each pool gets them in one burst and one wake-up, instead of one
/// injector push and one wake-up per actor found idle. For a thread
/// outside the pools that hands out many messages at once (a remote
/// node's inbox handling one batch of tells). Batches nest; the outermost
/// one's end hands over. Messages are in the mailboxes at once; only the
/// actors' runs wait.
///
/// `f` must not wait for an actor it told: that actor may not run before
/// `f` returns.
///
/// ```
/// use troupe::{Actor, ActorSystem, Context};
/// struct Count;
/// impl Actor for Count {
///     type Msg = u32;
///     fn handle(&mut self, _: u32, _: &mut Context<'_, Self>) {}
/// }
/// let system = ActorSystem::new();
/// let actors: Vec<_> = (0..8).map(|_| system.spawn(Count)).collect();
/// troupe::batch_wakes(|| {
///     for a in &actors {
///         a.tell(1).unwrap();
///     }
/// }); // the actors are scheduled here
/// ```
pub fn batch_wakes<R>(f: impl FnOnce() -> R) -> R {
    let _batch = Open::new();
    f()
}

/// An open batch on this thread; its drop ends it.
struct Open;

impl Open {
    fn new() -> Self {
        let _ = BATCH.try_with(|b| {
            if let Ok(mut b) = b.try_borrow_mut() {
                b.depth += 1;
            }
        });
        Open
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        let pools = BATCH
            .try_with(|b| {
                let Ok(mut b) = b.try_borrow_mut() else {
                    return Default::default();
                };
                b.depth = b.depth.saturating_sub(1);
                if b.depth > 0 {
                    return Default::default();
                }
                (std::mem::take(&mut b.pools), std::mem::take(&mut b.holds))
            })
            .unwrap_or_default();
        let (pools, mut holds) = pools;
        // The holds first: a writer waiting for one goes on at once.
        for h in holds.drain(..) {
            h.release();
        }
        let _ = BATCH.try_with(|b| {
            if let Ok(mut b) = b.try_borrow_mut() {
                if b.holds.capacity() == 0 {
                    b.holds = holds;
                }
            }
        });
        // Outside the borrow: neither a push nor a notify schedules, but
        // they stay clear of it.
        for (pool, mut tasks) in pools.into_iter().flatten() {
            for task in tasks.drain(..) {
                crate::engine::sync::count(crate::engine::sync::Event::InjectorPush);
                pool.injector.push(task);
            }
            pool.notify();
            let _ = BATCH.try_with(|b| {
                if let Ok(mut b) = b.try_borrow_mut() {
                    if b.spare.len() < POOLS {
                        b.spare.push(tasks);
                    }
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::scheduler::{PoolConfig, Runnable, WorkerLocal};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    /// Counts its runs.
    struct Runs(AtomicUsize);
    impl Runnable for Runs {
        fn run(&self, _: &WorkerLocal) -> Option<Arc<dyn Runnable>> {
            self.0.fetch_add(1, Ordering::SeqCst);
            None
        }
    }

    fn wait(limit: Duration, f: impl Fn() -> bool) -> bool {
        let end = Instant::now() + limit;
        while !f() {
            if Instant::now() >= end {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }

    /// Counts takes and releases.
    #[derive(Default)]
    struct Counted {
        taken: AtomicUsize,
        released: AtomicUsize,
    }
    impl BatchHold for Counted {
        fn release(&self) {
            self.released.fetch_add(1, Ordering::SeqCst);
        }
    }
    impl Counted {
        fn take(&self) {
            self.taken.fetch_add(1, Ordering::SeqCst);
        }
        fn counts(&self) -> (usize, usize) {
            (
                self.taken.load(Ordering::SeqCst),
                self.released.load(Ordering::SeqCst),
            )
        }
    }

    #[test]
    fn a_hold_is_taken_once_per_batch_and_released_at_its_end() {
        let a = Arc::new(Counted::default());
        let b = Arc::new(Counted::default());
        assert!(!hold_in_batch(&a, || a.take()), "no batch is open");
        assert_eq!(a.counts(), (0, 0));
        batch_wakes(|| {
            for _ in 0..100 {
                assert!(hold_in_batch(&a, || a.take()));
            }
            batch_wakes(|| {
                assert!(hold_in_batch(&a, || a.take()));
                assert!(hold_in_batch(&b, || b.take()));
            });
            // The inner batch's end releases nothing: the outer one is open.
            assert_eq!(a.counts(), (1, 0));
            assert_eq!(b.counts(), (1, 0));
            // Let go early, then taken again.
            assert!(let_go_in_batch(&b));
            assert!(!let_go_in_batch(&b), "released once");
            assert_eq!(b.counts(), (1, 1));
            assert!(hold_in_batch(&b, || b.take()));
            assert_eq!(b.counts(), (2, 1));
        });
        assert_eq!(a.counts(), (1, 1));
        assert_eq!(b.counts(), (2, 2));
        // The next batch takes again.
        batch_wakes(|| assert!(hold_in_batch(&a, || a.take())));
        assert_eq!(a.counts(), (2, 2));
    }

    #[test]
    fn an_unwinding_batch_releases_its_holds() {
        let a = Arc::new(Counted::default());
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            batch_wakes(|| {
                assert!(hold_in_batch(&a, || a.take()));
                panic!("a handler panicked");
            })
        }));
        assert!(r.is_err());
        assert_eq!(a.counts(), (1, 1));
    }

    /// A read lock held by a batch: a writer waits for the batch's end
    /// (or for the holder to let go), and never sees a reader inside.
    #[test]
    fn a_writer_waits_for_the_batch_that_holds_the_read_side() {
        struct Table(parking_lot::RwLock<u64>);
        impl BatchHold for Table {
            fn release(&self) {
                // SAFETY: called once per `read()` forgotten in `take` below
                // (the batch registers each take once and releases it once).
                unsafe { self.0.force_unlock_read() };
            }
        }
        let t = Arc::new(Table(parking_lot::RwLock::new(0)));
        let (tx, rx) = std::sync::mpsc::channel();
        let writer = {
            let t = t.clone();
            std::thread::spawn(move || {
                rx.recv().unwrap();
                *t.0.write() += 1;
            })
        };
        batch_wakes(|| {
            assert!(hold_in_batch(&t, || std::mem::forget(t.0.read())));
            tx.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(50));
            // SAFETY: the batch holds the read lock (just above).
            let seen = unsafe { *t.0.data_ptr() };
            assert_eq!(seen, 0, "written under a batch's hold");
            assert!(!writer.is_finished(), "the writer did not wait");
        });
        writer.join().unwrap();
        assert_eq!(*t.0.read(), 1);
        assert!(!t.0.is_locked());
    }

    #[test]
    fn a_batch_hands_its_tasks_over_when_it_ends_and_each_runs_once() {
        let (pool, handles) = Pool::start(PoolConfig {
            threads: 2,
            throughput: 64,
            name: "defer-test".into(),
            shared_queue: false,
            pin: None,
            metrics: false,
            blocking: false,
            watch: false,
        });
        assert!(
            wait(Duration::from_secs(10), || pool.idle.sleeping() == 2),
            "the workers did not park"
        );
        // A static: a task must not outlive what it points to (a leaked
        // box would be reported by the ASan step's leak check).
        static RUNS: Runs = Runs(AtomicUsize::new(0));
        let runs: &'static Runs = &RUNS;
        const TASKS: usize = 1000;
        batch_wakes(|| {
            batch_wakes(|| {
                for _ in 0..TASKS / 2 {
                    pool.schedule(Task::new(runs));
                }
            });
            // The inner batch's end hands nothing over: the outer one is open.
            for _ in 0..TASKS / 2 {
                pool.schedule(Task::new(runs));
            }
            std::thread::sleep(Duration::from_millis(50));
            assert_eq!(
                pool.idle.sleeping(),
                2,
                "a worker was woken inside the batch"
            );
            assert!(
                pool.injector.is_empty(),
                "a task was pushed inside the batch"
            );
            assert_eq!(runs.0.load(Ordering::SeqCst), 0);
        });
        assert!(
            wait(Duration::from_secs(10), || runs.0.load(Ordering::SeqCst)
                == TASKS),
            "{} of {TASKS} tasks ran after the batch",
            runs.0.load(Ordering::SeqCst)
        );
        // No batch open: a task wakes a worker at once.
        assert!(wait(Duration::from_secs(10), || pool.idle.sleeping() == 2));
        pool.schedule(Task::new(runs));
        assert!(wait(Duration::from_secs(10), || runs
            .0
            .load(Ordering::SeqCst)
            == TASKS + 1));
        pool.begin_shutdown();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(runs.0.load(Ordering::SeqCst), TASKS + 1, "a task ran twice");
    }
}
