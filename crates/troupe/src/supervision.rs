//! Supervision: monitors, links, supervisors and stable references to
//! supervised children (Erlang/OTP's model on Troupe's typed actors).
//!
//! * **Monitors** ([`monitor`], or [`Context::watch`](crate::Context::watch)
//!   from a handler) are one-way: when the target stops, the watcher gets a
//!   message built from a [`Down`] carrying the [`StopReason`]: `Normal`,
//!   `Panicked(message)`, `Killed` or `Shutdown`.
//! * **Links** ([`link`], [`link_trapping`]) are two-way: when one side stops
//!   *abnormally* (`Panicked` or `Killed`, see [`is_abnormal`]) the other is
//!   killed, unless that side traps exits, in which case it gets a [`Down`]
//!   message instead (for every stop, normal ones included, as Erlang's
//!   `trap_exit` does). A stop by shutdown or a normal stop does not
//!   propagate. The killed side's reason is `Killed` (the runtime has no
//!   "kill with this reason" yet).
//! * **Supervisors** ([`SupervisorSpec`]) start children from [`ChildSpec`]s
//!   (a factory building a fresh actor per start), restart them by
//!   [`Restart`] policy and [`Strategy`], and give up past a restart
//!   intensity (more than `max_restarts` within `period`): they then kill
//!   their children and stop with `StopReason::Panicked("restart intensity
//!   exceeded: ...")`, which their own supervisor sees as a failure (trees).
//! * **Stable references** ([`SupervisedRef`]) follow a child across its
//!   restarts.
//!
//! # Protocol
//!
//! A supervisor starts its children in order, synchronously, when it is
//! spawned (so a [`SupervisedRef`] works as soon as `spawn` returns), and
//! monitors each one. Every exit reaches it as a message carrying the
//! instance's id; an exit of an instance it no longer tracks is ignored.
//! To restart a set of children (`OneForAll`, `RestForOne`) it kills the
//! running siblings and waits for each of their exits before starting
//! fresh instances, in spec order: old and new instances never overlap.
//! Restart intensity counts restarts of failed children (siblings killed
//! along with them do not count).
//!
//! When the supervisor stops (normally, killed or shut down) it asks its
//! children to stop, last started first; if it fails (panics, or gives up
//! on intensity) it kills them.
//!
//! # Messages during a restart
//!
//! Messages already in a failed instance's mailbox are dropped with it and
//! counted in the system's dropped-message count (asks among them fail at
//! once with `AskError::ActorStopped`), as in Erlang. A message sent through
//! a [`SupervisedRef`] while the child is down is **returned as an error**
//! ([`SendError::Stopped`] with the message inside), never silently lost;
//! [`SupervisedRef::tell_wait`] retries on the next instance for up to a
//! timeout instead (plain threads only).

use crate::actor::{Actor, ActorId, ActorRef, Context, WatchId};
use crate::ask::ReplyTo;
use crate::error::{AskError, SendError, StopReason};
use crate::system::{SpawnOptions, SystemHandle};
use arc_swap::ArcSwapOption;
use std::any::Any;
use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// What a monitor or a trapping link delivers: which actor stopped, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Down {
    /// The actor that stopped.
    pub id: ActorId,
    /// Why it stopped.
    pub reason: StopReason,
}

/// Whether a stop propagates over a link: a panic or a kill. Normal stops
/// and system shutdown do not.
pub fn is_abnormal(reason: &StopReason) -> bool {
    matches!(reason, StopReason::Panicked(_) | StopReason::Killed)
}

fn weak_of<A: Actor>(r: &ActorRef<A>) -> Weak<crate::cell::ActorCell<A>> {
    Arc::downgrade(&r.cell)
}

fn upgrade<A: Actor>(w: &Weak<crate::cell::ActorCell<A>>) -> Option<ActorRef<A>> {
    w.upgrade().map(|cell| ActorRef { cell })
}

/// Removes one watcher from the actor it watches (if that actor still exists).
type Cancel = Box<dyn FnOnce() + Send>;

/// A monitor or link that can be switched off; dropping it leaves it on.
#[derive(Clone)]
pub struct Link {
    active: Arc<AtomicBool>,
    /// The watchers it installed, removed again by `unlink` so that a
    /// long-lived actor monitored and unmonitored many times does not
    /// collect dead watchers.
    cancels: Arc<parking_lot::Mutex<Vec<Cancel>>>,
}

impl fmt::Debug for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Link")
            .field("active", &self.is_active())
            .finish()
    }
}

impl Link {
    fn new() -> Self {
        Link {
            active: Arc::new(AtomicBool::new(true)),
            cancels: Arc::default(),
        }
    }

    /// Notes the watcher `watch` on `target`, for `unlink` to remove.
    fn installed<B: Actor>(&self, target: &ActorRef<B>, watch: WatchId) {
        let cell = Arc::downgrade(&target.cell);
        self.cancels.lock().push(Box::new(move || {
            if let Some(cell) = cell.upgrade() {
                cell.remove_watcher(watch);
            }
        }));
    }

    /// Switches it off: no message or kill comes from it from now on, and
    /// its watchers leave the actors they were on.
    pub fn unlink(&self) {
        self.active.store(false, Ordering::Release);
        let cancels = std::mem::take(&mut *self.cancels.lock());
        for cancel in cancels {
            cancel();
        }
    }

    /// Whether it is still on (it turns off by itself once it has fired).
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }
}

/// Monitors `target` on behalf of `watcher` (usable from plain code; inside
/// a handler [`Context::watch`](crate::Context::watch) does the same): when
/// `target` stops, `watcher` receives `to_msg(Down)`, at once if it already
/// has. One-way: nothing happens to `target` when `watcher` stops. The
/// monitor holds only a weak reference to the watcher.
///
/// ```
/// use troupe::{Actor, ActorSystem, Context, StopReason};
/// use troupe::supervision::{monitor, Down};
///
/// struct Worker;
/// impl Actor for Worker {
///     type Msg = ();
///     fn handle(&mut self, _: (), _: &mut Context<'_, Self>) { panic!("boom") }
/// }
/// struct Watcher(std::sync::mpsc::Sender<Down>);
/// impl Actor for Watcher {
///     type Msg = Down;
///     fn handle(&mut self, d: Down, _: &mut Context<'_, Self>) { self.0.send(d).unwrap(); }
/// }
///
/// let system = ActorSystem::builder().threads(2).build();
/// let (tx, rx) = std::sync::mpsc::channel();
/// let watcher = system.spawn(Watcher(tx));
/// let worker = system.spawn(Worker);
/// monitor(&watcher, &worker, |down| down);
/// worker.tell(()).unwrap();
/// let down = rx.recv().unwrap();
/// assert_eq!(down.reason, StopReason::Panicked("boom".into()));
/// # system.shutdown();
/// ```
pub fn monitor<A: Actor, B: Actor>(
    watcher: &ActorRef<A>,
    target: &ActorRef<B>,
    to_msg: impl FnOnce(Down) -> A::Msg + Send + 'static,
) -> Link {
    let link = Link::new();
    down_on_stop(watcher, target, to_msg, &link);
    link
}

/// Sends `watcher` `to_msg(Down)` when `target` stops, unless `link` was
/// switched off (or has fired) by then.
fn down_on_stop<A: Actor, B: Actor>(
    watcher: &ActorRef<A>,
    target: &ActorRef<B>,
    to_msg: impl FnOnce(Down) -> A::Msg + Send + 'static,
    link: &Link,
) {
    let active = link.active.clone();
    let w = weak_of(watcher);
    let watch = target.on_stop(move |id, reason| {
        if active.swap(false, Ordering::AcqRel) {
            if let Some(w) = upgrade(&w) {
                let _ = w.tell(to_msg(Down {
                    id,
                    reason: reason.clone(),
                }));
            }
        }
    });
    link.installed(target, watch);
}

/// Kills `other` when `on` stops abnormally, as part of `link`.
fn kill_on_abnormal<A: Actor, B: Actor>(on: &ActorRef<A>, other: &ActorRef<B>, link: &Link) {
    let w = weak_of(other);
    let active = link.active.clone();
    let watch = on.on_stop(move |_, reason| {
        if is_abnormal(reason) && active.swap(false, Ordering::AcqRel) {
            if let Some(o) = upgrade(&w) {
                o.kill();
            }
        }
    });
    link.installed(on, watch);
}

/// Links `a` and `b` both ways: if either stops abnormally (panic or kill),
/// the other is killed. Neither traps. Holds only weak references.
///
/// ```
/// use troupe::{Actor, ActorSystem, Context, StopReason};
/// struct Idle;
/// impl Actor for Idle {
///     type Msg = ();
///     fn handle(&mut self, _: (), _: &mut Context<'_, Self>) { panic!("crash") }
/// }
/// let system = ActorSystem::builder().threads(2).build();
/// let a = system.spawn(Idle);
/// let b = system.spawn(Idle);
/// troupe::supervision::link(&a, &b);
/// a.tell(()).unwrap();
/// assert_eq!(b.join(), StopReason::Killed);
/// # system.shutdown();
/// ```
pub fn link<A: Actor, B: Actor>(a: &ActorRef<A>, b: &ActorRef<B>) -> Link {
    let link = Link::new();
    kill_on_abnormal(a, b, &link);
    kill_on_abnormal(b, a, &link);
    link
}

/// Links `trapper` and `other`, with `trapper` trapping exits: when `other`
/// stops (for any reason) `trapper` receives `to_msg(Down)` instead of being
/// killed; when `trapper` stops abnormally, `other` is killed.
pub fn link_trapping<A: Actor, B: Actor>(
    trapper: &ActorRef<A>,
    other: &ActorRef<B>,
    to_msg: impl FnOnce(Down) -> A::Msg + Send + 'static,
) -> Link {
    let link = Link::new();
    kill_on_abnormal(trapper, other, &link);
    down_on_stop(trapper, other, to_msg, &link);
    link
}

/// How a supervisor restarts its children when one fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Restart only the child that stopped.
    OneForOne,
    /// Stop every other child, then restart them all in spec order.
    OneForAll,
    /// Stop the children started after it, then restart it and them.
    RestForOne,
}

/// When a child is restarted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restart {
    /// Always (unless the system is shutting down).
    Permanent,
    /// Only after an abnormal stop (a panic or a kill).
    Transient,
    /// Never: once stopped it is removed.
    Temporary,
}

impl Restart {
    fn restarts_after(self, reason: &StopReason) -> bool {
        match self {
            Restart::Permanent => *reason != StopReason::Shutdown,
            Restart::Transient => is_abnormal(reason),
            Restart::Temporary => false,
        }
    }
}

/// A running child, whatever its actor type.
trait Child: Send {
    fn id(&self) -> ActorId;
    fn stop(&self);
    fn kill(&self);
    fn watch(&self, sup: &ActorRef<Supervisor>, index: usize);
}

impl<A: Actor> Child for ActorRef<A> {
    fn id(&self) -> ActorId {
        ActorRef::id(self)
    }
    fn stop(&self) {
        ActorRef::stop(self)
    }
    fn kill(&self) {
        ActorRef::kill(self)
    }
    fn watch(&self, sup: &ActorRef<Supervisor>, index: usize) {
        let sup = weak_of(sup);
        self.on_stop(move |id, reason| {
            if let Some(sup) = upgrade(&sup) {
                let _ = sup.tell(SupervisorMsg(Cmd::Exited {
                    index,
                    id,
                    reason: reason.clone(),
                }));
            }
        });
    }
}

/// Where a child's current instance is published for [`SupervisedRef`]s.
struct RefSlot<A: Actor> {
    current: ArcSwapOption<ActorRef<A>>,
    /// Instances started so far.
    generation: AtomicU64,
    /// No further instance will be started.
    closed: AtomicBool,
}

trait SlotCtl: Send + Sync {
    fn close(&self);
    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

impl<A: Actor> SlotCtl for RefSlot<A> {
    fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }
    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

type Starter = Arc<dyn Fn(&SystemHandle, &SpawnOptions) -> Box<dyn Child> + Send + Sync>;

/// How to start (and restart) one child: a name, a factory that builds a
/// fresh actor for every start, a [`Restart`] policy, spawn options.
#[derive(Clone)]
pub struct ChildSpec {
    name: String,
    restart: Restart,
    options: SpawnOptions,
    start: Starter,
    slot: Arc<dyn SlotCtl>,
}

impl fmt::Debug for ChildSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildSpec")
            .field("name", &self.name)
            .field("restart", &self.restart)
            .finish()
    }
}

impl ChildSpec {
    /// A permanent child built by `factory` (called once per start).
    pub fn new<A: Actor>(
        name: impl Into<String>,
        factory: impl Fn() -> A + Send + Sync + 'static,
    ) -> Self {
        let slot: Arc<RefSlot<A>> = Arc::new(RefSlot {
            current: ArcSwapOption::empty(),
            generation: AtomicU64::new(0),
            closed: AtomicBool::new(false),
        });
        let s = slot.clone();
        ChildSpec {
            name: name.into(),
            restart: Restart::Permanent,
            options: SpawnOptions::new(),
            start: Arc::new(move |system, options| {
                let actor = system.spawn_with(factory(), options.clone());
                s.current.store(Some(Arc::new(actor.clone())));
                s.generation.fetch_add(1, Ordering::AcqRel);
                Box::new(actor)
            }),
            slot,
        }
    }

    /// A child that is itself a supervisor (a supervision tree): every
    /// restart starts a fresh supervisor from `spec`, with fresh children.
    pub fn supervisor(name: impl Into<String>, spec: SupervisorSpec) -> Self {
        let mut child = ChildSpec::new::<Supervisor>(name, || unreachable!());
        let slot: Arc<RefSlot<Supervisor>> = child
            .slot
            .clone()
            .as_any()
            .downcast()
            .unwrap_or_else(|_| unreachable!("slot of a Supervisor spec"));
        child.start = Arc::new(move |system, options| {
            let sup = spec.clone().spawn_with(system, options.clone());
            slot.current.store(Some(Arc::new(sup.actor.clone())));
            slot.generation.fetch_add(1, Ordering::AcqRel);
            Box::new(sup.actor)
        });
        child
    }

    /// The restart policy (default [`Restart::Permanent`]).
    pub fn restart(mut self, restart: Restart) -> Self {
        self.restart = restart;
        self
    }

    /// Spawn options for every instance (mailbox, dispatcher).
    pub fn spawn_options(mut self, options: SpawnOptions) -> Self {
        self.options = options;
        self
    }

    /// The child's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A stable reference that follows this child across restarts; `None`
    /// if `A` is not the child's actor type. Take it before or after
    /// spawning the supervisor: clones of a spec share it.
    pub fn supervised_ref<A: Actor>(&self) -> Option<SupervisedRef<A>> {
        let slot = self.slot.clone().as_any().downcast::<RefSlot<A>>().ok()?;
        Some(SupervisedRef { slot })
    }
}

/// A reference to a supervised child that keeps working across restarts:
/// it always sends to the current instance.
///
/// While the child is down (between a failure and its restart, or for good
/// once it is not restarted), [`tell`](Self::tell) returns
/// `SendError::Stopped(msg)`: the message comes back to the caller, never
/// silently lost. [`tell_wait`](Self::tell_wait) waits for the next instance
/// instead. See the [module docs](self) for messages already queued in a
/// failed instance.
pub struct SupervisedRef<A: Actor> {
    slot: Arc<RefSlot<A>>,
}

impl<A: Actor> Clone for SupervisedRef<A> {
    fn clone(&self) -> Self {
        SupervisedRef {
            slot: self.slot.clone(),
        }
    }
}

impl<A: Actor> fmt::Debug for SupervisedRef<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SupervisedRef(generation {})", self.generation())
    }
}

impl<A: Actor> SupervisedRef<A> {
    /// The current instance, if one has been started.
    pub fn current(&self) -> Option<ActorRef<A>> {
        self.slot.current.load_full().map(|a| (*a).clone())
    }

    /// Sends to the current instance; `Stopped(msg)` while it is down.
    #[inline]
    pub fn tell(&self, msg: A::Msg) -> Result<(), SendError<A::Msg>> {
        match &*self.slot.current.load() {
            Some(actor) => actor.tell(msg),
            None => Err(SendError::Stopped(msg)),
        }
    }

    /// Sends to the current instance; if it is down, waits (polling, up to
    /// `timeout`) for the supervisor to start the next one and sends there.
    /// Fails with the message at once if the child will not be restarted.
    /// Blocks: plain threads only, not from inside an actor.
    pub fn tell_wait(&self, msg: A::Msg, timeout: Duration) -> Result<(), SendError<A::Msg>> {
        let deadline = Instant::now() + timeout;
        let mut msg = msg;
        let mut pause = Duration::from_micros(50);
        loop {
            match self.tell(msg) {
                Ok(()) => return Ok(()),
                Err(SendError::Stopped(m)) => {
                    if self.is_closed() || Instant::now() >= deadline {
                        return Err(SendError::Stopped(m));
                    }
                    msg = m;
                }
                Err(e) => return Err(e),
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(5));
        }
    }

    /// Asks the current instance (see [`ActorRef::ask`]).
    pub fn ask<R: Send + 'static>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> A::Msg,
        timeout: Duration,
    ) -> Result<R, AskError> {
        match self.current() {
            Some(actor) => actor.ask(make, timeout),
            None => Err(AskError::ActorStopped),
        }
    }

    /// Instances started so far (1 after the first start, +1 per restart).
    pub fn generation(&self) -> u64 {
        self.slot.generation.load(Ordering::Acquire)
    }

    /// Waits (polling) until more than `generation` instances have been
    /// started; returns the new instance. Plain threads only.
    pub fn wait_generation(&self, generation: u64, timeout: Duration) -> Option<ActorRef<A>> {
        let deadline = Instant::now() + timeout;
        loop {
            if self.generation() > generation {
                return self.current();
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Whether the supervisor will start no further instance (the child was
    /// removed, or its supervisor stopped).
    pub fn is_closed(&self) -> bool {
        self.slot.closed.load(Ordering::Acquire)
    }
}

/// A supervisor's configuration: strategy, restart intensity, children.
///
/// ```
/// use troupe::{Actor, ActorSystem, Context};
/// use troupe::supervision::{ChildSpec, Restart, Strategy, SupervisorSpec};
/// use std::time::Duration;
///
/// struct Worker;
/// impl Actor for Worker {
///     type Msg = &'static str;
///     fn handle(&mut self, m: &'static str, _: &mut Context<'_, Self>) {
///         if m == "crash" { panic!("asked to crash") }
///     }
/// }
///
/// let system = ActorSystem::builder().threads(2).build();
/// let worker = ChildSpec::new("worker", || Worker).restart(Restart::Permanent);
/// let stable = worker.supervised_ref::<Worker>().unwrap();
/// let sup = SupervisorSpec::new(Strategy::OneForOne)
///     .intensity(3, Duration::from_secs(5))
///     .child(worker)
///     .spawn(&system);
/// stable.tell("crash").unwrap();
/// // The same reference reaches the restarted instance.
/// assert!(stable.wait_generation(1, Duration::from_secs(5)).is_some());
/// stable.tell_wait("hello", Duration::from_secs(5)).unwrap();
/// sup.stop();
/// # system.shutdown();
/// ```
#[derive(Clone, Debug)]
pub struct SupervisorSpec {
    strategy: Strategy,
    max_restarts: usize,
    period: Duration,
    children: Vec<ChildSpec>,
}

impl SupervisorSpec {
    /// A supervisor with `strategy`, no children, and a restart intensity of
    /// 3 restarts within 5 seconds.
    pub fn new(strategy: Strategy) -> Self {
        SupervisorSpec {
            strategy,
            max_restarts: 3,
            period: Duration::from_secs(5),
            children: Vec::new(),
        }
    }

    /// Gives up (kills the children and stops with a `Panicked` reason
    /// saying "restart intensity exceeded") at the restart that would make
    /// more than `max_restarts` within `period`.
    pub fn intensity(mut self, max_restarts: usize, period: Duration) -> Self {
        self.max_restarts = max_restarts;
        self.period = period;
        self
    }

    /// Adds a child; children start in the order they are added.
    pub fn child(mut self, child: ChildSpec) -> Self {
        self.children.push(child);
        self
    }

    /// Starts the children (in order, before returning) and the supervisor.
    pub fn spawn(self, system: &SystemHandle) -> SupervisorRef {
        self.spawn_with(system, SpawnOptions::new())
    }

    /// As [`spawn`](Self::spawn), with spawn options for the supervisor.
    pub fn spawn_with(self, system: &SystemHandle, options: SpawnOptions) -> SupervisorRef {
        let children = self
            .children
            .iter()
            .map(|c| ChildState::Running((c.start)(system, &c.options)))
            .collect();
        let actor = system.spawn_with(
            Supervisor {
                spec: self,
                children,
                recent: VecDeque::new(),
                restarts: 0,
            },
            options,
        );
        SupervisorRef { actor }
    }
}

enum ChildState {
    Running(Box<dyn Child>),
    /// Killed by the supervisor as part of a group restart; `restart` says
    /// whether it is started again once its exit arrives.
    Terminating(Box<dyn Child>, bool),
    /// Waiting to be started (once no sibling is terminating).
    Down,
    /// Not restarted: gone for good.
    Removed,
}

/// What [`SupervisorRef::children`] reports per child.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildInfo {
    /// The spec's name.
    pub name: String,
    /// The running instance, if any.
    pub id: Option<ActorId>,
    /// Its restart policy.
    pub restart: Restart,
}

/// The supervisor actor's messages (opaque: use [`SupervisorRef`]).
pub struct SupervisorMsg(Cmd);

enum Cmd {
    Exited {
        index: usize,
        id: ActorId,
        reason: StopReason,
    },
    Children(ReplyTo<Vec<ChildInfo>>),
    Restarts(ReplyTo<u64>),
}

/// The supervisor actor; spawned by [`SupervisorSpec::spawn`].
pub struct Supervisor {
    spec: SupervisorSpec,
    children: Vec<ChildState>,
    /// Restart times within the intensity period.
    recent: VecDeque<Instant>,
    restarts: u64,
}

impl Supervisor {
    fn start_child(&mut self, index: usize, ctx: &Context<'_, Self>) {
        let spec = &self.spec.children[index];
        let child = (spec.start)(&ctx.system(), &spec.options);
        child.watch(&ctx.myself(), index);
        self.children[index] = ChildState::Running(child);
    }

    /// Starts every `Down` child in order, once no sibling is terminating.
    fn start_down(&mut self, ctx: &Context<'_, Self>) {
        if self
            .children
            .iter()
            .any(|c| matches!(c, ChildState::Terminating(..)))
        {
            return;
        }
        for i in 0..self.children.len() {
            if matches!(self.children[i], ChildState::Down) {
                self.start_child(i, ctx);
            }
        }
    }

    fn terminate(&mut self, index: usize) {
        if let ChildState::Running(c) =
            std::mem::replace(&mut self.children[index], ChildState::Removed)
        {
            c.kill();
            let again = self.spec.children[index].restart != Restart::Temporary;
            if !again {
                self.spec.children[index].slot.close();
            }
            self.children[index] = ChildState::Terminating(c, again);
        }
    }

    fn remove(&mut self, index: usize) {
        self.children[index] = ChildState::Removed;
        self.spec.children[index].slot.close();
    }

    /// Kills every child and marks all removed.
    fn kill_all(&mut self) {
        for i in (0..self.children.len()).rev() {
            match std::mem::replace(&mut self.children[i], ChildState::Removed) {
                ChildState::Running(c) | ChildState::Terminating(c, _) => c.kill(),
                ChildState::Down | ChildState::Removed => {}
            }
            self.spec.children[i].slot.close();
        }
    }

    fn exited(&mut self, index: usize, id: ActorId, reason: StopReason, ctx: &Context<'_, Self>) {
        let (terminating, again) = match self.children.get(index) {
            Some(ChildState::Terminating(c, again)) if c.id() == id => (true, *again),
            Some(ChildState::Running(c)) if c.id() == id => (false, false),
            _ => return, // an instance we no longer track
        };
        if terminating {
            if again {
                self.children[index] = ChildState::Down;
            } else {
                self.remove(index);
            }
            self.start_down(ctx);
            return;
        }
        if !self.spec.children[index].restart.restarts_after(&reason) {
            self.remove(index);
            return;
        }
        let now = Instant::now();
        while self
            .recent
            .front()
            .is_some_and(|t| now.duration_since(*t) > self.spec.period)
        {
            self.recent.pop_front();
        }
        self.recent.push_back(now);
        if self.recent.len() > self.spec.max_restarts {
            let why = format!(
                "restart intensity exceeded: more than {} restarts within {:?} (last: child {:?} {})",
                self.spec.max_restarts, self.spec.period, self.spec.children[index].name, reason
            );
            self.kill_all();
            // Stops this supervisor with `Panicked(why)`. Unwinding without
            // the panic hook: this is a decision, not a bug, and the runtime
            // logs the stop.
            std::panic::resume_unwind(Box::new(why));
        }
        self.restarts += 1;
        self.children[index] = ChildState::Down;
        let siblings = match self.spec.strategy {
            Strategy::OneForOne => index..index,
            Strategy::OneForAll => 0..self.children.len(),
            Strategy::RestForOne => index + 1..self.children.len(),
        };
        for j in siblings.rev() {
            if j != index {
                self.terminate(j);
            }
        }
        self.start_down(ctx);
    }
}

impl Actor for Supervisor {
    type Msg = SupervisorMsg;

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        let me = ctx.myself();
        for (i, c) in self.children.iter().enumerate() {
            if let ChildState::Running(c) = c {
                c.watch(&me, i);
            }
        }
    }

    fn handle(&mut self, msg: SupervisorMsg, ctx: &mut Context<'_, Self>) {
        match msg.0 {
            Cmd::Exited { index, id, reason } => self.exited(index, id, reason, ctx),
            Cmd::Children(reply) => {
                let info = self
                    .spec
                    .children
                    .iter()
                    .zip(&self.children)
                    .map(|(spec, state)| ChildInfo {
                        name: spec.name.clone(),
                        id: match state {
                            ChildState::Running(c) => Some(c.id()),
                            _ => None,
                        },
                        restart: spec.restart,
                    })
                    .collect();
                reply.reply(info);
            }
            Cmd::Restarts(reply) => {
                reply.reply(self.restarts);
            }
        }
    }

    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {
        for i in (0..self.children.len()).rev() {
            match std::mem::replace(&mut self.children[i], ChildState::Removed) {
                ChildState::Running(c) => c.stop(),
                ChildState::Terminating(c, _) => c.kill(),
                ChildState::Down | ChildState::Removed => {}
            }
            self.spec.children[i].slot.close();
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        // After a panic `stopped` does not run: kill what is left.
        self.kill_all();
    }
}

/// A handle to a running supervisor.
#[derive(Clone, Debug)]
pub struct SupervisorRef {
    actor: ActorRef<Supervisor>,
}

impl SupervisorRef {
    /// The supervisor as an actor (to monitor, link or join it).
    pub fn actor(&self) -> &ActorRef<Supervisor> {
        &self.actor
    }

    /// The supervisor's id.
    pub fn id(&self) -> ActorId {
        self.actor.id()
    }

    /// Stops the supervisor; it asks its children to stop.
    pub fn stop(&self) {
        self.actor.stop();
    }

    /// Blocks until the supervisor has stopped; returns why.
    pub fn join(&self) -> StopReason {
        self.actor.join()
    }

    /// As [`join`](Self::join), giving up after `timeout`.
    pub fn join_timeout(&self, timeout: Duration) -> Option<StopReason> {
        self.actor.join_timeout(timeout)
    }

    /// The children, in spec order, with their running instance.
    pub fn children(&self, timeout: Duration) -> Result<Vec<ChildInfo>, AskError> {
        self.actor.ask(|r| SupervisorMsg(Cmd::Children(r)), timeout)
    }

    /// Restarts of failed children so far (siblings restarted with them by
    /// `OneForAll`/`RestForOne` not counted).
    pub fn restarts(&self, timeout: Duration) -> Result<u64, AskError> {
        self.actor.ask(|r| SupervisorMsg(Cmd::Restarts(r)), timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ActorSystem;

    struct Idle;
    impl Actor for Idle {
        type Msg = Down;
        fn handle(&mut self, _: Down, _: &mut Context<'_, Self>) {}
    }

    /// Monitoring and linking a long-lived actor over and over, unlinking
    /// each time, leaves no watcher behind on either side.
    #[test]
    fn unlink_removes_its_watchers() {
        let system = ActorSystem::builder().threads(1).build();
        let a = system.spawn(Idle);
        let b = system.spawn(Idle);
        for _ in 0..1_000 {
            monitor(&a, &b, |d| d).unlink();
            link(&a, &b).unlink();
            link_trapping(&a, &b, |d| d).unlink();
        }
        assert_eq!(a.cell.watcher_count(), 0);
        assert_eq!(b.cell.watcher_count(), 0);
        // A link left on keeps its watchers (one on each side for `link`).
        let kept = link(&a, &b);
        assert!(kept.is_active());
        assert_eq!((a.cell.watcher_count(), b.cell.watcher_count()), (1, 1));
        a.stop();
        b.stop();
        system.shutdown();
    }
}
