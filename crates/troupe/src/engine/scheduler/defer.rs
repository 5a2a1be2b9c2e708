//! Deferred wake-ups: a thread outside the pool that schedules many actors
//! in one burst (a node's inbox handling one batch of remote tells) wakes
//! each pool's workers once, when the burst ends, instead of once per
//! actor it finds idle.
//!
//! Protocol: while a [`WakeBatch`] lives on a thread, a task that thread
//! schedules from outside the pool is pushed to the pool's injector as
//! always, but the pool's [`notify`](super::Pool::notify) waits: the pool
//! is recorded in the thread's batch (at most [`POOLS`] pools; beyond
//! them, and where the thread's storage is gone, it is notified at once).
//! When the outermost batch of the thread ends (the guard drops, panics
//! included), every recorded pool is notified once.
//!
//! Why no wake-up is lost: every deferred push is followed, on the same
//! thread, by a `notify` of its pool: the same push-then-notify pair as
//! without a batch, only later. The idle protocol (`park.rs`) needs
//! nothing more: a worker that parked before the notify is woken by it,
//! one that had not yet parked re-checks the queues after registering and
//! finds the tasks; a woken worker that finds work and was the last one
//! searching wakes another (`Idle::found_work`), so a burst of tasks
//! spreads over the workers from one wake-up. No atomic is added: the
//! batch is the thread's own state.
//!
//! The cost: tasks of a batch wait for its end (a busy worker, or one that
//! is searching, may take them before). A batch must therefore not block:
//! a thread that waits inside one for an actor it scheduled in it may wait
//! for ever.

use std::cell::RefCell;
use std::sync::Arc;

use super::{Pool, Task};

/// Most pools one batch remembers; a task for another is notified at once.
const POOLS: usize = 4;

#[derive(Default)]
struct Batch {
    /// Nested batches on this thread; 0: none.
    depth: u32,
    /// Pools with a deferred notify.
    pools: [Option<Arc<Pool>>; POOLS],
}

thread_local! {
    static BATCH: RefCell<Batch> = RefCell::default();
}

impl Pool {
    /// Pushes to the global queue; wakes a worker now, or when this
    /// thread's batch ends if one is open.
    pub(crate) fn inject_batched(self: &Arc<Self>, task: Task) {
        self.injector.push(task);
        if !defer(self) {
            self.notify();
        }
    }
}

/// Records `pool`'s notify in this thread's batch; `false` if there is no
/// batch (or no room): the caller notifies now.
fn defer(pool: &Arc<Pool>) -> bool {
    BATCH
        .try_with(|b| {
            let Ok(mut b) = b.try_borrow_mut() else {
                return false;
            };
            if b.depth == 0 {
                return false;
            }
            let mut free = None;
            for (i, slot) in b.pools.iter().enumerate() {
                match slot {
                    Some(p) if Arc::ptr_eq(p, pool) => return true,
                    None if free.is_none() => free = Some(i),
                    _ => {}
                }
            }
            match free {
                Some(i) => {
                    b.pools[i] = Some(pool.clone());
                    true
                }
                None => false,
            }
        })
        .unwrap_or(false)
}

/// Defers the wake-ups of the actors this thread schedules until the
/// batch is dropped: one wake-up per pool for the whole batch instead of
/// one per actor found idle. For a thread outside the pools that hands
/// out many messages in a burst (a remote node's inbox handling one batch
/// of tells). Batches nest; the outermost one's end wakes.
///
/// The thread must not wait, inside a batch, for an actor it told in the
/// batch: that actor may not run before the batch ends.
///
/// ```
/// use troupe::{Actor, ActorSystem, Context, WakeBatch};
/// struct Count;
/// impl Actor for Count {
///     type Msg = u32;
///     fn handle(&mut self, _: u32, _: &mut Context<'_, Self>) {}
/// }
/// let system = ActorSystem::new();
/// let actors: Vec<_> = (0..8).map(|_| system.spawn(Count)).collect();
/// {
///     let _batch = WakeBatch::new();
///     for a in &actors {
///         a.tell(1).unwrap();
///     }
/// } // the workers are woken here
/// ```
#[must_use = "the batch ends (and wakes) when dropped"]
pub struct WakeBatch {
    /// Not `Send`: the batch is the thread's.
    _thread: std::marker::PhantomData<*const ()>,
}

impl WakeBatch {
    /// Opens a batch on this thread.
    pub fn new() -> Self {
        let _ = BATCH.try_with(|b| {
            if let Ok(mut b) = b.try_borrow_mut() {
                b.depth += 1;
            }
        });
        WakeBatch {
            _thread: std::marker::PhantomData,
        }
    }
}

impl Default for WakeBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for WakeBatch {
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
                std::mem::take(&mut b.pools)
            })
            .unwrap_or_default();
        // Outside the borrow: a notify never schedules, but stays clear of it.
        for pool in pools.into_iter().flatten() {
            pool.notify();
        }
    }
}

impl std::fmt::Debug for WakeBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WakeBatch")
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

    #[test]
    fn a_batch_wakes_the_parked_workers_once_it_ends_and_every_task_runs() {
        let (pool, handles) = Pool::start(PoolConfig {
            threads: 2,
            throughput: 64,
            name: "defer-test".into(),
            shared_queue: false,
            pin: None,
            metrics: false,
            blocking: false,
        });
        assert!(
            wait(Duration::from_secs(10), || pool.idle.sleeping() == 2),
            "the workers did not park"
        );
        // Leaked: a task must not outlive what it points to.
        let runs: &'static Runs = Box::leak(Box::new(Runs(AtomicUsize::new(0))));
        const TASKS: usize = 1000;
        {
            let _outer = WakeBatch::new();
            {
                let _inner = WakeBatch::new();
                for _ in 0..TASKS / 2 {
                    pool.schedule(Task::new(runs));
                }
            }
            // The inner batch's end wakes nobody: the outer one is open.
            for _ in 0..TASKS / 2 {
                pool.schedule(Task::new(runs));
            }
            std::thread::sleep(Duration::from_millis(50));
            assert_eq!(
                pool.idle.sleeping(),
                2,
                "a worker was woken inside the batch"
            );
            assert_eq!(runs.0.load(Ordering::SeqCst), 0);
        }
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
