//! [`ActorRef`], the handle everyone uses to reach an actor, and
//! [`WeakActorRef`], one that does not keep it alive.

use super::ask::{request_not_sent, wait_reply, AskFuture, ReplyTo, Then};
use super::ask_cycle::{Label, Waiting};
use super::behaviour::Actor;
use super::cell::ActorCell;
use super::error::{AskError, SendError, StopReason};
use super::id::ActorId;
use super::lifecycle::{Down, StopListener, StopRequest, WatchId};
use super::watchable::Watchable;
use super::watcher::Watcher;
use crate::engine::deadline;
use crate::engine::scheduler::may_block_here;
use std::fmt;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// A handle to an actor: cheap to clone, `Send + Sync`, usable from actors and
/// from plain threads.
///
/// ```
/// use troupe::{Actor, ActorSystem, Context, StopReason};
///
/// struct Counter { total: u64 }
/// impl Actor for Counter {
///     type Msg = u64;
///     fn handle(&mut self, n: u64, _ctx: &mut Context<'_, Self>) { self.total += n; }
/// }
///
/// let system = ActorSystem::builder().threads(1).build();
/// let counter = system.spawn(Counter { total: 0 });
/// counter.tell(5).unwrap();
/// counter.stop_with(StopReason::Failed("maintenance".into()));
/// assert_eq!(counter.join(), StopReason::Failed("maintenance".into()));
/// // A stopped actor hands the message back.
/// assert_eq!(counter.tell(7).unwrap_err().into_inner(), 7);
/// ```
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
        match &self.cell.name {
            Some(name) => write!(f, "ActorRef{}({name})", self.cell.id),
            None => write!(f, "ActorRef{}", self.cell.id),
        }
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
    /// mailbox with a `Block` policy from a plain thread. On failure the
    /// message comes back inside the error: `Stopped` (the actor has
    /// stopped) or `Full` (its bounded mailbox is).
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
    /// thread for the reply, at most `timeout` (a timeout too large for the
    /// clock waits as long as it takes).
    ///
    /// On a worker thread that runs actors (inside a handler) it fails at
    /// once with [`AskError::WouldBlockWorker`] without sending: waiting there
    /// would stall that worker's actors for the whole timeout. Use
    /// [`Context::ask`](crate::Context::ask) in a handler. Actors on a
    /// [`blocking_pool`](crate::SystemHandle::blocking_pool) or a
    /// [dedicated thread](crate::SpawnOptions::dedicated_thread) may block.
    pub fn ask<R: Send + 'static>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> A::Msg,
        timeout: Duration,
    ) -> Result<R, AskError> {
        if !may_block_here() {
            return Err(AskError::WouldBlockWorker);
        }
        let deadline = deadline::after(timeout);
        // Ask-cycle detection (`ask_cycle`): a handler on a blocking pool
        // or a dedicated thread waits on this actor until the reply.
        let _waiting = self.cell.rt.watch.cycles.as_ref().and_then(|g| {
            let asker = crate::engine::scheduler::current_actor()?;
            Some(Waiting::new(
                g,
                Label::id_only(asker),
                Label::of::<A>(self.cell.id, &self.cell.name),
            ))
        });
        let (reply, rx) = ReplyTo::oneshot();
        self.send_request(make(reply))?;
        wait_reply(rx, deadline)
    }

    /// Sends a request and returns a future of the reply, for async code.
    /// Give it a deadline with [`AskFuture::with_timeout`], or call
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

    /// Sends a request; `then` gets its reply, or the error that ends it,
    /// exactly once: on the thread that replies (or drops the request), or
    /// here if the send fails. No future, no task and no thread sits
    /// between the reply and `then`, so a reply can be handed on (to
    /// another request's [`ReplyTo`], say) as it is made. Give `then`
    /// little to do: it runs inside the replier's handler.
    ///
    /// ```
    /// use troupe::{Actor, ActorSystem, Context, ReplyTo};
    /// use std::sync::mpsc;
    ///
    /// struct Doubler;
    /// enum Msg { Double(u64, ReplyTo<u64>) }
    /// impl Actor for Doubler {
    ///     type Msg = Msg;
    ///     fn handle(&mut self, msg: Msg, _ctx: &mut Context<'_, Self>) {
    ///         let Msg::Double(x, reply) = msg;
    ///         reply.reply(2 * x);
    ///     }
    /// }
    ///
    /// let system = ActorSystem::new();
    /// let doubler = system.spawn(Doubler);
    /// let (tx, rx) = mpsc::channel();
    /// doubler.ask_then(|r| Msg::Double(21, r), move |answer| tx.send(answer).unwrap());
    /// assert_eq!(rx.recv().unwrap(), Ok(42));
    /// ```
    pub fn ask_then<R: Send + 'static>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> A::Msg,
        then: impl FnOnce(Result<R, AskError>) + Send + 'static,
    ) {
        let sink = Arc::new(Then::new(then));
        // Kept here too: a request that is not sent is dropped silently
        // (its reply handle says nothing), and `then` hears the error
        // from this clone instead.
        let reply = ReplyTo::to_sink(sink.clone());
        if let Err(e) = self.send_request(make(reply)) {
            sink.call(Err(e));
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

    /// As [`stop`](Self::stop), with the reason its watchers and joiners
    /// are told (the first reason asked for wins).
    pub fn stop_with(&self, reason: StopReason) {
        self.cell.exit.request_reason(reason);
        self.cell.stop_request(StopRequest::Drain);
    }

    /// Stops the actor after its current message; what is left in its
    /// mailbox is dropped and counted. Reason: `Killed`.
    pub fn kill(&self) {
        self.cell.stop_request(StopRequest::Kill);
    }

    super::lifecycle::join_methods!();

    /// Whether the actor still accepts messages.
    pub fn is_alive(&self) -> bool {
        !self.cell.mailbox.is_closed()
    }

    /// The actor's name, if it was spawned with one.
    pub fn name(&self) -> Option<&str> {
        self.cell.name.as_deref().map(String::as_str)
    }

    /// Messages waiting in the mailbox (a snapshot).
    pub fn mailbox_len(&self) -> usize {
        self.cell.mailbox.len()
    }

    /// The bounded mailbox's capacity, `None` for an unbounded one.
    pub fn mailbox_capacity(&self) -> Option<usize> {
        self.cell.mailbox.capacity()
    }

    /// Messages a `DropOldest` or `DropNewest` mailbox has dropped so far.
    pub fn mailbox_evicted(&self) -> u64 {
        self.cell.mailbox.evicted()
    }

    /// A reference that does not keep the actor's memory alive.
    pub fn downgrade(&self) -> WeakActorRef<A> {
        WeakActorRef {
            cell: Arc::downgrade(&self.cell),
            id: self.cell.id,
        }
    }

    /// Calls `f` with the reason when the actor stops (at once if it has):
    /// a monitor usable from plain code. `f` runs on the thread that stops
    /// the actor, before [`join`](Self::join) returns; it must not join the
    /// actor itself. A panic in `f` is caught and logged.
    ///
    /// Returns an id that [`demonitor`](Self::demonitor) takes to cancel it.
    pub fn on_stop(&self, f: impl FnOnce(ActorId, &StopReason) + Send + 'static) -> WatchId {
        self.cell.exit.add_watcher(self.cell.id, Watcher::new(f))
    }

    /// Cancels a watcher set with [`on_stop`](Self::on_stop) or a watch on
    /// this actor; returns `false` if it has already run (the actor
    /// stopped) or was cancelled before.
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
        self.cell.exit.remove_watcher(watch)
    }

    /// Watches `target` on behalf of this actor: when `target` stops, this
    /// actor receives `to_msg(Down)` (at once if it already has). The watch
    /// holds only a weak reference to this actor; cancel it with
    /// `target.demonitor(id)`. Inside a handler,
    /// [`Context::watch`](crate::Context::watch) does the same.
    pub fn watch<T: Watchable>(
        &self,
        target: &T,
        to_msg: impl FnOnce(Down) -> A::Msg + Send + 'static,
    ) -> WatchId {
        watch_for(self.downgrade(), target, to_msg)
    }

    /// Tells `listener` (with `token`) when this actor stops: the one hook
    /// for code that watches many actors ([`StopListener`]). The first
    /// listener costs no allocation. Returns `false`, registering nothing,
    /// if the actor has already stopped.
    pub fn listen(&self, listener: Arc<dyn StopListener>, token: u64) -> bool {
        self.cell.exit.add_listener(listener, token)
    }

    /// The token `listener` listens to this actor with, while it runs.
    pub fn listener_token(&self, listener: &Arc<dyn StopListener>) -> Option<u64> {
        self.cell.exit.listener_token(listener)
    }

    /// Stops telling `listener`; `false` if it was not listening (or the
    /// actor has stopped and it is being told).
    pub fn unlisten(&self, listener: &Arc<dyn StopListener>) -> bool {
        self.cell.exit.remove_listener(listener)
    }

    /// Drops a message meant for this actor that it will never get,
    /// counted in the system's dropped messages (its asks fail at once).
    pub(crate) fn drop_undelivered(&self, msg: A::Msg) {
        self.cell.drop_undelivered(msg, AskError::ActorStopped);
    }

    /// Watchers registered and not yet run (tests of the layers above).
    #[cfg(test)]
    pub(crate) fn watcher_count(&self) -> usize {
        self.cell.exit.watcher_count()
    }
}

/// The one monitor: when `target` stops, `watcher` (if its memory still
/// exists) receives `to_msg(Down)`.
pub(crate) fn watch_for<A: Actor, T: Watchable>(
    watcher: WeakActorRef<A>,
    target: &T,
    to_msg: impl FnOnce(Down) -> A::Msg + Send + 'static,
) -> WatchId {
    target.on_stop(monitor(watcher.cell, to_msg))
}

/// The stop callback of a monitor. It captures one weak pointer (and
/// `to_msg`, zero-sized when it captures nothing), so the exit record
/// stores it inline, with no allocation (`watcher.rs`).
pub(crate) fn monitor<A: Actor>(
    watcher: Weak<ActorCell<A>>,
    to_msg: impl FnOnce(Down) -> A::Msg + Send + 'static,
) -> impl FnOnce(ActorId, &StopReason) + Send + 'static {
    move |id, reason| {
        if let Some(me) = watcher.upgrade() {
            let _ = me.send(to_msg(Down {
                id,
                reason: reason.clone(),
            }));
        }
    }
}

impl<A: Actor> Watchable for ActorRef<A> {
    fn id(&self) -> ActorId {
        self.cell.id
    }

    fn on_stop(&self, f: impl FnOnce(ActorId, &StopReason) + Send + 'static) -> WatchId {
        ActorRef::on_stop(self, f)
    }

    fn demonitor(&self, watch: WatchId) -> bool {
        ActorRef::demonitor(self, watch)
    }

    fn kill(&self) {
        ActorRef::kill(self)
    }
}

/// A reference to an actor that does not keep its memory alive: for
/// back-references (a child to its parent, a cache of actors) that must not
/// form cycles. [`upgrade`](Self::upgrade) gives an [`ActorRef`] while the
/// actor's memory exists (a stopped actor's too: sends then hand the
/// message back).
///
/// ```
/// use troupe::{Actor, ActorSystem, Context};
/// struct Idle;
/// impl Actor for Idle {
///     type Msg = ();
///     fn handle(&mut self, _: (), _: &mut Context<'_, Self>) {}
/// }
/// let system = ActorSystem::builder().threads(1).build();
/// let a = system.spawn(Idle);
/// let weak = a.downgrade();
/// assert_eq!(weak.upgrade(), Some(a.clone()));
/// a.stop();
/// a.join();
/// drop(a);
/// system.shutdown();
/// assert!(weak.upgrade().is_none());
/// ```
pub struct WeakActorRef<A: Actor> {
    cell: Weak<ActorCell<A>>,
    id: ActorId,
}

impl<A: Actor> WeakActorRef<A> {
    /// A weak reference to `cell` (no strong-count traffic).
    pub(crate) fn of(cell: &ActorCell<A>) -> Self {
        WeakActorRef {
            cell: cell.weak(),
            id: cell.id,
        }
    }

    /// A strong reference, if the actor's memory still exists.
    pub fn upgrade(&self) -> Option<ActorRef<A>> {
        self.cell.upgrade().map(|cell| ActorRef { cell })
    }

    /// The actor's id (known even after its memory is gone).
    pub fn id(&self) -> ActorId {
        self.id
    }
}

impl<A: Actor> Clone for WeakActorRef<A> {
    fn clone(&self) -> Self {
        WeakActorRef {
            cell: self.cell.clone(),
            id: self.id,
        }
    }
}

impl<A: Actor> fmt::Debug for WeakActorRef<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WeakActorRef{}", self.id)
    }
}
