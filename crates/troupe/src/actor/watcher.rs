//! [`Watcher`]: a stop callback (`FnOnce(ActorId, &StopReason)`) as the
//! exit record stores it, without a heap allocation when the closure fits
//! in one word.
//!
//! The common watcher is a monitor (`ActorRef::watch`, `Context::watch`):
//! a closure holding a weak reference to the watching actor (one pointer)
//! and a conversion to its message type (usually zero-sized). Boxed as a
//! `Box<dyn FnOnce>`, every monitor paid a `malloc` at the watch and a
//! `free` when it ran, ~25 ns of a ~250 ns spawn-watch-stop cycle. Stored
//! inline it costs neither; a larger closure is boxed as before, and the
//! box's thin pointer is what is stored inline.
//!
//! Invariants:
//! * `data` holds exactly one live value of the type `vt` was made for:
//!   the closure itself (`Inline<F>`) or a `Box` of it (`Boxed<F>`).
//! * That value is consumed exactly once: by `call` (which moves it out and
//!   runs it) or by `Drop` (which drops it unrun), never both: `call` wraps
//!   the watcher in `ManuallyDrop` before it moves the value out.

use super::error::StopReason;
use super::id::ActorId;
use std::marker::PhantomData;
use std::mem::{align_of, size_of, ManuallyDrop, MaybeUninit};

/// One word of storage, aligned as a pointer.
type Word = MaybeUninit<usize>;

/// What a stored closure's type knows how to do to its storage.
struct VTable {
    /// Moves the value out of the storage and runs it.
    call: unsafe fn(*mut Word, ActorId, &StopReason),
    /// Drops the value in the storage without running it.
    drop: unsafe fn(*mut Word),
}

/// A stop callback, run at most once. See the module docs.
///
/// ```ignore
/// let w = Watcher::new(|id, reason| println!("{id} stopped: {reason}"));
/// w.call(id, &StopReason::Normal);
/// ```
pub(crate) struct Watcher {
    data: Word,
    vt: &'static VTable,
}

// SAFETY: `Watcher::new` takes only `Send` closures, and the storage holds
// nothing else (the closure or a `Box` of it); it is never shared (no
// `Sync`), only moved.
unsafe impl Send for Watcher {}

/// The closure `F` itself sits in the storage.
struct Inline<F>(PhantomData<F>);

/// A `Box<F>` sits in the storage.
struct Boxed<F>(PhantomData<F>);

impl<F: FnOnce(ActorId, &StopReason) + Send + 'static> Inline<F> {
    const VT: &'static VTable = &VTable {
        call: Self::call,
        drop: Self::drop,
    };

    /// # Safety
    /// `p` holds a live `F` (the module's invariant), consumed here.
    unsafe fn call(p: *mut Word, id: ActorId, reason: &StopReason) {
        // SAFETY: `p` holds a live `F`, suitably aligned (checked in `new`);
        // the caller never touches it again.
        let f = unsafe { p.cast::<F>().read() };
        f(id, reason);
    }

    /// # Safety
    /// `p` holds a live `F`, consumed here.
    unsafe fn drop(p: *mut Word) {
        // SAFETY: as in `call`.
        unsafe { p.cast::<F>().drop_in_place() }
    }
}

impl<F: FnOnce(ActorId, &StopReason) + Send + 'static> Boxed<F> {
    const VT: &'static VTable = &VTable {
        call: Self::call,
        drop: Self::drop,
    };

    /// # Safety
    /// `p` holds a live `Box<F>`, consumed here.
    unsafe fn call(p: *mut Word, id: ActorId, reason: &StopReason) {
        // SAFETY: `p` holds a live `Box<F>` (a pointer: fits and is aligned).
        let f = unsafe { p.cast::<Box<F>>().read() };
        f(id, reason);
    }

    /// # Safety
    /// `p` holds a live `Box<F>`, consumed here.
    unsafe fn drop(p: *mut Word) {
        // SAFETY: as in `call`.
        unsafe { p.cast::<Box<F>>().drop_in_place() }
    }
}

/// Whether an `F` fits the inline word (size and alignment).
const fn fits_inline<F>() -> bool {
    size_of::<F>() <= size_of::<Word>() && align_of::<F>() <= align_of::<Word>()
}

/// Whether the closure `_f` would be stored inline (tests).
#[cfg(test)]
pub(crate) fn fits_inline_of<F>(_f: &F) -> bool {
    fits_inline::<F>()
}

impl Watcher {
    /// Stores `f`: inline if it fits one word, else boxed.
    pub(crate) fn new<F: FnOnce(ActorId, &StopReason) + Send + 'static>(f: F) -> Self {
        let mut data = Word::uninit();
        if fits_inline::<F>() {
            // SAFETY: `F` fits the word in size and alignment (just checked).
            unsafe { data.as_mut_ptr().cast::<F>().write(f) };
            Watcher {
                data,
                vt: Inline::<F>::VT,
            }
        } else {
            // SAFETY: a `Box` is one pointer: it fits a pointer-aligned word.
            unsafe { data.as_mut_ptr().cast::<Box<F>>().write(Box::new(f)) };
            Watcher {
                data,
                vt: Boxed::<F>::VT,
            }
        }
    }

    /// Runs the callback. A panic in it unwinds to the caller (the exit
    /// record runs watchers under `lifecycle::guard`); the closure's
    /// captures are dropped on the way, once.
    pub(crate) fn call(self, id: ActorId, reason: &StopReason) {
        let mut me = ManuallyDrop::new(self);
        // SAFETY: `data` holds the live value `vt` was made for; wrapped in
        // `ManuallyDrop`, the watcher no longer drops it, so `call` is its
        // one consumer.
        unsafe { (me.vt.call)(&mut me.data, id, reason) }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        // SAFETY: `data` holds the live value `vt` was made for, not yet
        // consumed (`call` forgets the watcher before consuming it).
        unsafe { (self.vt.drop)(&mut self.data) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    /// What a test watcher saw: its calls and the drops of its capture.
    #[derive(Default)]
    struct Probe {
        calls: Mutex<Vec<(ActorId, StopReason)>>,
        drops: AtomicUsize,
    }

    /// A one-word capture that counts its drops in the probe.
    struct Capture(Arc<Probe>);
    impl Drop for Capture {
        fn drop(&mut self) {
            self.0.drops.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A watcher that records its call; one word, or padded past it.
    fn watcher(probe: &Arc<Probe>, big: bool, panics: bool) -> Watcher {
        let c = Capture(probe.clone());
        if big {
            let pad = [9u64; 3];
            let f = move |id, r: &StopReason| {
                assert_eq!(pad, [9; 3]);
                c.0.calls.lock().unwrap().push((id, r.clone()));
                if panics {
                    panic!("watcher fails");
                }
            };
            assert!(!fits_inline_of(&f));
            Watcher::new(f)
        } else if panics {
            let f = move |id, r: &StopReason| {
                c.0.calls.lock().unwrap().push((id, r.clone()));
                panic!("watcher fails");
            };
            assert!(fits_inline_of(&f));
            Watcher::new(f)
        } else {
            let f = move |id, r: &StopReason| {
                c.0.calls.lock().unwrap().push((id, r.clone()));
            };
            assert!(fits_inline_of(&f));
            Watcher::new(f)
        }
    }

    #[test]
    fn a_monitor_sized_closure_fits_inline_and_a_larger_one_does_not() {
        let weak = std::sync::Weak::<u64>::new();
        let monitor = move |_: ActorId, _: &StopReason| drop(weak);
        assert!(fits_inline_of(&monitor));
        assert!(fits_inline_of(&|_: ActorId, _: &StopReason| {}));
        let (a, b) = (Arc::new(1), Arc::new(2));
        assert!(!fits_inline_of(&move |_: ActorId, _: &StopReason| drop((
            a, b
        ))));
    }

    #[test]
    fn call_runs_once_with_the_arguments_and_drops_the_capture_once() {
        for big in [false, true] {
            let probe = Arc::new(Probe::default());
            let w = watcher(&probe, big, false);
            assert_eq!(probe.drops.load(Ordering::SeqCst), 0);
            let me = ActorId::next();
            w.call(me, &StopReason::Killed);
            assert_eq!(probe.drops.load(Ordering::SeqCst), 1, "big={big}");
            assert_eq!(*probe.calls.lock().unwrap(), vec![(me, StopReason::Killed)]);
            assert_eq!(Arc::strong_count(&probe), 1);
        }
    }

    #[test]
    fn dropped_unrun_it_drops_the_capture_once_and_never_runs() {
        for big in [false, true] {
            let probe = Arc::new(Probe::default());
            drop(watcher(&probe, big, false));
            assert_eq!(probe.drops.load(Ordering::SeqCst), 1, "big={big}");
            assert!(probe.calls.lock().unwrap().is_empty());
            assert_eq!(Arc::strong_count(&probe), 1);
        }
    }

    #[test]
    fn a_panicking_watcher_drops_its_capture_once() {
        for big in [false, true] {
            let probe = Arc::new(Probe::default());
            let w = watcher(&probe, big, true);
            let me = ActorId::next();
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                w.call(me, &StopReason::Normal)
            }));
            assert!(r.is_err());
            assert_eq!(probe.drops.load(Ordering::SeqCst), 1, "big={big}");
            assert_eq!(probe.calls.lock().unwrap().len(), 1);
            assert_eq!(Arc::strong_count(&probe), 1);
        }
    }
}
