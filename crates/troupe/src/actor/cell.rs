//! The actor cell: one heap block per actor holding its mailbox (with the
//! state word), the user's actor value and its exit record; and the turn a
//! worker runs.
//!
//! Memory layout: one `Arc` allocation, fields in declaration order
//! (`repr(C)`, see `ActorCell`): `[Arc counts][mailbox + state][metrics]
//! [pool][runtime][id][table key][name][exit record][actor slot][stall][killed]
//! [dedicated][rt_released]`. What senders touch comes first, the actor
//! value after the exit record, more than a cache line away. An unbounded
//! mailbox allocates its first block on its first message.
//!
//! Invariants:
//! * Only the holder of the actor's task (`SCHEDULED` bit) touches the actor
//!   slot or pops the mailbox. A turn handles at most `throughput` messages,
//!   then the actor goes to the back of the line; when the mailbox runs dry
//!   the worker releases the task with one CAS that fails if anything was
//!   claimed meanwhile (`mailbox::Release`).
//! * A panic in `started`, `handle` or `stopped`, or in dropping the actor
//!   or a message, is caught (`lifecycle::guard`); the actor is finalized
//!   with `StopReason::Panicked` and the worker carries on.
//! * Finalizing (once, by the task holder): mark `STOPPED|CLOSED`, run the
//!   `stopped` hook (not after a panic), drop the actor, drop and count what is
//!   left in the mailbox, or hand it to the actor's undelivered hook if it
//!   has one (`undelivered.rs`) (pending asks fail with `ActorStopped`; the drain
//!   waits for slots claimed before `CLOSED` but not yet written, so nothing
//!   accepted is still inside when `join` returns), publish the
//!   exit reason to joiners and watchers (`lifecycle::ExitRecord`), leave the
//!   system's actor table.

use super::ask::{while_dropping, ReplySink};
use super::behaviour::{Actor, Sealed};
use super::context::Context;
use super::envelope::{self, Envelope};
use super::error::{AskError, SendError, StopReason};
use super::id::ActorId;
use super::lifecycle::{
    guard, reason_from_bits, ExitRecord, StopRequest, Stoppable, WatchId, Watcher,
};
use super::metrics::{sample_mask, ActorMetrics, MailboxProbe, MetricsRef, PENDING, TRACE};
use super::recycle;
use super::runtime::{Admission, SpawnOptions};
use super::runtime_ref::RuntimeRef;
use super::stall::{Described, StallSetting};
use super::undelivered::{Hook, Undelivered};
use crate::engine::mailbox::{Mailbox, MailboxConfig, PushError, Release};
use crate::engine::scheduler::{self, Pool, Runnable, Task, WorkerLocal};
use crate::engine::state_word as state;
use crate::engine::sync::{self, Event};
use std::cell::UnsafeCell;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Weak};

struct Slot<A: Actor> {
    actor: Option<A>,
    /// [`STARTED`] and [`UNDELIVERED`]: one byte, so that the slot's two
    /// flags and the stall setting fit the padding after the exit record
    /// (`cell_stays_small`).
    flags: u8,
}

/// `started` has run.
const STARTED: u8 = 1;
/// The actor has an undelivered hook (`undelivered.rs`), kept in its exit
/// record: the finalizer hands the mailbox to it instead of dropping it. A
/// flag here, in the slot's padding, so that an actor without one neither
/// grows nor takes the record's lock for it.
const UNDELIVERED: u8 = 2;

/// Field order is fixed (`repr(C)`) so that what senders touch and what
/// the task holder writes per message sit more than a cache line apart:
/// a send reads and writes only the last 24 bytes of the mailbox (the
/// unbounded mailbox's tag, `block_tail` and tail word) and the metrics
/// word and the pool right after them, 40 contiguous bytes, and, when it
/// schedules the actor, reads `rt` right after those; the mailbox's own
/// consumer fields (head index and block) sit first, a full cache line
/// before the senders' bytes, and the actor value, which its handler may
/// write on every message, comes after the exit record, more than a line
/// after `rt` (`senders_and_handler_do_not_share_a_line`). With the
/// compiler's order the metrics word sat 8 bytes before the actor value,
/// and every send pulled the line the receiving worker had just written;
/// with the consumer's head index 16 bytes after the tail word, every pop
/// wrote the line every send claims on (issue 39).
#[repr(C)]
pub(crate) struct ActorCell<A: Actor> {
    /// Messages and the actor's state bits (see `engine::mailbox`); each
    /// slot an `envelope::Envelope` (the message itself unless the
    /// `trace-context` feature is on).
    pub(crate) mailbox: Mailbox<Envelope<A::Msg>>,
    /// Counters and timings (`metrics.rs`); 0 when metrics are off, so the
    /// hot path pays one predictable branch. Read by every send.
    pub(crate) metrics: MetricsRef,
    /// The pool the actor runs on when not the system's default one.
    pool: Option<Arc<Pool>>,
    /// Released by the drop, unless the finalizer's retirement released it
    /// (`rt_released`).
    pub(crate) rt: ManuallyDrop<RuntimeRef>,
    pub(crate) id: ActorId,
    /// The actor's key in the system's table: set once by the spawner
    /// before the first task, read by the finalizer.
    table_key: AtomicU64,
    pub(crate) name: Option<Arc<String>>,
    pub(crate) exit: ExitRecord,
    slot: UnsafeCell<Slot<A>>,
    /// The actor's own stall threshold (`SpawnOptions::stall_threshold`),
    /// written at spawn, read by the watchdog (`actor::stall`). Two bytes,
    /// in what was padding.
    stall: StallSetting,
    /// Set with `STOP_NOW`: read per message by the running worker. Kept apart
    /// from the state bits, whose cache line the senders write.
    pub(crate) killed: AtomicBool,
    /// The pool is this actor's own thread: stop it when the actor stops.
    dedicated: bool,
    /// The finalizer's retirement uncounted `rt` (`Retired::holder_released`):
    /// the table's entry was the last reference, and its drop is this
    /// cell's drop, which must not touch the runtime. Written by the task
    /// holder before it drops the entry, read by the drop.
    rt_released: AtomicBool,
    /// Who holds the task of an actor whose handler is suspended on a
    /// future (`actor::async_actor`): `RUNNING` (the worker), `SUSPENDED`
    /// (parked: the first waker, or a kill, to swap it back takes the task
    /// and schedules it) or `NOTIFIED` (woken while being polled: the
    /// worker comes back to it). Always `RUNNING` for other actors. In the
    /// padding after the flags above: the cell does not grow.
    pub(crate) park: AtomicU8,
}

/// `ActorCell::park` states.
pub(crate) const RUNNING: u8 = 0;
pub(crate) const SUSPENDED: u8 = 1;
pub(crate) const NOTIFIED: u8 = 2;

// Messages are `Send`, and every other field is itself `Sync`.
// SAFETY: the actor value is only touched by the single holder of the actor's
// task (the `SCHEDULED` bit protocol in `engine/state_word.rs`), one thread
// at a time, so `A: Send` suffices for sharing the cell.
unsafe impl<A: Actor> Sync for ActorCell<A> {}
// SAFETY: as above; the cell moves between threads with its task.
unsafe impl<A: Actor> Send for ActorCell<A> {}

impl<A: Actor> ActorCell<A> {
    /// Creates an actor, enrols it, and schedules its first turn (which
    /// runs `started`). `watcher`, if any, is its first stop watcher,
    /// written in before anyone can see the actor (`spawn_monitored`).
    pub(crate) fn spawn(
        rt: &RuntimeRef,
        actor: A,
        options: SpawnOptions,
        watcher: Option<(WatchId, Watcher)>,
    ) -> Arc<Self> {
        Self::spawn_full(rt, actor, options, watcher, None)
    }

    /// As `spawn`, with the hook that takes what the mailbox holds when
    /// the actor is finalized (`undelivered.rs`), if any.
    pub(crate) fn spawn_full(
        rt: &RuntimeRef,
        actor: A,
        options: SpawnOptions,
        watcher: Option<(WatchId, Watcher)>,
        undelivered: Option<Hook<A::Msg>>,
    ) -> Arc<Self> {
        let mailbox = options.mailbox.unwrap_or(rt.default_mailbox);
        let (pool, dedicated) = if options.dedicated {
            let name = options
                .thread_name
                .as_deref()
                .or(options.name.as_deref().map(String::as_str))
                .unwrap_or("troupe-dedicated");
            let mut cfg = rt.pool_config(name, 1);
            // The actor's own thread: blocking there stalls only itself.
            cfg.blocking = true;
            (Some(rt.host.start_pool(cfg)), true)
        } else {
            (options.dispatcher.map(|d| d.pool), false)
        };
        // Built in the Arc's memory, not copied in: a stopped cell's kept
        // memory (`recycle`), or a new Arc. `Arc::get_mut` would check
        // uniqueness with a compare-and-swap; both are unique.
        let cell = recycle::take::<Self>().unwrap_or_else(Arc::<Self>::new_uninit);
        // The Arc is new, or kept by `recycle` as its allocation's only
        // reference with its contents dropped; either way never shared. The
        // pointer is the allocation's own, not from a `&` borrow.
        // SAFETY: so these writes through it are the only access to it.
        unsafe {
            Self::init(
                Arc::as_ptr(&cell).cast_mut().cast::<Self>(),
                actor,
                mailbox,
                rt,
                pool,
                dedicated,
                options.name.clone(),
                options.metrics.unwrap_or(rt.metrics.default_on) || options.trace,
                options.trace,
                watcher,
                StallSetting::of(options.stall),
                undelivered,
            )
        };
        if let Some(d) = options.stall {
            rt.watch.note_threshold(d);
        }
        // SAFETY: written just above.
        let cell = unsafe { cell.assume_init() };
        let (key, admission) = rt.enroll(cell.clone());
        // Before the first task is scheduled (which publishes it to the
        // worker that will finalize the actor); nobody reads it until then.
        cell.table_key.store(key, Ordering::Relaxed);
        if let Some(m) = cell.metrics.arc() {
            let probe: Arc<dyn MailboxProbe> = cell.clone();
            rt.metrics.add((m, Arc::downgrade(&probe)));
        }
        tracing::debug!(actor = %cell.id, name = cell.name.as_deref().map(String::as_str), kind = std::any::type_name::<A>(), "actor spawned");
        match admission {
            Admission::Open => {}
            Admission::Closing => cell.stop_request(StopRequest::Shutdown),
            Admission::Closed => {
                // We hold its first task; no worker will ever run it.
                cell.abandon();
                return cell;
            }
        }
        // The new actor starts SCHEDULED: this task runs its `started` hook.
        cell.pool().schedule(Task::new(&*cell));
        cell
    }

    /// Writes a new cell at `p`, field by field. Built as a value and
    /// moved in, the cell went through a stack copy whose 16-byte loads
    /// read back 8-byte stores: a store-forwarding stall on every spawn
    /// (CHANGELOG, "spawn writes its cell field by field").
    ///
    /// # Safety
    /// `p` is valid for writes of a `Self` and nothing else accesses it.
    // One call site (`spawn`); a struct of arguments would only move them.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn init(
        p: *mut Self,
        actor: A,
        mailbox: MailboxConfig,
        rt: &RuntimeRef,
        pool: Option<Arc<Pool>>,
        dedicated: bool,
        name: Option<Arc<String>>,
        metered: bool,
        trace: bool,
        watcher: Option<(WatchId, Watcher)>,
        stall: StallSetting,
        undelivered: Option<Hook<A::Msg>>,
    ) {
        use std::ptr::addr_of_mut;
        let hooked = undelivered.is_some();
        let id = ActorId::next();
        let metrics = if metered {
            MetricsRef::new(
                Arc::new(ActorMetrics::new(
                    std::any::type_name::<A>(),
                    id.as_u64(),
                    name.clone(),
                )),
                trace,
                rt.metrics.sample_mask,
            )
        } else {
            MetricsRef::off()
        };
        // Only the first write can unwind (a bounded mailbox allocates its
        // ring), and nothing is written before it; every later value is
        // already built, or plain.
        // SAFETY: the caller's contract; each field is written once, so the
        // cell is whole when this returns.
        unsafe {
            addr_of_mut!((*p).mailbox).write(Mailbox::new(mailbox));
            addr_of_mut!((*p).metrics).write(metrics);
            addr_of_mut!((*p).pool).write(pool);
            addr_of_mut!((*p).id).write(id);
            addr_of_mut!((*p).table_key).write(AtomicU64::new(0));
            addr_of_mut!((*p).name).write(name);
            addr_of_mut!((*p).exit).write(ExitRecord::with_watcher(watcher));
            if let Some(hook) = undelivered {
                // Before the cell is shared: the record's lock is free.
                (*p).exit.keep_undelivered(Box::new(hook));
            }
            addr_of_mut!((*p).slot).write(UnsafeCell::new(Slot {
                actor: Some(actor),
                flags: if hooked { UNDELIVERED } else { 0 },
            }));
            addr_of_mut!((*p).stall).write(stall);
            addr_of_mut!((*p).killed).write(AtomicBool::new(false));
            addr_of_mut!((*p).dedicated).write(dedicated);
            addr_of_mut!((*p).rt_released).write(AtomicBool::new(false));
            addr_of_mut!((*p).park).write(AtomicU8::new(RUNNING));
            // Last, so that nothing after it can unwind before `spawn`
            // enrols the cell.
            // SAFETY: `spawn` enrols the cell right after building it,
            // with nothing in between that can unwind; the enrolment
            // counts this reference (or `spawn` takes it).
            addr_of_mut!((*p).rt).write(ManuallyDrop::new(rt.for_enrolment()));
        }
    }

    /// The pool this actor runs on.
    #[inline]
    pub(crate) fn pool(&self) -> &Arc<Pool> {
        self.pool.as_ref().unwrap_or(&self.rt.pool)
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

    /// A weak reference to this cell, without touching the strong count.
    pub(crate) fn weak(&self) -> Weak<Self> {
        let ptr: *const Self = self;
        // SAFETY: as in `arc`: the cell lives in an `Arc` and is alive while
        // borrowed. `ManuallyDrop` keeps this borrowed `Arc` from releasing
        // the count it never took.
        let arc = ManuallyDrop::new(unsafe { Arc::from_raw(ptr) });
        Arc::downgrade(&arc)
    }

    /// Sends a message: push, then schedule the actor if it was idle.
    #[inline]
    pub(crate) fn send(&self, msg: A::Msg) -> Result<(), SendError<A::Msg>> {
        self.send_with(msg, true)
    }

    /// As `send`; a `Block` mailbox waits for room only if `may_block`.
    ///
    /// The unbounded mailbox (the default) takes the short path here: its
    /// push can only be accepted (perhaps owing the actor's task) or refused
    /// as closed, so nothing bounded-only (eviction, a push window) is
    /// tested per message. The bounded flavour goes out of line. Always
    /// inlined: it is the whole tell, and the spill check after a busy tell
    /// tipped the compiler into calling it out of line (ring: +15
    /// instructions per hop under callgrind).
    #[inline(always)]
    pub(crate) fn send_with(&self, msg: A::Msg, may_block: bool) -> Result<(), SendError<A::Msg>> {
        let Mailbox::Unbounded(q) = &self.mailbox else {
            return self.send_bounded(msg, may_block);
        };
        match q.push(envelope::seal(msg)) {
            Ok(schedule) => {
                self.accepted(schedule);
                Ok(())
            }
            Err(m) => Err(self.refused_stopped(envelope::into_msg(m))),
        }
    }

    /// A send refused because the actor stopped: counted (metrics on),
    /// the message handed back.
    #[cold]
    #[inline(never)]
    fn refused_stopped(&self, m: A::Msg) -> SendError<A::Msg> {
        self.count_refused(true);
        SendError::Stopped(m)
    }

    /// What every accepted push does: take a metrics sample if one is
    /// armed (never, with metrics off), and schedule the actor if the push
    /// found it idle.
    #[inline(always)]
    fn accepted(&self, schedule: bool) {
        if self.metrics.armed() {
            self.sample_send();
        }
        if schedule {
            // We took the SCHEDULED bit: the task is ours to hand over.
            self.pool().schedule(Task::new(self));
        } else {
            // A handler that goes on telling after it woke an actor into
            // its worker's LIFO slot lets that actor be stolen.
            scheduler::tell_to_busy();
        }
    }

    #[cold]
    #[inline(never)]
    fn sample_send(&self) {
        if let Some((m, _)) = self.metrics.get() {
            m.sample_send(&self.metrics, self);
        }
    }

    /// `send_with` for a bounded mailbox. What its overflow policy drops
    /// is counted inside the push window, before the actor's final drain
    /// can finish (`engine::state_word`).
    #[inline(never)]
    fn send_bounded(&self, msg: A::Msg, may_block: bool) -> Result<(), SendError<A::Msg>> {
        let evicted = |old| self.drop_undelivered(envelope::into_msg(old), AskError::MailboxFull);
        match self.mailbox.push(envelope::seal(msg), may_block, evicted) {
            Ok(schedule) => {
                self.accepted(schedule);
                Ok(())
            }
            Err(PushError::Full(m)) => {
                self.count_refused(false);
                Err(SendError::Full(envelope::into_msg(m)))
            }
            Err(PushError::Closed(m)) => {
                self.count_refused(true);
                Err(SendError::Stopped(envelope::into_msg(m)))
            }
        }
    }

    /// Counts a refused send (metrics on only).
    #[cold]
    fn count_refused(&self, stopped: bool) {
        if let Some((m, _)) = self.metrics.get() {
            m.on_refused(stopped);
        }
    }

    /// Drops a message that will never be handled, counted; an ask inside
    /// fails with `why`.
    #[cold]
    pub(crate) fn drop_undelivered(&self, msg: A::Msg, why: AskError) {
        self.rt.count_dropped(1);
        if let Err(r) = while_dropping(why, || guard(move || drop(msg))) {
            self.rt.caught_panic("dropping an undelivered message", &r);
        }
    }

    /// Asks the actor to stop; schedules it if idle so it sees the request.
    pub(crate) fn stop_request(&self, kind: StopRequest) {
        let bits = kind.bits();
        if bits & state::STOP_NOW != 0 {
            self.killed.store(true, Ordering::Release);
        }
        if self.mailbox.request_stop(bits) {
            self.pool().schedule(Task::new(self));
        } else if bits & state::STOP_NOW != 0
            && self
                .park
                .compare_exchange(SUSPENDED, RUNNING, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            // A kill takes the task from a suspended handler's waker, so
            // that the pending future is dropped now, not when it wakes.
            self.pool().schedule(Task::new(self));
        }
    }

    /// A waker of a suspended handler fired (any thread): if the actor is
    /// parked, take its task and schedule it; if it is being polled right
    /// now, tell its worker to come back (`park`).
    pub(crate) fn wake_parked(&self) {
        let mut s = self.park.load(Ordering::Acquire);
        loop {
            let (from, to) = match s {
                SUSPENDED => (SUSPENDED, RUNNING),
                RUNNING => (RUNNING, NOTIFIED),
                _ => return,
            };
            match self
                .park
                .compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if from == SUSPENDED => {
                    self.pool().schedule(Task::new(self));
                    return;
                }
                Ok(_) => return,
                Err(now) => s = now,
            }
        }
    }

    /// Ends a turn whose handler suspended: the actor keeps its task, held
    /// by its wakers from now on. Nothing of `self` is read after a
    /// successful park: a waker may schedule the actor on another worker
    /// at once.
    fn park(&self, worker: &WorkerLocal) -> Option<Arc<dyn Runnable>> {
        if self
            .park
            .compare_exchange(RUNNING, SUSPENDED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // Woken while it was polled: poll again after other work.
            self.park.store(RUNNING, Ordering::Relaxed);
            worker.push_local(Task::new(self));
        }
        None
    }

    /// Finalizes an actor that never ran, on the spawning thread (its system
    /// is shut down). The caller holds the actor's first task.
    pub(crate) fn abandon(&self) {
        drop(self.finalize(StopReason::Shutdown, false));
    }

    /// Drops and counts every message left in the mailbox; their asks fail
    /// with `ActorStopped`. A panicking drop is contained.
    ///
    /// # Safety
    /// Only the mailbox's consumer (the task holder, or the holder of the
    /// only reference) may call this.
    unsafe fn drain_undelivered(&self) -> u64 {
        let mut n = 0u64;
        // Count each leftover before dropping it: dropping a request's
        // `ReplyTo` wakes its asker, who may read the counter at once.
        while_dropping(AskError::ActorStopped, || {
            // `pop_final`: wait for slots claimed but not yet written, so
            // the count is complete before `join` returns and watchers run.
            // SAFETY: forwarded caller contract.
            while let Some(m) = unsafe { self.mailbox.pop_final() } {
                self.rt.count_dropped(1);
                n += 1;
                if let Err(r) = guard(move || drop(m)) {
                    self.rt.caught_panic("dropping an undelivered message", &r);
                }
            }
        });
        n
    }

    /// Hands every message left in the mailbox to `hook` (`undelivered.rs`)
    /// instead of dropping it; returns 0 (none dropped here: what the hook
    /// does not take is counted when its `Undelivered` is dropped).
    ///
    /// # Safety
    /// As `drain_undelivered`: only the mailbox's consumer may call this.
    #[cold]
    unsafe fn hand_undelivered(&self, hook: Hook<A::Msg>, reason: &StopReason) -> u64 {
        // Before the drain below, which pops too.
        let handled = self.mailbox.popped();
        let mut left = Vec::new();
        // `pop_final`: as in `drain_undelivered`, nothing accepted stays.
        // SAFETY: forwarded caller contract.
        while let Some(m) = unsafe { self.mailbox.pop_final() } {
            left.push(envelope::into_msg(m));
        }
        let rt = RuntimeRef::clone(&self.rt);
        let undelivered = Undelivered::new(left, handled, reason.clone(), rt);
        if let Err(r) = guard(move || hook(undelivered)) {
            self.rt.caught_panic("an undelivered hook", &r);
        }
        0
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
        let hook = if slot.flags & UNDELIVERED != 0 {
            slot.flags &= !UNDELIVERED;
            self.exit
                .take_undelivered()
                .and_then(|h| h.downcast::<Hook<A::Msg>>().ok())
                .map(|h| *h)
        } else {
            None
        };
        if let Some(mut actor) = slot.actor.take() {
            if run_hook {
                let mut ctx = Context::new(self);
                if let Err(r) = guard(|| actor.stopped(&mut ctx)) {
                    self.rt.count_panics(1);
                    reason = r;
                }
            }
            if let Err(r) = guard(move || drop(actor)) {
                self.rt.count_panics(1);
                reason = r;
            }
        }
        if reason.is_failure() {
            tracing::error!(actor = %self.id, name = self.name.as_deref().map(String::as_str), %reason, "actor failed and was stopped");
        } else {
            tracing::debug!(actor = %self.id, name = self.name.as_deref().map(String::as_str), %reason, "actor stopped");
        }
        let dropped = match hook {
            // SAFETY: we are still the only consumer (task holder).
            None => unsafe { self.drain_undelivered() },
            // SAFETY: as above.
            Some(hook) => unsafe { self.hand_undelivered(hook, &reason) },
        };
        if dropped > 0 {
            tracing::debug!(actor = %self.id, dropped, "stopped actor's pending messages dropped");
        }
        if let Some((m, _)) = self.metrics.get() {
            let panicked = matches!(reason, StopReason::Panicked(_));
            m.on_stop(dropped, self, panicked);
        }
        let watcher_panics = self.exit.publish(self.id, reason);
        self.rt.count_panics(watcher_panics);
        if self.dedicated {
            // Our own thread: it exits once this turn returns.
            self.pool().begin_shutdown();
        }
        let retired = self
            .rt
            .host
            .retire(self.table_key.load(Ordering::Relaxed), true);
        // From here on the runtime is not touched if the retirement took
        // our reference to it: the entry is then the last reference, and
        // its drop (by our caller) is the cell's drop.
        if retired.holder_released {
            self.rt_released.store(true, Ordering::Relaxed);
        }
        retired.entry.map(|entry| entry as Arc<dyn Runnable>)
    }

    /// A graceful stop: the actor's kind may first suspend to finish (an
    /// async `stopped`, `Actor::__stopping`); then it is finalized.
    ///
    /// The actor is borrowed afresh here, and that borrow ends before
    /// `finalize` takes the slot: a `&mut A` argument would stay protected
    /// for the whole call, and `finalize`'s write to the slot under it is
    /// undefined behaviour (Miri, Tree Borrows).
    fn finish(
        &self,
        ctx: &mut Context<'_, A>,
        reason: StopReason,
        worker: &WorkerLocal,
    ) -> Option<Arc<dyn Runnable>> {
        let ready = {
            // SAFETY: we hold the actor's task (our caller runs it), so the
            // slot is ours; this borrow ends with the block.
            let slot = unsafe { &mut *self.slot.get() };
            match slot.actor.as_mut() {
                Some(actor) => guard(|| actor.__stopping(ctx, &reason, Sealed(()))),
                None => Ok(true),
            }
        };
        match ready {
            Ok(true) => self.finalize(reason, true),
            Ok(false) => {
                ctx.take_suspended();
                self.park(worker)
            }
            Err(r) => {
                self.rt.count_panics(1);
                self.finalize(r, false)
            }
        }
    }

    /// The reason for a stop asked by `bits`: a `stop_with` reason if one
    /// was given, else what the bits say.
    fn requested_reason(&self, bits: usize) -> StopReason {
        self.exit
            .requested_reason()
            .unwrap_or_else(|| reason_from_bits(bits))
    }
}

impl<A: Actor> Runnable for ActorCell<A> {
    /// The table's entry, after the finalizing turn: when it is the cell's
    /// only reference (`rt_released`), its memory is kept for the next
    /// spawn of `A` on this thread (`recycle`); else it is dropped.
    fn retired(self: Arc<Self>) {
        if !self.rt_released.load(Ordering::Relaxed) {
            return drop(self);
        }
        let raw = Arc::into_raw(self).cast_mut();
        // The retirement found the entry to be the only reference, with no
        // weak one, and none can be made from nothing. The cell's `Drop`
        // sees `rt_released` and leaves the runtime alone.
        // SAFETY: we own the cell alone; its fields are dropped once, here,
        // and the memory stays with the `Arc`.
        unsafe { std::ptr::drop_in_place(raw) };
        // SAFETY: the pointer came from `Arc::<Self>::into_raw`, and
        // `MaybeUninit<Self>` has `Self`'s size and alignment.
        let blank =
            unsafe { Arc::from_raw(raw.cast_const().cast::<std::mem::MaybeUninit<Self>>()) };
        recycle::put::<Self>(blank);
    }

    fn run(&self, worker: &WorkerLocal) -> Option<Arc<dyn Runnable>> {
        // SAFETY: we hold the actor's task (the scheduler hands each task to
        // one worker), so nobody else touches the slot until we release it.
        let slot = unsafe { &mut *self.slot.get() };
        let actor = slot.actor.as_mut()?;
        let mut ctx = Context::new(self);
        // Stall and ask-cycle detection (`engine::scheduler::watch`): on a
        // watched pool the turn is on its worker's slot until it returns.
        let _turn = worker
            .turn_slot()
            .map(|s| s.begin(self.table_key.load(Ordering::Relaxed), self.id.as_u64()));

        if slot.flags & STARTED == 0 {
            slot.flags |= STARTED;
            if let Err(reason) = guard(|| actor.started(&mut ctx)) {
                self.rt.count_panics(1);
                return self.finalize(reason, false);
            }
            if ctx.take_suspended() {
                return self.park(worker);
            }
        } else {
            // A suspended handler (an async actor) resumes before anything
            // else, unless it was killed; for every other actor this is
            // nothing.
            match guard(|| actor.__resume(&mut ctx, Sealed(()))) {
                Ok(true) => {
                    if ctx.take_resumed() {
                        if let Some((m, _)) = self.metrics.get() {
                            m.after_resume();
                        }
                    }
                }
                Ok(false) => {
                    ctx.take_suspended();
                    return self.park(worker);
                }
                Err(reason) => {
                    self.rt.count_panics(1);
                    return self.finalize(reason, false);
                }
            }
        }

        // Stop requests are read once per turn and whenever the mailbox runs
        // dry, not per message: the state bits share the senders' cache line.
        let budget = worker.throughput();
        let mut handled = 0usize;
        // The turn's message budget so far: it grows by `budget` each time
        // the budget is used up while nothing else waits on this worker.
        let mut limit = budget;
        let mut bits = self.mailbox.flags();
        // Metrics are on or off for the actor's life: decided once per turn,
        // with what the per-message sampling test needs (see `Metered`).
        let metered = self
            .metrics
            .get()
            .map(|(m, flags)| Metered::new(m, flags, self));
        // With `trace-context`: the span of the message being handled,
        // entered; outside the guard, so that a stop the message causes (a
        // panic, `ctx.stop()`) is logged in it before it is left.
        #[cfg(feature = "trace-context")]
        let mut last: Option<tracing::span::EnteredSpan> = None;
        loop {
            if bits & state::STOP_NOW != 0 {
                let reason = self.requested_reason(bits);
                return self.finalize(reason, true);
            }
            let before = handled;
            let turn = guard(|| {
                while handled < limit && !ctx.interrupted() && !self.killed.load(Ordering::Relaxed)
                {
                    // SAFETY: task holder = sole consumer.
                    match unsafe { self.mailbox.pop() } {
                        Some(env) => {
                            handled += 1;
                            // `cx`: the sender's span, or `()` without the
                            // `trace-context` feature (see `envelope`).
                            let (msg, cx) = envelope::open(env);
                            #[cfg_attr(not(feature = "trace-context"), allow(unused_mut))]
                            let mut sampled = match &metered {
                                None => None,
                                Some(mt) => mt.before(handled, self, &cx),
                            };
                            #[cfg(feature = "trace-context")]
                            follow(&mut sampled, cx, &mut last);
                            // The one call of `handle` in the crate for this
                            // actor type, so the compiler may inline it
                            // here as it would with no metrics at all.
                            actor.handle(msg, &mut ctx);
                            // Left here unless the message stopped (or
                            // suspended) the actor.
                            #[cfg(feature = "trace-context")]
                            if !ctx.interrupted() {
                                last = None;
                            }
                            if let Some(s) = sampled {
                                s.after(ctx.interrupted());
                            }
                        }
                        None => break,
                    }
                }
            });
            if let Err(reason) = turn {
                self.rt.count_panics(1);
                return self.finalize(reason, false);
            }
            if ctx.take_suspended() {
                return self.park(worker);
            }
            if ctx.stopping() {
                let reason = ctx.take_stop_reason();
                return self.finish(&mut ctx, reason, worker);
            }
            if self.killed.load(Ordering::Acquire) {
                bits = self.mailbox.flags();
                continue;
            }
            if handled >= limit {
                // More may be waiting. Give way only to work that is
                // visible here; with none, a hand-off would only wake a
                // worker to steal this one back: go on, with the stop bits
                // read again.
                if worker.other_work_visible() {
                    sync::count(Event::BudgetYield);
                    worker.yield_task(Task::new(self));
                    return None;
                }
                sync::count(Event::BudgetContinue);
                limit = handled + budget;
                bits = self.mailbox.flags();
                continue;
            }
            // The mailbox looked empty.
            // SAFETY: we hold the task.
            match unsafe { self.mailbox.try_release() } {
                Release::Released => return None,
                Release::NotEmpty => {
                    if handled == before {
                        // Nothing readable though a slot is claimed: its
                        // sender is mid-write. Come back after other work
                        // instead of spinning here, without waking anyone.
                        sync::count(Event::HalfWritten);
                        worker.requeue_local(Task::new(self));
                        return None;
                    }
                }
                Release::Stop(b) => {
                    bits = b;
                    if bits & state::STOP_DRAIN != 0
                        && bits & state::STOP_NOW == 0
                        && self.mailbox.is_empty()
                    {
                        let reason = self.requested_reason(bits);
                        return self.finish(&mut ctx, reason, worker);
                    }
                    if bits & state::STOP_NOW == 0 && handled == before && !self.mailbox.is_empty()
                    {
                        sync::count(Event::HalfWritten);
                        worker.requeue_local(Task::new(self));
                        return None;
                    }
                }
            }
        }
    }
}

/// What a metered actor's turn needs per message, read once per turn.
struct Metered<'a> {
    m: &'a ActorMetrics,
    /// The metrics word (its flags change during the turn).
    word: &'a MetricsRef,
    /// Messages popped before this turn, plus the actor's sampling phase:
    /// the `n`th message of the turn is periodic when
    /// `(base + n - 1) & mask == 0`.
    base: u64,
    mask: u64,
}

impl<'a> Metered<'a> {
    /// `m` and `flags` as the metrics word gave them (`MetricsRef::get`).
    fn new<A: Actor>(m: &'a ActorMetrics, flags: usize, cell: &'a ActorCell<A>) -> Self {
        // Each actor samples at its own phase (a hash of its address), so
        // that actors with few messages are not all timed at their first.
        let phase = ((cell as *const ActorCell<A> as usize as u64) >> 6)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            >> 48;
        Metered {
            m,
            word: &cell.metrics,
            base: cell.mailbox.popped().wrapping_add(phase),
            mask: sample_mask(flags),
        }
    }

    /// Before `handle`, for the turn's `n`th message (from 1): `None`
    /// unless it is sampled or traced, the inline path (see `metrics.rs`).
    /// The message's number is the pop count before the turn plus `n - 1`:
    /// the task holder is the only consumer.
    #[inline(always)]
    fn before<A: Actor>(
        &self,
        n: usize,
        cell: &ActorCell<A>,
        cx: &envelope::Carried,
    ) -> Option<Sampled<'a>> {
        let flags = self.word.flags();
        let periodic = self.base.wrapping_add(n as u64 - 1) & self.mask == 0;
        if !periodic && flags & (PENDING | TRACE) == 0 {
            None
        } else {
            Some(sample_before(self.m, flags, periodic, cell, cx))
        }
    }
}

/// A sampled or traced message's bookkeeping, from before its `handle` to
/// after it. Dropped without [`after`](Self::after) if `handle` panics:
/// the span is left, no service time recorded.
struct Sampled<'a> {
    m: &'a ActorMetrics,
    /// The clock reading before `handle`, if its service time is sampled.
    start: Option<u64>,
    /// The message's trace span, entered (`SpawnOptions::trace_messages`).
    span: Option<tracing::span::EnteredSpan>,
}

impl Sampled<'_> {
    /// After `handle`; `interrupted`: it may have suspended (an async
    /// handler), and then its service time is taken when it completes.
    #[cold]
    #[inline(never)]
    fn after(self, interrupted: bool) {
        drop(self.span);
        if let Some(start) = self.start {
            if interrupted {
                self.m.suspend_handle(start);
            } else {
                self.m.after_handle(start);
            }
        }
    }
}

/// Starts a sampled or traced message: takes the waiting sample and the
/// clock reading, enters the span.
#[cold]
#[inline(never)]
fn sample_before<'a, A: Actor>(
    m: &'a ActorMetrics,
    flags: usize,
    periodic: bool,
    cell: &ActorCell<A>,
    cx: &envelope::Carried,
) -> Sampled<'a> {
    let d = cell.mailbox.popped().wrapping_sub(1);
    let start = if periodic || flags & PENDING != 0 {
        m.sample_dequeue(&cell.metrics, d, periodic, cell.mailbox.len() as u64)
    } else {
        None
    };
    let span = (flags & TRACE != 0).then(|| handle_span(cell, cx).entered());
    Sampled { m, start, span }
}

/// The span around one handled message (`SpawnOptions::trace_messages`):
/// level TRACE, name `handle`, Troupe's fields (`actor`, `name`, `msg`)
/// and the OpenTelemetry messaging attributes (`messaging.system`,
/// `messaging.operation.*`, `messaging.destination.name`, `otel.kind`;
/// semantic conventions 1.27). With `trace-context`, its parent is the
/// span the message was sent from, if any (see `envelope`).
fn handle_span<A: Actor>(cell: &ActorCell<A>, cx: &envelope::Carried) -> tracing::Span {
    let name = cell.name.as_deref().map(String::as_str);
    let destination = name.unwrap_or(std::any::type_name::<A>());
    macro_rules! span {
        ($($parent:tt)*) => {
            tracing::trace_span!(
                $($parent)*
                "handle",
                actor = %cell.id,
                name = name,
                msg = std::any::type_name::<A::Msg>(),
                messaging.system = "troupe",
                messaging.operation.type = "process",
                messaging.operation.name = "handle",
                messaging.destination.name = destination,
                otel.kind = "consumer",
            )
        };
    }
    #[cfg(feature = "trace-context")]
    if !cx.is_none() {
        return span!(parent: cx,);
    }
    let _ = cx;
    span!()
}

/// With `trace-context`: `last` becomes the message's entered span, for
/// the handler and for the logs of a stop the message causes (the turn
/// leaves it after a handler that returned without stopping or
/// suspending). That is the `handle` span, moved out of `sampled`; or,
/// when the actor does not trace its messages, the sender's span, so that
/// what the handler logs and sends joins that trace.
#[cfg(feature = "trace-context")]
#[inline(always)]
fn follow(
    sampled: &mut Option<Sampled<'_>>,
    cx: tracing::Span,
    last: &mut Option<tracing::span::EnteredSpan>,
) {
    *last = match sampled.as_mut().and_then(|s| s.span.take()) {
        Some(span) => Some(span),
        None if cx.is_none() => None,
        None => Some(cx.entered()),
    };
}

impl<A: Actor> MailboxProbe for ActorCell<A> {
    fn popped(&self) -> u64 {
        self.mailbox.popped()
    }
    fn depth(&self) -> u64 {
        self.mailbox.len() as u64
    }
    fn evicted(&self) -> u64 {
        self.mailbox.evicted()
    }
}

impl<A: Actor> Stoppable for ActorCell<A> {
    fn request_stop(&self, kind: StopRequest) {
        self.stop_request(kind);
    }

    fn describe(&self) -> Option<Described> {
        Some(Described {
            id: self.id,
            name: self.name.clone(),
            type_name: std::any::type_name::<A>(),
            msg_type: std::any::type_name::<A::Msg>(),
            popped: self.mailbox.popped(),
            stall: self.stall,
        })
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
        if *self.rt_released.get_mut() {
            // The table's entry was the only reference when the actor
            // retired, after its final drain: no one could send since, so
            // there is nothing to drain, and the runtime may be gone.
            // (Were one there, the mailbox's own drop would drop it,
            // uncounted.)
            debug_assert!(
                self.mailbox.is_empty(),
                "a message after the last reference"
            );
            return;
        }
        // Messages that raced with the actor's stop (sent after its final
        // drain) end here: dropped and counted, asks failed.
        // SAFETY: `&mut self`: no other reference exists.
        unsafe { self.drain_undelivered() };
        // SAFETY: dropped once, here; `rt_released` says no one else did.
        unsafe { ManuallyDrop::drop(&mut self.rt) };
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

    /// The layout promise of `ActorCell`'s docs: the bytes a send touches
    /// (the mailbox's sender words up to `rt`) are contiguous, start a full
    /// cache line after the mailbox's consumer fields, and end more than a
    /// cache line before the actor value.
    #[test]
    fn senders_and_handler_do_not_share_a_line() {
        use crate::engine::mailbox::unbounded::{CONSUMER_BYTES, SENDER_BYTES};
        use std::mem::offset_of;
        let mailbox = offset_of!(ActorCell<Unit>, mailbox);
        let first_sender_byte = mailbox + SENDER_BYTES.start;
        assert_eq!(
            offset_of!(ActorCell<Unit>, metrics),
            mailbox + SENDER_BYTES.end
        );
        assert_eq!(
            offset_of!(ActorCell<Unit>, pool),
            offset_of!(ActorCell<Unit>, metrics) + 8
        );
        let last_sender_byte = offset_of!(ActorCell<Unit>, rt) + 7;
        assert!(
            last_sender_byte - first_sender_byte < 64,
            "a send's bytes span more than two lines"
        );
        let consumer_end = mailbox + CONSUMER_BYTES.end;
        assert!(
            first_sender_byte - consumer_end >= 64,
            "the consumer's fields end at {consumer_end}, a send's start at {first_sender_byte}"
        );
        let slot = offset_of!(ActorCell<Unit>, slot);
        assert!(slot - last_sender_byte > 64, "slot at {slot}");
    }

    /// Guards the per-actor memory budget (an idle actor, cell plus table
    /// entry): the cell itself for a zero-sized actor, before the `Arc`
    /// header (16 bytes) and the table slot.
    #[test]
    fn cell_stays_small() {
        let size = std::mem::size_of::<ActorCell<Unit>>();
        eprintln!("ActorCell<zero-sized actor> = {size} bytes");
        // 168 + 8 for the metrics pointer (`Option<Arc<ActorMetrics>>`)
        // + 8 for the exit record's inline first watcher of any kind (was:
        // a listener only), which saves a watched actor one allocation
        // + 64 for the unbounded mailbox's cache line between its consumer
        // fields and its senders' words (issue 39: a pop no longer writes
        // the line every send claims on; the mailbox went from 48 to 112
        // bytes, its tag folded into its `kind` byte).
        assert!(size <= 248, "ActorCell grew to {size} bytes");
    }

    /// A monitor (`watch`) costs no allocation: its stop callback fits the
    /// exit record's inline word (`watcher.rs`).
    #[test]
    fn a_monitor_needs_no_allocation() {
        let watcher: Weak<ActorCell<Unit>> = Weak::new();
        let f = super::super::actor_ref::monitor(watcher, |d: super::super::lifecycle::Down| {
            d.id.as_u64()
        });
        assert!(super::super::watcher::fits_inline_of(&f));
    }
}
