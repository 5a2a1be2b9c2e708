//! Actors: the [`Actor`] trait, the [`Context`] handlers get, and the
//! [`ActorRef`] everyone else uses to reach an actor.

use crate::ask::{request_not_sent, wait_reply, AskFuture, ReplyTo};
pub use crate::cell::WatchId;
use crate::cell::{ActorCell, StopRequest};
use crate::error::{AskError, SendError, StopReason};
use crate::system::{SpawnOptions, SystemHandle};
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// An actor: a plain struct that owns its state and handles messages of one
/// type (`Msg`, usually an enum), one at a time.
///
/// ```
/// use troupe::{Actor, ActorSystem, Context};
///
/// struct Counter { total: u64 }
///
/// impl Actor for Counter {
///     type Msg = u64;
///     fn handle(&mut self, n: u64, ctx: &mut Context<'_, Self>) {
///         self.total += n;
///         if n == 0 { ctx.stop(); }
///     }
/// }
///
/// let system = ActorSystem::new();
/// let counter = system.spawn(Counter { total: 0 });
/// counter.tell(5).unwrap();
/// counter.tell(0).unwrap();
/// assert_eq!(counter.join(), troupe::StopReason::Normal);
/// ```
pub trait Actor: Sized + Send + 'static {
    /// The messages this actor handles.
    type Msg: Send + 'static;

    /// Runs once, on a worker, before the first message.
    fn started(&mut self, _ctx: &mut Context<'_, Self>) {}

    /// Handles one message.
    fn handle(&mut self, msg: Self::Msg, ctx: &mut Context<'_, Self>);

    /// Runs once when the actor stops (not after a panic).
    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {}
}

/// A process-unique actor id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ActorId(pub(crate) u64);

impl ActorId {
    /// The id as a number.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ActorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{}>", self.0)
    }
}

/// What a handler can do besides handling: reach itself, stop, spawn, watch,
/// ask other actors without blocking.
pub struct Context<'a, A: Actor> {
    cell: &'a ActorCell<A>,
    stopping: bool,
}

impl<'a, A: Actor> Context<'a, A> {
    pub(crate) fn new(cell: &'a ActorCell<A>) -> Self {
        Context {
            cell,
            stopping: false,
        }
    }

    #[inline]
    pub(crate) fn stopping(&self) -> bool {
        self.stopping
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

    /// Stops this actor once the current handler returns. Messages still in
    /// its mailbox are dropped and counted; their asks fail with
    /// `AskError::ActorStopped`.
    pub fn stop(&mut self) {
        self.stopping = true;
    }

    /// The system this actor runs in.
    pub fn system(&self) -> SystemHandle {
        SystemHandle::from_inner(self.cell.system.clone())
    }

    /// Spawns a child actor on the same system. It starts on this worker
    /// (depth-first), unless another worker steals it.
    pub fn spawn<B: Actor>(&self, actor: B) -> ActorRef<B> {
        self.spawn_with(actor, SpawnOptions::default())
    }

    /// Spawns with options (mailbox kind).
    pub fn spawn_with<B: Actor>(&self, actor: B, options: SpawnOptions) -> ActorRef<B> {
        ActorRef {
            cell: self.cell.system.spawn_cell(actor, options),
        }
    }

    /// If it has already stopped, the message is sent at once. Cancel with
    /// `target.demonitor(id)`.
    /// If it has already stopped, the message is sent at once.
    pub fn watch<B: Actor>(
        &self,
        target: &ActorRef<B>,
        to_msg: impl FnOnce(ActorId, StopReason) -> A::Msg + Send + 'static,
    ) -> WatchId {
        let me = self.cell.arc();
        target.cell.add_watcher(Box::new(move |id, reason| {
            let _ = me.send(to_msg(id, reason.clone()));
        }))
    }

    /// Runs `fut` on the system's async runtime (see [`crate::bridge`]); when
    /// it completes, this actor receives `to_msg(output)`. The worker is not
    /// blocked meanwhile.
    #[cfg(feature = "async")]
    pub fn spawn_future<F>(
        &self,
        fut: F,
        to_msg: impl FnOnce(F::Output) -> A::Msg + Send + 'static,
    ) -> crate::bridge::FutureHandle
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let me = self.cell.arc();
        let handle = self.cell.system.bridge.lock().handle();
        crate::bridge::FutureHandle(handle.spawn(async move {
            let out = fut.await;
            if me.send(to_msg(out)).is_err() {
                me.system
                    .dropped
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }))
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

/// A handle to an actor: cheap to clone, `Send + Sync`, usable from actors and
/// from plain threads.
pub struct ActorRef<A: Actor> {
    pub(crate) cell: Arc<ActorCell<A>>,
}

impl<A: Actor> Clone for ActorRef<A> {
    fn clone(&self) -> Self {
        ActorRef {
            cell: self.cell.clone(),
        }
    }
}

impl<A: Actor> fmt::Debug for ActorRef<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ActorRef{}", self.cell.id)
    }
}

impl<A: Actor> PartialEq for ActorRef<A> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.cell, &other.cell)
    }
}

impl<A: Actor> Eq for ActorRef<A> {}

impl<A: Actor> ActorRef<A> {
    /// Sends a message (fire and forget). Never blocks, except on a bounded
    /// mailbox with `OverflowPolicy::Block` from a plain thread. On failure
    /// the message comes back inside the error.
    #[inline]
    pub fn tell(&self, msg: A::Msg) -> Result<(), SendError<A::Msg>> {
        self.cell.send(msg)
    }

    /// As [`tell`](Self::tell), but never blocks: a full bounded mailbox
    /// gives [`SendError::Full`] at once whatever its overflow policy
    /// (`DropOldest` still evicts).
    #[inline]
    pub fn try_tell(&self, msg: A::Msg) -> Result<(), SendError<A::Msg>> {
        self.cell.send_with(msg, false)
    }

    /// Sends a request built by `make` around a [`ReplyTo`] and blocks this
    /// thread for the reply, at most `timeout`. Do not call it from inside an
    /// actor (it would block a worker); use [`Context::ask`] there.
    pub fn ask<R: Send + 'static>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> A::Msg,
        timeout: Duration,
    ) -> Result<R, AskError> {
        let (reply, rx) = ReplyTo::oneshot();
        self.send_request(make(reply))?;
        wait_reply(rx, timeout)
    }

    /// Sends a request and returns a future of the reply, for async code.
    /// Combine with your runtime's timeout, or call
    /// [`AskFuture::wait_timeout`] to block.
    pub fn ask_async<R: Send + 'static>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> A::Msg,
    ) -> AskFuture<R> {
        let (reply, rx) = ReplyTo::oneshot();
        match self.send_request(make(reply)) {
            Ok(()) => AskFuture::waiting(rx),
            Err(e) => AskFuture::failed(e),
        }
    }

    fn send_request(&self, msg: A::Msg) -> Result<(), AskError> {
        self.cell.send(msg).map_err(request_not_sent)
    }

    /// Asks the actor to stop after handling the messages already in its
    /// mailbox; new sends are refused from now on. Reason: `Normal`.
    pub fn stop(&self) {
        self.cell.stop_request(StopRequest::Drain);
    }

    /// Stops the actor after its current message; what is left in its
    /// mailbox is dropped and counted. Reason: `Killed`.
    pub fn kill(&self) {
        self.cell.stop_request(StopRequest::Kill);
    }

    /// Blocks until the actor has stopped and its monitors have run (so a
    /// registry no longer lists it); returns why. Not from inside an actor.
    pub fn join(&self) -> StopReason {
        self.cell.wait_exit(None).unwrap_or(StopReason::Killed)
    }

    /// As [`join`](Self::join), giving up after `timeout` (`None`).
    pub fn join_timeout(&self, timeout: Duration) -> Option<StopReason> {
        self.cell.wait_exit(Some(Instant::now() + timeout))
    }

    /// Why the actor stopped, or `None` while it runs.
    pub fn stop_reason(&self) -> Option<StopReason> {
        self.cell.exit_reason()
    }

    /// Whether the actor still accepts messages.
    pub fn is_alive(&self) -> bool {
        !self.cell.mailbox.is_closed()
    }

    /// The actor's id.
    pub fn id(&self) -> ActorId {
        self.cell.id
    }

    /// Messages waiting in the mailbox (a snapshot).
    pub fn mailbox_len(&self) -> usize {
        self.cell.queue_len()
    }

    /// The bounded mailbox's capacity, `None` for an unbounded one.
    pub fn mailbox_capacity(&self) -> Option<usize> {
        self.cell.mailbox.capacity()
    }

    /// Messages a `DropOldest` mailbox has evicted so far.
    pub fn mailbox_evicted(&self) -> u64 {
        self.cell.mailbox.evicted()
    }

    /// Calls `f` with the reason when the actor stops (at once if it has):
    /// a monitor usable from plain code. `f` runs on the thread that stops
    /// the actor, before [`join`](Self::join) returns; it must not join the
    /// actor itself.
    ///
    /// Returns an id that [`demonitor`](Self::demonitor) takes to cancel it.
    pub fn on_stop(&self, f: impl FnOnce(ActorId, &StopReason) + Send + 'static) -> WatchId {
        self.cell.add_watcher(Box::new(f))
    }

    /// Cancels a watcher set with [`on_stop`](Self::on_stop) or
    /// [`Context::watch`] on this actor; returns `false` if it has already
    /// run (the actor stopped) or was cancelled before.
    ///
    /// ```
    /// use troupe::{Actor, ActorSystem, Context};
    ///
    /// struct Idle;
    /// impl Actor for Idle {
    ///     type Msg = ();
    ///     fn handle(&mut self, _: (), _: &mut Context<'_, Self>) {}
    /// }
    ///
    /// let system = ActorSystem::builder().threads(1).build();
    /// let a = system.spawn(Idle);
    /// let watch = a.on_stop(|_, _| panic!("cancelled: never called"));
    /// assert!(a.demonitor(watch));
    /// assert!(!a.demonitor(watch));
    /// a.stop();
    /// a.join();
    /// # system.shutdown();
    /// ```
    pub fn demonitor(&self, watch: WatchId) -> bool {
        self.cell.remove_watcher(watch)
    }
}
