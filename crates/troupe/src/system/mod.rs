//! The actor system: its builder, the handle actors and plain code spawn
//! with, the table of live actors (`table`), and shutdown (`shutdown`).
//!
//! This layer sits on the actor core: it implements the core's
//! `runtime::Host` hook (enrol and retire actors, start pools) and owns
//! what only a whole system has: the worker threads, the extra pools,
//! the live count that shutdown waits on, and the shutdown report.

mod actor_table;
mod shutdown;
#[cfg(feature = "async")]
mod tokio_dispatcher;
#[cfg(feature = "async")]
pub(crate) mod tokio_runtime;
pub(crate) mod watchdog;

pub use crate::actor::runtime::SystemHandle;
pub use shutdown::ShutdownReport;
pub use watchdog::{RunningHandler, Stall, Stalls, WorkerView, RECENT_STALLS};

use crate::actor::cell::ActorCell;
use crate::actor::lifecycle::Stoppable;
use crate::actor::runtime::{Admission, Enrolled, Host, Retired, Runtime};
use crate::actor::runtime_ref::{Holders, RuntimeRef};
use crate::actor::{Actor, ActorRef, SpawnOptions};
use crate::engine::deadline;
use crate::engine::dispatcher::{Dispatcher, DispatcherKind};
use crate::engine::mailbox::MailboxConfig;
use crate::engine::scheduler::{Pool, PoolConfig, WorkerLocal};
use actor_table::ActorTable;
use parking_lot::{Condvar, Mutex};
use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// A pool and its worker threads' handles.
type PoolThreads = (Arc<Pool>, Vec<JoinHandle<()>>);

/// What a system owns beyond the actor core's `Runtime`.
pub(crate) struct SystemInner {
    table: ActorTable,
    /// Waiting for no live actor: a shard that empties while someone waits
    /// notifies under this lock.
    live_lock: Mutex<()>,
    live_cv: Condvar,
    /// Threads in `wait_no_live`; retiring checks it after removing the
    /// actor, so an empty shard with no waiter costs no lock.
    waiting: AtomicUsize,
    /// Shutdown has begun: new actors are stopped at once.
    closing: AtomicBool,
    /// Shutdown is over: the workers are gone.
    shut_down: AtomicBool,
    workers: Mutex<Vec<JoinHandle<()>>>,
    /// Pools other than the default one (named dispatchers and dedicated
    /// threads; tokio dispatchers, with no thread): stopped and joined at
    /// shutdown.
    extra_pools: Mutex<Vec<PoolThreads>>,
    report: Mutex<Option<ShutdownReport>>,
    /// The stall watchdog, if stall detection is on (`watchdog.rs`):
    /// started once the system is assembled, stopped by the shutdown.
    watchdog: Mutex<Option<watchdog::Watchdog>>,
    #[cfg(feature = "async")]
    pub(crate) bridge: Mutex<tokio_runtime::AsyncBridge>,
}

impl Host for SystemInner {
    fn enroll(&self, actor: Arc<dyn Stoppable>) -> Enrolled {
        let (key, counted) = self.table.insert(actor);
        // Pairs with shutdown's store-then-snapshot: either the snapshot sees
        // this actor, or we see `closing` here.
        let admission = if self.shut_down.load(Ordering::SeqCst) {
            Admission::Closed
        } else if self.closing.load(Ordering::SeqCst) {
            Admission::Closing
        } else {
            Admission::Open
        };
        Enrolled {
            key,
            admission,
            counted,
        }
    }

    fn close_holders(&self) -> isize {
        self.table.close_holders()
    }

    fn retire(&self, key: u64, release_unique: bool) -> Retired {
        let (retired, wake) = self.table.remove(key, release_unique, &self.waiting);
        // Nothing of `self` is read from here on when the holder was
        // released (`ActorTable::remove`): `wake` excludes it.
        if wake {
            // Taken so a waiter between its check and its sleep is not
            // missed (it holds the lock across both).
            let _g = self.live_lock.lock();
            self.live_cv.notify_all();
        }
        retired
    }

    fn start_pool(&self, config: PoolConfig) -> Arc<Pool> {
        let (pool, handles) = Pool::start(config);
        if self.shut_down.load(Ordering::SeqCst) {
            // Too late to be joined by a shutdown: let it exit at once.
            pool.begin_shutdown();
        }
        let mut pools = self.extra_pools.lock();
        // Forget dedicated threads that have already exited.
        pools.retain(|(p, hs)| !(p.is_shut_down() && hs.iter().all(|h| h.is_finished())));
        pools.push((pool.clone(), handles));
        pool
    }

    #[cfg(feature = "async")]
    fn tokio_handle(&self) -> tokio::runtime::Handle {
        self.bridge.lock().handle()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Configures and starts an [`ActorSystem`].
///
/// ```
/// let system = troupe::ActorSystem::builder().threads(2).throughput(32).build();
/// assert_eq!(system.threads(), 2);
/// ```
#[derive(Clone, Debug)]
pub struct SystemBuilder {
    threads: usize,
    throughput: usize,
    mailbox: MailboxConfig,
    name: String,
    metrics: bool,
    sample_every: u64,
    stall: Option<Duration>,
    ask_cycles: bool,
    #[cfg(feature = "async")]
    tokio: Option<tokio::runtime::Handle>,
}

impl Default for SystemBuilder {
    fn default() -> Self {
        SystemBuilder {
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            throughput: 64,
            mailbox: MailboxConfig::Unbounded,
            name: "troupe-worker".into(),
            metrics: false,
            sample_every: crate::actor::metrics::SAMPLE_EVERY,
            stall: None,
            ask_cycles: false,
            #[cfg(feature = "async")]
            tokio: None,
        }
    }
}

impl SystemBuilder {
    /// Worker threads (default: available cores).
    ///
    /// Clamp: 0 is raised to 1 (a system needs a worker to run anything).
    ///
    /// ```
    /// let system = troupe::ActorSystem::builder().threads(0).build();
    /// assert_eq!(system.handle().threads(), 1);
    /// ```
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n.max(1);
        self
    }

    /// Most messages an actor handles per turn before others get the worker
    /// (default 64).
    ///
    /// Clamp: 0 is raised to 1 (a turn handles at least one message, or no
    /// actor would ever make progress).
    ///
    /// ```
    /// use troupe::{Actor, ActorSystem, Context, ReplyTo};
    /// use std::time::Duration;
    /// struct Echo;
    /// impl Actor for Echo {
    ///     type Msg = ReplyTo<u8>;
    ///     fn handle(&mut self, r: ReplyTo<u8>, _ctx: &mut Context<'_, Self>) {
    ///         r.reply(1);
    ///     }
    /// }
    /// let system = ActorSystem::builder().throughput(0).build();
    /// let echo = system.spawn(Echo);
    /// assert_eq!(echo.ask(|r| r, Duration::from_secs(5)), Ok(1)); // still runs
    /// ```
    pub fn throughput(mut self, n: usize) -> Self {
        self.throughput = n.max(1);
        self
    }

    /// The mailbox actors get unless their spawn options say otherwise.
    pub fn default_mailbox(mut self, mailbox: MailboxConfig) -> Self {
        self.mailbox = mailbox;
        self
    }

    /// Record metrics for every actor (unless its
    /// [`SpawnOptions::metrics`] says otherwise) and for every worker; read
    /// them with [`SystemHandle::metrics`] or serve them with
    /// `SystemHandle::serve_metrics` (feature `metrics-http`). Default off.
    ///
    /// ```
    /// let system = troupe::ActorSystem::builder().threads(1).metrics(true).build();
    /// assert_eq!(system.metrics().workers.len(), 1);
    /// ```
    pub fn metrics(mut self, on: bool) -> Self {
        self.metrics = on;
        self
    }

    /// Time one message in `n` (rounded up to a power of two; default
    /// [`SAMPLE_EVERY`](crate::observability::SAMPLE_EVERY), 1,024) for the
    /// waiting and service histograms; counts are exact whatever `n`. A
    /// smaller `n` gives more samples for a clock read (~20 ns) every `n`
    /// messages.
    pub fn metrics_sample_every(mut self, n: u64) -> Self {
        self.sample_every = n.max(1).next_power_of_two();
        self
    }

    /// Turns stall detection on: a handler that runs longer than
    /// `threshold` is reported once (a `tracing` warning, target
    /// `troupe::stall`, with the actor, its type and its message type; the
    /// count and the list in [`SystemHandle::stalls`]), and again when it
    /// returns, with how long it ran. An actor may have its own threshold
    /// ([`SpawnOptions::stall_threshold`]). A watchdog thread
    /// (`{name}-watch`) scans the workers every quarter of the shortest
    /// threshold (1 ms to 250 ms), and [`SystemHandle::workers`] shows what
    /// each worker runs. Off by default: then there is no watchdog thread,
    /// and a turn pays one test of a null pointer (see the guide's "Stall
    /// and deadlock detection").
    ///
    /// ```
    /// use std::time::Duration;
    /// let system = troupe::ActorSystem::builder()
    ///     .threads(1)
    ///     .stall_threshold(Duration::from_millis(500))
    ///     .build();
    /// assert_eq!(system.workers().len(), 1);
    /// assert_eq!(system.stalls().detected, 0);
    /// ```
    pub fn stall_threshold(mut self, threshold: Duration) -> Self {
        self.stall = Some(threshold);
        self
    }

    /// Turns ask-cycle detection on: an ask that makes actors wait on each
    /// other's replies (A waits on B, which waits on A, directly or
    /// through a chain) is reported with the cycle's members (a `tracing`
    /// error, target `troupe::ask_cycle`;
    /// [`SystemHandle::ask_cycles`]). See the guide's "Stall and deadlock
    /// detection" for what counts as waiting. Off by default (an ask then
    /// tests one field); on in the test kit, where a cycle fails the test.
    pub fn detect_ask_cycles(mut self, on: bool) -> Self {
        self.ask_cycles = on;
        self
    }

    /// Worker thread name prefix.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Run futures started with
    /// [`Context::spawn_future`](crate::Context::spawn_future) on this tokio
    /// runtime instead of one the system starts itself.
    #[cfg(feature = "async")]
    pub fn tokio_handle(mut self, handle: tokio::runtime::Handle) -> Self {
        self.tokio = Some(handle);
        self
    }

    fn pool_config(&self) -> PoolConfig {
        PoolConfig {
            threads: self.threads,
            throughput: self.throughput,
            name: self.name.clone(),
            shared_queue: false,
            pin: None,
            blocking: false,
            metrics: self.metrics,
            watch: self.stall.is_some() || self.ask_cycles,
        }
    }

    /// Starts the workers.
    pub fn build(self) -> ActorSystem {
        let (pool, workers) = Pool::start(self.pool_config());
        self.assemble(pool, workers)
    }

    /// A system whose default pool has no thread: its one worker is driven
    /// by hand, through the returned `WorkerLocal`, on the calling thread
    /// (the test kit).
    pub(crate) fn build_manual(self) -> (ActorSystem, WorkerLocal) {
        let (pool, worker) = Pool::manual(self.pool_config());
        (self.assemble(pool, Vec::new()), worker)
    }

    fn assemble(self, pool: Arc<Pool>, workers: Vec<JoinHandle<()>>) -> ActorSystem {
        let inner = SystemInner {
            table: ActorTable::new(),
            live_lock: Mutex::new(()),
            live_cv: Condvar::new(),
            waiting: AtomicUsize::new(0),
            closing: AtomicBool::new(false),
            shut_down: AtomicBool::new(false),
            workers: Mutex::new(workers),
            extra_pools: Mutex::new(Vec::new()),
            report: Mutex::new(None),
            watchdog: Mutex::new(None),
            #[cfg(feature = "async")]
            bridge: Mutex::new(tokio_runtime::AsyncBridge::new(self.tokio)),
        };
        let rt = RuntimeRef::new(Runtime {
            holders: Holders::new(),
            pool,
            dropped: AtomicU64::new(0),
            panics: AtomicU64::new(0),
            default_mailbox: self.mailbox,
            throughput: self.throughput,
            metrics: crate::actor::metrics::MetricsSet {
                default_on: self.metrics,
                sample_mask: self.sample_every - 1,
                actors: Default::default(),
                channels: Default::default(),
                windows: Default::default(),
            },
            watch: crate::actor::stall::Watching::new(self.stall, self.ask_cycles),
            host: Box::new(inner),
        });
        let handle = SystemHandle { rt };
        if let Some(threshold) = self.stall {
            let dog = watchdog::Watchdog::start(handle.clone(), &self.name, threshold);
            *handle.inner().watchdog.lock() = Some(dog);
        }
        ActorSystem { handle }
    }
}

impl SystemHandle {
    /// The system's own state.
    pub(crate) fn inner(&self) -> &SystemInner {
        self.rt
            .host
            .as_any()
            .downcast_ref()
            .expect("a system's host is its SystemInner")
    }

    /// Spawns an actor with the default options.
    pub fn spawn<A: Actor>(&self, actor: A) -> ActorRef<A> {
        self.spawn_with(actor, SpawnOptions::default())
    }

    /// Spawns an actor with options.
    pub fn spawn_with<A: Actor>(&self, actor: A, options: SpawnOptions) -> ActorRef<A> {
        ActorRef {
            cell: ActorCell::spawn(&self.rt, actor, options, None),
        }
    }

    /// Spawns an actor with options whose mailbox, when it stops, is
    /// handed to `hook` instead of dropped: every message it did not
    /// handle (it stopped itself, panicked, or was killed), in order, with
    /// why it stopped ([`Undelivered`](crate::Undelivered)). For an owner
    /// that restarts the actor and gives the next instance what the last
    /// one left (a sharding region). The hook runs once, on the worker
    /// that finalizes the actor, before its watchers and before `join`
    /// returns: keep it short (hand the messages on, do not handle them
    /// there). Costs nothing per message.
    pub fn spawn_with_undelivered<A: Actor>(
        &self,
        actor: A,
        options: SpawnOptions,
        hook: impl FnOnce(crate::Undelivered<A::Msg>) + Send + 'static,
    ) -> ActorRef<A> {
        let hook: Box<dyn FnOnce(crate::Undelivered<A::Msg>) + Send> = Box::new(hook);
        ActorRef {
            cell: ActorCell::spawn_full(&self.rt, actor, options, None, Some(hook)),
        }
    }

    /// Actors alive now.
    pub fn live_actors(&self) -> usize {
        self.inner().table.live()
    }

    /// Messages dropped undelivered so far (see [`ShutdownReport`]).
    pub fn dropped_messages(&self) -> u64 {
        self.rt.dropped.load(Ordering::Relaxed)
    }

    /// Panics caught in user code so far: handlers, `started`/`stopped`
    /// hooks, dropping an actor or an undelivered message, stop watchers.
    /// Each stopped its actor at most; none took a worker down.
    pub fn panics(&self) -> u64 {
        self.rt.panics.load(Ordering::Relaxed)
    }

    /// Worker threads.
    pub fn threads(&self) -> usize {
        self.rt.pool.threads()
    }

    /// The system's default dispatcher (its work-stealing pool).
    pub fn default_dispatcher(&self) -> Dispatcher {
        Dispatcher::new(
            self.rt.pool.clone(),
            DispatcherKind::WorkStealing,
            "default",
        )
    }

    /// A new, independent work-stealing pool of `threads` workers (0 is
    /// raised to 1).
    pub fn work_stealing_pool(&self, name: &str, threads: usize) -> Dispatcher {
        let pool = self.rt.host.start_pool(self.rt.pool_config(name, threads));
        Dispatcher::new(pool, DispatcherKind::WorkStealing, name)
    }

    /// A pool whose `threads` workers all pull from one shared queue (0 is
    /// raised to 1).
    pub fn shared_queue_pool(&self, name: &str, threads: usize) -> Dispatcher {
        let mut cfg = self.rt.pool_config(name, threads);
        cfg.shared_queue = true;
        Dispatcher::new(
            self.rt.host.start_pool(cfg),
            DispatcherKind::SharedQueue,
            name,
        )
    }

    /// One thread for a group of actors (SObjectizer's one_thread /
    /// active_group): spawn every member with this dispatcher.
    pub fn one_thread(&self, name: &str) -> Dispatcher {
        let pool = self.rt.host.start_pool(self.rt.pool_config(name, 1));
        Dispatcher::new(pool, DispatcherKind::OneThread, name)
    }

    /// A work-stealing pool with one worker pinned to each CPU in `cpus`.
    pub fn pinned_pool(&self, name: &str, cpus: &[usize]) -> Dispatcher {
        let mut cfg = self.rt.pool_config(name, cpus.len().max(1));
        cfg.pin = Some(cpus.to_vec());
        Dispatcher::new(
            self.rt.host.start_pool(cfg),
            DispatcherKind::Pinned(cpus.to_vec()),
            name,
        )
    }

    /// A pool for handlers that block (files, sockets, sleeps): shared-queue,
    /// so no task waits in a blocked worker's LIFO slot. Size it with
    /// [`io_pool_size`](crate::dispatcher::io_pool_size). `threads` of 0 is
    /// raised to 1.
    pub fn blocking_pool(&self, name: &str, threads: usize) -> Dispatcher {
        let mut cfg = self.rt.pool_config(name, threads);
        cfg.shared_queue = true;
        cfg.blocking = true;
        Dispatcher::new(self.rt.host.start_pool(cfg), DispatcherKind::Blocking, name)
    }

    /// Every pool of this system now: the default one first, then named
    /// dispatchers and dedicated threads (for the metrics layer).
    pub(crate) fn pools(&self) -> Vec<Arc<Pool>> {
        let mut all = vec![self.rt.pool.clone()];
        all.extend(
            self.inner()
                .extra_pools
                .lock()
                .iter()
                .map(|(p, _)| p.clone()),
        );
        all
    }

    /// What stall detection has reported
    /// ([`SystemBuilder::stall_threshold`]): the counts, the stalled
    /// handlers still running and the last ones that returned, as of the
    /// watchdog's last scan. Empty with stall detection off.
    pub fn stalls(&self) -> Stalls {
        self.inner()
            .watchdog
            .lock()
            .as_ref()
            .map(|w| w.stalls())
            .unwrap_or_default()
    }

    /// Every worker of every pool of the system, and the handler it runs
    /// with how long it has run, as of the stall watchdog's last scan (at
    /// most a quarter of the shortest threshold ago). Empty with stall
    /// detection off ([`SystemBuilder::stall_threshold`]).
    pub fn workers(&self) -> Vec<WorkerView> {
        self.inner()
            .watchdog
            .lock()
            .as_ref()
            .map(|w| w.workers())
            .unwrap_or_default()
    }

    /// The last [`RECENT_CYCLES`](crate::actor::RECENT_CYCLES) ask cycles
    /// detected, oldest first ([`SystemBuilder::detect_ask_cycles`]).
    pub fn ask_cycles(&self) -> Vec<crate::actor::AskCycle> {
        self.rt
            .watch
            .cycles
            .as_ref()
            .map(|g| g.recent())
            .unwrap_or_default()
    }

    /// Ask cycles detected so far (0 with detection off).
    pub fn ask_cycles_detected(&self) -> u64 {
        self.rt.watch.cycles.as_ref().map_or(0, |g| g.detected())
    }

    /// Kills every live actor of `cycle` (the test kit, whose actors must
    /// not wait forever on replies that will never come).
    pub(crate) fn kill_members(&self, cycle: &crate::actor::AskCycle) {
        for actor in self.inner().table.snapshot() {
            let member = actor
                .describe()
                .is_some_and(|d| cycle.members.iter().any(|m| m.id == d.id));
            if member {
                actor.request_stop(crate::actor::lifecycle::StopRequest::Kill);
            }
        }
    }

    /// Stops the stall watchdog, if any, and waits for it (the shutdown's
    /// last step).
    pub(crate) fn stop_watchdog(&self) {
        let dog = self.inner().watchdog.lock().take();
        if let Some(mut dog) = dog {
            dog.stop();
        }
    }

    /// Asks every actor to stop after draining its mailbox, without waiting.
    /// The owning [`ActorSystem`] completes the shutdown.
    pub fn request_shutdown(&self) {
        self.inner().begin_closing();
    }
}

/// The owner of a running actor system. Dropping it shuts the system down
/// (draining mailboxes, see [`shutdown`](Self::shutdown)).
///
/// ```
/// use troupe::{Actor, ActorSystem, Context};
/// struct Hello;
/// impl Actor for Hello {
///     type Msg = String;
///     fn handle(&mut self, name: String, _ctx: &mut Context<'_, Self>) {
///         println!("hello, {name}");
///     }
/// }
/// let system = ActorSystem::new();
/// system.spawn(Hello).tell("troupe".into()).unwrap();
/// let report = system.shutdown();
/// assert_eq!(report.messages_dropped, 0);
/// ```
pub struct ActorSystem {
    handle: SystemHandle,
}

impl std::ops::Deref for ActorSystem {
    type Target = SystemHandle;
    fn deref(&self) -> &SystemHandle {
        &self.handle
    }
}

impl Default for ActorSystem {
    fn default() -> Self {
        Self::new()
    }
}

impl ActorSystem {
    /// A system with default settings (one worker per core).
    pub fn new() -> Self {
        SystemBuilder::default().build()
    }

    /// A builder for threads, throughput and the default mailbox.
    pub fn builder() -> SystemBuilder {
        SystemBuilder::default()
    }

    /// A cloneable non-owning handle.
    pub fn handle(&self) -> SystemHandle {
        self.handle.clone()
    }

    /// Graceful shutdown with a 10 s drain deadline.
    pub fn shutdown(&self) -> ShutdownReport {
        self.shutdown_timeout(Duration::from_secs(10))
    }

    /// Graceful shutdown: every actor drains its mailbox and stops; after
    /// `timeout` the rest are killed. Joins the workers.
    pub fn shutdown_timeout(&self, timeout: Duration) -> ShutdownReport {
        let report = self.handle.inner().shutdown(&self.handle.rt, timeout);
        // Once the workers are gone (not from a worker, whose shutdown
        // only asks), there is nothing left to watch.
        if self.handle.inner().shut_down.load(Ordering::SeqCst) {
            self.handle.stop_watchdog();
        }
        report
    }

    /// Waits until every actor has stopped by itself, then shuts down.
    pub fn join(&self) -> ShutdownReport {
        self.handle.inner().wait_no_live(None);
        self.shutdown()
    }

    /// As [`join`](Self::join) with a deadline; `None` if actors still run.
    pub fn join_timeout(&self, timeout: Duration) -> Option<ShutdownReport> {
        if self.handle.inner().wait_no_live(deadline::after(timeout)) {
            Some(self.shutdown())
        } else {
            None
        }
    }
}

impl Drop for ActorSystem {
    fn drop(&mut self) {
        self.shutdown();
        // The owner goes: from now on the runtime's last reference (this
        // one, or a cell or handle that outlives it) frees it.
        self.handle.rt.close();
    }
}

#[cfg(all(test, not(loom)))]
mod recycle_tests;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::recycle_tests::Quitter;
    use super::*;
    use crate::engine::scheduler::Pool;
    use crate::Context;
    use std::sync::Weak;
    use std::time::Instant;

    struct Idle;
    impl Actor for Idle {
        type Msg = u32;
        fn handle(&mut self, _: u32, _: &mut Context<'_, Self>) {}
    }

    /// The runtime (here: its pool, which only the runtime holds once the
    /// workers are joined) lives exactly as long as its last reference.
    fn pool_of(system: &ActorSystem) -> Weak<Pool> {
        Arc::downgrade(&system.rt.pool)
    }

    /// Stall and ask-cycle detection off (the default): no pool has turn
    /// slots (a turn tests a null pointer and writes nothing), and there
    /// is no watchdog.
    #[test]
    fn off_no_pool_is_watched_and_no_watchdog_runs() {
        let system = ActorSystem::builder().threads(2).build();
        let extra = system.work_stealing_pool("extra", 1);
        let _ = extra;
        assert!(system.pools().iter().all(|p| p.watch.is_none()));
        assert!(system.inner().watchdog.lock().is_none());
        let on = ActorSystem::builder()
            .threads(2)
            .detect_ask_cycles(true)
            .build();
        let _extra = on.work_stealing_pool("extra", 1);
        assert!(on.pools().iter().all(|p| p.watch.is_some()));
        // Ask cycles alone need no watchdog.
        assert!(on.inner().watchdog.lock().is_none());
    }

    #[test]
    fn the_runtime_goes_with_the_system_when_nothing_outlives_it() {
        let system = ActorSystem::builder().threads(1).build();
        let a = system.spawn(Idle);
        let pool = pool_of(&system);
        a.tell(1).unwrap();
        drop(a);
        drop(system);
        assert!(pool.upgrade().is_none(), "runtime leaked");
    }

    /// Runtime references counted now: the owner's, one per handle, one
    /// per cell not yet dropped.
    fn holders_of(system: &ActorSystem) -> isize {
        system.rt.holders.open_sum() + system.handle.inner().table.holders()
    }

    /// A stopped actor's cell gives its runtime reference back exactly once:
    /// at its retirement when the table held its last reference (nothing
    /// else can reach it then), else at its drop. Stops on a worker, with
    /// and without other references (strong, weak) alive.
    #[test]
    fn a_stopped_actors_runtime_reference_is_given_back_once() {
        let system = ActorSystem::builder().threads(2).build();
        let pool = pool_of(&system);
        let base = holders_of(&system);
        // No other reference: retirement gives it back.
        for _ in 0..100 {
            let q = system.spawn(Quitter);
            drop(q);
        }
        // Held past the stop: the last `ActorRef` gives it back.
        let held: Vec<_> = (0..10).map(|_| system.spawn(Quitter)).collect();
        // Only a weak reference left: the cell's drop gives it back.
        let weak: Vec<_> = (0..10).map(|_| system.spawn(Quitter).downgrade()).collect();
        for q in &held {
            q.join();
        }
        assert!(system
            .handle
            .inner()
            .wait_no_live(deadline::after(Duration::from_secs(5))));
        // Retired; the workers drop the weakly held cells just after.
        let settled = |want: isize| {
            let end = Instant::now() + Duration::from_secs(5);
            while holders_of(&system) != want && Instant::now() < end {
                std::thread::yield_now();
            }
            holders_of(&system)
        };
        // The held cells are still referenced.
        assert_eq!(
            settled(base + held.len() as isize),
            base + held.len() as isize
        );
        // A worker may still hold a stopped cell for an instant after its
        // `join` returned (it drops its own `Arc` after the retirement);
        // the last of the two drops gives the reference back.
        drop(held);
        assert_eq!(settled(base), base);
        drop(weak);
        assert_eq!(holders_of(&system), base);
        // Given back once: it never falls below the base either.
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(holders_of(&system), base);
        drop(system);
        assert!(pool.upgrade().is_none(), "runtime leaked");
    }

    #[test]
    fn an_actor_ref_keeps_the_runtime_until_it_goes() {
        let system = ActorSystem::builder().threads(2).build();
        let pool = pool_of(&system);
        // References taken on other threads (other shards) too.
        let refs: Vec<_> = std::thread::scope(|s| {
            (0..4)
                .map(|_| s.spawn(|| system.spawn(Idle)).join().unwrap())
                .collect()
        });
        drop(system);
        assert!(pool.upgrade().is_some(), "freed under live references");
        // A dead actor's cell still works: the send is handed back.
        assert!(refs[0].tell(7).is_err());
        let (first, rest) = refs.split_at(1);
        let rest = rest.to_vec();
        std::thread::spawn(move || drop(rest)).join().unwrap();
        assert!(pool.upgrade().is_some(), "freed under a live reference");
        drop(first.to_vec());
        drop(refs);
        assert!(pool.upgrade().is_none(), "runtime leaked");
    }

    #[test]
    fn a_handle_keeps_the_runtime_and_spawns_after_the_owner_are_refused() {
        let system = ActorSystem::builder().threads(1).build();
        let pool = pool_of(&system);
        let handle = system.handle();
        let h2 = handle.clone();
        drop(system);
        let late = std::thread::spawn(move || {
            let a = h2.spawn(Idle);
            assert_eq!(a.join(), crate::StopReason::Shutdown);
            a
        })
        .join()
        .unwrap();
        assert!(pool.upgrade().is_some());
        drop(handle);
        assert!(pool.upgrade().is_some(), "freed under a late actor's cell");
        drop(late);
        assert!(pool.upgrade().is_none(), "runtime leaked");
    }
}
