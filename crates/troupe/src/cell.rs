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
//!   then the actor goes to the back of the line (if more are waiting) or
//!   releases the bit and re-checks (see `state.rs`).
//! * A panic in `started`, `handle` or `stopped` is caught; the actor is
//!   finalized with `StopReason::Panicked` and the worker carries on.
//! * Finalizing (once, by the task holder): mark `STOPPED|CLOSED`, run the
//!   `stopped` hook (not after a panic), drop the actor, drop and count what is
//!   left in the mailbox (pending asks fail with `ActorStopped`), publish the
//!   exit reason to joiners and watchers, leave the system's actor table.

use crate::actor::{Actor, ActorId, Context};
use crate::ask::{while_dropping, ReplySink};
use crate::error::{AskError, SendError, StopReason};
use crate::mailbox::{Mailbox, MailboxConfig, PushError};
use crate::scheduler::{Runnable, WorkerLocal};
use crate::state::{self, ActorState};
use crate::system::SystemInner;
use parking_lot::{Condvar, Mutex};
use std::cell::UnsafeCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
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

enum Exit {
    Running(Vec<Watcher>),
    Stopped(StopReason),
}

struct Slot<A> {
    actor: Option<A>,
    started: bool,
}

pub(crate) struct ActorCell<A: Actor> {
    pub(crate) state: ActorState,
    pub(crate) mailbox: Mailbox<A::Msg>,
    pub(crate) system: Arc<SystemInner>,
    pub(crate) id: ActorId,
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
    ) -> Self {
        ActorCell {
            state: ActorState::new_scheduled(),
            mailbox: Mailbox::new(mailbox),
            system,
            id,
            table_key,
            slot: UnsafeCell::new(Slot {
                actor: Some(actor),
                started: false,
            }),
            exit: Mutex::new(Exit::Running(Vec::new())),
            exit_cv: Condvar::new(),
        }
    }

    /// Sends a message: push, then schedule the actor if it was idle.
    #[inline]
    pub(crate) fn send(self: &Arc<Self>, msg: A::Msg) -> Result<(), SendError<A::Msg>> {
        if self.state.is_closed() {
            return Err(SendError::Stopped(msg));
        }
        match self.mailbox.push(msg) {
            Ok(None) => {}
            Ok(Some(evicted)) => self.drop_evicted(evicted),
            Err(PushError::Full(m)) => return Err(SendError::Full(m)),
            Err(PushError::Closed(m)) => return Err(SendError::Stopped(m)),
        }
        if self.state.notify() {
            self.system.pool.schedule(self.clone());
        }
        Ok(())
    }

    #[cold]
    fn drop_evicted(&self, evicted: A::Msg) {
        while_dropping(AskError::MailboxFull, || drop(evicted));
        self.system.dropped.fetch_add(1, Ordering::Relaxed);
    }

    /// Asks the actor to stop; schedules it if idle so it sees the request.
    pub(crate) fn stop_request(self: &Arc<Self>, kind: StopRequest) {
        let bits = match kind {
            StopRequest::Drain => state::STOP_DRAIN,
            StopRequest::Kill => state::STOP_NOW,
            StopRequest::Shutdown => state::STOP_DRAIN | state::SHUTDOWN,
            StopRequest::ShutdownNow => state::STOP_NOW | state::SHUTDOWN,
        };
        if self.state.request_stop(bits) {
            self.system.pool.schedule(self.clone());
        }
    }

    /// Registers `w` to run when the actor stops; runs it now if it already has.
    pub(crate) fn add_watcher(&self, w: Watcher) {
        let mut exit = self.exit.lock();
        match &mut *exit {
            Exit::Running(ws) => ws.push(w),
            Exit::Stopped(reason) => {
                let reason = reason.clone();
                drop(exit);
                w(self.id, &reason);
            }
        }
    }

    /// The stop reason, once stopped.
    pub(crate) fn exit_reason(&self) -> Option<StopReason> {
        match &*self.exit.lock() {
            Exit::Running(_) => None,
            Exit::Stopped(r) => Some(r.clone()),
        }
    }

    /// Blocks until the actor has stopped, or the deadline passes.
    pub(crate) fn wait_exit(&self, deadline: Option<Instant>) -> Option<StopReason> {
        let mut exit = self.exit.lock();
        loop {
            if let Exit::Stopped(r) = &*exit {
                return Some(r.clone());
            }
            match deadline {
                None => self.exit_cv.wait(&mut exit),
                Some(d) => {
                    if self.exit_cv.wait_until(&mut exit, d).timed_out() {
                        if let Exit::Stopped(r) = &*exit {
                            return Some(r.clone());
                        }
                        return None;
                    }
                }
            }
        }
    }

    /// Runs `f` with the actor and a context, catching a panic.
    fn guarded(
        self: &Arc<Self>,
        actor: &mut A,
        ctx: &mut Context<'_, A>,
        f: impl FnOnce(&mut A, &mut Context<'_, A>),
    ) -> Result<(), StopReason> {
        catch_unwind(AssertUnwindSafe(|| f(actor, ctx)))
            .map_err(|p| StopReason::Panicked(panic_message(&*p)))
    }

    fn finalize(self: &Arc<Self>, reason: StopReason, run_hook: bool) {
        self.state.mark_stopped();
        self.mailbox.close();
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
        // SAFETY: we are still the only consumer (task holder).
        let dropped = while_dropping(AskError::ActorStopped, || {
            let mut n = 0u64;
            while let Some(m) = unsafe { self.mailbox.pop() } {
                drop(m);
                n += 1;
            }
            n
        });
        if dropped > 0 {
            self.system.dropped.fetch_add(dropped, Ordering::Relaxed);
            tracing::debug!(actor = %self.id, dropped, "stopped actor's pending messages dropped");
        }
        let watchers = {
            let mut exit = self.exit.lock();
            match std::mem::replace(&mut *exit, Exit::Stopped(reason.clone())) {
                Exit::Running(ws) => ws,
                Exit::Stopped(_) => Vec::new(),
            }
        };
        self.exit_cv.notify_all();
        for w in watchers {
            w(self.id, &reason);
        }
        self.system.actor_finished(self.table_key);
    }

    /// Mailbox snapshot: messages waiting.
    pub(crate) fn queue_len(&self) -> usize {
        self.mailbox.len()
    }
}

impl<A: Actor> Runnable for ActorCell<A> {
    fn run(self: Arc<Self>, worker: &WorkerLocal) {
        // SAFETY: we hold the actor's task (the scheduler hands each task to
        // one worker), so nobody else touches the slot until we release it.
        let slot = unsafe { &mut *self.slot.get() };
        let Some(actor) = slot.actor.as_mut() else {
            return;
        };
        let mut ctx = Context::new(&self);

        if !slot.started {
            slot.started = true;
            if let Err(reason) = self.guarded(actor, &mut ctx, |a, c| a.started(c)) {
                return self.finalize(reason, false);
            }
        }

        let budget = worker.throughput();
        let mut handled = 0usize;
        let turn = catch_unwind(AssertUnwindSafe(|| {
            while handled < budget && !ctx.stopping() {
                if self.state.load() & state::STOP_NOW != 0 {
                    break;
                }
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
        let bits = self.state.load();
        if bits & state::STOP_NOW != 0 {
            let reason = if bits & state::SHUTDOWN != 0 {
                StopReason::Shutdown
            } else {
                StopReason::Killed
            };
            return self.finalize(reason, true);
        }
        if handled == budget {
            // More may be waiting: to the back of the line.
            return worker.yield_task(self);
        }
        // The mailbox looked empty.
        if bits & state::STOP_DRAIN != 0 && self.mailbox.is_empty() {
            let reason = if bits & state::SHUTDOWN != 0 {
                StopReason::Shutdown
            } else {
                StopReason::Normal
            };
            return self.finalize(reason, true);
        }
        let prev = self.state.release();
        if (!self.mailbox.is_empty() || prev & state::STOP_ANY != 0) && self.state.reacquire() {
            // A message or stop request arrived after our last look, and no
            // sender took the task: run again soon.
            worker.push_local(self);
        }
    }

    fn request_stop(self: Arc<Self>, kind: StopRequest) {
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
        let mut n = 0u64;
        while_dropping(AskError::ActorStopped, || {
            // SAFETY: `&mut self`: no other reference exists.
            while let Some(m) = unsafe { self.mailbox.pop() } {
                drop(m);
                n += 1;
            }
        });
        if n > 0 {
            self.system.dropped.fetch_add(n, Ordering::Relaxed);
        }
    }
}
