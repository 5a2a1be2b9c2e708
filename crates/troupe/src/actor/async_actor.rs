//! Async actors: a handler that is an `async fn`, awaited on Troupe's own
//! workers, one message at a time.
//!
//! An [`AsyncActor`] runs inside an ordinary actor cell as [`Async<A>`],
//! an [`Actor`] whose `handle` starts the handler's future and polls it at
//! once. A future that completes in that first poll (one that awaits
//! nothing, or only what is ready) costs what a sync handler costs plus the
//! poll. One that is pending *suspends* the actor:
//! * the turn ends and the worker parks the actor (`ActorCell::park`): it
//!   keeps the actor's task, so nothing else runs it and senders do not
//!   schedule it, while its mailbox keeps filling;
//! * the future's waker, when it fires (on any thread), takes the task
//!   back and schedules the actor; the next turn polls the future first
//!   (`Actor::__resume`) and takes the next message only once it is done;
//! * no thread blocks meanwhile, and a parked actor costs no CPU.
//!
//! Ordering: messages are handled one at a time, in mailbox order (FIFO
//! per sender): a handler's future runs to completion before the next
//! message is taken, whatever it awaits.
//!
//! Stop, kill and panics: `stop` (a drain) waits for the handler in flight
//! and handles what is queued, then runs the async `stopped` hook, which
//! may itself suspend. `kill` takes the task from the waker at once
//! (`ActorCell::stop_request`), drops the pending future, and runs
//! `stopped` only as far as its first poll gets (a kill does not wait).
//! A panic inside a poll is caught like a sync handler's and stops the
//! actor with `StopReason::Panicked`; asks waiting on it fail at once.
//!
//! Memory: the actor and its [`AsyncContext`] live in one allocation made
//! at spawn, apart from the cell, at an address that does not move, which
//! the pending future borrows. The handler's future is written into one
//! reusable slot, allocated on the first suspension-capable message and
//! reused by every later one (every `handle` future of an actor type has
//! the same type): no allocation per message. Wakers point at the cell;
//! the one a poll receives is borrowed (no reference count touched unless
//! the future keeps a clone).
//!
//! With the `async` feature each poll runs inside the system's tokio
//! runtime context, so tokio timers and I/O work in a handler. A pool's
//! worker thread enters that context at its first async poll and stays in
//! it (`enter_runtime`): sync handlers that run on the thread afterwards
//! are inside it too. On a tokio dispatcher the poll stays in that
//! dispatcher's runtime context instead.
//!
//! Asks: [`AsyncContext::ask`] answers through one reply slot per actor
//! (`engine::reply_slot`), reused ask after ask, and the waker it
//! registers there is the actor's own, without a reference count (the
//! slot's protocol keeps the actor alive while a reply wakes it): an ask
//! awaited in a handler allocates nothing and touches no count.
//!
//! Metrics: an async handler's sampled service time runs from its start to
//! its completion, the time it spends suspended included (what a caller
//! waits for); its trace span covers the first poll only.

use super::actor_ref::ActorRef;
use super::ask::{LocalAsk, ReplyTo};
use super::ask_cycle::{Label, Waiting};
use super::behaviour::{Actor, Sealed};
use super::cell::{ActorCell, RUNNING};
use super::context::Context;
use super::error::StopReason;
use crate::engine::reply_slot::ReplySlot;
use std::alloc::Layout;
use std::future::Future;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, RawWaker, RawWakerVTable, Waker};

/// An actor whose handlers are `async fn`s. Spawn it wrapped in
/// [`Async`]: `system.spawn(Async::new(actor))` gives an
/// `ActorRef<Async<A>>`, which takes `A::Msg` like any actor reference.
///
/// ```
/// use troupe::{ActorSystem, Async, AsyncActor, AsyncContext, ReplyTo};
/// use std::time::Duration;
///
/// struct Account { balance: u64 }
/// enum Msg { Deposit(u64), Balance(ReplyTo<u64>) }
///
/// impl AsyncActor for Account {
///     type Msg = Msg;
///     async fn handle(&mut self, msg: Msg, _ctx: &mut AsyncContext<Self>) {
///         match msg {
///             Msg::Deposit(n) => {
///                 // Any future: the worker is free while it is pending,
///                 // and the next message waits for it.
///                 troupe::timer::sleep(Duration::from_millis(1)).await;
///                 self.balance += n;
///             }
///             Msg::Balance(r) => {
///                 r.reply(self.balance);
///             }
///         }
///     }
/// }
///
/// let system = ActorSystem::new();
/// let account = system.spawn(Async::new(Account { balance: 0 }));
/// account.tell(Msg::Deposit(5)).unwrap();
/// assert_eq!(account.ask(Msg::Balance, Duration::from_secs(5)), Ok(5));
/// ```
pub trait AsyncActor: Sized + Send + 'static {
    /// The messages this actor handles.
    type Msg: Send + 'static;

    /// Runs once, before the first message; the first message waits for it.
    fn started(&mut self, _ctx: &mut AsyncContext<Self>) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// Handles one message; the next one is taken when this completes.
    fn handle(
        &mut self,
        msg: Self::Msg,
        ctx: &mut AsyncContext<Self>,
    ) -> impl Future<Output = ()> + Send;

    /// Runs once when the actor stops gracefully (not after a panic; after
    /// a kill, only as far as its first poll gets).
    fn stopped(&mut self, _ctx: &mut AsyncContext<Self>) -> impl Future<Output = ()> + Send {
        async {}
    }
}

/// What an async handler can do besides handling: everything a
/// [`Context`] can (it dereferences to one), across awaits, and
/// [`ask`](Self::ask) as a plain `await`.
pub struct AsyncContext<A: AsyncActor> {
    ctx: Context<'static, Async<A>>,
    /// The slot this actor's asks are answered through (`ReplySlot`),
    /// made at the first ask; null before. Only the task holder reads it.
    reply: AtomicPtr<ReplySlot>,
}

impl<A: AsyncActor> AsyncContext<A> {
    /// Sends a request to `target` and returns the reply's future:
    /// `let total = ctx.ask(&other, Msg::Total).await?`. Give it a deadline
    /// with [`LocalAsk::with_timeout`]. The reply comes through a slot the
    /// actor reuses ask after ask: no allocation per ask.
    pub fn ask<B: Actor, R: Send + 'static>(
        &self,
        target: &ActorRef<B>,
        make: impl FnOnce(ReplyTo<R>) -> B::Msg,
    ) -> LocalAsk<'_, R> {
        let slot = self.reply_slot();
        let cell = self.ctx.cell;
        // Ask-cycle detection (`ask_cycle`): this handler waits on `target`.
        let waiting = cell.rt.watch.cycles.as_ref().map(|g| {
            let asker = Label::of::<Async<A>>(cell.id, &cell.name);
            Waiting::new(g, asker, Label::of::<B>(target.cell.id, &target.cell.name))
        });
        // The slot is ours until our drop, which comes after the handler's
        // future (and so every `LocalAsk` borrowing us) is dropped
        // (`Async::drop`).
        // SAFETY: the waker is this actor's own; its cell outlives the
        // actor's state, and dropping it does nothing.
        unsafe {
            LocalAsk::send(
                slot,
                borrowed_waker(cell),
                make,
                |m| target.cell.send(m),
                waiting,
            )
        }
    }

    fn reply_slot(&self) -> NonNull<ReplySlot> {
        match NonNull::new(self.reply.load(Ordering::Relaxed)) {
            Some(slot) => slot,
            None => {
                let slot = ReplySlot::new();
                self.reply.store(slot.as_ptr(), Ordering::Relaxed);
                slot
            }
        }
    }
}

impl<A: AsyncActor> Drop for AsyncContext<A> {
    fn drop(&mut self) {
        if let Some(slot) = NonNull::new(*self.reply.get_mut()) {
            // SAFETY: ours, and no `LocalAsk` borrowing us is alive.
            unsafe { ReplySlot::release_owner(slot) };
        }
    }
}

impl<A: AsyncActor> Deref for AsyncContext<A> {
    type Target = Context<'static, Async<A>>;
    fn deref(&self) -> &Self::Target {
        &self.ctx
    }
}

impl<A: AsyncActor> DerefMut for AsyncContext<A> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.ctx
    }
}

/// An [`AsyncActor`] as an [`Actor`]: what a system spawns. See the
/// module docs for how it runs.
pub struct Async<A: AsyncActor> {
    /// `Box::into_raw` of the actor's state: never a `Box` or a `&mut`
    /// while a future is pending, since the future borrows the actor and
    /// the context inside it.
    inner: NonNull<Inner<A>>,
}

// SAFETY: `Inner<A>` holds `A: Send`, its context (which is `Send`) and a
// future that `AsyncActor` requires to be `Send`; the pointer is owned.
unsafe impl<A: AsyncActor> Send for Async<A> {}

/// What a pending future is for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Started,
    Handling,
    Stopping,
}

struct Inner<A: AsyncActor> {
    actor: A,
    /// Made on the first turn, when the cell is known.
    ctx: Option<AsyncContext<A>>,
    future: FutureSlot,
    phase: Phase,
    /// The async `stopped` hook has run (or been given up by a kill).
    stopped_ran: bool,
    /// The reason a graceful stop was asked with, while `stopped` is pending.
    stop_reason: Option<StopReason>,
    /// The runtime a poll runs inside (feature `async`), fetched once,
    /// and its system's address, which names it (`enter_runtime`).
    #[cfg(feature = "async")]
    tokio: Option<(tokio::runtime::Handle, usize)>,
    /// The span a suspended handler ran in (feature `trace-context`),
    /// entered again around each later poll: what the handler sends after
    /// an `.await` still carries its message's trace. Written and read by
    /// the task holder only; the future does not borrow it.
    #[cfg(feature = "trace-context")]
    span: super::envelope::Follow,
}

impl<A: AsyncActor> Async<A> {
    /// Wraps `actor` for spawning.
    pub fn new(actor: A) -> Self {
        let inner = Box::new(Inner {
            actor,
            ctx: None,
            future: FutureSlot::new(),
            phase: Phase::Handling,
            stopped_ran: false,
            stop_reason: None,
            #[cfg(feature = "async")]
            tokio: None,
            #[cfg(feature = "trace-context")]
            span: super::envelope::Follow::none(),
        });
        Async {
            inner: NonNull::from(Box::leak(inner)),
        }
    }

    fn raw(&self) -> *mut Inner<A> {
        self.inner.as_ptr()
    }

    /// Makes the async context on the first turn.
    fn ensure_ctx(&mut self, ctx: &Context<'_, Self>) {
        let p = self.raw();
        // SAFETY: no future is pending before the first turn's `started`,
        // so nothing else borrows `ctx`; `Inner` is ours.
        unsafe {
            if (*p).ctx.is_none() {
                // The cell outlives the context: the context is dropped
                // with the actor, which the cell drops when it finalizes.
                let cell: &'static ActorCell<Self> = &*(ctx.cell as *const ActorCell<Self>);
                (*p).ctx = Some(AsyncContext {
                    ctx: Context::new(cell),
                    reply: AtomicPtr::new(ptr::null_mut()),
                });
                #[cfg(feature = "async")]
                {
                    let key = &**ctx.cell.rt as *const _ as usize;
                    (*p).tokio = Some((ctx.cell.rt.host.tokio_handle(), key));
                }
            }
        }
    }

    /// Starts `make`'s future in the slot and polls it once; `true` if it
    /// completed.
    ///
    /// # Safety
    /// No future may be pending.
    unsafe fn begin<F, M>(&mut self, phase: Phase, cell: &ActorCell<Self>, make: M) -> bool
    where
        F: Future<Output = ()>,
        M: FnOnce(&'static mut A, &'static mut AsyncContext<A>) -> F,
    {
        let p = self.raw();
        // The actor and the context live in `Inner`, which does not move
        // and outlives the future (`drop_future` runs before `Inner` is
        // freed); every other access here goes through the slot's fields.
        // SAFETY: while the future is pending, only it touches them.
        unsafe {
            let actor = &mut *ptr::addr_of_mut!((*p).actor);
            let ctx = (*ptr::addr_of_mut!((*p).ctx))
                .as_mut()
                .expect("made on the first turn");
            let fut = make(actor, ctx);
            (*ptr::addr_of_mut!((*p).future)).put(fut);
            *ptr::addr_of_mut!((*p).phase) = phase;
        }
        self.poll(cell)
    }

    /// Polls the pending future; `true` (and the slot emptied) if it
    /// completed.
    fn poll(&mut self, cell: &ActorCell<Self>) -> bool {
        let p = self.raw();
        // A wake from an earlier poll is spent: this poll sees its effect.
        cell.park.store(RUNNING, Ordering::Relaxed);
        let waker = borrowed_waker(cell);
        let mut cx = TaskContext::from_waker(&waker);
        #[cfg(feature = "async")]
        // SAFETY: a field of `Inner` the future does not borrow.
        let _runtime = unsafe { (*ptr::addr_of!((*p).tokio)).as_ref() }
            .and_then(|(h, key)| enter_runtime(h, *key));
        // SAFETY: the slot's future is pending (callers check), pinned in
        // the slot's allocation until `finish` drops it there.
        unsafe {
            let slot = &mut *ptr::addr_of_mut!((*p).future);
            match slot.poll(&mut cx) {
                Poll::Ready(()) => {
                    slot.finish();
                    true
                }
                Poll::Pending => false,
            }
        }
    }

    /// A completed future's stop request, passed to the turn.
    fn pass_stop(&mut self, ctx: &mut Context<'_, Self>) {
        let p = self.raw();
        // SAFETY: no future is pending, so nothing borrows the context.
        let actx = unsafe { (*ptr::addr_of_mut!((*p).ctx)).as_mut() };
        if let Some(actx) = actx {
            if actx.stopping() {
                ctx.stop_with(actx.take_stop_reason());
            }
        }
    }

    /// Drops a pending future, if any.
    fn drop_future(&mut self) {
        let p = self.raw();
        // SAFETY: a field the future does not borrow; dropping it ends the
        // borrow of the actor and the context.
        unsafe { (*ptr::addr_of_mut!((*p).future)).finish() };
    }

    fn is_pending(&self) -> bool {
        // SAFETY: a field the future does not borrow.
        unsafe { (*ptr::addr_of!((*self.raw()).future)).live }
    }
}

impl<A: AsyncActor> Drop for Async<A> {
    fn drop(&mut self) {
        self.drop_future();
        // SAFETY: made by `Box::leak` in `new`; the future that borrowed
        // it is gone.
        drop(unsafe { Box::from_raw(self.raw()) });
    }
}

impl<A: AsyncActor> Actor for Async<A> {
    type Msg = A::Msg;

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        self.ensure_ctx(ctx);
        // SAFETY: nothing is pending before `started`.
        if unsafe { self.begin(Phase::Started, ctx.cell, |a, c| a.started(c)) } {
            self.pass_stop(ctx);
        } else {
            ctx.suspend();
        }
    }

    #[inline]
    fn handle(&mut self, msg: A::Msg, ctx: &mut Context<'_, Self>) {
        // SAFETY: the turn takes a message only when nothing is pending.
        if unsafe { self.begin(Phase::Handling, ctx.cell, |a, c| a.handle(msg, c)) } {
            self.pass_stop(ctx);
        } else {
            #[cfg(feature = "trace-context")]
            {
                let p = self.raw();
                // SAFETY: a field the pending future does not borrow; only
                // the task holder (us) touches it.
                unsafe { *ptr::addr_of_mut!((*p).span) = super::envelope::Follow::here() };
            }
            ctx.suspend();
        }
    }

    /// The sync hook at finalize: after a graceful stop the async `stopped`
    /// has run; after a kill (or a stop asked while `started` was
    /// pending) the pending future is dropped and `stopped` gets one poll.
    fn stopped(&mut self, ctx: &mut Context<'_, Self>) {
        self.drop_future();
        let p = self.raw();
        // SAFETY: nothing is pending.
        if unsafe { (*p).stopped_ran || (*p).ctx.is_none() } {
            return;
        }
        // SAFETY: as above.
        unsafe { (*p).stopped_ran = true };
        // SAFETY: nothing is pending.
        let _ = unsafe { self.begin(Phase::Stopping, ctx.cell, |a, c| a.stopped(c)) };
        self.drop_future();
    }

    fn __resume(&mut self, ctx: &mut Context<'_, Self>, _: Sealed) -> bool {
        // Killed: the turn finalizes the actor, which drops the future
        // unpolled.
        if !self.is_pending() || ctx.cell.killed.load(Ordering::Relaxed) {
            return true;
        }
        #[cfg(feature = "trace-context")]
        // SAFETY: a field the pending future does not borrow; only the task
        // holder (us) touches it. Taken out: dropped when the handler ends.
        let span = unsafe { std::mem::take(&mut *ptr::addr_of_mut!((*self.raw()).span)) };
        #[cfg(feature = "trace-context")]
        let entered = span.enter();
        if !self.poll(ctx.cell) {
            #[cfg(feature = "trace-context")]
            {
                drop(entered);
                // SAFETY: as above.
                unsafe { *ptr::addr_of_mut!((*self.raw()).span) = span };
            }
            ctx.suspend();
            return false;
        }
        let p = self.raw();
        // SAFETY: the future completed, so nothing borrows `Inner`.
        let phase = unsafe { (*p).phase };
        if phase == Phase::Handling {
            ctx.resumed();
        }
        if phase == Phase::Stopping {
            // SAFETY: as above.
            let reason = unsafe { (*p).stop_reason.take() }.unwrap_or(StopReason::Normal);
            ctx.stop_with(reason);
        } else {
            self.pass_stop(ctx);
        }
        true
    }

    fn __stopping(&mut self, ctx: &mut Context<'_, Self>, reason: &StopReason, _: Sealed) -> bool {
        let p = self.raw();
        // SAFETY: a graceful stop comes between messages: nothing pending.
        if unsafe { (*p).stopped_ran || (*p).ctx.is_none() } {
            return true;
        }
        // SAFETY: as above.
        unsafe { (*p).stopped_ran = true };
        // SAFETY: nothing is pending.
        if unsafe { self.begin(Phase::Stopping, ctx.cell, |a, c| a.stopped(c)) } {
            return true;
        }
        // SAFETY: a field the future does not borrow.
        unsafe { (*p).stop_reason = Some(reason.clone()) };
        ctx.suspend();
        false
    }
}

#[cfg(feature = "async")]
thread_local! {
    /// The system (its address) whose tokio context this pool thread
    /// stays in for the rest of its life; 0 until an async handler is
    /// polled on it.
    static ENTERED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Puts the poll inside `handle`'s tokio context. A pool's own worker
/// thread enters it once, at its first async poll, and stays in it (the
/// guard is forgotten: tokio's thread-local keeps the handle and drops it
/// with the thread), which saves two reference counts and two thread-local
/// writes per poll; any other thread (the test kit's, a spawner that
/// finalizes an actor) enters it for this poll only.
#[cfg(feature = "async")]
#[inline]
fn enter_runtime(
    handle: &tokio::runtime::Handle,
    key: usize,
) -> Option<tokio::runtime::EnterGuard<'_>> {
    let entered = ENTERED.with(|e| e.get());
    if entered == key {
        return None;
    }
    // A tokio dispatcher's turn runs inside its own runtime's context.
    if crate::engine::scheduler::tokio_driver::on_driver() {
        return None;
    }
    if entered == 0 && crate::engine::scheduler::is_pool_thread() {
        std::mem::forget(handle.enter());
        ENTERED.with(|e| e.set(key));
        return None;
    }
    Some(handle.enter())
}

/// One reusable allocation for a pending future of any type, with the
/// functions that poll and drop it.
struct FutureSlot {
    mem: NonNull<u8>,
    layout: Layout,
    /// A future is in `mem`.
    live: bool,
    poll: unsafe fn(*mut u8, &mut TaskContext<'_>) -> Poll<()>,
    drop: unsafe fn(*mut u8),
}

// SAFETY: the future inside is `Send` (`AsyncActor` requires it).
unsafe impl Send for FutureSlot {}

impl FutureSlot {
    fn new() -> Self {
        FutureSlot {
            mem: NonNull::dangling(),
            layout: Layout::new::<()>(),
            live: false,
            poll: poll_nothing,
            drop: drop_nothing,
        }
    }

    /// Moves `fut` into the slot, growing it if its layout does not fit.
    fn put<F: Future<Output = ()>>(&mut self, fut: F) {
        debug_assert!(!self.live);
        let need = Layout::new::<F>();
        if need.size() > self.layout.size() || need.align() > self.layout.align() {
            self.free();
            self.layout = need;
            self.mem = if need.size() == 0 {
                // A well-aligned dangling pointer: nothing to allocate.
                NonNull::new(need.align() as *mut u8).expect("alignment is non-zero")
            } else {
                // SAFETY: `need` has a non-zero size.
                NonNull::new(unsafe { std::alloc::alloc(need) })
                    .unwrap_or_else(|| std::alloc::handle_alloc_error(need))
            };
        }
        // SAFETY: `mem` is valid for a write of `F` (size and alignment
        // checked above) and holds no live value.
        unsafe { self.mem.as_ptr().cast::<F>().write(fut) };
        self.poll = poll_as::<F>;
        self.drop = drop_as::<F>;
        self.live = true;
    }

    /// Polls the future in the slot.
    ///
    /// # Safety
    /// A future is in the slot (`live`).
    unsafe fn poll(&mut self, cx: &mut TaskContext<'_>) -> Poll<()> {
        debug_assert!(self.live);
        // SAFETY: forwarded; `poll` matches the future's type.
        unsafe { (self.poll)(self.mem.as_ptr(), cx) }
    }

    /// Drops the future in the slot, if any; keeps the memory.
    fn finish(&mut self) {
        if std::mem::take(&mut self.live) {
            // SAFETY: `drop` matches the live future's type; it is dropped
            // once (`live` is cleared first, so a panicking drop does not
            // drop it again).
            unsafe { (self.drop)(self.mem.as_ptr()) };
        }
    }

    fn free(&mut self) {
        self.finish();
        if self.layout.size() > 0 {
            // SAFETY: allocated by `put` with this layout.
            unsafe { std::alloc::dealloc(self.mem.as_ptr(), self.layout) };
        }
        self.layout = Layout::new::<()>();
        self.mem = NonNull::dangling();
    }
}

impl Drop for FutureSlot {
    fn drop(&mut self) {
        self.free();
    }
}

/// # Safety
/// `p` holds a live, pinned `F`.
unsafe fn poll_as<F: Future<Output = ()>>(p: *mut u8, cx: &mut TaskContext<'_>) -> Poll<()> {
    // SAFETY: forwarded; the slot never moves its value.
    unsafe { Pin::new_unchecked(&mut *p.cast::<F>()) }.poll(cx)
}

/// # Safety
/// `p` holds a live `F`, dropped once.
unsafe fn drop_as<F>(p: *mut u8) {
    // SAFETY: forwarded.
    unsafe { ptr::drop_in_place(p.cast::<F>()) }
}

unsafe fn poll_nothing(_: *mut u8, _: &mut TaskContext<'_>) -> Poll<()> {
    Poll::Ready(())
}

unsafe fn drop_nothing(_: *mut u8) {}

/// The waker a poll gets: the cell's address, no reference counted (the
/// worker holds the cell for the poll). A clone takes a strong count.
fn borrowed_waker<A: AsyncActor>(cell: &ActorCell<Async<A>>) -> ManuallyDrop<Waker> {
    let raw = RawWaker::new(
        (cell as *const ActorCell<Async<A>>).cast(),
        &Vtables::<A>::BORROWED,
    );
    // SAFETY: the vtable's functions keep `RawWaker`'s contract for this
    // data (see `Vtables`); the waker is never dropped or woken by value.
    ManuallyDrop::new(unsafe { Waker::from_raw(raw) })
}

/// Wakers of an async actor's cell.
struct Vtables<A>(PhantomData<A>);

impl<A: AsyncActor> Vtables<A> {
    /// Data: a cell pointer without a count. Only lent to a poll, by
    /// reference: `wake` and `drop` are never called on it.
    const BORROWED: RawWakerVTable = RawWakerVTable::new(
        Self::clone_counted,
        Self::wake_by_ref,
        Self::wake_by_ref,
        Self::forget,
    );
    /// Data: `Arc::into_raw` of the cell (a strong count).
    const COUNTED: RawWakerVTable = RawWakerVTable::new(
        Self::clone_counted,
        Self::wake,
        Self::wake_by_ref,
        Self::release,
    );

    fn cell<'a>(data: *const ()) -> &'a ActorCell<Async<A>> {
        // SAFETY: every waker's data is a live cell: a borrowed one lives
        // while the worker polls; a counted one holds a strong count.
        unsafe { &*data.cast::<ActorCell<Async<A>>>() }
    }

    unsafe fn clone_counted(data: *const ()) -> RawWaker {
        let arc: Arc<ActorCell<Async<A>>> = Self::cell(data).arc();
        RawWaker::new(Arc::into_raw(arc).cast(), &Self::COUNTED)
    }

    unsafe fn wake(data: *const ()) {
        Self::cell(data).wake_parked();
        // SAFETY: the count this waker held.
        unsafe { Self::release(data) };
    }

    unsafe fn wake_by_ref(data: *const ()) {
        Self::cell(data).wake_parked();
    }

    unsafe fn release(data: *const ()) {
        // SAFETY: `data` came from `Arc::into_raw` in `clone_counted`.
        drop(unsafe { Arc::from_raw(data.cast::<ActorCell<Async<A>>>()) });
    }

    unsafe fn forget(_: *const ()) {}
}
