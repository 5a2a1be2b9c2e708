//! A reply slot: one value at a time from a sender on any thread to its
//! owner's receiver, reused request after request, so that a request-reply
//! (an async actor's ask) allocates nothing in the steady state.
//!
//! Three parties share a slot:
//! * the **owner** allocates it ([`ReplySlot::new`]), [`arm`](ReplySlot::arm)s
//!   it for each request, only while it [`is_idle`](ReplySlot::is_idle), and
//!   gives it up with [`release_owner`](ReplySlot::release_owner);
//! * the **receiver**, a future of the owner's that never outlives it, polls
//!   for the value ([`poll_take`](ReplySlot::poll_take)) or gives up
//!   ([`abandon`](ReplySlot::abandon));
//! * the **sender**, the request's reply handle, on any thread and possibly
//!   outliving both, puts one value ([`send`](ReplySlot::send)), or, if the
//!   request never left, [`disarm`](ReplySlot::disarm)s it.
//!
//! Protocol: the state word holds a phase and the `OWNER_GONE` flag.
//!
//! ```text
//! IDLE --arm--> ARMED                                   (owner)
//! ARMED --waker written, then--> WAITING                (receiver)
//! WAITING --> ARMED (takes its waker back to change it) (receiver)
//! ARMED --value written, then--> FULL                   (sender)
//! WAITING --> WAKING --wakes the taken waker--> FULL    (sender)
//! FULL --value read--> IDLE                             (receiver)
//! ARMED | WAITING --> ABANDONED (receiver dropped); ABANDONED --value dropped--> IDLE (sender)
//! FULL --value dropped--> IDLE (receiver dropped); WAKING: the receiver waits for FULL
//! ABANDONED --> ABANDONED | OWNER_GONE (owner gone); the sender then frees the slot
//! ```
//!
//! Invariants:
//! * the value buffer is the sender's from ARMED until it publishes FULL
//!   (release), then the receiver's (acquire) until IDLE;
//! * the waker cell is the receiver's, except in WAITING, which the sender
//!   leaves only by taking the waker (WAITING -> WAKING, acquire);
//! * the receiver, and so its owner, is alive while the phase is WAKING: a
//!   receiver's drop waits for FULL. So a waker stored without a reference
//!   count (the owner's own, whose target outlives the receiver) is valid
//!   whenever the sender wakes it;
//! * exactly one party frees the slot: the owner if it finds IDLE, else
//!   the sender, which finds OWNER_GONE.

use super::sync::{AtomicUsize, Backoff, Ordering, UnsafeCell};
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::task::{Context, Poll, RawWaker, Waker};

const IDLE: usize = 0;
const ARMED: usize = 1;
const WAITING: usize = 2;
const WAKING: usize = 3;
const FULL: usize = 4;
const ABANDONED: usize = 5;
const PHASE: usize = 7;
const OWNER_GONE: usize = 8;

/// Bytes a value may take (a `Result<R, AskError>`); bigger or more
/// aligned values go another way (`ReplySlot::fits`).
const CAPACITY: usize = 64;

#[repr(C, align(16))]
struct Buf([MaybeUninit<u8>; CAPACITY]);

/// See the module docs.
pub struct ReplySlot {
    state: AtomicUsize,
    waker: UnsafeCell<Option<Waker>>,
    value: UnsafeCell<Buf>,
}

// SAFETY: the buffer and the waker cell are handed between threads by the
// state word's protocol (module docs); values and wakers put in are `Send`
// (`send`'s and `poll_take`'s callers).
unsafe impl Send for ReplySlot {}
// SAFETY: as above: every shared access follows the protocol.
unsafe impl Sync for ReplySlot {}

/// Publishes FULL when dropped: the sender's last touch of the slot, also
/// if a waker panics.
struct PublishFull<'a>(&'a AtomicUsize);

impl Drop for PublishFull<'_> {
    fn drop(&mut self) {
        self.0.store(FULL, Ordering::Release);
    }
}

impl ReplySlot {
    /// Whether a value of type `T` fits the slot.
    pub fn fits<T>() -> bool {
        std::mem::size_of::<T>() <= CAPACITY && std::mem::align_of::<T>() <= 16
    }

    /// A new, idle slot, owned by the caller until `release_owner`.
    pub fn new() -> NonNull<ReplySlot> {
        NonNull::from(Box::leak(Box::new(ReplySlot {
            state: AtomicUsize::new(IDLE),
            waker: UnsafeCell::new(None),
            value: UnsafeCell::new(Buf([MaybeUninit::uninit(); CAPACITY])),
        })))
    }

    /// No request is out: the owner may `arm` the slot. Acquire: a sender
    /// that made it idle is done with it.
    pub fn is_idle(&self) -> bool {
        self.state.load(Ordering::Acquire) == IDLE
    }

    /// Starts a request: the caller becomes its receiver and hands the
    /// slot to one sender. Only the owner, only when `is_idle`; the slot
    /// reaches the sender through a release (a mailbox push).
    pub fn arm(&self) {
        debug_assert!(self.is_idle());
        self.state.store(ARMED, Ordering::Relaxed);
    }

    /// The receiver polls: the value if it came, else registers `cx`'s
    /// waker. A waker that `will_wake` `own` is stored as a copy of `own`
    /// (no reference count). `own_registered` is the receiver's note that
    /// the registered waker is such a copy (a poll with the same waker then
    /// changes nothing).
    ///
    /// # Safety
    /// The caller is the receiver of the armed request, `T` is the type its
    /// sender sends, and `own`'s target outlives the receiver; dropping a
    /// copy of `own` does nothing.
    pub unsafe fn poll_take<T>(
        &self,
        cx: &mut Context<'_>,
        own: &Waker,
        own_registered: &mut bool,
    ) -> Poll<T> {
        let backoff = Backoff::new();
        loop {
            match self.state.load(Ordering::Acquire) & PHASE {
                FULL => {
                    // SAFETY: FULL (acquire): the sender wrote a `T` and is
                    // done; the value is read once, then the phase leaves FULL.
                    let v = self.value.with_mut(|b| unsafe { b.cast::<T>().read() });
                    self.state.store(IDLE, Ordering::Release);
                    return Poll::Ready(v);
                }
                ARMED => {
                    let is_own = cx.waker().will_wake(own);
                    let w = if is_own {
                        // SAFETY: a copy of `own` with no count taken: the
                        // caller's contract (its target outlives us, its
                        // drop does nothing).
                        unsafe { Waker::from_raw(RawWaker::new(own.data(), own.vtable())) }
                    } else {
                        cx.waker().clone()
                    };
                    // SAFETY: outside WAITING the waker cell is ours.
                    self.waker.with_mut(|c| unsafe { *c = Some(w) });
                    match self.state.compare_exchange(
                        ARMED,
                        WAITING,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => {
                            *own_registered = is_own;
                            return Poll::Pending;
                        }
                        // FULL: the sender never saw the waker; take it back.
                        // SAFETY: not WAITING: the cell is ours.
                        Err(_) => drop(self.waker.with_mut(|c| unsafe { (*c).take() })),
                    }
                }
                WAITING => {
                    if *own_registered && cx.waker().will_wake(own) {
                        return Poll::Pending;
                    }
                    // Polled with another waker: take ours back and
                    // register this one, unless the sender is taking it.
                    if self
                        .state
                        .compare_exchange(WAITING, ARMED, Ordering::Acquire, Ordering::Acquire)
                        .is_ok()
                    {
                        // SAFETY: back in ARMED: the cell is ours.
                        drop(self.waker.with_mut(|c| unsafe { (*c).take() }));
                    }
                }
                WAKING => backoff.snooze(),
                // IDLE, ABANDONED: not this receiver's request.
                _ => return Poll::Pending,
            }
        }
    }

    /// The receiver gives up (dropped before it took a value): a value
    /// already there is dropped; the sender will drop one that comes.
    ///
    /// # Safety
    /// The caller is the receiver of the armed request, `T` the sent type.
    pub unsafe fn abandon<T>(&self) {
        let backoff = Backoff::new();
        loop {
            match self.state.load(Ordering::Acquire) & PHASE {
                ARMED => {
                    if self
                        .state
                        .compare_exchange(ARMED, ABANDONED, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                    {
                        return;
                    }
                }
                WAITING => {
                    if self
                        .state
                        .compare_exchange(WAITING, ABANDONED, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                    {
                        // SAFETY: the sender can no longer take the waker
                        // (it takes it only from WAITING); it is ours.
                        drop(self.waker.with_mut(|c| unsafe { (*c).take() }));
                        return;
                    }
                }
                // The sender is waking our owner: wait until it is done.
                WAKING => backoff.snooze(),
                FULL => {
                    // SAFETY: FULL: a `T` is there, ours to drop, once.
                    drop(self.value.with_mut(|b| unsafe { b.cast::<T>().read() }));
                    self.state.store(IDLE, Ordering::Release);
                    return;
                }
                _ => return,
            }
        }
    }

    /// The request never left (its sending failed): back to idle. Only on
    /// the owner's thread, before any poll of the receiver.
    pub fn disarm(&self) {
        debug_assert_eq!(self.state.load(Ordering::Relaxed), ARMED);
        self.state.store(IDLE, Ordering::Relaxed);
    }

    /// The sender puts its value, wakes the receiver if it waits, and
    /// frees the slot if the owner is gone. `false`: the receiver was gone,
    /// the value is dropped.
    ///
    /// # Safety
    /// `slot` is armed, the caller its one sender, `T` the type the
    /// receiver takes, and `T: Send`. The slot is not touched after this.
    pub unsafe fn send<T>(slot: NonNull<ReplySlot>, value: T) -> bool {
        // SAFETY: forwarded.
        unsafe { Self::send_with(slot, value, Ordering::Release) }
    }

    /// The mutation `tests/loom_reply_slot.rs` must catch: FULL published
    /// relaxed, so the receiver may read the value before it is written.
    ///
    /// # Safety
    /// As `send`.
    #[cfg(loom)]
    pub unsafe fn send_mutation_relaxed_publish<T>(slot: NonNull<ReplySlot>, value: T) -> bool {
        // SAFETY: forwarded.
        unsafe { Self::send_with(slot, value, Ordering::Relaxed) }
    }

    unsafe fn send_with<T>(slot: NonNull<ReplySlot>, value: T, publish: Ordering) -> bool {
        // SAFETY: the sender keeps the slot alive (module docs: only it
        // frees it once the owner is gone).
        let this = unsafe { slot.as_ref() };
        // SAFETY: from ARMED until FULL the buffer is the sender's; `fits`
        // was checked by whoever armed the slot for a `T`.
        let write = |b: *mut Buf| unsafe { b.cast::<T>().write(value) };
        this.value.with_mut(write);
        let mut s = this.state.load(Ordering::Acquire);
        loop {
            match s & PHASE {
                ARMED => match this
                    .state
                    .compare_exchange(ARMED, FULL, publish, Ordering::Acquire)
                {
                    Ok(_) => return true,
                    Err(now) => s = now,
                },
                WAITING => {
                    match this.state.compare_exchange(
                        WAITING,
                        WAKING,
                        Ordering::Acquire,
                        Ordering::Acquire,
                    ) {
                        Ok(_) => {
                            let _publish = PublishFull(&this.state);
                            // SAFETY: WAKING: the waker is ours to take; the
                            // receiver waits for FULL, so a waker stored
                            // without a count is still valid (module docs).
                            let waker = this.waker.with_mut(|c| unsafe { (*c).take() });
                            if let Some(w) = waker {
                                w.wake();
                            }
                            return true;
                        }
                        Err(now) => s = now,
                    }
                }
                ABANDONED => {
                    // SAFETY: the value we wrote; no one else reads it.
                    drop(this.value.with_mut(|b| unsafe { b.cast::<T>().read() }));
                    loop {
                        if s & OWNER_GONE != 0 {
                            // SAFETY: the owner is gone and left the slot to
                            // us (module docs); nothing else points to it.
                            drop(unsafe { Box::from_raw(slot.as_ptr()) });
                            return false;
                        }
                        match this.state.compare_exchange(
                            ABANDONED,
                            IDLE,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        ) {
                            Ok(_) => return false,
                            Err(now) => s = now,
                        }
                    }
                }
                _ => unreachable!("a reply slot sent to while not armed"),
            }
        }
    }

    /// The owner gives the slot up: freed now if idle, else by the sender
    /// still out.
    ///
    /// # Safety
    /// The caller owns `slot`, and no receiver of it is alive.
    pub unsafe fn release_owner(slot: NonNull<ReplySlot>) {
        // SAFETY: the owner's slot is alive until this call frees or
        // hands it over.
        let this = unsafe { slot.as_ref() };
        let mut s = this.state.load(Ordering::Acquire);
        loop {
            match s {
                IDLE => {
                    // SAFETY: idle: no sender holds it; it is ours alone.
                    drop(unsafe { Box::from_raw(slot.as_ptr()) });
                    return;
                }
                ABANDONED => match this.state.compare_exchange(
                    ABANDONED,
                    ABANDONED | OWNER_GONE,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => return,
                    Err(now) => s = now,
                },
                // A receiver still alive breaks the contract: leak the
                // slot rather than free what it may touch.
                _ => {
                    debug_assert!(false, "reply slot released with a live receiver");
                    return;
                }
            }
        }
    }
}
