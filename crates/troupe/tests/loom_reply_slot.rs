//! Loom models of the reply slot (`engine/reply_slot.rs`), through which an
//! async actor's asks are answered: the value arrives once and the
//! receiver is woken; a receiver that gives up, and an owner that leaves,
//! race a sender without losing or doubling the value's drop; a poll with
//! another waker takes the registered one back safely. The mutation (FULL
//! published relaxed) must fail. Run with:
//!
//! `RUSTFLAGS="--cfg loom" cargo test -p troupe --test loom_reply_slot --release`
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use std::ptr::NonNull;
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};
use troupe::loom_exports::ReplySlot;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b.check(f);
}

/// A slot pointer that may cross to the sender's thread.
#[derive(Clone, Copy)]
struct Ptr(NonNull<ReplySlot>);
// SAFETY: the slot is made to be shared; the models follow its contract.
unsafe impl Send for Ptr {}

/// A value that counts its drops.
struct Counted(u64, Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::Relaxed);
    }
}

/// A waker whose data is a leaked-for-the-model `AtomicBool` it sets;
/// clone and drop touch no count (like an actor's own waker).
fn flag_waker(flag: &AtomicBool) -> Waker {
    const VTABLE: RawWakerVTable = RawWakerVTable::new(
        |d| RawWaker::new(d, &VTABLE),
        |d| {
            // SAFETY: the data is the model's flag, alive until the end.
            unsafe { &*d.cast::<AtomicBool>() }.store(true, Ordering::Release)
        },
        |d| {
            // SAFETY: as above.
            unsafe { &*d.cast::<AtomicBool>() }.store(true, Ordering::Release)
        },
        |_| {},
    );
    let raw = RawWaker::new((flag as *const AtomicBool).cast(), &VTABLE);
    // SAFETY: the vtable keeps RawWaker's contract for this data.
    unsafe { Waker::from_raw(raw) }
}

/// The receiver's side of one request: poll (first with `first`, then
/// with the own waker), wait for the wake, poll again; the value.
fn receive(slot: &ReplySlot, flag: &AtomicBool, first: &Waker, own: &Waker) -> u64 {
    let mut registered = false;
    for w in [first, own] {
        let mut cx = Context::from_waker(w);
        // SAFETY: the model is the receiver of the armed request; the own
        // waker's target (the flag) outlives it; its drop does nothing.
        if let Poll::Ready(v) = unsafe { slot.poll_take::<Counted>(&mut cx, own, &mut registered) }
        {
            return v.0;
        }
    }
    while !flag.load(Ordering::Acquire) {
        thread::yield_now();
    }
    let mut cx = Context::from_waker(own);
    // SAFETY: as above.
    match unsafe { slot.poll_take::<Counted>(&mut cx, own, &mut registered) } {
        Poll::Ready(v) => v.0,
        Poll::Pending => panic!("woken, but no value"),
    }
}

fn reply_round(mutation: bool) {
    model(move || {
        let drops = Arc::new(AtomicUsize::new(0));
        let flag = Box::new(AtomicBool::new(false));
        let own = flag_waker(&flag);
        let other = Waker::noop().clone();
        let slot = ReplySlot::new();
        // SAFETY: just made; the model owns it.
        unsafe { slot.as_ref() }.arm();
        let p = Ptr(slot);
        let d = drops.clone();
        let sender = thread::spawn(move || {
            let p = p;
            // SAFETY: armed for a `Counted`; this thread is its one sender.
            unsafe {
                if mutation {
                    ReplySlot::send_mutation_relaxed_publish(p.0, Counted(42, d));
                } else {
                    ReplySlot::send(p.0, Counted(42, d));
                }
            }
        });
        // SAFETY: the owner keeps the slot until `release_owner`.
        let v = receive(unsafe { slot.as_ref() }, &flag, &other, &own);
        assert_eq!(v, 42);
        sender.join().unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), 1, "the value dropped once");
        // SAFETY: idle now; owned; no receiver left.
        assert!(unsafe { slot.as_ref() }.is_idle());
        // SAFETY: as above.
        unsafe { ReplySlot::release_owner(slot) };
    });
}

#[test]
fn a_reply_arrives_once_and_wakes_the_receiver() {
    reply_round(false);
}

#[test]
#[should_panic]
fn mutation_full_published_relaxed_is_caught() {
    reply_round(true);
}

#[test]
fn a_receiver_and_owner_leaving_race_the_sender() {
    model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let flag = Box::new(AtomicBool::new(false));
        let own = flag_waker(&flag);
        let slot = ReplySlot::new();
        // SAFETY: just made; the model owns it.
        unsafe { slot.as_ref() }.arm();
        let p = Ptr(slot);
        let d = drops.clone();
        let sender = thread::spawn(move || {
            let p = p;
            // SAFETY: armed for a `Counted`; this thread is its one sender.
            unsafe { ReplySlot::send(p.0, Counted(7, d)) }
        });
        let mut registered = false;
        let mut cx = Context::from_waker(&own);
        // SAFETY: the model is the receiver; the own waker outlives it.
        let got = unsafe {
            slot.as_ref()
                .poll_take::<Counted>(&mut cx, &own, &mut registered)
        };
        if got.is_pending() {
            // Give up, then leave: the sender drops the value and frees.
            // SAFETY: the receiver, once; then the owner, once.
            unsafe {
                slot.as_ref().abandon::<Counted>();
                ReplySlot::release_owner(slot);
            }
        } else {
            drop(got);
            // SAFETY: idle; owned; no receiver left.
            unsafe { ReplySlot::release_owner(slot) };
        }
        let delivered = sender.join().unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), 1, "the value dropped once");
        let _ = delivered;
    });
}
