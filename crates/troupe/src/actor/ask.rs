//! Request-reply: the [`ReplyTo`] handle a request carries, and the waiting
//! side for plain threads and async code.
//!
//! A `ReplyTo` is used at most once. If it is dropped without a reply (the
//! handler forgot, or the actor stopped with the request still in its mailbox)
//! the asker gets an error at once instead of waiting out its timeout: `Drop`
//! sends `AskError::ActorStopped` while an actor's leftover mailbox is being
//! dropped, `AskError::NoReply` otherwise.

use super::ask_cycle::Waiting;
use super::error::{AskError, SendError};
use crate::engine::deadline;
use crate::engine::reply_slot::ReplySlot;
use crate::engine::timer_thread::{call_after, TimerHandle};
use std::cell::Cell;
use std::future::Future;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::{Duration, Instant};

thread_local! {
    /// Set while the runtime drops messages it could not deliver (a stopped
    /// actor's leftovers, an evicted message), so a dropped `ReplyTo` can say
    /// why.
    static DROPPING: Cell<Option<AskError>> = const { Cell::new(None) };
    /// Set while a request whose sender already got the error is dropped.
    static SILENT: Cell<bool> = const { Cell::new(false) };
}

/// Drops `value` without any `ReplyTo` inside it reporting: used when the
/// asker already learned of the failure from a return value.
pub(crate) fn drop_silently<T>(value: T) {
    SILENT.with(|s| s.set(true));
    drop(value);
    SILENT.with(|s| s.set(false));
}

/// Drops a message that will not be delivered, outside any actor: an ask
/// inside it fails with `ActorStopped` at once.
pub(crate) fn drop_undelivered<T>(value: T) {
    while_dropping(AskError::ActorStopped, move || drop(value));
}

/// Runs `f` with "undelivered messages are being dropped because `why`" set.
pub(crate) fn while_dropping<R>(why: AskError, f: impl FnOnce() -> R) -> R {
    let prev = DROPPING.with(|d| d.replace(Some(why)));
    let r = f();
    DROPPING.with(|d| d.set(prev));
    r
}

/// The error for a request that could not be sent. The request is dropped
/// without its `ReplyTo` reporting: the asker learns of the failure here.
pub(crate) fn request_not_sent<M>(e: SendError<M>) -> AskError {
    let why = match &e {
        SendError::Full(_) => AskError::MailboxFull,
        SendError::Closed(_) | SendError::Stopped(_) => AskError::ActorStopped,
    };
    drop_silently(e.into_inner());
    why
}

/// Where a reply is delivered: a waiting thread/future or an actor's mailbox.
pub(crate) trait ReplySink<R>: Send + Sync {
    fn deliver(self: Arc<Self>, reply: Result<R, AskError>);
}

/// A reply handed to a callback on the thread that makes it
/// ([`ActorRef::ask_then`](crate::ActorRef::ask_then)): called at most
/// once, by whichever of the reply and a failed send comes.
pub(crate) struct Then<F>(std::sync::Mutex<Option<F>>);

impl<F> Then<F> {
    pub(crate) fn new(f: F) -> Self {
        Then(std::sync::Mutex::new(Some(f)))
    }

    pub(crate) fn call<R>(&self, reply: Result<R, AskError>)
    where
        F: FnOnce(Result<R, AskError>),
    {
        // Never contended: one reply, or one failed send, calls it. A
        // poisoned lock (a `then` that panicked) still holds `None`.
        let f = match self.0.lock() {
            Ok(mut g) => g.take(),
            Err(p) => p.into_inner().take(),
        };
        if let Some(f) = f {
            f(reply);
        }
    }
}

impl<R, F> ReplySink<R> for Then<F>
where
    R: Send + 'static,
    F: FnOnce(Result<R, AskError>) + Send + 'static,
{
    fn deliver(self: Arc<Self>, reply: Result<R, AskError>) {
        self.call(reply);
    }
}

enum Target<R> {
    Oneshot(oneshot::Sender<Result<R, AskError>>),
    Actor(Arc<dyn ReplySink<R>>),
    /// An async actor's reply slot, armed for this request (`LocalAsk`).
    Slot(SlotSender<R>),
}

/// The sending end of an armed reply slot.
struct SlotSender<R> {
    slot: NonNull<ReplySlot>,
    _reply: PhantomData<fn(R)>,
}

// SAFETY: the slot is made for sharing between threads (its protocol,
// `engine::reply_slot`), and what is sent through it, `Result<R, AskError>`,
// is `Send` (`ReplyTo` requires `R: Send`).
unsafe impl<R: Send> Send for SlotSender<R> {}
// SAFETY: a `&SlotSender` gives no access to the slot (only `send`, by value).
unsafe impl<R: Send> Sync for SlotSender<R> {}

/// The reply handle carried inside a request message. Call [`reply`](Self::reply)
/// once; dropping it unanswered fails the asker at once.
///
/// ```
/// use troupe::{Actor, ActorSystem, Context, ReplyTo};
/// use std::time::{Duration, Instant};
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
/// let answer = doubler.ask(|r| Msg::Double(21, r), Duration::from_secs(1));
/// assert_eq!(answer, Ok(42));
/// ```
pub struct ReplyTo<R: Send + 'static> {
    target: Option<Target<R>>,
}

impl<R: Send + 'static> ReplyTo<R> {
    pub(crate) fn oneshot() -> (Self, oneshot::Receiver<Result<R, AskError>>) {
        let (tx, rx) = oneshot::channel();
        (
            ReplyTo {
                target: Some(Target::Oneshot(tx)),
            },
            rx,
        )
    }

    /// A reply into `slot`, armed for this request by its owner.
    fn to_slot(slot: NonNull<ReplySlot>) -> Self {
        ReplyTo {
            target: Some(Target::Slot(SlotSender {
                slot,
                _reply: PhantomData,
            })),
        }
    }

    pub(crate) fn to_sink(sink: Arc<dyn ReplySink<R>>) -> Self {
        ReplyTo {
            target: Some(Target::Actor(sink)),
        }
    }

    /// Sends the reply. Returns `false` if the asker is gone (timed out or
    /// dropped its future); the reply is then discarded.
    pub fn reply(mut self, value: R) -> bool {
        let target = self.target.take();
        // Nothing is left to drop: the target is taken.
        std::mem::forget(self);
        Self::deliver(target, Ok(value))
    }

    fn send(&mut self, result: Result<R, AskError>) -> bool {
        Self::deliver(self.target.take(), result)
    }

    #[inline]
    fn deliver(target: Option<Target<R>>, result: Result<R, AskError>) -> bool {
        match target {
            Some(Target::Oneshot(tx)) => tx.send(result).is_ok(),
            Some(Target::Actor(sink)) => {
                sink.deliver(result);
                true
            }
            // SAFETY: the slot was armed for this reply's type and this is
            // its one sender (the target is taken, so it sends once).
            Some(Target::Slot(s)) => unsafe { ReplySlot::send(s.slot, result) },
            None => false,
        }
    }
}

impl<R: Send + 'static> Drop for ReplyTo<R> {
    fn drop(&mut self) {
        if self.target.is_some() {
            if SILENT.with(|s| s.get()) {
                if let Some(Target::Slot(s)) = self.target.take() {
                    // The request never left: its asker has the error.
                    // SAFETY: a live slot (its sender keeps it), armed.
                    unsafe { s.slot.as_ref() }.disarm();
                }
                self.target = None;
                return;
            }
            let why = DROPPING.with(|d| d.get()).unwrap_or(AskError::NoReply);
            self.send(Err(why));
        }
    }
}

impl<R: Send + 'static> std::fmt::Debug for ReplyTo<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReplyTo(..)")
    }
}

/// Blocks for a reply until `deadline` (`None`: as long as it takes).
pub(crate) fn wait_reply<R>(
    rx: oneshot::Receiver<Result<R, AskError>>,
    deadline: Option<Instant>,
) -> Result<R, AskError> {
    let Some(deadline) = deadline else {
        return rx.recv().unwrap_or(Err(AskError::ActorStopped));
    };
    match rx.recv_deadline(deadline) {
        Ok(r) => r,
        Err(oneshot::RecvTimeoutError::Timeout) => Err(AskError::Timeout),
        Err(oneshot::RecvTimeoutError::Disconnected) => Err(AskError::ActorStopped),
    }
}

/// Blocks on a future that was already polled once, by parking this thread.
fn wait_polling<R>(
    rx: oneshot::AsyncReceiver<Result<R, AskError>>,
    deadline: Option<Instant>,
) -> Result<R, AskError> {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = TaskContext::from_waker(&waker);
    let mut rx = rx;
    loop {
        if let Poll::Ready(r) = Pin::new(&mut rx).poll(&mut cx) {
            return r.unwrap_or(Err(AskError::ActorStopped));
        }
        match deadline {
            None => std::thread::park(),
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    return Err(AskError::Timeout);
                }
                std::thread::park_timeout(d - now);
            }
        }
    }
}

/// The answer to an [`ActorRef::ask_async`](crate::ActorRef::ask_async): a
/// future that resolves to the reply or to the error that replaced it.
///
/// ```
/// use troupe::{Actor, ActorSystem, AskError, Context, ReplyTo};
/// use std::time::{Duration, Instant};
/// struct Silent;
/// impl Actor for Silent {
///     type Msg = ReplyTo<u32>;
///     fn handle(&mut self, r: ReplyTo<u32>, _ctx: &mut Context<'_, Self>) {
///         std::mem::forget(r); // never answers
///     }
/// }
/// let system = ActorSystem::new();
/// let a = system.spawn(Silent);
/// let fut = a.ask_async(|r| r).with_timeout(Duration::from_millis(20));
/// // Any executor works; a timer thread wakes the future at the deadline.
/// let out = tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(fut);
/// assert_eq!(out, Err(AskError::Timeout));
/// ```
#[must_use = "an AskFuture does nothing unless awaited"]
pub struct AskFuture<R> {
    state: AskState<R>,
    deadline: Option<Deadline>,
}

/// An async deadline: the timer marks it expired and wakes the task.
struct Deadline {
    /// `None`: a timeout too large for the clock (never expires).
    at: Option<Instant>,
    shared: Arc<DeadlineShared>,
    _timer: TimerHandle,
}

impl Deadline {
    /// Starts the timer: at `timeout` from now it marks the deadline
    /// expired and wakes the task that polled last.
    fn start(timeout: Duration) -> Self {
        let at = deadline::after(timeout);
        let shared = Arc::new(DeadlineShared::default());
        let s = shared.clone();
        let timer = call_after(timeout, move || {
            s.expired.store(true, std::sync::atomic::Ordering::Release);
            if let Some(w) = s.waker.lock().take() {
                w.wake();
            }
        });
        Deadline {
            at,
            shared,
            _timer: timer,
        }
    }

    /// After a pending poll: registers `cx`'s waker with the timer;
    /// whether the deadline has passed.
    fn expired(&self, cx: &TaskContext<'_>) -> bool {
        *self.shared.waker.lock() = Some(cx.waker().clone());
        // Checked after storing the waker: a timer firing in between
        // either sees the waker or is seen here.
        self.shared
            .expired
            .load(std::sync::atomic::Ordering::Acquire)
    }
}

#[derive(Default)]
struct DeadlineShared {
    expired: std::sync::atomic::AtomicBool,
    waker: parking_lot::Mutex<Option<std::task::Waker>>,
}

enum AskState<R> {
    Waiting(oneshot::Receiver<Result<R, AskError>>),
    Polling(oneshot::AsyncReceiver<Result<R, AskError>>),
    Failed(Option<AskError>),
    Done,
}

impl<R> AskFuture<R> {
    pub(crate) fn waiting(rx: oneshot::Receiver<Result<R, AskError>>) -> Self {
        AskFuture {
            state: AskState::Waiting(rx),
            deadline: None,
        }
    }

    pub(crate) fn failed(e: AskError) -> Self {
        AskFuture {
            state: AskState::Failed(Some(e)),
            deadline: None,
        }
    }

    /// Resolves to `Err(AskError::Timeout)` if no reply came within
    /// `timeout` (counted from now; a timeout too large for the clock never
    /// expires). Works with any executor: the deadline is kept by Troupe's
    /// timer thread, which wakes the task.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.deadline = Some(Deadline::start(timeout));
        self
    }

    /// Waits for the reply on this thread, at most `timeout` (and at most
    /// until a deadline set with [`with_timeout`](Self::with_timeout)).
    pub fn wait_timeout(self, timeout: Duration) -> Result<R, AskError> {
        let mut until = deadline::after(timeout);
        if let Some(at) = self.deadline.as_ref().and_then(|d| d.at) {
            until = Some(until.map_or(at, |u| u.min(at)));
        }
        match self.state {
            AskState::Waiting(rx) => wait_reply(rx, until),
            // Already polled as a future: finish it on this thread.
            AskState::Polling(rx) => wait_polling(rx, until),
            AskState::Failed(e) => Err(e.unwrap_or(AskError::ActorStopped)),
            AskState::Done => Err(AskError::ActorStopped),
        }
    }
}

impl<R> Future for AskFuture<R> {
    type Output = Result<R, AskError>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        // AskFuture is Unpin: both states hold only Unpin data.
        let this = self.get_mut();
        if let AskState::Waiting(_) = this.state {
            let AskState::Waiting(rx) = std::mem::replace(&mut this.state, AskState::Done) else {
                unreachable!()
            };
            this.state = AskState::Polling(std::future::IntoFuture::into_future(rx));
        }
        match &mut this.state {
            AskState::Polling(rx) => match Pin::new(rx).poll(cx) {
                Poll::Ready(r) => {
                    this.state = AskState::Done;
                    Poll::Ready(r.unwrap_or(Err(AskError::ActorStopped)))
                }
                Poll::Pending => match &this.deadline {
                    Some(d) if d.expired(cx) => {
                        this.state = AskState::Done;
                        Poll::Ready(Err(AskError::Timeout))
                    }
                    _ => Poll::Pending,
                },
            },
            AskState::Failed(e) => Poll::Ready(Err(e.take().unwrap_or(AskError::ActorStopped))),
            AskState::Waiting(_) | AskState::Done => Poll::Ready(Err(AskError::ActorStopped)),
        }
    }
}

/// The answer to an async actor's [`AsyncContext::ask`](crate::AsyncContext::ask):
/// a future of the reply, or of the error that replaced it, that borrows
/// the asking actor's context (it lives inside the handler's future).
///
/// The reply travels through a slot the asking actor keeps for its asks,
/// so an ask awaited in a handler allocates nothing once the first is
/// made; a second ask pending at the same time (two asks joined) or a
/// reply too large for the slot (over 64 bytes with its error) goes
/// through a channel of its own, as [`ActorRef::ask_async`](crate::ActorRef::ask_async).
#[must_use = "a LocalAsk does nothing unless awaited"]
pub struct LocalAsk<'a, R: Send + 'static> {
    state: LocalState<R>,
    /// The asking actor's own waker (no count held), as the handler's
    /// polls pass it: a receiver polled with it registers a copy.
    own: ManuallyDrop<Waker>,
    /// Boxed, as the fallback below: the future is moved into the
    /// handler's state at each `.await`, so it is kept small.
    deadline: Option<Box<Deadline>>,
    /// The ask's edge in the wait graph, with ask-cycle detection on
    /// (`ask_cycle`): removed when the reply is taken or the ask dropped.
    waiting: Option<Box<Waiting<'a>>>,
    _ctx: PhantomData<&'a ()>,
}

enum LocalState<R> {
    /// Waiting on the asking actor's slot; `own` notes that the waker
    /// registered there is a copy of the actor's own.
    Slot {
        slot: NonNull<ReplySlot>,
        own: bool,
        _reply: PhantomData<fn() -> R>,
    },
    Plain(Box<AskFuture<R>>),
    Done,
}

// SAFETY: the slot is made for sharing between threads and the value taken
// from it, `Result<R, AskError>`, is `Send`; the own waker is a cell's, which
// any thread may wake (`Send + Sync` like every `Waker`).
unsafe impl<R: Send> Send for LocalAsk<'_, R> {}

impl<'a, R: Send + 'static> LocalAsk<'a, R> {
    /// Sends the request `make` builds with `send`, replying through `slot`
    /// when it is idle and the reply fits, else through a channel of its
    /// own.
    ///
    /// # Safety
    /// `slot` is owned by the asking actor, stays alive while the returned
    /// future lives (its owner outlives the borrow `'a`), and is touched
    /// only from the thread polling the actor; `own` is the actor's own
    /// waker, whose target outlives `'a` and whose drop does nothing.
    /// `waiting` is the ask's edge in the wait graph, if any: added before
    /// the request is sent, removed once the ask ends.
    pub(crate) unsafe fn send<M>(
        slot: NonNull<ReplySlot>,
        own: ManuallyDrop<Waker>,
        make: impl FnOnce(ReplyTo<R>) -> M,
        send: impl FnOnce(M) -> Result<(), SendError<M>>,
        waiting: Option<Waiting<'a>>,
    ) -> Self {
        let mut waiting = waiting.map(Box::new);
        // SAFETY: alive (caller's contract).
        let s = unsafe { slot.as_ref() };
        let state = if ReplySlot::fits::<Result<R, AskError>>() && s.is_idle() {
            s.arm();
            // The receiver exists before the request does: if `make`
            // drops the `ReplyTo` (or panics), the slot gets a value, and
            // the receiver takes it (or drops it when unwound).
            let mut ask = LocalAsk {
                state: LocalState::Slot {
                    slot,
                    own: false,
                    _reply: PhantomData,
                },
                own,
                deadline: None,
                waiting,
                _ctx: PhantomData,
            };
            match send(make(ReplyTo::to_slot(slot))) {
                Ok(()) => return ask,
                Err(e) => {
                    // The request is dropped silently: that disarms the
                    // slot, which this receiver then leaves alone.
                    ask.state = LocalState::Plain(Box::new(AskFuture::failed(request_not_sent(e))));
                    ask.waiting = None;
                    return ask;
                }
            }
        } else {
            let (reply, rx) = ReplyTo::oneshot();
            match send(make(reply)) {
                Ok(()) => LocalState::Plain(Box::new(AskFuture::waiting(rx))),
                Err(e) => {
                    drop(waiting.take());
                    LocalState::Plain(Box::new(AskFuture::failed(request_not_sent(e))))
                }
            }
        };
        LocalAsk {
            state,
            own,
            deadline: None,
            waiting,
            _ctx: PhantomData,
        }
    }

    /// Resolves to `Err(AskError::Timeout)` if no reply came within
    /// `timeout` (counted from now; a timeout too large for the clock never
    /// expires), as [`AskFuture::with_timeout`].
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.deadline = Some(Box::new(Deadline::start(timeout)));
        self
    }
}

impl<R: Send + 'static> Future for LocalAsk<'_, R> {
    type Output = Result<R, AskError>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        // LocalAsk is Unpin: it holds no self-reference.
        let this = self.get_mut();
        let polled = match &mut this.state {
            LocalState::Slot { slot, own, .. } => {
                // We are the armed request's receiver (the state is left
                // once the value is taken), and `Result<R, AskError>` is
                // what its `ReplyTo` sends.
                // SAFETY: `own` is the asking actor's waker, which outlives
                // us (`send`'s contract).
                let p = unsafe { slot.as_ref().poll_take(cx, &this.own, own) };
                if p.is_ready() {
                    this.state = LocalState::Done;
                }
                p
            }
            LocalState::Plain(f) => Pin::new(&mut **f).poll(cx),
            LocalState::Done => Poll::Ready(Err(AskError::ActorStopped)),
        };
        match polled {
            Poll::Ready(r) => {
                this.waiting = None;
                Poll::Ready(r)
            }
            Poll::Pending => match &this.deadline {
                Some(d) if d.expired(cx) => {
                    // Give the request up: a late reply is dropped.
                    this.abandon();
                    this.waiting = None;
                    Poll::Ready(Err(AskError::Timeout))
                }
                _ => Poll::Pending,
            },
        }
    }
}

impl<R: Send + 'static> LocalAsk<'_, R> {
    #[cold]
    fn abandon(&mut self) {
        if let LocalState::Slot { slot, .. } = std::mem::replace(&mut self.state, LocalState::Done)
        {
            // SAFETY: we are the request's receiver, giving up once.
            unsafe { slot.as_ref().abandon::<Result<R, AskError>>() };
        }
    }
}

impl<R: Send + 'static> Drop for LocalAsk<'_, R> {
    #[inline]
    fn drop(&mut self) {
        // Done (the reply taken) is the common case: nothing to do.
        if let LocalState::Slot { .. } = self.state {
            self.abandon();
        }
    }
}
