//! Recycled cells: a stopped actor's cell memory, kept on the thread that
//! finalized it, for the next spawn of the same actor type there.
//!
//! A spawn and stop allocated and freed one block, the cell's `Arc`, and
//! the free paid two atomic decrements: the table entry's strong count, and
//! the weak count that `Arc` drops at every free. When the table's entry is
//! a stopped cell's only reference (`Retired::holder_released`: no other
//! strong and no weak reference, and none can be made from nothing), the
//! worker drops the cell's fields in place instead and keeps the `Arc`, as
//! an `Arc<MaybeUninit<ActorCell<A>>>` (strong count 1, no weak reference),
//! on this thread's shelf for `A`. The next `ActorCell::<A>::spawn` on this
//! thread writes its new cell into it: no allocation, no free, no count
//! touched.
//!
//! Invariants:
//! * A shelved `Arc` is the only reference to its allocation, and its
//!   contents are dropped (uninitialized): `take`'s caller may write a new
//!   cell through its pointer.
//! * A thread keeps at most [`PER_TYPE`] cells of each of at most [`TYPES`]
//!   actor types; beyond that a retired cell is freed as before. The shelves
//!   are freed when the thread exits (or at once, if it is exiting).
//! * Nothing here allocates in the steady state: a shelf reserves its room
//!   when it is made.

use super::behaviour::Actor;
use super::cell::ActorCell;
use std::any::TypeId;
use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::sync::Arc;

/// The memory of one stopped cell of actor type `A`, ready to be written.
pub(crate) type Blank<A> = Arc<MaybeUninit<ActorCell<A>>>;

/// Cells kept per actor type, per thread.
pub(crate) const PER_TYPE: usize = 32;
/// Actor types kept per thread.
pub(crate) const TYPES: usize = 8;

/// One actor type's kept cells.
struct Shelf {
    ty: TypeId,
    /// `Blank<A>::into_raw` pointers, for this shelf's `A`.
    cells: Vec<*const ()>,
    /// Frees one of `cells` (`free::<A>`).
    free: unsafe fn(*const ()),
}

impl Drop for Shelf {
    fn drop(&mut self) {
        for p in self.cells.drain(..) {
            // SAFETY: each pointer came from `Blank<A>::into_raw` for this
            // shelf's `A`, which `free` was made for, and is freed once.
            unsafe { (self.free)(p) };
        }
    }
}

/// Frees a shelved cell: its contents are already dropped, so this frees
/// the allocation only (`MaybeUninit` drops nothing).
///
/// # Safety
/// `p` came from `Blank<A>::into_raw` and is not used again.
unsafe fn free<A: Actor>(p: *const ()) {
    // SAFETY: forwarded.
    drop(unsafe { Arc::from_raw(p.cast::<MaybeUninit<ActorCell<A>>>()) });
}

thread_local! {
    static SHELVES: RefCell<Vec<Shelf>> = const { RefCell::new(Vec::new()) };
}

/// A kept cell of type `A` from this thread's shelf, if there is one.
#[inline]
pub(crate) fn take<A: Actor>() -> Option<Blank<A>> {
    SHELVES
        .try_with(|s| {
            let mut s = s.borrow_mut();
            let shelf = s.iter_mut().find(|sh| sh.ty == TypeId::of::<A>())?;
            let p = shelf.cells.pop()?;
            // SAFETY: pushed by `put::<A>` (this shelf is `A`'s) from
            // `Blank<A>::into_raw`; popped, so owned by us alone.
            Some(unsafe { Arc::from_raw(p.cast::<MaybeUninit<ActorCell<A>>>()) })
        })
        .ok()
        .flatten()
}

/// Keeps `cell` on this thread's shelf for `A`, or frees it if the shelf is
/// full (or the thread is exiting). `cell` must be the only reference to
/// its allocation, with no weak reference.
pub(crate) fn put<A: Actor>(cell: Blank<A>) {
    let refused = SHELVES
        .try_with(|s| {
            let mut s = s.borrow_mut();
            let ty = TypeId::of::<A>();
            let at = match s.iter().position(|sh| sh.ty == ty) {
                Some(at) => at,
                None if s.len() < TYPES => {
                    s.push(Shelf {
                        ty,
                        cells: Vec::with_capacity(PER_TYPE),
                        free: free::<A>,
                    });
                    s.len() - 1
                }
                None => return Some(cell),
            };
            let shelf = &mut s[at];
            if shelf.cells.len() >= PER_TYPE {
                return Some(cell);
            }
            shelf.cells.push(Arc::into_raw(cell).cast());
            None
        })
        // The thread is exiting: `cell` went with the closure, freed.
        .unwrap_or(None);
    // Freed outside the borrow.
    drop(refused);
}

/// Cells kept on this thread for `A`.
#[cfg(test)]
pub(crate) fn kept<A: Actor>() -> usize {
    SHELVES.with(|s| {
        s.borrow()
            .iter()
            .find(|sh| sh.ty == TypeId::of::<A>())
            .map_or(0, |sh| sh.cells.len())
    })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::actor::{ActorRef, Context, Down, StopReason};
    use crate::ActorSystem;
    use std::sync::mpsc;

    struct Quitter;
    impl Actor for Quitter {
        type Msg = ();
        fn started(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.stop();
        }
        fn handle(&mut self, _: (), _: &mut Context<'_, Self>) {}
    }

    /// How the driver treats each child's reference.
    #[derive(Clone, Copy)]
    enum Keep {
        Nothing,
        Strong,
        Weak,
    }

    /// Spawns `left` children one after the other, each once the one
    /// before has stopped, and notes what this worker's shelf holds when
    /// each `Down` arrives.
    struct Driver {
        left: usize,
        keep: Keep,
        held: Vec<ActorRef<Quitter>>,
        weak: Vec<crate::actor::actor_ref::WeakActorRef<Quitter>>,
        seen: Vec<(u64, StopReason, usize)>,
        done: mpsc::Sender<Vec<(u64, StopReason, usize)>>,
    }

    impl Driver {
        fn next(&mut self, ctx: &mut Context<'_, Self>) {
            let (child, _) = ctx.spawn_monitored(Quitter, |d| d);
            match self.keep {
                Keep::Nothing => drop(child),
                Keep::Strong => self.held.push(child),
                Keep::Weak => self.weak.push(child.downgrade()),
            }
        }
    }

    impl Actor for Driver {
        type Msg = Down;
        fn started(&mut self, ctx: &mut Context<'_, Self>) {
            self.next(ctx);
        }
        fn handle(&mut self, d: Down, ctx: &mut Context<'_, Self>) {
            self.seen.push((d.id.as_u64(), d.reason, kept::<Quitter>()));
            self.left -= 1;
            if self.left == 0 {
                let _ = self.done.send(std::mem::take(&mut self.seen));
                ctx.stop();
            } else {
                self.next(ctx);
            }
        }
    }

    fn drive(keep: Keep, n: usize) -> Vec<(u64, StopReason, usize)> {
        let system = ActorSystem::builder().threads(1).build();
        let (tx, rx) = mpsc::channel();
        system.spawn(Driver {
            left: n,
            keep,
            held: Vec::new(),
            weak: Vec::new(),
            seen: Vec::new(),
            done: tx,
        });
        let seen = rx.recv().unwrap();
        let report = system.shutdown();
        assert_eq!(report.actors_stopped, n as u64 + 1);
        seen
    }

    /// A child whose only reference was the table's is kept when it stops
    /// (the shelf holds one cell when its `Down` arrives) and reused by the
    /// next spawn (the shelf is empty again by the next `Down`). Each reused
    /// cell is a new actor: its own id, started and stopped normally.
    #[test]
    fn a_stopped_cell_is_reused_by_the_next_spawn() {
        let seen = drive(Keep::Nothing, 6);
        let mut ids: Vec<_> = seen.iter().map(|s| s.0).collect();
        ids.dedup();
        assert_eq!(ids.len(), 6, "one id per child: {seen:?}");
        for (_, reason, kept) in &seen {
            assert_eq!(*reason, StopReason::Normal);
            // Kept at the stop, taken by the next spawn: never more than one.
            assert_eq!(*kept, 1, "{seen:?}");
        }
    }

    /// A child still referenced when it stops (by an `ActorRef` or a weak
    /// one) is not kept: its memory is not the runtime's to reuse.
    #[test]
    fn a_referenced_cell_is_not_kept() {
        for keep in [Keep::Strong, Keep::Weak] {
            let seen = drive(keep, 4);
            for (_, reason, kept) in &seen {
                assert_eq!(*reason, StopReason::Normal);
                assert_eq!(*kept, 0, "{seen:?}");
            }
        }
    }

    /// The shelf keeps at most `PER_TYPE` cells of a type and frees the
    /// rest; what it keeps is freed with the thread (Miri and the leak
    /// checker see both).
    #[test]
    fn a_shelf_is_bounded_and_freed_with_its_thread() {
        std::thread::spawn(|| {
            let blank = || -> Blank<Quitter> { Arc::new_uninit() };
            for _ in 0..PER_TYPE + 3 {
                put::<Quitter>(blank());
            }
            assert_eq!(kept::<Quitter>(), PER_TYPE);
            let one = take::<Quitter>().expect("a kept cell");
            assert_eq!(Arc::strong_count(&one), 1);
            assert_eq!(Arc::weak_count(&one), 0);
            assert_eq!(kept::<Quitter>(), PER_TYPE - 1);
            assert!(take::<Driver>().is_none());
        })
        .join()
        .unwrap();
    }
}
