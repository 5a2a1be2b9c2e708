//! A pool whose one worker is a task on a tokio runtime (feature `async`):
//! the engine of a tokio dispatcher
//! ([`SystemHandle::tokio_dispatcher`](crate::SystemHandle::tokio_dispatcher)).
//!
//! The pool is a one-worker pool with no thread, like [`Pool::manual`]; its
//! `WorkerLocal` is owned by a *driver task* spawned on the runtime, which
//! loops:
//! 1. run up to [`BATCH`] tasks ([`WorkerLocal::run_one`]), then
//!    `tokio::task::yield_now().await`, so the runtime's other tasks (a
//!    connection's I/O) get their turn between batches;
//! 2. when no task is left: register as a sleeper (`park::Idle`, the same
//!    Dekker pair as a worker thread's), re-check every queue, and await
//!    the pool's `Notify`.
//!
//! Wake-ups: a push from outside the driver (`Pool::inject`, a deque push)
//! calls `Pool::notify`, which wakes a registered sleeper through its
//! [`Unpark`](super::park::Unpark): here `Notify::notify_one`. Either the
//! pusher sees the sleeper or the sleeper's re-check sees the task (the
//! Dekker pair); a wake-up sent before the driver awaits is kept as the
//! `Notify`'s permit, so it is never lost. While the driver runs tasks it
//! is not registered, and a push costs a fence and a load, as on a thread.
//!
//! Handlers on it run on the runtime's thread, inside its context (tokio
//! timers, I/O and `tokio::spawn` work there; [`on_driver`] says so to the
//! async actors' poll). They must not block: `may_block_here` says no, as on
//! a CPU pool.
//!
//! Shutdown: `Pool::begin_shutdown` sets the flag and wakes the driver; it
//! returns once no task is left. If the runtime drops the driver task
//! first (the runtime shut down), the driver's drop marks the pool
//! *orphaned* and leaves its worker in [`DriverShared`]; the system's
//! shutdown then runs the orphan's remaining turns on its own thread
//! ([`Pool::drive_orphan`]), so every actor still drains and nothing waits
//! for a runtime that is gone.
//!
//! Who writes what: the driver task alone uses the worker until it ends or
//! is dropped; after an orphaning, only a caller of `drive_orphan` does,
//! under the `orphan` lock.

use super::park::Unpark;
use super::{Pool, PoolConfig, WorkerLocal};
use parking_lot::Mutex;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Tasks run between two yields to the runtime. A turn handles up to the
/// pool's `throughput` messages, so a batch is bounded too.
pub(crate) const BATCH: usize = 32;

thread_local! {
    /// Set while a driver runs a batch on this thread.
    static DRIVING: Cell<bool> = const { Cell::new(false) };
}

/// Whether the calling thread is running a tokio dispatcher's batch: its
/// handlers are already inside their runtime's context.
#[inline]
pub(crate) fn on_driver() -> bool {
    DRIVING.with(|d| d.get())
}

/// What the pool and its driver task share.
pub(crate) struct DriverShared {
    /// The driver awaits it when idle; `Unpark::Task` notifies it.
    notify: tokio::sync::Notify,
    /// Set when the driver task was dropped before the pool shut down.
    orphaned: AtomicBool,
    /// The worker an orphaned driver left behind.
    orphan: Mutex<Option<WorkerLocal>>,
}

impl DriverShared {
    /// Wakes the driver; kept as a permit if it is not waiting yet.
    #[inline]
    pub(crate) fn wake(&self) {
        self.notify.notify_one();
    }
}

impl Pool {
    /// A one-worker pool driven by a task spawned on `runtime`.
    pub(crate) fn start_on_tokio(
        config: PoolConfig,
        runtime: &tokio::runtime::Handle,
    ) -> Arc<Pool> {
        let (pool, worker, shared) = Pool::build_tokio(config);
        let driver = Driver {
            worker: Some(worker),
            pool: pool.clone(),
            shared,
            finished: false,
        };
        // On a runtime that is shut down, the task is dropped at once: the
        // pool is orphaned from the start and the shutdown drains it.
        drop(runtime.spawn(driver.run()));
        pool
    }

    /// The pool, its one worker and what they share, no task spawned.
    fn build_tokio(mut config: PoolConfig) -> (Arc<Pool>, WorkerLocal, Arc<DriverShared>) {
        config.threads = 1;
        config.shared_queue = false;
        config.blocking = false;
        config.pin = None;
        let shared = Arc::new(DriverShared {
            notify: tokio::sync::Notify::new(),
            orphaned: AtomicBool::new(false),
            orphan: Mutex::new(None),
        });
        let (pool, mut deques, mut parkers) =
            Pool::build_waking(&config, |_| Unpark::Task(shared.clone()));
        let worker = WorkerLocal::new(pool.clone(), 0, deques.remove(0), parkers.remove(0), None);
        (pool, worker, shared)
    }

    /// The driver's shared state, if this is a tokio dispatcher's pool.
    pub(crate) fn driver(&self) -> Option<&Arc<DriverShared>> {
        match self.unparkers.first() {
            Some(Unpark::Task(d)) => Some(d),
            _ => None,
        }
    }

    /// Whether this is a tokio dispatcher's pool whose driver task is gone
    /// (its runtime dropped it).
    pub(crate) fn is_orphaned(&self) -> bool {
        self.driver()
            .is_some_and(|d| d.orphaned.load(Ordering::Acquire))
    }

    /// Runs an orphaned pool's queued turns on the calling thread until
    /// none is left; the number run. 0 for any other pool.
    pub(crate) fn drive_orphan(&self) -> usize {
        let Some(d) = self.driver() else { return 0 };
        let slot = d.orphan.lock();
        let Some(worker) = slot.as_ref() else {
            return 0;
        };
        let mut ran = 0;
        while worker.run_one() {
            ran += 1;
        }
        ran
    }

    /// Drops an orphan's worker (it holds the pool: a cycle otherwise).
    pub(crate) fn release_orphan(&self) {
        if let Some(d) = self.driver() {
            let worker = d.orphan.lock().take();
            drop(worker);
        }
    }
}

/// The driver task's state: owns the pool's one worker.
struct Driver {
    worker: Option<WorkerLocal>,
    pool: Arc<Pool>,
    shared: Arc<DriverShared>,
    /// Set when the loop ended by shutdown (not by a drop mid-way).
    finished: bool,
}

impl Driver {
    async fn run(mut self) {
        loop {
            if self.run_batch() == BATCH {
                tokio::task::yield_now().await;
                continue;
            }
            if self.pool.is_shut_down() {
                break;
            }
            sleep(&self.pool, &self.shared).await;
        }
        self.finished = true;
    }

    /// Runs up to `BATCH` tasks; how many ran. Synchronous: the worker is
    /// not borrowed across an await (it is not `Sync`).
    fn run_batch(&self) -> usize {
        let Some(worker) = self.worker.as_ref() else {
            return 0;
        };
        DRIVING.with(|d| d.set(true));
        struct Clear;
        impl Drop for Clear {
            fn drop(&mut self) {
                DRIVING.with(|d| d.set(false));
            }
        }
        let _clear = Clear;
        let mut ran = 0;
        while ran < BATCH && worker.run_one() {
            ran += 1;
        }
        ran
    }
}

/// Nothing queued: sleep until a push or the shutdown wakes the driver.
/// (A free function: the driver itself is not `Sync`, so it is not
/// borrowed across the await.)
async fn sleep(pool: &Pool, shared: &DriverShared) {
    if register(pool) {
        shared.notify.notified().await;
    }
    unregister(pool);
}

/// Registers the driver as a sleeper; whether it may wait (nothing queued,
/// no shutdown). The Dekker pair's re-check (`park.rs`): a push before it
/// is seen here; a push after it sees the driver registered and wakes it.
fn register(pool: &Pool) -> bool {
    let idle = &pool.idle;
    idle.start_searching();
    idle.prepare_sleep(0, true);
    !pool.has_stealable_work() && !pool.shutdown.load(Ordering::SeqCst)
}

/// Back to running. Registered as searching either way (`cancel_sleep`).
fn unregister(pool: &Pool) {
    if !pool.idle.cancel_sleep(0) {
        pool.idle.start_searching();
    }
    pool.idle.found_work(&pool.unparkers);
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::{Runnable, Task};
    use super::*;
    use std::time::Duration;

    struct Nothing;
    impl Runnable for Nothing {
        fn run(&self, _: &WorkerLocal) -> Option<Arc<dyn Runnable>> {
            None
        }
    }

    fn pool() -> (Arc<Pool>, WorkerLocal, Arc<DriverShared>) {
        Pool::build_tokio(PoolConfig {
            threads: 1,
            throughput: 8,
            name: "test".into(),
            shared_queue: false,
            pin: None,
            metrics: false,
            blocking: false,
            watch: false,
        })
    }

    fn task() -> Task {
        Task::new(Box::leak(Box::new(Nothing)))
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime")
    }

    /// A push between the re-check and the await: its wake-up is kept as
    /// the `Notify`'s permit, so the await returns.
    #[test]
    fn a_wake_up_before_the_await_is_kept() {
        let (pool, _worker, shared) = pool();
        assert!(register(&pool), "nothing queued: may wait");
        pool.inject(task());
        let woken = runtime().block_on(async {
            tokio::time::timeout(Duration::from_secs(5), shared.notify.notified()).await
        });
        assert!(woken.is_ok(), "the wake-up was lost");
        unregister(&pool);
    }

    /// A push before the registration: the re-check sees it.
    #[test]
    fn a_push_before_the_registration_is_seen() {
        let (pool, worker, _shared) = pool();
        pool.inject(task());
        assert!(!register(&pool), "the re-check missed a queued task");
        unregister(&pool);
        assert!(worker.run_one(), "the task runs");
        assert!(register(&pool), "nothing left");
    }

    /// While the driver runs (not registered), a push wakes nobody.
    #[test]
    fn a_running_driver_is_not_notified() {
        let (pool, _worker, shared) = pool();
        pool.inject(task());
        let woken = runtime().block_on(async {
            tokio::time::timeout(Duration::from_millis(50), shared.notify.notified()).await
        });
        assert!(woken.is_err(), "a busy driver was notified");
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        if self.finished || self.pool.is_shut_down() {
            // Done, or dropped with a runtime that went after the system.
            return;
        }
        // The runtime dropped us before the pool shut down: leave the
        // worker to the system's shutdown (`Pool::drive_orphan`).
        *self.shared.orphan.lock() = self.worker.take();
        self.shared.orphaned.store(true, Ordering::Release);
        tracing::warn!(
            dispatcher = %self.pool.name,
            "a tokio dispatcher's runtime dropped its driver task: its actors \
             run no more until the system's shutdown drains them"
        );
    }
}
