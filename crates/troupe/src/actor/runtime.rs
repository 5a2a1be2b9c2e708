//! What every actor of one system shares: the [`Runtime`] its cell points
//! at, the [`Host`] hook through which the system layer keeps its actor
//! table, and the choices a spawn takes ([`SpawnOptions`]; the spawn itself
//! is `ActorCell::spawn`).
//!
//! The actor core sits below the system (`system/`), so it cannot name the
//! system's types. It asks for what it needs through `Host`, which the
//! system implements: enrol a new actor (and learn whether a shutdown is
//! under way), retire a stopped one, start a pool for a dedicated thread.
//! Those calls happen once per spawn and once per stop, never per message.

use super::error::StopReason;
use super::lifecycle::Stoppable;
use super::metrics::MetricsSet;
use super::runtime_ref::Holders;
use super::stall::Watching;
use crate::engine::dispatcher::Dispatcher;
use crate::engine::mailbox::MailboxConfig;
use crate::engine::scheduler::{Pool, PoolConfig};
use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What the actor core needs from the system that runs it.
pub(crate) trait Host: Send + Sync + 'static {
    /// Adds a live actor to the system's table, and counts the runtime
    /// reference its cell holds (made with `RuntimeRef::for_enrolment`)
    /// in the same lock pass (see `runtime_ref.rs`).
    fn enroll(&self, actor: Arc<dyn Stoppable>) -> Enrolled;
    /// Closes the enrolments' share of the runtime's holder count and
    /// returns it (`Holders::close`, once).
    fn close_holders(&self) -> isize;
    /// Removes a stopped actor from the table; returns its entry, which the
    /// caller drops once it no longer borrows the actor. With
    /// `release_unique`, an entry that is its cell's only reference also
    /// has the cell's runtime reference uncounted in the same lock pass
    /// (`Retired::holder_released`).
    fn retire(&self, key: u64, release_unique: bool) -> Retired;
    /// Starts a pool that the system stops and joins at shutdown.
    fn start_pool(&self, config: PoolConfig) -> Arc<Pool>;
    /// The tokio runtime the system's futures run on (`Context::spawn_future`).
    #[cfg(feature = "async")]
    fn tokio_handle(&self) -> tokio::runtime::Handle;
    /// The system's own type, for the layers above (`system/`).
    fn as_any(&self) -> &dyn Any;
}

/// A non-owning handle to a system: spawn actors, make dispatchers, read
/// counters. Cheap to clone; actors get one from
/// [`Context::system`](crate::Context::system). Defined here, with the
/// runtime it points at, so that `Context` can hand one out; its methods
/// are the system's (`system/`).
#[derive(Clone)]
pub struct SystemHandle {
    pub(crate) rt: super::runtime_ref::RuntimeRef,
}

/// What an enrolment did.
pub(crate) struct Enrolled {
    /// The actor's key in the table.
    pub(crate) key: u64,
    /// Whether the system takes it.
    pub(crate) admission: Admission,
    /// Whether the cell's runtime reference was counted; if not (the count
    /// is closed), the caller counts it with `Holders::take`.
    pub(crate) counted: bool,
}

/// What a retirement did.
pub(crate) struct Retired {
    /// The table's entry for the actor.
    pub(crate) entry: Option<Arc<dyn Stoppable>>,
    /// The entry was the cell's only reference, and the cell's runtime
    /// reference is no longer counted: dropping the entry drops the cell,
    /// which must neither release that reference again nor use the
    /// runtime (it may be gone by then).
    pub(crate) holder_released: bool,
}

/// Whether a system takes a new actor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Running normally.
    Open,
    /// Shutting down: the actor is asked to stop at once (it runs
    /// `started` and drains nothing).
    Closing,
    /// Shut down: the workers are gone. The actor never runs; it is stopped
    /// on the spawning thread with `StopReason::Shutdown`.
    Closed,
}

/// The state a system's actors share; every cell holds a counted
/// reference to it ([`RuntimeRef`](super::runtime_ref::RuntimeRef)).
pub(crate) struct Runtime {
    /// Who holds a reference to this runtime (`runtime_ref.rs`).
    pub(crate) holders: Holders,
    /// The system's default work-stealing pool.
    pub(crate) pool: Arc<Pool>,
    /// Messages dropped undelivered (see `ShutdownReport`).
    pub(crate) dropped: AtomicU64,
    /// Panics caught in user code: handlers, hooks, actor and message drops,
    /// watchers (see `ShutdownReport`). None ever reaches a worker.
    pub(crate) panics: AtomicU64,
    /// The mailbox actors get unless their options say otherwise.
    pub(crate) default_mailbox: MailboxConfig,
    /// Messages per turn.
    pub(crate) throughput: usize,
    /// Every metered actor (`metrics.rs`), and whether metering is the
    /// default.
    pub(crate) metrics: MetricsSet,
    /// Stall and ask-cycle detection (`stall.rs`, `ask_cycle.rs`).
    pub(crate) watch: Watching,
    /// The system layer.
    pub(crate) host: Box<dyn Host>,
}

impl Runtime {
    /// Enrols a new cell (`Host::enroll`) whose runtime reference was made
    /// with `RuntimeRef::for_enrolment`, and makes sure that reference is
    /// counted: by the enrolment, or here once the count is closed (the
    /// caller's own reference keeps it above zero). Returns the cell's
    /// table key and whether the system takes it.
    pub(crate) fn enroll(&self, cell: Arc<dyn Stoppable>) -> (u64, Admission) {
        let Enrolled {
            key,
            admission,
            counted,
        } = self.host.enroll(cell);
        if !counted {
            self.holders.take();
        }
        (key, admission)
    }

    /// Counts `n` messages dropped undelivered.
    #[inline]
    pub(crate) fn count_dropped(&self, n: u64) {
        self.dropped.fetch_add(n, Ordering::Relaxed);
    }

    /// Reports a panic caught in user code (`lifecycle::guard`): logged and
    /// counted. `what` says which code panicked.
    #[cold]
    pub(crate) fn caught_panic(&self, what: &str, reason: &StopReason) {
        self.panics.fetch_add(1, Ordering::Relaxed);
        tracing::error!(%reason, "{what} panicked; the runtime carries on");
    }

    /// Counts `n` panics already reported (watchers log their own).
    pub(crate) fn count_panics(&self, n: u64) {
        if n > 0 {
            self.panics.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// A pool config with this system's throughput.
    pub(crate) fn pool_config(&self, name: &str, threads: usize) -> PoolConfig {
        PoolConfig {
            threads,
            throughput: self.throughput,
            name: name.into(),
            shared_queue: false,
            pin: None,
            metrics: self.metrics.default_on,
            blocking: false,
            watch: self.watch.pools(),
        }
    }
}

/// Per-spawn choices: the actor's name, mailbox and dispatcher.
///
/// ```
/// use troupe::{MailboxConfig, Overflow, SpawnOptions};
/// let opts = SpawnOptions::new()
///     .name("cart-7")
///     .mailbox(MailboxConfig::bounded(64, Overflow::Reject));
/// # let _ = opts;
/// ```
#[derive(Clone, Debug, Default)]
pub struct SpawnOptions {
    pub(crate) mailbox: Option<MailboxConfig>,
    pub(crate) dispatcher: Option<Dispatcher>,
    pub(crate) dedicated: bool,
    pub(crate) thread_name: Option<String>,
    pub(crate) name: Option<Arc<String>>,
    pub(crate) metrics: Option<bool>,
    pub(crate) trace: bool,
    pub(crate) stall: Option<Duration>,
}

impl SpawnOptions {
    /// Defaults: no name, the system's default mailbox and dispatcher.
    pub fn new() -> Self {
        Self::default()
    }

    /// The actor's name: logs and metrics label it by this (otherwise by
    /// its id). Names need not be unique; for lookup by name use a
    /// [`Registry`](crate::registry::Registry).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        // A thin pointer (`Arc<String>`): 8 bytes in every cell, not 16.
        self.name = Some(Arc::new(name.into()));
        self
    }

    /// Record this actor's metrics (arrivals, handled, mailbox depth,
    /// waiting and service times; see [`observability`](crate::observability)),
    /// overriding the system default
    /// ([`SystemBuilder::metrics`](crate::SystemBuilder::metrics)). Off, an
    /// actor pays nothing per message.
    ///
    /// ```
    /// use troupe::{Actor, ActorSystem, Context, SpawnOptions};
    /// struct Sink;
    /// impl Actor for Sink {
    ///     type Msg = u32;
    ///     fn handle(&mut self, _: u32, _: &mut Context<'_, Self>) {}
    /// }
    /// let system = ActorSystem::builder().threads(1).build();
    /// let sink = system.spawn_with(Sink, SpawnOptions::new().name("sink").metrics(true));
    /// sink.tell(1).unwrap();
    /// system.shutdown();
    /// let m = system.metrics();
    /// assert_eq!(m.actors[0].name, "sink");
    /// assert_eq!(m.actors[0].handled, 1);
    /// ```
    pub fn metrics(mut self, on: bool) -> Self {
        self.metrics = Some(on);
        self
    }

    /// Emit a `tracing` span (level TRACE, name `handle`, fields `actor`,
    /// `name`, `msg`) around every message this actor handles. Turns metrics
    /// on for the actor.
    pub fn trace_messages(mut self, on: bool) -> Self {
        self.trace = on;
        self
    }

    /// The actor's own stall threshold, in place of the system's
    /// ([`SystemBuilder::stall_threshold`](crate::SystemBuilder::stall_threshold)):
    /// a handler of this actor running longer than `d` is reported. Kept
    /// to the millisecond up to 32.767 s, to the second (rounded up) above;
    /// [`Duration::MAX`] (or anything past about 9 hours) never reports.
    /// Takes effect only on a system with stall detection on.
    ///
    /// ```
    /// use std::time::Duration;
    /// use troupe::SpawnOptions;
    /// // A batch job that may take its time; the rest of the system may not.
    /// let opts = SpawnOptions::new().stall_threshold(Duration::from_secs(30));
    /// # let _ = opts;
    /// ```
    pub fn stall_threshold(mut self, d: Duration) -> Self {
        self.stall = Some(d);
        self
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

    /// Name of the dedicated thread (with
    /// [`dedicated_thread`](Self::dedicated_thread); default: the actor's
    /// name).
    pub fn thread_name(mut self, name: impl Into<String>) -> Self {
        self.thread_name = Some(name.into());
        self
    }
}
