//! The actor cell: one heap block per actor holding its state word, mailbox,
//! the user's actor value, and its exit record; and the turn a worker runs.
//!
//! Memory layout (one `Arc` allocation; see `docs/architecture.md`):
//! `[Arc counts][state][mailbox][system][id][table key][actor slot][exit]`.
//! An unbounded mailbox allocates its first block on its first message.
//!
//! Invariants:
//! * Only the holder of the actor's task (`SCHEDULED` bit) touches the actor
//!   slot or pops the mailbox. A turn handles at most `throughput` messages,
//!   then the actor goes to the back of the line; when the mailbox runs dry
//!   the worker releases the task with one CAS that fails if anything was
//!   claimed meanwhile (`mailbox::Release`).
//! * A panic in `started`, `handle` or `stopped` is caught; the actor is
//!   finalized with `StopReason::Panicked` and the worker carries on.
//! * Finalizing (once, by the task holder): mark `STOPPED|CLOSED`, run the
//!   `stopped` hook (not after a panic), drop the actor, drop and count what is
//!   left in the mailbox (pending asks fail with `ActorStopped`), publish the
//!   exit reason to joiners and watchers, leave the system's actor table.

use crate::actor::{Actor, ActorId, Context};
use crate::ask::{while_dropping, ReplySink};
use crate::error::{AskError, SendError, StopReason};
use crate::mailbox::{Mailbox, MailboxConfig, PushError, Pushed, Release};
use crate::scheduler::{Pool, Runnable, Task, WorkerLocal};
use crate::state;
use crate::system::SystemInner;
use parking_lot::{Condvar, Mutex};
use std::cell::UnsafeCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
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

/// Called with the actor's id and stop reason when it stops.
pub(crate) type Watcher = Box<dyn FnOnce(ActorId, &StopReason) + Send>;

/// A shared watcher of many actors (a registry): told the stopped actor's
/// id, the token it was registered with, and the reason. Costs no
/// allocation per watched actor: the first listener sits in the cell.
pub(crate) trait StopListener: Send + Sync {
    fn actor_stopped(&self, id: ActorId, token: u64, reason: &StopReason);
}

/// Identifies one `on_stop` watcher, to cancel it with
/// [`ActorRef::demonitor`](crate::ActorRef::demonitor).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WatchId(u64);

static NEXT_WATCH: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl WatchId {
    fn next() -> Self {
        WatchId(NEXT_WATCH.fetch_add(1, Ordering::Relaxed))
    }
}

/// A listener and the token it is told.
type Listening = (Arc<dyn StopListener>, u64);

/// A watcher beyond the first listener.
enum Extra {
    Listener(Listening),
    Once(WatchId, Watcher),
}

/// Who is told when the actor stops.
#[derive(Default)]
struct Watchers {
    /// The first listener, inline (a registry entry costs nothing here).
    listener: Option<Listening>,
    rest: Vec<Extra>,
}

enum Exit {
    Running(Watchers),
    /// `told`: every watcher has run; joiners wait for it, so that once
    /// `join` returns, the actor's monitors (a registry's cleanup, a
    /// supervisor's `Down`) have done their work.
    Stopped {
        reason: StopReason,
        told: bool,
    },
}

fn same_listener(a: &Arc<dyn StopListener>, b: &Arc<dyn StopListener>) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

struct Slot<A> {
    actor: Option<A>,
    started: bool,
}

pub(crate) struct ActorCell<A: Actor> {
    /// Messages and the actor's state bits (see `mailbox`).
    pub(crate) mailbox: Mailbox<A::Msg>,
    pub(crate) system: Arc<SystemInner>,
    /// The pool the actor runs on when not the system's default one.
    pool: Option<Arc<Pool>>,
    /// The pool is this actor's own thread: stop it when the actor stops.
    dedicated: bool,
    pub(crate) id: ActorId,
    /// Set with `STOP_NOW`: read per message by the running worker. Kept apart
    /// from the state bits, whose cache line the senders write.
    killed: AtomicBool,
    table_key: u64,
    slot: UnsafeCell<Slot<A>>,
    exit: Mutex<Exit>,
    exit_cv: Condvar,
}

// SAFETY: the actor value is only touched by the single holder of the actor's
// task (the `SCHEDULED` bit protocol in `state.rs`), one thread at a time, so
// `A: Send` suffices for sharing the cell; messages are `Send`; every other
// field is itself `Sync`.
unsafe impl<A: Actor> Sync for ActorCell<A> {}
// SAFETY: as above; the cell moves between threads with its task.
unsafe impl<A: Actor> Send for ActorCell<A> {}

pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

impl<A: Actor> ActorCell<A> {
    pub(crate) fn new(
        actor: A,
        id: ActorId,
        table_key: u64,
        mailbox: MailboxConfig,
        system: Arc<SystemInner>,
        pool: Option<Arc<Pool>>,
        dedicated: bool,
    ) -> Self {
        ActorCell {
            mailbox: Mailbox::new(mailbox),
            system,
            pool,
            dedicated,
            id,
            killed: AtomicBool::new(false),
            table_key,
            slot: UnsafeCell::new(Slot {
                actor: Some(actor),
                started: false,
            }),
            exit: Mutex::new(Exit::Running(Watchers::default())),
            exit_cv: Condvar::new(),
        }
    }

    /// The pool this actor runs on.
    #[inline]
    pub(crate) fn pool(&self) -> &Arc<Pool> {
        self.pool.as_ref().unwrap_or(&self.system.pool)
    }

    /// A new strong reference to this cell.
    pub(crate) fn arc(&self) -> Arc<Self> {
        let ptr: *const Self = self;
        // SAFETY: every `ActorCell` is created inside an `Arc` (`spawn_cell`)
        // and is alive while borrowed, so its strong count is at least one
        // and may be incremented to mint another `Arc`.
        unsafe {
            Arc::increment_strong_count(ptr);
            Arc::from_raw(ptr)
        }
    }

    /// Sends a message: push, then schedule the actor if it was idle.
    #[inline]
    pub(crate) fn send(&self, msg: A::Msg) -> Result<(), SendError<A::Msg>> {
        self.send_with(msg, true)
    }

    /// As `send`; a `Block` mailbox waits for room only if `may_block`.
    #[inline]
    pub(crate) fn send_with(&self, msg: A::Msg, may_block: bool) -> Result<(), SendError<A::Msg>> {
        match self.mailbox.push(msg, may_block) {
            Ok(Pushed { schedule, evicted }) => {
                if let Some(old) = evicted {
                    self.drop_evicted(old);
                }
                if schedule {
                    // We took the SCHEDULED bit: the task is ours to hand over.
                    self.pool().schedule(Task::new(self));
                }
                Ok(())
            }
            Err(PushError::Full(m)) => Err(SendError::Full(m)),
            Err(PushError::Closed(m)) => Err(SendError::Stopped(m)),
        }
    }

    #[cold]
    fn drop_evicted(&self, evicted: A::Msg) {
        self.system.dropped.fetch_add(1, Ordering::Relaxed);
        while_dropping(AskError::MailboxFull, || drop(evicted));
    }

    /// Asks the actor to stop; schedules it if idle so it sees the request.
    pub(crate) fn stop_request(&self, kind: StopRequest) {
        let bits = match kind {
            StopRequest::Drain => state::STOP_DRAIN,
            StopRequest::Kill => state::STOP_NOW,
            StopRequest::Shutdown => state::STOP_DRAIN | state::SHUTDOWN,
            StopRequest::ShutdownNow => state::STOP_NOW | state::SHUTDOWN,
        };
        if bits & state::STOP_NOW != 0 {
            self.killed.store(true, Ordering::Release);
        }
        if self.mailbox.request_stop(bits) {
            self.pool().schedule(Task::new(self));
        }
    }

    /// Registers `w` to run when the actor stops; runs it now if it already has.
    pub(crate) fn add_watcher(&self, w: Watcher) -> WatchId {
        let id = WatchId::next();
        let mut exit = self.exit.lock();
        match &mut *exit {
            Exit::Running(ws) => {
                // Most actors get one watcher (a monitor): don't let the
                // first push reserve room for four.
                if ws.rest.capacity() == 0 {
                    ws.rest.reserve_exact(1);
                }
                ws.rest.push(Extra::Once(id, w))
            }
            Exit::Stopped { reason, .. } => {
                let reason = reason.clone();
                drop(exit);
                w(self.id, &reason);
            }
        }
        id
    }

    /// Cancels a watcher from [`add_watcher`](Self::add_watcher); `false` if
    /// it has run (or is running) already.
    pub(crate) fn remove_watcher(&self, id: WatchId) -> bool {
        let mut exit = self.exit.lock();
        let Exit::Running(ws) = &mut *exit else {
            return false;
        };
        let Some(at) = ws
            .rest
            .iter()
            .position(|x| matches!(x, Extra::Once(k, _) if *k == id))
        else {
            return false;
        };
        let w = ws.rest.swap_remove(at);
        drop(exit);
        drop(w);
        true
    }

    /// Tells `listener` (with `token`) when the actor stops. Returns `false`
    /// (and registers nothing, tells nothing) if it has stopped already.
    pub(crate) fn add_listener(&self, listener: Arc<dyn StopListener>, token: u64) -> bool {
        let mut exit = self.exit.lock();
        let Exit::Running(ws) = &mut *exit else {
            return false;
        };
        if ws.listener.is_none() {
            ws.listener = Some((listener, token));
        } else {
            ws.rest.push(Extra::Listener((listener, token)));
        }
        true
    }

    /// The token `listener` listens to this actor with, if it does (and the
    /// actor has not stopped).
    pub(crate) fn listener_token(&self, listener: &Arc<dyn StopListener>) -> Option<u64> {
        let exit = self.exit.lock();
        let Exit::Running(ws) = &*exit else {
            return None;
        };
        let rest = ws.rest.iter().filter_map(|x| match x {
            Extra::Listener(l) => Some(l),
            Extra::Once(..) => None,
        });
        ws.listener
            .iter()
            .chain(rest)
            .find(|(l, _)| same_listener(l, listener))
            .map(|(_, t)| *t)
    }

    /// Stops telling `listener` about this actor; `false` if it was not
    /// listening (or the actor has stopped and it is being told).
    pub(crate) fn remove_listener(&self, listener: &Arc<dyn StopListener>) -> bool {
        let removed =
            {
                let mut exit = self.exit.lock();
                let Exit::Running(ws) = &mut *exit else {
                    return false;
                };
                if ws
                    .listener
                    .as_ref()
                    .is_some_and(|(l, _)| same_listener(l, listener))
                {
                    ws.listener.take().map(Extra::Listener)
                } else if let Some(at) = ws.rest.iter().position(
                    |x| matches!(x, Extra::Listener((l, _)) if same_listener(l, listener)),
                ) {
                    Some(ws.rest.swap_remove(at))
                } else {
                    None
                }
            };
        // Dropped outside the lock: it may be the listener's last reference.
        removed.is_some()
    }

    /// Watchers registered and not yet run (listeners and closures).
    #[cfg(test)]
    pub(crate) fn watcher_count(&self) -> usize {
        match &*self.exit.lock() {
            Exit::Running(ws) => ws.listener.iter().count() + ws.rest.len(),
            Exit::Stopped { .. } => 0,
        }
    }

    /// The stop reason, once stopped.
    pub(crate) fn exit_reason(&self) -> Option<StopReason> {
        match &*self.exit.lock() {
            Exit::Running(_) => None,
            Exit::Stopped { reason, .. } => Some(reason.clone()),
        }
    }

    /// Blocks until the actor has stopped and its watchers have run, or the
    /// deadline passes.
    pub(crate) fn wait_exit(&self, deadline: Option<Instant>) -> Option<StopReason> {
        let mut exit = self.exit.lock();
        loop {
            if let Exit::Stopped { reason, told: true } = &*exit {
                return Some(reason.clone());
            }
            match deadline {
                None => self.exit_cv.wait(&mut exit),
                Some(d) => {
                    if self.exit_cv.wait_until(&mut exit, d).timed_out() {
                        if let Exit::Stopped { reason, told: true } = &*exit {
                            return Some(reason.clone());
                        }
                        return None;
                    }
                }
            }
        }
    }

    /// Runs `f` with the actor and a context, catching a panic.
    fn guarded(
        &self,
        actor: &mut A,
        ctx: &mut Context<'_, A>,
        f: impl FnOnce(&mut A, &mut Context<'_, A>),
    ) -> Result<(), StopReason> {
        catch_unwind(AssertUnwindSafe(|| f(actor, ctx)))
            .map_err(|p| StopReason::Panicked(panic_message(&*p)))
    }

    /// Stops the actor for good (see the module docs). Returns its table
    /// entry, which the caller drops after its last use of `self`.
    #[must_use]
    fn finalize(&self, reason: StopReason, run_hook: bool) -> Option<Arc<dyn Runnable>> {
        self.mailbox.mark_stopped();
        let mut reason = reason;
        // SAFETY: we hold the actor's task (we are running it), so we have
        // exclusive access to the slot; `mark_stopped` leaves SCHEDULED set
        // forever, so no one else ever will.
        let slot = unsafe { &mut *self.slot.get() };
        if let Some(mut actor) = slot.actor.take() {
            if run_hook {
                let mut ctx = Context::new(self);
                if let Err(r) = self.guarded(&mut actor, &mut ctx, |a, c| a.stopped(c)) {
                    reason = r;
                }
            }
            if let Err(p) = catch_unwind(AssertUnwindSafe(move || drop(actor))) {
                reason = StopReason::Panicked(panic_message(&*p));
            }
        }
        if let StopReason::Panicked(msg) = &reason {
            tracing::error!(actor = %self.id, panic = %msg, "actor panicked and was stopped");
        }
        // Count each leftover before dropping it: dropping a request's
        // `ReplyTo` wakes its asker, who may read the counter at once.
        let dropped = while_dropping(AskError::ActorStopped, || {
            let mut n = 0u64;
            // SAFETY: we are still the only consumer (task holder).
            while let Some(m) = unsafe { self.mailbox.pop() } {
                self.system.dropped.fetch_add(1, Ordering::Relaxed);
                drop(m);
                n += 1;
            }
            n
        });
        if dropped > 0 {
            tracing::debug!(actor = %self.id, dropped, "stopped actor's pending messages dropped");
        }
        let watchers = {
            let mut exit = self.exit.lock();
            let ws = match &mut *exit {
                Exit::Running(ws) => std::mem::take(ws),
                Exit::Stopped { .. } => Watchers::default(),
            };
            // With no watcher to run (most actors), joiners may go at once:
            // one lock, not two.
            let told = ws.listener.is_none() && ws.rest.is_empty();
            *exit = Exit::Stopped {
                reason: reason.clone(),
                told,
            };
            if told {
                drop(exit);
                self.exit_cv.notify_all();
                return self.finish();
            }
            ws
        };
        // Outside the lock: a watcher may watch, or ask for the reason.
        if let Some((l, token)) = watchers.listener {
            l.actor_stopped(self.id, token, &reason);
        }
        for x in watchers.rest {
            match x {
                Extra::Listener((l, token)) => l.actor_stopped(self.id, token, &reason),
                Extra::Once(_, w) => w(self.id, &reason),
            }
        }
        if let Exit::Stopped { told, .. } = &mut *self.exit.lock() {
            *told = true;
        }
        self.exit_cv.notify_all();
        self.finish()
    }

    /// The last step of finalizing: leave the pool (a dedicated thread) and
    /// the actor table; returns the table entry (see `finalize`).
    fn finish(&self) -> Option<Arc<dyn Runnable>> {
        if self.dedicated {
            // Our own thread: it exits once this turn returns.
            self.pool().begin_shutdown();
        }
        self.system.actor_finished(self.table_key)
    }

    /// Mailbox snapshot: messages waiting.
    pub(crate) fn queue_len(&self) -> usize {
        self.mailbox.len()
    }
}

impl<A: Actor> Runnable for ActorCell<A> {
    fn run(&self, worker: &WorkerLocal) -> Option<Arc<dyn Runnable>> {
        // SAFETY: we hold the actor's task (the scheduler hands each task to
        // one worker), so nobody else touches the slot until we release it.
        let slot = unsafe { &mut *self.slot.get() };
        let actor = slot.actor.as_mut()?;
        let mut ctx = Context::new(self);

        if !slot.started {
            slot.started = true;
            if let Err(reason) = self.guarded(actor, &mut ctx, |a, c| a.started(c)) {
                return self.finalize(reason, false);
            }
        }

        // Stop requests are read once per turn and whenever the mailbox runs
        // dry, not per message: the state bits share the senders' cache line.
        let budget = worker.throughput();
        let mut handled = 0usize;
        let mut bits = self.mailbox.flags();
        loop {
            if bits & state::STOP_NOW != 0 {
                let reason = if bits & state::SHUTDOWN != 0 {
                    StopReason::Shutdown
                } else {
                    StopReason::Killed
                };
                return self.finalize(reason, true);
            }
            let before = handled;
            let turn = catch_unwind(AssertUnwindSafe(|| {
                while handled < budget && !ctx.stopping() && !self.killed.load(Ordering::Relaxed) {
                    // SAFETY: task holder = sole consumer.
                    match unsafe { self.mailbox.pop() } {
                        Some(msg) => {
                            handled += 1;
                            actor.handle(msg, &mut ctx);
                        }
                        None => break,
                    }
                }
            }));
            if let Err(p) = turn {
                return self.finalize(StopReason::Panicked(panic_message(&*p)), false);
            }
            if ctx.stopping() {
                return self.finalize(StopReason::Normal, true);
            }
            if self.killed.load(Ordering::Acquire) {
                bits = self.mailbox.flags();
                continue;
            }
            if handled >= budget {
                // More may be waiting: to the back of the line.
                worker.yield_task(Task::new(self));
                return None;
            }
            // The mailbox looked empty.
            // SAFETY: we hold the task.
            match unsafe { self.mailbox.try_release() } {
                Release::Released => return None,
                Release::NotEmpty => {
                    if handled == before {
                        // Nothing readable though a slot is claimed: its
                        // sender is mid-write. Come back after other work
                        // instead of spinning here.
                        worker.push_local(Task::new(self));
                        return None;
                    }
                }
                Release::Stop(b) => {
                    bits = b;
                    if bits & state::STOP_DRAIN != 0
                        && bits & state::STOP_NOW == 0
                        && self.mailbox.is_empty()
                    {
                        let reason = if bits & state::SHUTDOWN != 0 {
                            StopReason::Shutdown
                        } else {
                            StopReason::Normal
                        };
                        return self.finalize(reason, true);
                    }
                    if bits & state::STOP_NOW == 0 && handled == before && !self.mailbox.is_empty()
                    {
                        worker.push_local(Task::new(self));
                        return None;
                    }
                }
            }
        }
    }

    fn request_stop(&self, kind: StopRequest) {
        self.stop_request(kind);
    }
}

impl<A: Actor, R: Send + 'static> ReplySink<R> for ActorCell<A>
where
    A::Msg: From<Result<R, AskError>>,
{
    fn deliver(self: Arc<Self>, reply: Result<R, AskError>) {
        // A reply to a stopped asker has nowhere to go; it is dropped.
        let _ = self.send(A::Msg::from(reply));
    }
}

impl<A: Actor> Drop for ActorCell<A> {
    fn drop(&mut self) {
        // Messages that raced with the actor's stop (sent after its final
        // drain) end here: dropped and counted, asks failed.
        let system = &self.system;
        let mailbox = &self.mailbox;
        while_dropping(AskError::ActorStopped, || {
            // SAFETY: `&mut self`: no other reference exists.
            while let Some(m) = unsafe { mailbox.pop() } {
                system.dropped.fetch_add(1, Ordering::Relaxed);
                drop(m);
            }
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    struct Unit;
    impl Actor for Unit {
        type Msg = u64;
        fn handle(&mut self, _: u64, _: &mut Context<'_, Self>) {}
    }

    /// Guards the per-actor memory budget (an idle actor, cell plus table
    /// entry, must stay within 256 bytes): the cell itself for a zero-sized
    /// actor, before the `Arc` header (16 bytes) and the table slot.
    #[test]
    fn cell_stays_small() {
        let size = std::mem::size_of::<ActorCell<Unit>>();
        eprintln!("ActorCell<zero-sized actor> = {size} bytes");
        assert!(size <= 160, "ActorCell grew to {size} bytes");
    }
}
