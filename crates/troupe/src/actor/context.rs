//! [`Context`]: what a handler can do besides handling.

use super::actor_ref::{monitor, watch_for, ActorRef, WeakActorRef};
use super::ask::{request_not_sent, ReplyTo};
use super::behaviour::Actor;
use super::cell::ActorCell;
use super::error::{AskError, StopReason};
use super::id::ActorId;
use super::lifecycle::{Down, WatchId};
use super::runtime::{SpawnOptions, SystemHandle};
use super::runtime_ref::RuntimeRef;
use super::watchable::Watchable;
use super::watcher::Watcher;

/// What a handler can do besides handling: reach itself, stop, spawn, watch,
/// ask other actors without blocking.
pub struct Context<'a, A: Actor> {
    pub(crate) cell: &'a ActorCell<A>,
    stop: Option<StopReason>,
    /// The handler's future is pending (an async actor): the turn takes no
    /// more messages, and the worker parks the actor until it is woken.
    suspended: bool,
    /// `stop` is set or `suspended`: the one flag the turn's loop tests per
    /// message.
    interrupted: bool,
    /// A suspended handler completed in this turn's resume.
    resumed: bool,
}

impl<'a, A: Actor> Context<'a, A> {
    pub(crate) fn new(cell: &'a ActorCell<A>) -> Self {
        Context {
            cell,
            stop: None,
            suspended: false,
            interrupted: false,
            resumed: false,
        }
    }

    #[inline]
    pub(crate) fn stopping(&self) -> bool {
        self.stop.is_some()
    }

    /// The turn must end: a stop was asked, or the handler suspended.
    #[inline]
    pub(crate) fn interrupted(&self) -> bool {
        self.interrupted
    }

    /// The handler suspended on a pending future (`actor::async_actor`).
    pub(crate) fn suspend(&mut self) {
        self.suspended = true;
        self.interrupted = true;
    }

    /// A suspended handler completed (`actor::async_actor`).
    pub(crate) fn resumed(&mut self) {
        self.resumed = true;
    }

    /// Whether a suspended handler completed in this turn; clears it.
    #[inline]
    pub(crate) fn take_resumed(&mut self) -> bool {
        std::mem::take(&mut self.resumed)
    }

    /// Whether the handler suspended; clears it (the worker parks the
    /// actor once per suspension).
    pub(crate) fn take_suspended(&mut self) -> bool {
        let s = std::mem::take(&mut self.suspended);
        self.interrupted = self.stop.is_some();
        s
    }

    pub(crate) fn take_stop_reason(&mut self) -> StopReason {
        self.interrupted = self.suspended;
        self.stop.take().unwrap_or(StopReason::Normal)
    }

    /// The system's shared state (for the layers above the actor core).
    /// Counts a restart this actor made (a supervisor restarting a child),
    /// if the actor is metered.
    pub(crate) fn note_restart(&self) {
        if let Some((m, _)) = self.cell.metrics.get() {
            m.restarts
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    pub(crate) fn runtime(&self) -> &RuntimeRef {
        &self.cell.rt
    }

    /// The system this actor runs in.
    pub fn system(&self) -> SystemHandle {
        SystemHandle {
            rt: self.runtime().clone(),
        }
    }

    /// Runs `fut` on the system's async runtime (see [`bridge`](crate::bridge));
    /// when it completes, this actor receives `to_msg(output)`. The worker is
    /// not blocked meanwhile. If the actor has stopped by then, the message
    /// is dropped and counted (and an ask inside it fails at once).
    #[cfg(feature = "async")]
    pub fn spawn_future<F>(
        &self,
        fut: F,
        to_msg: impl FnOnce(F::Output) -> A::Msg + Send + 'static,
    ) -> super::future_handle::FutureHandle
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let me = self.myself();
        let handle = self.runtime().host.tokio_handle();
        let cx = super::envelope::Follow::here();
        super::future_handle::FutureHandle(handle.spawn(async move {
            let out = fut.await;
            let _in = cx.enter();
            if let Err(e) = me.tell(to_msg(out)) {
                me.drop_undelivered(e.into_inner());
            }
        }))
    }

    /// A reference to this actor.
    pub fn myself(&self) -> ActorRef<A> {
        ActorRef {
            cell: self.cell.arc(),
        }
    }

    /// This actor's id.
    pub fn id(&self) -> ActorId {
        self.cell.id
    }

    /// This actor's name, if it was spawned with one
    /// ([`SpawnOptions::name`]).
    pub fn name(&self) -> Option<&str> {
        self.cell.name.as_deref().map(String::as_str)
    }

    /// Stops this actor once the current handler returns (reason `Normal`).
    /// Messages still in its mailbox are dropped and counted; their asks fail
    /// with `AskError::ActorStopped`. An actor spawned with an undelivered
    /// hook ([`SystemHandle::spawn_with_undelivered`]) hands them to it
    /// instead (a sharded entity's go to its next activation).
    pub fn stop(&mut self) {
        self.stop_with(StopReason::Normal);
    }

    /// Stops this actor once its mailbox has drained (reason `Normal`): from
    /// now on it takes no new message (a send gets
    /// [`SendError::Stopped`](crate::SendError::Stopped), the message
    /// back), handles every message already queued, then stops. Nothing
    /// accepted is lost. As [`ActorRef::stop`] asked from inside; a sharded
    /// entity that passivates itself this way has what arrives meanwhile
    /// buffered by its region for its next activation.
    ///
    /// ```
    /// use troupe::{Actor, ActorSystem, Context};
    /// struct Once(std::sync::mpsc::Sender<u32>);
    /// impl Actor for Once {
    ///     type Msg = u32;
    ///     fn handle(&mut self, n: u32, ctx: &mut Context<'_, Self>) {
    ///         ctx.passivate();
    ///         self.0.send(n).unwrap();
    ///     }
    /// }
    /// let system = ActorSystem::builder().threads(1).build();
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let a = system.spawn(Once(tx));
    /// let sent: Vec<bool> = (0..3).map(|n| a.tell(n).is_ok()).collect();
    /// a.join();
    /// // Every message it took was handled.
    /// let took = sent.iter().filter(|ok| **ok).count();
    /// assert_eq!(rx.try_iter().count(), took);
    /// system.shutdown();
    /// ```
    pub fn passivate(&mut self) {
        self.cell.stop_request(super::lifecycle::StopRequest::Drain);
    }

    /// As [`stop`](Self::stop), with a chosen reason: watchers, joiners and
    /// supervisors see `reason` (use [`StopReason::Failed`] to fail without
    /// panicking).
    pub fn stop_with(&mut self, reason: StopReason) {
        self.stop.get_or_insert(reason);
        self.interrupted = true;
    }

    /// Spawns a child actor on the same system. It starts on this worker
    /// (depth-first), unless another worker steals it.
    pub fn spawn<B: Actor>(&self, actor: B) -> ActorRef<B> {
        self.spawn_with(actor, SpawnOptions::default())
    }

    /// Spawns with options (name, mailbox, dispatcher).
    pub fn spawn_with<B: Actor>(&self, actor: B, options: SpawnOptions) -> ActorRef<B> {
        ActorRef {
            cell: ActorCell::spawn(&self.cell.rt, actor, options, None),
        }
    }

    /// Spawns a child and watches it in one step, as Erlang's
    /// `spawn_monitor` and CAF's `spawn<monitored>` do: when the child
    /// stops, this actor receives `to_msg(Down)`. The watch is in place
    /// before the child can run, and costs no lock: it is written into the
    /// child's exit record before anyone else can see the child. Returns
    /// the child and the watch's id (for
    /// [`demonitor`](ActorRef::demonitor)).
    ///
    /// ```
    /// use troupe::{Actor, ActorSystem, Context, Down, StopReason};
    /// struct Child;
    /// impl Actor for Child {
    ///     type Msg = ();
    ///     fn started(&mut self, ctx: &mut Context<'_, Self>) {
    ///         ctx.stop();
    ///     }
    ///     fn handle(&mut self, _: (), _: &mut Context<'_, Self>) {}
    /// }
    /// struct Parent(std::sync::mpsc::Sender<StopReason>);
    /// impl Actor for Parent {
    ///     type Msg = Down;
    ///     fn started(&mut self, ctx: &mut Context<'_, Self>) {
    ///         let (_child, _watch) = ctx.spawn_monitored(Child, |down| down);
    ///     }
    ///     fn handle(&mut self, down: Down, _: &mut Context<'_, Self>) {
    ///         self.0.send(down.reason).unwrap();
    ///     }
    /// }
    /// let system = ActorSystem::builder().threads(1).build();
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// system.spawn(Parent(tx));
    /// assert_eq!(rx.recv().unwrap(), StopReason::Normal);
    /// system.shutdown();
    /// ```
    pub fn spawn_monitored<B: Actor>(
        &self,
        actor: B,
        to_msg: impl FnOnce(Down) -> A::Msg + Send + 'static,
    ) -> (ActorRef<B>, WatchId) {
        self.spawn_monitored_with(actor, SpawnOptions::default(), to_msg)
    }

    /// [`spawn_monitored`](Self::spawn_monitored) with options.
    pub fn spawn_monitored_with<B: Actor>(
        &self,
        actor: B,
        options: SpawnOptions,
        to_msg: impl FnOnce(Down) -> A::Msg + Send + 'static,
    ) -> (ActorRef<B>, WatchId) {
        let watch = WatchId::next();
        let watcher = Watcher::new(monitor(self.cell.weak(), to_msg));
        let cell = ActorCell::spawn(&self.cell.rt, actor, options, Some((watch, watcher)));
        (ActorRef { cell }, watch)
    }

    /// Watches `target`: when it stops, this actor receives `to_msg(Down)`
    /// (at once if it already has). The watch holds only a weak reference to
    /// this actor. Cancel with `target.demonitor(id)`. The same monitor as
    /// [`ActorRef::watch`] and `supervision::monitor`.
    pub fn watch<T: Watchable>(
        &self,
        target: &T,
        to_msg: impl FnOnce(Down) -> A::Msg + Send + 'static,
    ) -> WatchId {
        watch_for(WeakActorRef::of(self.cell), target, to_msg)
    }

    /// Sends a request to `target` without blocking; the reply (or the error
    /// that replaced it) comes back to this actor as a message, converted with
    /// `From<Result<R, AskError>>`. Costs no allocation beyond the request.
    pub fn ask<B: Actor, R: Send + 'static>(
        &self,
        target: &ActorRef<B>,
        make: impl FnOnce(ReplyTo<R>) -> B::Msg,
    ) -> Result<(), AskError>
    where
        A::Msg: From<Result<R, AskError>>,
    {
        let reply = ReplyTo::to_sink(self.cell.arc());
        // Dropped normally, the request's reply handle would also deliver
        // the error to us as a message; the caller learns it from here.
        target.cell.send(make(reply)).map_err(request_not_sent)
    }
}
