//! Dispatchers: where and how an actor's handlers run, chosen per actor at
//! spawn time ([`SpawnOptions::dispatcher`](crate::SpawnOptions::dispatcher)).
//!
//! | kind | what it is | pick it for |
//! |---|---|---|
//! | default work-stealing pool | per-worker LIFO slot + deque, stealing | almost everything |
//! | [`work_stealing_pool`](crate::SystemHandle::work_stealing_pool) | another, independent one | isolating a subsystem's CPU share |
//! | [`shared_queue_pool`](crate::SystemHandle::shared_queue_pool) | all workers pull one queue | the classic thread pool, the baseline work stealing is measured against; strict global FIFO |
//! | [`SpawnOptions::dedicated_thread`](crate::SpawnOptions::dedicated_thread) | one OS thread for one actor, for its whole life | SObjectizer's active_obj: latency-critical or thread-bound actors |
//! | [`one_thread`](crate::SystemHandle::one_thread) | one OS thread shared by a group | SObjectizer's one_thread / active_group |
//! | [`pinned_pool`](crate::SystemHandle::pinned_pool) | each worker pinned to a CPU | cache-sensitive actors (an affinity executor) |
//! | [`blocking_pool`](crate::SystemHandle::blocking_pool) | a shared-queue pool sized for waiting | handlers that block on files, sockets, sleeps |
//! | [`tokio_dispatcher`](crate::SystemHandle::tokio_dispatcher) (feature `async`) | one task on a tokio runtime runs the group's turns, on the runtime's thread | actors that talk to that runtime's I/O (a store's connection): no thread hop per call and reply; handlers must not block |
//! | [`SharedActor`](crate::parallel::SharedActor) | thread-safe handlers run in parallel | SObjectizer's adv_thread_pool |
//!
//! Every kind keeps the core guarantees: FIFO per sender/receiver pair, no
//! message lost or duplicated, a panic stops only its actor, and shutdown
//! drains every actor before the dispatchers' threads are joined (a tokio
//! dispatcher's driver task is told to end instead; if its runtime is
//! already gone, the shutdown runs the remaining turns itself).
//!
//! Sizing an I/O pool: [`io_pool_size`] is Goetz's formula (Java Concurrency in Practice):
//! `threads = cores x target utilization x (1 + wait time / compute time)`.

use crate::engine::scheduler::Pool;
use std::fmt;
use std::sync::Arc;

/// What kind of dispatcher a [`Dispatcher`] is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DispatcherKind {
    /// Work-stealing pool (the default kind).
    WorkStealing,
    /// One queue shared by all workers.
    SharedQueue,
    /// One thread shared by a group of actors.
    OneThread,
    /// Work-stealing workers pinned to these CPUs.
    Pinned(Vec<usize>),
    /// Shared-queue pool for blocking handlers.
    Blocking,
    /// One driver task on a tokio runtime (feature `async`).
    Tokio,
}

/// A handle to a pool of worker threads that actors can be spawned onto.
/// Cheap to clone; the system joins its threads at shutdown.
///
/// ```
/// use troupe::{Actor, ActorSystem, Context, SpawnOptions};
/// struct Io;
/// impl Actor for Io {
///     type Msg = std::time::Duration;
///     fn handle(&mut self, d: Self::Msg, _ctx: &mut Context<'_, Self>) {
///         std::thread::sleep(d); // blocks a blocking-pool thread, not a CPU worker
///     }
/// }
/// let system = ActorSystem::builder().threads(2).build();
/// let io = system.blocking_pool("io", troupe::dispatcher::io_pool_size(2, 0.5, 10.0, 1.0));
/// let actor = system.spawn_with(Io, SpawnOptions::new().dispatcher(&io));
/// actor.tell(std::time::Duration::from_millis(1)).unwrap();
/// ```
#[derive(Clone)]
pub struct Dispatcher {
    pub(crate) pool: Arc<Pool>,
    kind: DispatcherKind,
    name: Arc<str>,
}

impl Dispatcher {
    pub(crate) fn new(pool: Arc<Pool>, kind: DispatcherKind, name: &str) -> Self {
        Dispatcher {
            pool,
            kind,
            name: name.into(),
        }
    }

    /// Its kind.
    pub fn kind(&self) -> &DispatcherKind {
        &self.kind
    }

    /// Its name (also the prefix of its threads' names).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its number of worker threads (1 for a tokio dispatcher: its driver
    /// task, on a thread of the runtime's).
    pub fn threads(&self) -> usize {
        self.pool.threads()
    }
}

impl fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Dispatcher({}, {:?}, {} threads)",
            self.name,
            self.kind,
            self.threads()
        )
    }
}

/// Threads for a pool whose tasks wait as well as compute (after
/// Goetz): `cores x target_utilization x (1 + wait_time / compute_time)`,
/// rounded up, at least 1. `wait_time` and `compute_time` are in any one unit.
///
/// ```
/// // The seed's examples: 32 hardware threads at 25% utilization.
/// assert_eq!(troupe::dispatcher::io_pool_size(32, 0.25, 1.0, 10.0), 9);  // CPU-bound
/// assert_eq!(troupe::dispatcher::io_pool_size(32, 0.25, 10.0, 1.0), 88); // I/O-bound
/// ```
pub fn io_pool_size(
    cores: usize,
    target_utilization: f64,
    wait_time: f64,
    compute_time: f64,
) -> usize {
    let ratio = if compute_time > 0.0 {
        wait_time / compute_time
    } else {
        0.0
    };
    let n = cores as f64 * target_utilization.clamp(0.0, 1.0) * (1.0 + ratio.max(0.0));
    // Round up, tolerating float noise (8.8 -> 9, 88.000001 -> 88).
    ((n - 1e-9).ceil() as usize).max(1)
}

/// The CPU the calling thread's worker is pinned to: `Some` only inside a
/// handler running on a [`pinned_pool`](crate::SystemHandle::pinned_pool).
pub fn current_worker_cpu() -> Option<usize> {
    crate::engine::scheduler::worker::current_pinned_cpu()
}
