//! The actor system: its builder, spawning, the table of live actors, and
//! shutdown.
//!
//! Shutdown, step by step ([`ActorSystem::shutdown_timeout`]):
//! 1. `closing` is set: actors spawned from now on are asked to stop at once.
//! 2. Every live actor (from the sharded actor table) gets a drain request:
//!    its mailbox refuses new messages (senders get them back), it handles
//!    what is already queued, runs `stopped`, and leaves the table.
//! 3. The caller waits for the live count to reach zero. Past the deadline the
//!    remaining actors are killed (their queued messages dropped and counted).
//! 4. The workers are told to exit and joined.
//!
//! The report says how many actors stopped and how many messages were dropped
//! (queued past the deadline, evicted by `DropOldest`, or sent in the instant
//! an actor stopped).

use crate::actor::{Actor, ActorId, ActorRef};
use crate::cell::{ActorCell, StopRequest};
use crate::dispatcher::{Dispatcher, DispatcherKind};
use crate::mailbox::MailboxConfig;
use crate::scheduler::{is_worker_thread, Pool, PoolConfig, Runnable, Task};
use crossbeam_utils::CachePadded;
use parking_lot::{Condvar, Mutex};
use slab::Slab;
use std::cell::Cell;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const SHARDS: usize = 16;
const ID_BLOCK: u64 = 1024;

static NEXT_ID_BLOCK: AtomicU64 = AtomicU64::new(1);
static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// (next id, end of this thread's block of ids)
    static IDS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    /// This thread's actor-table shard.
    static SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
}

pub(crate) fn next_id() -> ActorId {
    IDS.with(|ids| {
        let (mut next, mut end) = ids.get();
        if next == end {
            next = NEXT_ID_BLOCK.fetch_add(1, Ordering::Relaxed) * ID_BLOCK;
            end = next + ID_BLOCK;
        }
        ids.set((next + 1, end));
        ActorId(next)
    })
}

fn my_shard() -> usize {
    SHARD.with(|s| {
        let mut v = s.get();
        if v == usize::MAX {
            v = NEXT_SHARD.fetch_add(1, Ordering::Relaxed) % SHARDS;
            s.set(v);
        }
        v
    })
}

/// One shard of the actor table: live actors by slab key.
type Shard = CachePadded<Mutex<Slab<Arc<dyn Runnable>>>>;

/// Every live actor, so shutdown can reach idle ones. Sharded by spawning
/// thread so concurrent spawns rarely contend.
pub(crate) struct ActorTable {
    shards: Box<[Shard]>,
}

impl ActorTable {
    fn new() -> Self {
        ActorTable {
            shards: (0..SHARDS)
                .map(|_| CachePadded::new(Mutex::new(Slab::new())))
                .collect(),
        }
    }

    fn insert<T: Runnable>(&self, make: impl FnOnce(u64) -> Arc<T>) -> Arc<T> {
        let shard = my_shard();
        let mut slab = self.shards[shard].lock();
        let entry = slab.vacant_entry();
        let key = ((shard as u64) << 32) | entry.key() as u64;
        let cell = make(key);
        entry.insert(cell.clone());
        cell
    }

    fn remove(&self, key: u64) -> Option<Arc<dyn Runnable>> {
        let shard = (key >> 32) as usize;
        self.shards[shard]
            .lock()
            .try_remove((key & 0xFFFF_FFFF) as usize)
    }

    fn snapshot(&self) -> Vec<Arc<dyn Runnable>> {
        let mut all = Vec::new();
        for shard in self.shards.iter() {
            all.extend(shard.lock().iter().map(|(_, t)| t.clone()));
        }
        all
    }
}

/// A pool and its worker threads' handles.
type PoolThreads = (Arc<Pool>, Vec<JoinHandle<()>>);

pub(crate) struct SystemInner {
    pub(crate) pool: Arc<Pool>,
    table: ActorTable,
    live: AtomicUsize,
    live_lock: Mutex<()>,
    live_cv: Condvar,
    closing: AtomicBool,
    pub(crate) dropped: AtomicU64,
    stopped: AtomicU64,
    default_mailbox: MailboxConfig,
    throughput: usize,
    workers: Mutex<Vec<JoinHandle<()>>>,
    /// Pools other than the default one (named dispatchers and dedicated
    /// threads): stopped and joined at shutdown.
    extra_pools: Mutex<Vec<PoolThreads>>,
    report: Mutex<Option<ShutdownReport>>,
    #[cfg(feature = "async")]
    pub(crate) bridge: Mutex<crate::bridge::AsyncBridge>,
}

impl SystemInner {
    /// Starts a pool that the system will stop and join at shutdown.
    pub(crate) fn start_pool(&self, config: PoolConfig) -> Arc<Pool> {
        let (pool, handles) = Pool::start(config);
        let mut pools = self.extra_pools.lock();
        // Forget dedicated threads that have already exited.
        pools.retain(|(p, hs)| !(p.is_shut_down() && hs.iter().all(|h| h.is_finished())));
        pools.push((pool.clone(), handles));
        pool
    }

    pub(crate) fn pool_config(&self, name: &str, threads: usize) -> PoolConfig {
        PoolConfig {
            threads,
            throughput: self.throughput,
            name: name.into(),
            shared_queue: false,
            pin: None,
        }
    }

    pub(crate) fn spawn_cell<A: Actor>(
        self: &Arc<Self>,
        actor: A,
        options: SpawnOptions,
    ) -> Arc<ActorCell<A>> {
        let mailbox = options.mailbox.unwrap_or(self.default_mailbox);
        let (pool, dedicated) = if options.dedicated {
            let name = options.thread_name.as_deref().unwrap_or("troupe-dedicated");
            (Some(self.start_pool(self.pool_config(name, 1))), true)
        } else {
            (options.dispatcher.map(|d| d.pool), false)
        };
        self.live.fetch_add(1, Ordering::SeqCst);
        let id = next_id();
        let cell = self.table.insert(|key| {
            Arc::new(ActorCell::new(
                actor,
                id,
                key,
                mailbox,
                self.clone(),
                pool,
                dedicated,
            ))
        });
        // Pairs with shutdown's store-then-snapshot: either the snapshot sees
        // this actor, or we see `closing` here.
        if self.closing.load(Ordering::SeqCst) {
            cell.stop_request(StopRequest::Shutdown);
        }
        // The new actor starts SCHEDULED: this task runs its `started` hook.
        cell.pool().schedule(Task::new(&*cell));
        cell
    }

    /// Adds a live actor other than an `ActorCell` (a shared actor) to the
    /// table and the live count; a shutdown in progress stops it at once.
    pub(crate) fn register<T: Runnable>(&self, make: impl FnOnce(u64) -> Arc<T>) -> Arc<T> {
        self.live.fetch_add(1, Ordering::SeqCst);
        let entry = self.table.insert(make);
        if self.closing.load(Ordering::SeqCst) {
            entry.request_stop(StopRequest::Shutdown);
        }
        entry
    }

    /// Called once by each actor's finalizer; returns the actor's table
    /// entry for the caller to drop once it no longer borrows the actor.
    #[must_use]
    pub(crate) fn actor_finished(&self, key: u64) -> Option<Arc<dyn Runnable>> {
        let entry = self.table.remove(key);
        self.stopped.fetch_add(1, Ordering::Relaxed);
        if self.live.fetch_sub(1, Ordering::SeqCst) == 1 {
            let _g = self.live_lock.lock();
            self.live_cv.notify_all();
        }
        entry
    }

    /// Waits until no actor is alive; false if the deadline passed first.
    fn wait_no_live(&self, deadline: Option<Instant>) -> bool {
        let mut g = self.live_lock.lock();
        while self.live.load(Ordering::SeqCst) > 0 {
            match deadline {
                None => self.live_cv.wait(&mut g),
                Some(d) => {
                    if self.live_cv.wait_until(&mut g, d).timed_out() {
                        return self.live.load(Ordering::SeqCst) == 0;
                    }
                }
            }
        }
        true
    }

    /// Shutdown steps 1 and 2: refuse new actors, ask every live one to drain
    /// and stop.
    fn begin_closing(&self) {
        self.closing.store(true, Ordering::SeqCst);
        self.request_all(StopRequest::Shutdown);
    }

    fn request_all(&self, kind: StopRequest) {
        for task in self.table.snapshot() {
            task.request_stop(kind);
        }
    }

    fn shutdown(&self, timeout: Duration) -> ShutdownReport {
        let mut report_slot = self.report.lock();
        if let Some(r) = report_slot.as_ref() {
            return r.clone();
        }
        let started = Instant::now();
        self.begin_closing();
        if is_worker_thread() {
            // A worker cannot wait for the pool it runs on: the stops are
            // requested; the owner's `join`/drop completes the shutdown.
            return ShutdownReport::pending(self);
        }
        let mut timed_out = false;
        if !self.wait_no_live(Some(started + timeout)) {
            timed_out = true;
            self.request_all(StopRequest::ShutdownNow);
            self.wait_no_live(Some(Instant::now() + timeout));
        }
        let unresponsive = self.live.load(Ordering::SeqCst);
        self.pool.begin_shutdown();
        let extra: Vec<_> = self.extra_pools.lock().drain(..).collect();
        for (p, _) in &extra {
            p.begin_shutdown();
        }
        if unresponsive == 0 {
            for h in self.workers.lock().drain(..) {
                let _ = h.join();
            }
            for (_, hs) in extra {
                for h in hs {
                    let _ = h.join();
                }
            }
        }
        #[cfg(feature = "async")]
        self.bridge.lock().shutdown();
        let report = ShutdownReport {
            actors_stopped: self.stopped.load(Ordering::Relaxed),
            messages_dropped: self.dropped.load(Ordering::Relaxed),
            deadline_passed: timed_out,
            actors_unresponsive: unresponsive,
            elapsed: started.elapsed(),
        };
        if report.messages_dropped > 0 || timed_out {
            tracing::warn!(%report, "actor system shut down");
        }
        *report_slot = Some(report.clone());
        report
    }
}

/// What a shutdown did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Actors that stopped over the system's whole life.
    pub actors_stopped: u64,
    /// Messages dropped undelivered over the system's life: left in a mailbox
    /// when its actor stopped or was killed, evicted by `DropOldest`, or sent
    /// in the instant the actor stopped.
    pub messages_dropped: u64,
    /// Whether draining took longer than the timeout (the rest were killed).
    pub deadline_passed: bool,
    /// Actors still running a handler when shutdown gave up (their workers
    /// were left to finish and exit on their own).
    pub actors_unresponsive: usize,
    /// Time the shutdown took.
    pub elapsed: Duration,
}

impl ShutdownReport {
    fn pending(inner: &SystemInner) -> Self {
        ShutdownReport {
            actors_stopped: inner.stopped.load(Ordering::Relaxed),
            messages_dropped: inner.dropped.load(Ordering::Relaxed),
            deadline_passed: false,
            actors_unresponsive: inner.live.load(Ordering::SeqCst),
            elapsed: Duration::ZERO,
        }
    }
}

impl fmt::Display for ShutdownReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} actors stopped, {} messages dropped{}{} in {:?}",
            self.actors_stopped,
            self.messages_dropped,
            if self.deadline_passed {
                ", deadline passed"
            } else {
                ""
            },
            if self.actors_unresponsive > 0 {
                format!(", {} unresponsive", self.actors_unresponsive)
            } else {
                String::new()
            },
            self.elapsed
        )
    }
}

/// Per-spawn choices.
///
/// ```
/// use troupe::{MailboxConfig, OverflowPolicy, SpawnOptions};
/// let opts = SpawnOptions::new().mailbox(MailboxConfig::bounded(64, OverflowPolicy::Reject));
/// # let _ = opts;
/// ```
#[derive(Clone, Debug, Default)]
pub struct SpawnOptions {
    mailbox: Option<MailboxConfig>,
    dispatcher: Option<Dispatcher>,
    dedicated: bool,
    thread_name: Option<String>,
}

impl SpawnOptions {
    /// Defaults: the system's default mailbox.
    pub fn new() -> Self {
        Self::default()
    }

    /// The actor's mailbox.
    pub fn mailbox(mut self, mailbox: MailboxConfig) -> Self {
        self.mailbox = Some(mailbox);
        self
    }

    /// Run the actor's handlers on `dispatcher` (default: the system's
    /// work-stealing pool).
    pub fn dispatcher(mut self, dispatcher: &Dispatcher) -> Self {
        self.dispatcher = Some(dispatcher.clone());
        self.dedicated = false;
        self
    }

    /// Give the actor an OS thread of its own for its whole life
    /// (SObjectizer's active_obj); the thread exits when the actor stops.
    pub fn dedicated_thread(mut self) -> Self {
        self.dedicated = true;
        self.dispatcher = None;
        self
    }

    /// Name of the dedicated thread (with [`dedicated_thread`](Self::dedicated_thread)).
    pub fn thread_name(mut self, name: impl Into<String>) -> Self {
        self.thread_name = Some(name.into());
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
            #[cfg(feature = "async")]
            tokio: None,
        }
    }
}

impl SystemBuilder {
    /// Worker threads (default: available cores).
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n.max(1);
        self
    }

    /// Most messages an actor handles per turn before others get the worker
    /// (default 64).
    pub fn throughput(mut self, n: usize) -> Self {
        self.throughput = n.max(1);
        self
    }

    /// The mailbox actors get unless their spawn options say otherwise.
    pub fn default_mailbox(mut self, mailbox: MailboxConfig) -> Self {
        self.mailbox = mailbox;
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

    /// Starts the workers.
    pub fn build(self) -> ActorSystem {
        let (pool, workers) = Pool::start(PoolConfig {
            threads: self.threads,
            throughput: self.throughput,
            name: self.name.clone(),
            shared_queue: false,
            pin: None,
        });
        let inner = Arc::new(SystemInner {
            pool,
            table: ActorTable::new(),
            live: AtomicUsize::new(0),
            live_lock: Mutex::new(()),
            live_cv: Condvar::new(),
            closing: AtomicBool::new(false),
            dropped: AtomicU64::new(0),
            stopped: AtomicU64::new(0),
            default_mailbox: self.mailbox,
            throughput: self.throughput,
            workers: Mutex::new(workers),
            extra_pools: Mutex::new(Vec::new()),
            report: Mutex::new(None),
            #[cfg(feature = "async")]
            bridge: Mutex::new(crate::bridge::AsyncBridge::new(self.tokio)),
        });
        ActorSystem {
            handle: SystemHandle { inner },
        }
    }
}

/// A non-owning handle to a system: spawn actors, read counters. Cheap to
/// clone; actors get one from [`Context::system`](crate::Context::system).
#[derive(Clone)]
pub struct SystemHandle {
    inner: Arc<SystemInner>,
}

impl SystemHandle {
    pub(crate) fn from_inner(inner: Arc<SystemInner>) -> Self {
        SystemHandle { inner }
    }

    /// Spawns an actor with the default options.
    pub fn spawn<A: Actor>(&self, actor: A) -> ActorRef<A> {
        self.spawn_with(actor, SpawnOptions::default())
    }

    /// Spawns an actor with options.
    pub fn spawn_with<A: Actor>(&self, actor: A, options: SpawnOptions) -> ActorRef<A> {
        ActorRef {
            cell: self.inner.spawn_cell(actor, options),
        }
    }

    /// Actors alive now.
    pub fn live_actors(&self) -> usize {
        self.inner.live.load(Ordering::SeqCst)
    }

    /// Messages dropped undelivered so far (see [`ShutdownReport`]).
    pub fn dropped_messages(&self) -> u64 {
        self.inner.dropped.load(Ordering::Relaxed)
    }

    /// Worker threads.
    pub fn threads(&self) -> usize {
        self.inner.pool.threads()
    }

    /// The system's default dispatcher (its work-stealing pool).
    pub fn default_dispatcher(&self) -> Dispatcher {
        Dispatcher::new(
            self.inner.pool.clone(),
            DispatcherKind::WorkStealing,
            "default",
        )
    }

    /// A new, independent work-stealing pool of `threads` workers.
    pub fn work_stealing_pool(&self, name: &str, threads: usize) -> Dispatcher {
        let pool = self.inner.start_pool(self.inner.pool_config(name, threads));
        Dispatcher::new(pool, DispatcherKind::WorkStealing, name)
    }

    /// A pool whose `threads` workers all pull from one shared queue.
    pub fn shared_queue_pool(&self, name: &str, threads: usize) -> Dispatcher {
        let mut cfg = self.inner.pool_config(name, threads);
        cfg.shared_queue = true;
        Dispatcher::new(
            self.inner.start_pool(cfg),
            DispatcherKind::SharedQueue,
            name,
        )
    }

    /// One thread for a group of actors (SObjectizer's one_thread /
    /// active_group): spawn every member with this dispatcher.
    pub fn one_thread(&self, name: &str) -> Dispatcher {
        let pool = self.inner.start_pool(self.inner.pool_config(name, 1));
        Dispatcher::new(pool, DispatcherKind::OneThread, name)
    }

    /// A work-stealing pool with one worker pinned to each CPU in `cpus`.
    pub fn pinned_pool(&self, name: &str, cpus: &[usize]) -> Dispatcher {
        let mut cfg = self.inner.pool_config(name, cpus.len().max(1));
        cfg.pin = Some(cpus.to_vec());
        Dispatcher::new(
            self.inner.start_pool(cfg),
            DispatcherKind::Pinned(cpus.to_vec()),
            name,
        )
    }

    /// A pool for handlers that block (files, sockets, sleeps): shared-queue,
    /// so no task waits in a blocked worker's LIFO slot. Size it with
    /// [`io_pool_size`](crate::io_pool_size).
    pub fn blocking_pool(&self, name: &str, threads: usize) -> Dispatcher {
        let mut cfg = self.inner.pool_config(name, threads);
        cfg.shared_queue = true;
        Dispatcher::new(self.inner.start_pool(cfg), DispatcherKind::Blocking, name)
    }

    /// Spawns a [`SharedActor`](crate::shared::SharedActor) on `dispatcher`:
    /// its thread-safe handlers run in parallel on the dispatcher's workers.
    pub fn spawn_shared<A: crate::shared::SharedActor>(
        &self,
        actor: A,
        dispatcher: &Dispatcher,
        fifo: crate::shared::Fifo,
    ) -> crate::shared::SharedRef<A> {
        self.inner.spawn_shared_cell(actor, dispatcher, fifo)
    }

    /// Asks every actor to stop after draining its mailbox, without waiting.
    /// The owning [`ActorSystem`] completes the shutdown.
    pub fn request_shutdown(&self) {
        self.inner.begin_closing();
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
        self.handle.inner.shutdown(timeout)
    }

    /// Waits until every actor has stopped by itself, then shuts down.
    pub fn join(&self) -> ShutdownReport {
        self.handle.inner.wait_no_live(None);
        self.shutdown()
    }

    /// As [`join`](Self::join) with a deadline; `None` if actors still run.
    pub fn join_timeout(&self, timeout: Duration) -> Option<ShutdownReport> {
        if self
            .handle
            .inner
            .wait_no_live(Some(Instant::now() + timeout))
        {
            Some(self.shutdown())
        } else {
            None
        }
    }
}

impl Drop for ActorSystem {
    fn drop(&mut self) {
        self.shutdown();
    }
}
