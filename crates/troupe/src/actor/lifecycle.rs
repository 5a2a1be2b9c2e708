//! The one actor lifecycle every kind of actor uses: stop requests, the
//! exit record (watchers, the stop reason, waiting for it), and the guard
//! that runs user code.
//!
//! An ordinary actor ([`ActorCell`](super::cell)) and a parallel one
//! (`parallel::SharedCell`) both own one [`ExitRecord`] and finish through
//! [`ExitRecord::publish`], so both can be joined, watched, monitored,
//! linked and listened to the same way.
//!
//! Invariants:
//! * An exit record goes `Running -> Stopped { told: false } -> Stopped {
//!   told: true }` exactly once. Watchers registered while running are run
//!   once, outside the lock, on the thread that stops the actor; a watcher
//!   registered after the stop runs at once on the registering thread.
//! * `told` is set only after every watcher has run, and joiners wait for
//!   it: once `join` returns, the actor's monitors (a registry's cleanup, a
//!   supervisor's `Down`) have done their work.
//! * The record's lock (`engine::lock::ShortLock`, one atomic per pass) is
//!   held for a few instructions at a time, never across user code. A
//!   blocked joiner parks on the record's address (`parking_lot_core`),
//!   outside the lock: it marks itself `parked` under the lock in the park's
//!   validation step, and whoever sets `told` wakes the address only if
//!   that mark is set. Validation and the wake-up serialize on the parking
//!   lot's bucket, so a joiner either sees `told` or is woken.
//! * User code (hooks, handlers, drops of actors and messages) runs under
//!   [`guard`]: a panic becomes `StopReason::Panicked` and never unwinds
//!   into a worker.

use super::error::StopReason;
use super::id::ActorId;
use crate::engine::lock::{ShortGuard, ShortLock};
use crate::engine::scheduler::Runnable;
use crate::engine::state_word as state;
use std::future::{Future, IntoFuture};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Instant;

/// A stop asked of an actor from outside its handlers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StopRequest {
    /// Refuse new messages, handle what is queued, then stop (`Normal`).
    Drain,
    /// Stop after the current message; drop the rest (`Killed`).
    Kill,
    /// As `Drain`, reason `Shutdown`.
    Shutdown,
    /// As `Kill`, reason `Shutdown` (shutdown past its deadline).
    ShutdownNow,
}

impl StopRequest {
    /// The state bits that carry this request.
    pub(crate) fn bits(self) -> usize {
        match self {
            StopRequest::Drain => state::STOP_DRAIN,
            StopRequest::Kill => state::STOP_NOW,
            StopRequest::Shutdown => state::STOP_DRAIN | state::SHUTDOWN,
            StopRequest::ShutdownNow => state::STOP_NOW | state::SHUTDOWN,
        }
    }
}

/// The stop reason that state bits with a stop request imply: `Shutdown`
/// if the system asked, `Killed` for a kill, `Normal` for a drain.
pub(crate) fn reason_from_bits(bits: usize) -> StopReason {
    if bits & state::SHUTDOWN != 0 {
        StopReason::Shutdown
    } else if bits & state::STOP_NOW != 0 {
        StopReason::Killed
    } else {
        StopReason::Normal
    }
}

/// A live actor as the system's actor table sees it: something the
/// scheduler can run and shutdown can stop.
pub(crate) trait Stoppable: Runnable {
    /// Asks the actor to stop.
    fn request_stop(&self, kind: StopRequest);

    /// What the stall watchdog reads of it (`actor::stall`); `None` for
    /// kinds whose turns are not watched.
    fn describe(&self) -> Option<super::stall::Described> {
        None
    }
}

/// What a monitor delivers: which actor stopped, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Down {
    /// The actor that stopped.
    pub id: ActorId,
    /// Why it stopped.
    pub reason: StopReason,
}

/// Identifies one watcher, to cancel it with
/// [`ActorRef::demonitor`](crate::ActorRef::demonitor).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WatchId(u64);

/// Watch ids come in per-thread blocks (as actor ids do), so a watch
/// touches no counter shared by every thread.
const WATCH_BLOCK: u64 = 1024;
static NEXT_WATCH_BLOCK: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// (next id, end of this thread's block)
    static WATCH_IDS: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

impl WatchId {
    pub(crate) fn next() -> Self {
        WATCH_IDS.with(|ids| {
            let (mut next, mut end) = ids.get();
            if next == end {
                next = NEXT_WATCH_BLOCK.fetch_add(1, Ordering::Relaxed) * WATCH_BLOCK;
                end = next + WATCH_BLOCK;
            }
            ids.set((next + 1, end));
            WatchId(next)
        })
    }
}

/// The one hook for code that watches many actors (a registry, a metrics
/// table): told the stopped actor's id, the token it was registered with,
/// and the reason. Registering costs no allocation per actor: the first
/// listener of an actor sits inline in its exit record.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use troupe::actor::StopListener;
/// use troupe::{Actor, ActorId, ActorSystem, Context, StopReason};
///
/// #[derive(Default)]
/// struct Log(Mutex<Vec<(u64, StopReason)>>);
/// impl StopListener for Log {
///     fn actor_stopped(&self, _id: ActorId, token: u64, reason: &StopReason) {
///         self.0.lock().unwrap().push((token, reason.clone()));
///     }
/// }
/// struct Idle;
/// impl Actor for Idle {
///     type Msg = ();
///     fn handle(&mut self, _: (), _: &mut Context<'_, Self>) {}
/// }
///
/// let system = ActorSystem::builder().threads(1).build();
/// let log = Arc::new(Log::default());
/// let a = system.spawn(Idle);
/// assert!(a.listen(log.clone(), 7));
/// a.stop();
/// a.join();
/// assert_eq!(*log.0.lock().unwrap(), vec![(7, StopReason::Normal)]);
/// ```
pub trait StopListener: Send + Sync {
    /// The actor `id`, listened to with `token`, stopped for `reason`.
    fn actor_stopped(&self, id: ActorId, token: u64, reason: &StopReason);
}

pub(crate) use super::watcher::Watcher;

/// A listener and the token it is told.
type Listening = (Arc<dyn StopListener>, u64);

/// Someone told when the actor stops.
enum Extra {
    Listener(Listening),
    Once(WatchId, Watcher),
    /// An async joiner: told after every other watcher.
    Joiner(oneshot::Sender<StopReason>),
    /// The actor's undelivered hook (`undelivered.rs`), typed by its cell
    /// (an `undelivered::Hook<A::Msg>`): not told here, but taken out by
    /// the finalizer before it drains the mailbox
    /// ([`ExitRecord::take_undelivered`]).
    Undelivered(Box<dyn std::any::Any + Send>),
}

/// Who is told when the actor stops, in registration order.
#[derive(Default)]
struct Watchers {
    /// The first, inline: most actors get at most one watcher (a monitor, a
    /// registry entry, a supervisor's link), which then costs no allocation.
    first: Option<Extra>,
    rest: Vec<Extra>,
}

impl Watchers {
    fn push(&mut self, x: Extra) {
        if self.first.is_none() {
            self.first = Some(x);
        } else {
            self.rest.push(x);
        }
    }

    fn iter(&self) -> impl Iterator<Item = &Extra> {
        self.first.iter().chain(&self.rest)
    }

    /// Takes out the first entry that `hit` matches.
    fn remove(&mut self, hit: impl Fn(&Extra) -> bool) -> Option<Extra> {
        if self.first.as_ref().is_some_and(&hit) {
            let x = self.first.take();
            // Keep `first` filled while entries remain: `publish` reads an
            // empty `first` as no watcher at all.
            if !self.rest.is_empty() {
                self.first = Some(self.rest.remove(0));
            }
            return x;
        }
        let at = self.rest.iter().position(hit)?;
        Some(self.rest.remove(at))
    }
}

enum Exit {
    /// `requested`: the reason a `stop_with` asked for, if any.
    Running {
        watchers: Watchers,
        requested: Option<Box<StopReason>>,
    },
    /// `told`: every watcher has run; joiners wait for it. `late`: async
    /// joiners that came while the watchers ran.
    Stopped {
        reason: StopReason,
        told: bool,
        /// Boxed: rare, and a thin pointer keeps the record (in every
        /// cell) 16 bytes smaller than an inline `Vec` would.
        #[allow(clippy::box_collection)]
        late: Option<Box<Vec<oneshot::Sender<StopReason>>>>,
    },
}

fn same_listener(a: &Arc<dyn StopListener>, b: &Arc<dyn StopListener>) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

/// What the record's lock guards.
struct Guarded {
    exit: Exit,
    /// A blocked joiner may be parked on the record's address.
    parked: bool,
}

/// An actor's exit: who to tell, and the reason once stopped; blocked
/// joiners park on its address. See the module docs for its states.
pub(crate) struct ExitRecord {
    state: ShortLock<Guarded>,
}

impl ExitRecord {
    pub(crate) fn new() -> Self {
        Self::with_watcher(None)
    }

    /// A record with `first` as its first watcher: written in before the
    /// record is shared, so without the lock (`Context::spawn_monitored`).
    pub(crate) fn with_watcher(first: Option<(WatchId, Watcher)>) -> Self {
        ExitRecord {
            state: ShortLock::new(Guarded {
                exit: Exit::Running {
                    watchers: Watchers {
                        first: first.map(|(id, w)| Extra::Once(id, w)),
                        rest: Vec::new(),
                    },
                    requested: None,
                },
                parked: false,
            }),
        }
    }

    /// The exit, under the record's lock (held for the guard's life: keep
    /// it short, no user code).
    #[inline]
    fn exit(&self) -> ShortGuard<'_, Guarded> {
        self.state.lock()
    }

    /// The key blocked joiners park on.
    fn park_key(&self) -> usize {
        self as *const Self as usize
    }

    /// Wakes the joiners parked on this record, if `parked` says any may be.
    #[inline]
    fn wake_parked(&self, parked: bool) {
        if parked {
            self.unpark_all();
        }
    }

    #[cold]
    #[inline(never)]
    fn unpark_all(&self) {
        // SAFETY: the key is this record's address, which no other parking
        // user shares; no callback runs here.
        unsafe {
            parking_lot_core::unpark_all(self.park_key(), parking_lot_core::DEFAULT_UNPARK_TOKEN)
        };
    }

    /// Registers `w` to run when the actor stops; runs it now if it has.
    pub(crate) fn add_watcher(&self, id: ActorId, w: Watcher) -> WatchId {
        let watch = WatchId::next();
        let mut g = self.exit();
        match &mut g.exit {
            Exit::Running { watchers, .. } => watchers.push(Extra::Once(watch, w)),
            Exit::Stopped { reason, .. } => {
                let reason = reason.clone();
                drop(g);
                w.call(id, &reason);
            }
        }
        watch
    }

    /// Keeps `hook`, the actor's undelivered hook, for the finalizer
    /// (`undelivered.rs`). Once per spawn of an actor that has one.
    pub(crate) fn keep_undelivered(&self, hook: Box<dyn std::any::Any + Send>) {
        if let Exit::Running { watchers, .. } = &mut self.exit().exit {
            watchers.push(Extra::Undelivered(hook));
        }
    }

    /// The finalizer: takes out the undelivered hook kept with
    /// [`keep_undelivered`](Self::keep_undelivered), if any.
    pub(crate) fn take_undelivered(&self) -> Option<Box<dyn std::any::Any + Send>> {
        let x = {
            let mut g = self.exit();
            let Exit::Running { watchers, .. } = &mut g.exit else {
                return None;
            };
            watchers.remove(|x| matches!(x, Extra::Undelivered(_)))
        };
        match x {
            Some(Extra::Undelivered(hook)) => Some(hook),
            // `remove` gives back only what `hit` matched; nothing else is
            // dropped here, under the lock or outside it.
            _ => None,
        }
    }

    /// Cancels a watcher; `false` if it has run (or is running) already.
    pub(crate) fn remove_watcher(&self, watch: WatchId) -> bool {
        let removed = {
            let mut g = self.exit();
            let Exit::Running { watchers, .. } = &mut g.exit else {
                return false;
            };
            let Some(x) = watchers.remove(|x| matches!(x, Extra::Once(k, _) if *k == watch)) else {
                return false;
            };
            x
        };
        // Dropped outside the lock: it is user code.
        drop(removed);
        true
    }

    /// Tells `listener` (with `token`) when the actor stops. `false` (and
    /// nothing registered) if it has stopped already.
    pub(crate) fn add_listener(&self, listener: Arc<dyn StopListener>, token: u64) -> bool {
        let mut g = self.exit();
        let Exit::Running { watchers, .. } = &mut g.exit else {
            return false;
        };
        watchers.push(Extra::Listener((listener, token)));
        true
    }

    /// The token `listener` listens with, while the actor runs.
    pub(crate) fn listener_token(&self, listener: &Arc<dyn StopListener>) -> Option<u64> {
        let g = self.exit();
        let Exit::Running { watchers, .. } = &g.exit else {
            return None;
        };
        let token = watchers.iter().find_map(|x| match x {
            Extra::Listener((l, t)) if same_listener(l, listener) => Some(*t),
            _ => None,
        });
        token
    }

    /// Stops telling `listener`; `false` if it was not listening (or the
    /// actor has stopped and it is being told).
    pub(crate) fn remove_listener(&self, listener: &Arc<dyn StopListener>) -> bool {
        let removed = {
            let mut g = self.exit();
            let Exit::Running { watchers, .. } = &mut g.exit else {
                return false;
            };
            watchers.remove(|x| matches!(x, Extra::Listener((l, _)) if same_listener(l, listener)))
        };
        // Dropped outside the lock: it may be the listener's last reference.
        removed.is_some()
    }

    /// Watchers registered and not yet run.
    #[cfg(test)]
    pub(crate) fn watcher_count(&self) -> usize {
        match &self.exit().exit {
            Exit::Running { watchers, .. } => watchers.iter().count(),
            Exit::Stopped { .. } => 0,
        }
    }

    /// Remembers the reason a `stop_with` asked for (the first one wins).
    pub(crate) fn request_reason(&self, reason: StopReason) {
        if let Exit::Running { requested, .. } = &mut self.exit().exit {
            requested.get_or_insert_with(|| Box::new(reason));
        }
    }

    /// The reason a `stop_with` asked for, if any.
    pub(crate) fn requested_reason(&self) -> Option<StopReason> {
        match &self.exit().exit {
            Exit::Running { requested, .. } => requested.as_deref().cloned(),
            Exit::Stopped { .. } => None,
        }
    }

    /// The stop reason, once stopped.
    pub(crate) fn reason(&self) -> Option<StopReason> {
        match &self.exit().exit {
            Exit::Running { .. } => None,
            Exit::Stopped { reason, .. } => Some(reason.clone()),
        }
    }

    /// Blocks until the actor has stopped and its watchers have run, or the
    /// deadline passes (`None`).
    pub(crate) fn wait(&self, deadline: Option<Instant>) -> Option<StopReason> {
        let told = |g: &Guarded| match &g.exit {
            Exit::Stopped {
                reason, told: true, ..
            } => Some(reason.clone()),
            _ => None,
        };
        loop {
            if let Some(reason) = told(&self.exit()) {
                return Some(reason);
            }
            let validate = || {
                let mut g = self.exit();
                let pending = told(&g).is_none();
                // Marked under the lock that `told` is set under: the
                // publisher sees the mark, or we see `told` here.
                g.parked |= pending;
                pending
            };
            // SAFETY: the key is this record's address (alive: the caller
            // borrows it); `validate` takes only the record's short lock and
            // cannot panic; the other callbacks do nothing.
            let r = unsafe {
                parking_lot_core::park(
                    self.park_key(),
                    validate,
                    || {},
                    |_, _| {},
                    parking_lot_core::DEFAULT_PARK_TOKEN,
                    deadline,
                )
            };
            if r == parking_lot_core::ParkResult::TimedOut {
                return told(&self.exit());
            }
        }
    }

    /// A future of the stop reason, ready once the watchers have run.
    pub(crate) fn join_async(&self) -> JoinFuture {
        let mut g = self.exit();
        match &mut g.exit {
            Exit::Stopped {
                reason, told: true, ..
            } => JoinFuture(JoinState::Ready(Some(reason.clone()))),
            Exit::Stopped { late, .. } => {
                // The watchers are running: be told when they are done.
                let (tx, rx) = oneshot::channel();
                late.get_or_insert_with(Box::default).push(tx);
                JoinFuture(JoinState::Waiting(rx.into_future()))
            }
            Exit::Running { watchers, .. } => {
                let (tx, rx) = oneshot::channel();
                watchers.push(Extra::Joiner(tx));
                JoinFuture(JoinState::Waiting(rx.into_future()))
            }
        }
    }

    /// Records the stop and tells everyone: every watcher and listener, in
    /// registration order, then async joiners; then wakes the blocked
    /// joiners. Called once, by whoever finalizes the actor. Returns how many
    /// watchers panicked (each is logged; the others still run).
    ///
    /// The common cases take short paths: no watcher (one pass through the
    /// lock, the reason moved, not cloned) and one watcher (run directly,
    /// no list walked).
    pub(crate) fn publish(&self, id: ActorId, reason: StopReason) -> u64 {
        let (first, rest) = {
            let mut g = self.exit();
            let Exit::Running { watchers, .. } = &mut g.exit else {
                return 0;
            };
            let Some(first) = watchers.first.take() else {
                // No watcher to run (most actors): joiners may go at once.
                g.exit = Exit::Stopped {
                    reason,
                    told: true,
                    late: None,
                };
                let parked = std::mem::take(&mut g.parked);
                drop(g);
                self.wake_parked(parked);
                return 0;
            };
            let rest = std::mem::take(&mut watchers.rest);
            g.exit = Exit::Stopped {
                reason: reason.clone(),
                told: false,
                late: None,
            };
            (first, rest)
        };
        // Outside the lock: a watcher may watch, or ask for the reason.
        let mut joiners = Vec::new();
        let mut panics = 0;
        let mut tell = |x: Extra| {
            let r = match x {
                Extra::Listener((l, token)) => guard(|| l.actor_stopped(id, token, &reason)),
                Extra::Once(_, w) => guard(|| w.call(id, &reason)),
                Extra::Joiner(tx) => {
                    joiners.push(tx);
                    Ok(())
                }
                // Taken by the finalizer before it publishes; one left
                // (never) is dropped: the mailbox is empty by now.
                Extra::Undelivered(hook) => {
                    drop(hook);
                    Ok(())
                }
            };
            if let Err(reason) = r {
                panics += 1;
                log_watcher_panic(reason);
            }
        };
        tell(first);
        if !rest.is_empty() {
            rest.into_iter().for_each(&mut tell);
        }
        let parked = {
            let mut g = self.exit();
            if let Exit::Stopped { told, late, .. } = &mut g.exit {
                *told = true;
                if let Some(late) = late.take() {
                    joiners.extend(*late);
                }
            }
            std::mem::take(&mut g.parked)
        };
        self.wake_parked(parked);
        if !joiners.is_empty() {
            for tx in joiners {
                let _ = tx.send(reason.clone());
            }
        }
        panics
    }
}

fn log_watcher_panic(reason: StopReason) {
    tracing::error!(%reason, "a stop watcher panicked; the others still run");
}

/// The future of [`ActorRef::join_async`](crate::ActorRef::join_async).
#[must_use = "a JoinFuture does nothing unless awaited"]
pub struct JoinFuture(JoinState);

enum JoinState {
    Ready(Option<StopReason>),
    Waiting(oneshot::AsyncReceiver<StopReason>),
}

impl Future for JoinFuture {
    type Output = StopReason;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<StopReason> {
        match &mut self.get_mut().0 {
            JoinState::Ready(r) => Poll::Ready(r.take().unwrap_or(StopReason::Killed)),
            // A dropped sender means the record went away with its actor
            // unpublished, which only a kill at process teardown does.
            JoinState::Waiting(rx) => Pin::new(rx)
                .poll(cx)
                .map(|r| r.unwrap_or(StopReason::Killed)),
        }
    }
}

/// The message of a panic payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

/// Runs user code; a panic comes back as `StopReason::Panicked` instead of
/// unwinding into the runtime.
#[inline]
pub(crate) fn guard<R>(f: impl FnOnce() -> R) -> Result<R, StopReason> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| StopReason::Panicked(panic_message(&*p)))
}

/// The methods every kind of actor reference has over its cell's exit
/// record (`ActorRef`, `parallel::SharedRef`): written once for both.
macro_rules! join_methods {
    () => {
        /// Blocks until the actor has stopped and its watchers have run (so
        /// a registry no longer lists it); returns why. Not from inside an
        /// actor.
        pub fn join(&self) -> $crate::StopReason {
            self.cell
                .exit
                .wait(None)
                .unwrap_or($crate::StopReason::Killed)
        }

        /// As [`join`](Self::join), giving up after `timeout` (`None`).
        pub fn join_timeout(&self, timeout: std::time::Duration) -> Option<$crate::StopReason> {
            self.cell
                .exit
                .wait($crate::engine::deadline::after(timeout))
        }

        /// As [`join`](Self::join), for async code: a future of the stop
        /// reason, ready once the actor's watchers have run. Any executor
        /// works.
        pub fn join_async(&self) -> $crate::actor::JoinFuture {
            self.cell.exit.join_async()
        }

        /// Why the actor stopped, or `None` while it runs.
        pub fn stop_reason(&self) -> Option<$crate::StopReason> {
            self.cell.exit.reason()
        }

        /// The actor's id.
        pub fn id(&self) -> $crate::ActorId {
            self.cell.id
        }
    };
}
pub(crate) use join_methods;
