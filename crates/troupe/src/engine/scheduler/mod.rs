//! The work-stealing scheduler that runs actors.
//!
//! A *task* is an actor whose `SCHEDULED` bit is set: exactly one task exists
//! per scheduled actor, and whoever holds it is the only one allowed to run
//! the actor (see `cell.rs`). The pool moves tasks between:
//! * each worker's **LIFO slot** ([`worker`]): the actor most recently
//!   scheduled from that worker, run next and never stolen, so a conversation
//!   between two actors stays on one warm core;
//! * each worker's **local deque** (crossbeam-deque, LIFO for the owner, FIFO
//!   for thieves): depth-first for the owner, oldest-first for thieves;
//! * the **global injector**: tasks scheduled from outside the pool and actors
//!   that used up their turn's message budget (`throughput`), which go to the
//!   back of the line so a flooded actor cannot starve the others.
//!
//! Idle workers search (injector, then stealing), then park ([`park`]). A
//! thread outside the pool that schedules many actors in a burst may hand
//! them over, and wake the workers, once at its end ([`defer`]).
//!
//! A pool in **shared-queue** mode (`PoolConfig::shared_queue`) skips the LIFO
//! slot and the local deques: every task goes through the injector and every
//! worker pulls from it: the classic thread pool, which work stealing is
//! measured against (also used for blocking/IO pools, where a
//! task parked in a blocked worker's LIFO slot would wait for the blocking
//! call). A pool may pin each worker to a CPU (`PoolConfig::pin`).

pub(crate) mod defer;
pub(crate) mod park;
pub(crate) mod stats;
#[cfg(feature = "async")]
pub(crate) mod tokio_driver;
pub(crate) mod watch;
pub(crate) mod worker;

use crate::engine::sync::{self, Event};
use crossbeam_deque::{Injector, Stealer, Worker as Deque};
use crossbeam_utils::sync::Parker;
use park::Unpark;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

pub(crate) use worker::{
    current_actor, is_pool_thread, is_worker_thread, may_block_here, tell_to_busy, WorkerLocal,
};

/// A scheduled actor: a type-erased, non-owning pointer to its cell. Running
/// it consumes the task; the actor either re-schedules itself (a new task) or
/// releases its `SCHEDULED` bit.
///
/// Why a raw pointer is enough (and saves two atomic RMWs per message hop
/// over an `Arc`): a task exists only while its creator holds the actor's
/// `SCHEDULED` bit, and the system's actor table keeps a strong reference to
/// the cell until the actor is finalized, which only the task holder does,
/// consuming the task. So the cell outlives every task that points to it.
pub(crate) struct Task(NonNull<dyn Runnable>);

// SAFETY: a task is handed from thread to thread, with exclusive rights to run
// its actor; the cell it points to is `Send + Sync` (`Runnable` requires it).
unsafe impl Send for Task {}

impl Task {
    /// A task for `actor`. The caller must hold (or have just taken) the
    /// actor's `SCHEDULED` bit, which this task now carries.
    #[inline]
    pub(crate) fn new(actor: &(dyn Runnable + 'static)) -> Task {
        Task(NonNull::from(actor))
    }

    /// Runs one turn of the actor. If the actor finalized, its table entry
    /// comes back and is dropped here, after the cell is no longer borrowed.
    #[inline]
    pub(crate) fn run(self, worker: &WorkerLocal) {
        // SAFETY: see the type's docs: the cell is alive while the task exists,
        // and this task is the only one for the actor.
        let retired = unsafe { self.0.as_ref() }.run(worker);
        if let Some(entry) = retired {
            entry.retired();
        }
    }
}

/// What the scheduler needs from an actor.
pub(crate) trait Runnable: Send + Sync + 'static {
    /// Runs one turn: at most `throughput` messages. Returns the actor's
    /// table entry if the actor finalized during the turn; the caller drops it
    /// once it no longer borrows the actor (it may be the last reference).
    fn run(&self, worker: &WorkerLocal) -> Option<Arc<dyn Runnable>>;

    /// Takes the entry `run` returned, once the actor is no longer
    /// borrowed. By default it is dropped; an actor may keep its memory
    /// for reuse instead.
    fn retired(self: Arc<Self>) {
        drop(self);
    }
}

static NEXT_POOL_ID: AtomicUsize = AtomicUsize::new(1);

/// How to build a pool.
#[derive(Clone, Debug)]
pub(crate) struct PoolConfig {
    pub(crate) threads: usize,
    pub(crate) throughput: usize,
    pub(crate) name: String,
    /// All tasks through the injector; no LIFO slot, no local deques.
    pub(crate) shared_queue: bool,
    /// CPU id for each worker (`pin[i % pin.len()]`), if pinned.
    pub(crate) pin: Option<Vec<usize>>,
    /// Count tasks, steals, parks and idle time per worker (`stats.rs`).
    pub(crate) metrics: bool,
    /// Its threads may block (a blocking pool, a dedicated thread): a
    /// blocking wait there stalls only the actors that chose it.
    pub(crate) blocking: bool,
    /// Each worker publishes the turn it runs (`watch.rs`): for stall and
    /// ask-cycle detection.
    pub(crate) watch: bool,
}

/// A set of worker threads with their queues.
pub(crate) struct Pool {
    pub(crate) id: usize,
    pub(crate) injector: Injector<Task>,
    pub(crate) stealers: Box<[Stealer<Task>]>,
    pub(crate) unparkers: Box<[Unpark]>,
    pub(crate) idle: park::Idle,
    pub(crate) shutdown: AtomicBool,
    pub(crate) throughput: usize,
    pub(crate) shared_queue: bool,
    /// The workers' thread name prefix.
    pub(crate) name: String,
    /// Per-worker counters; written only when `metrics` is on.
    pub(crate) stats: stats::PoolStats,
    /// See [`PoolConfig::blocking`].
    pub(crate) blocking: bool,
    /// One turn slot per worker if the pool is watched (`watch.rs`).
    pub(crate) watch: Option<watch::TurnSlots>,
}

impl Pool {
    /// The pool and its workers' deques and parkers, no thread started.
    fn build(config: &PoolConfig) -> (Arc<Pool>, Vec<Deque<Task>>, Vec<Parker>) {
        Self::build_waking(config, |p| Unpark::Thread(p.unparker().clone()))
    }

    /// As `build`, each worker woken through `wake(its parker)`.
    fn build_waking(
        config: &PoolConfig,
        wake: impl Fn(&Parker) -> Unpark,
    ) -> (Arc<Pool>, Vec<Deque<Task>>, Vec<Parker>) {
        let threads = config.threads.max(1);
        let deques: Vec<Deque<Task>> = (0..threads).map(|_| Deque::new_lifo()).collect();
        let parkers: Vec<Parker> = (0..threads).map(|_| Parker::new()).collect();
        let pool = Arc::new(Pool {
            id: NEXT_POOL_ID.fetch_add(1, Ordering::Relaxed),
            injector: Injector::new(),
            stealers: deques.iter().map(|d| d.stealer()).collect(),
            unparkers: parkers.iter().map(wake).collect(),
            idle: park::Idle::new(threads),
            shutdown: AtomicBool::new(false),
            throughput: config.throughput.max(1),
            shared_queue: config.shared_queue,
            name: config.name.clone(),
            stats: stats::PoolStats::new(threads, config.metrics),
            blocking: config.blocking,
            watch: config.watch.then(|| watch::TurnSlots::new(threads)),
        });
        (pool, deques, parkers)
    }

    /// Starts the workers, named `{name}-{i}`.
    pub(crate) fn start(config: PoolConfig) -> (Arc<Pool>, Vec<JoinHandle<()>>) {
        let name = config.name.as_str();
        let (pool, deques, parkers) = Self::build(&config);
        let handles = deques
            .into_iter()
            .zip(parkers)
            .enumerate()
            .map(|(index, (deque, parker))| {
                let pool = pool.clone();
                let cpu = config
                    .pin
                    .as_ref()
                    .filter(|p| !p.is_empty())
                    .map(|p| p[index % p.len()]);
                std::thread::Builder::new()
                    .name(format!("{name}-{index}"))
                    .spawn(move || {
                        if let Some(cpu) = cpu {
                            if !core_affinity::set_for_current(core_affinity::CoreId { id: cpu }) {
                                tracing::warn!(cpu, "could not pin worker thread to its CPU");
                            }
                        }
                        WorkerLocal::new(pool, index, deque, parker, cpu).run()
                    })
                    .expect("failed to spawn a troupe worker thread")
            })
            .collect();
        (pool, handles)
    }

    /// A pool with one worker and no thread: the returned `WorkerLocal` is
    /// driven by hand ([`WorkerLocal::run_one`]) on the thread that owns it,
    /// one task at a time, in a deterministic order (the test kit).
    pub(crate) fn manual(mut config: PoolConfig) -> (Arc<Pool>, WorkerLocal) {
        config.threads = 1;
        config.shared_queue = false;
        let (pool, mut deques, mut parkers) = Self::build(&config);
        let (deque, parker) = (deques.remove(0), parkers.remove(0));
        let worker = WorkerLocal::new(pool.clone(), 0, deque, parker, None);
        (pool, worker)
    }

    /// Number of worker threads.
    pub(crate) fn threads(&self) -> usize {
        self.stealers.len()
    }

    /// Schedules a task from any thread: onto the current worker's LIFO slot
    /// when called from one of this pool's workers, else onto the injector
    /// (kept until the end of the thread's batch, [`defer::batch_wakes`],
    /// if one is open).
    #[inline]
    pub(crate) fn schedule(self: &Arc<Self>, task: Task) {
        if self.shared_queue {
            return self.inject_batched(task);
        }
        match worker::current_for(self.id) {
            Some(w) => w.schedule_local(task),
            None => self.inject_batched(task),
        }
    }

    /// Pushes to the global queue and wakes a worker if needed.
    pub(crate) fn inject(&self, task: Task) {
        sync::count(Event::InjectorPush);
        self.injector.push(task);
        self.notify();
    }

    /// Called after a stealable push: wake a parked worker unless one is
    /// already searching (it will find the task).
    #[inline]
    pub(crate) fn notify(&self) {
        sync::count(Event::Notify);
        self.idle.notify_one(&self.unparkers);
    }

    /// Whether any queue visible to a thief holds a task.
    pub(crate) fn has_stealable_work(&self) -> bool {
        !self.injector.is_empty() || self.stealers.iter().any(|s| !s.is_empty())
    }

    /// Whether `begin_shutdown` was called.
    pub(crate) fn is_shut_down(&self) -> bool {
        self.shutdown.load(Ordering::Acquire)
    }

    /// Tells the workers to exit once idle, and wakes them all.
    pub(crate) fn begin_shutdown(&self) {
        self.shutdown.store(true, Ordering::SeqCst);
        for u in self.unparkers.iter() {
            u.unpark();
        }
    }
}
