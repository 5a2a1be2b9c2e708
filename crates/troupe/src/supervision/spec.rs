//! What to supervise and how: child specs (factories and restart policies)
//! and a supervisor's spec (strategy, intensity, children).

use super::link::is_abnormal;
use super::supervised_ref::SupervisedRef;
use super::supervisor::{Supervisor, SupervisorMsg, SupervisorRef};
use crate::actor::{Actor, ActorId, ActorRef, SpawnOptions, StopReason};
use crate::system::SystemHandle;
use arc_swap::ArcSwapOption;
use parking_lot::{Condvar, Mutex};
use std::any::Any;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

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
    pub(super) fn restarts_after(self, reason: &StopReason) -> bool {
        match self {
            Restart::Permanent => *reason != StopReason::Shutdown,
            Restart::Transient => is_abnormal(reason),
            Restart::Temporary => false,
        }
    }
}

/// A running child, whatever its actor type.
pub(super) trait Child: Send {
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
        let sup = sup.downgrade();
        self.on_stop(move |id, reason| {
            if let Some(sup) = sup.upgrade() {
                let _ = sup.tell(SupervisorMsg::exited(index, id, reason.clone()));
            }
        });
    }
}

/// Where a child's current instance is published for [`SupervisedRef`]s.
pub(super) struct RefSlot<A: Actor> {
    pub(super) current: ArcSwapOption<ActorRef<A>>,
    /// Instances started so far.
    pub(super) generation: AtomicU64,
    /// No further instance will be started.
    pub(super) closed: AtomicBool,
    /// Signalled on every start and on close, for waiting references.
    pub(super) changed: (Mutex<()>, Condvar),
}

impl<A: Actor> RefSlot<A> {
    fn new() -> Self {
        RefSlot {
            current: ArcSwapOption::empty(),
            generation: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            changed: (Mutex::new(()), Condvar::new()),
        }
    }

    /// Publishes a newly started instance and wakes waiting references.
    fn publish(&self, actor: ActorRef<A>) {
        self.current.store(Some(Arc::new(actor)));
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.notify();
    }

    fn notify(&self) {
        let _g = self.changed.0.lock();
        self.changed.1.notify_all();
    }
}

pub(super) trait SlotCtl: Send + Sync {
    fn close(&self);
    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
}

impl<A: Actor> SlotCtl for RefSlot<A> {
    fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.notify();
    }
    fn as_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

pub(super) type Starter = Arc<dyn Fn(&SystemHandle, &SpawnOptions) -> Box<dyn Child> + Send + Sync>;

/// How to start (and restart) one child: a name, a factory that builds a
/// fresh actor for every start, a [`Restart`] policy, spawn options.
#[derive(Clone)]
pub struct ChildSpec {
    pub(super) name: String,
    pub(super) restart: Restart,
    pub(super) options: SpawnOptions,
    pub(super) start: Starter,
    pub(super) slot: Arc<dyn SlotCtl>,
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
        let slot: Arc<RefSlot<A>> = Arc::new(RefSlot::new());
        let s = slot.clone();
        ChildSpec {
            name: name.into(),
            restart: Restart::Permanent,
            options: SpawnOptions::new(),
            start: Arc::new(move |system, options| {
                let actor = system.spawn_with(factory(), options.clone());
                s.publish(actor.clone());
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
            slot.publish(sup.actor().clone());
            Box::new(sup.actor().clone())
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
        Some(SupervisedRef::new(slot))
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
    pub(super) strategy: Strategy,
    pub(super) max_restarts: usize,
    pub(super) period: Duration,
    pub(super) children: Vec<ChildSpec>,
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

    /// Gives up (kills the children and stops with a `Failed` reason
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
        Supervisor::spawn(self, system, options)
    }
}
