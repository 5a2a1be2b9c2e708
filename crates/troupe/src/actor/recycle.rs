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

use std::any::TypeId;
use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::sync::Arc;

/// The memory of one stopped value of type `T` (a cell), ready to be
/// written. Generic: this file names no actor type, so the cell, which
/// calls it, stays the only one that knows what is kept.
pub(crate) type Blank<T> = Arc<MaybeUninit<T>>;

/// Cells kept per actor type, per thread.
pub(crate) const PER_TYPE: usize = 32;
/// Actor types kept per thread.
pub(crate) const TYPES: usize = 8;

/// One actor type's kept cells.
struct Shelf {
    ty: TypeId,
    /// `Blank<T>::into_raw` pointers, for this shelf's `T`.
    cells: Vec<*const ()>,
    /// Frees one of `cells` (`free::<T>`).
    free: unsafe fn(*const ()),
}

impl Drop for Shelf {
    fn drop(&mut self) {
        for p in self.cells.drain(..) {
            // SAFETY: each pointer came from `Blank<T>::into_raw` for this
            // shelf's `T`, which `free` was made for, and is freed once.
            unsafe { (self.free)(p) };
        }
    }
}

/// Frees a shelved cell: its contents are already dropped, so this frees
/// the allocation only (`MaybeUninit` drops nothing).
///
/// # Safety
/// `p` came from `Blank<T>::into_raw` and is not used again.
unsafe fn free<T>(p: *const ()) {
    // SAFETY: forwarded.
    drop(unsafe { Arc::from_raw(p.cast::<MaybeUninit<T>>()) });
}

thread_local! {
    static SHELVES: RefCell<Vec<Shelf>> = const { RefCell::new(Vec::new()) };
}

/// A kept value's memory of type `T` from this thread's shelf, if there is
/// one.
#[inline]
pub(crate) fn take<T: 'static>() -> Option<Blank<T>> {
    SHELVES
        .try_with(|s| {
            let mut s = s.borrow_mut();
            let shelf = s.iter_mut().find(|sh| sh.ty == TypeId::of::<T>())?;
            let p = shelf.cells.pop()?;
            // SAFETY: pushed by `put::<T>` (this shelf is `T`'s) from
            // `Blank<T>::into_raw`; popped, so owned by us alone.
            Some(unsafe { Arc::from_raw(p.cast::<MaybeUninit<T>>()) })
        })
        .ok()
        .flatten()
}

/// Keeps `cell` on this thread's shelf for `T`, or frees it if the shelf is
/// full (or the thread is exiting). `cell` must be the only reference to
/// its allocation, with no weak reference, its contents dropped.
pub(crate) fn put<T: 'static>(cell: Blank<T>) {
    let refused = SHELVES
        .try_with(|s| {
            let mut s = s.borrow_mut();
            let ty = TypeId::of::<T>();
            let at = match s.iter().position(|sh| sh.ty == ty) {
                Some(at) => at,
                None if s.len() < TYPES => {
                    s.push(Shelf {
                        ty,
                        cells: Vec::with_capacity(PER_TYPE),
                        free: free::<T>,
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

/// Values kept on this thread for `T`.
#[cfg(test)]
pub(crate) fn kept<T: 'static>() -> usize {
    SHELVES.with(|s| {
        s.borrow()
            .iter()
            .find(|sh| sh.ty == TypeId::of::<T>())
            .map_or(0, |sh| sh.cells.len())
    })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    struct Cell([u64; 4]);
    struct Other;

    /// The shelf keeps at most `PER_TYPE` values of a type and frees the
    /// rest; what it keeps is freed with the thread (Miri and the leak
    /// checker see both).
    #[test]
    fn a_shelf_is_bounded_and_freed_with_its_thread() {
        std::thread::spawn(|| {
            let blank = || -> Blank<Cell> { Arc::new_uninit() };
            for _ in 0..PER_TYPE + 3 {
                put::<Cell>(blank());
            }
            assert_eq!(kept::<Cell>(), PER_TYPE);
            let one = take::<Cell>().expect("a kept value");
            assert_eq!(Arc::strong_count(&one), 1);
            assert_eq!(Arc::weak_count(&one), 0);
            assert_eq!(kept::<Cell>(), PER_TYPE - 1);
            assert!(take::<Other>().is_none());
            // Written and read back: the memory is whole.
            let one = Arc::new(MaybeUninit::new(Cell([7; 4])));
            // SAFETY: written on the line above.
            assert_eq!(unsafe { one.assume_init_ref() }.0, [7; 4]);
        })
        .join()
        .unwrap();
    }

    /// At most `TYPES` types are kept; a value of one more is freed.
    #[test]
    fn the_types_kept_are_bounded() {
        std::thread::spawn(|| {
            fn one<T: 'static>() {
                put::<T>(Arc::new_uninit());
            }
            one::<[u8; 1]>();
            one::<[u8; 2]>();
            one::<[u8; 3]>();
            one::<[u8; 4]>();
            one::<[u8; 5]>();
            one::<[u8; 6]>();
            one::<[u8; 7]>();
            one::<[u8; 8]>();
            one::<[u8; 9]>();
            assert_eq!(kept::<[u8; 8]>(), 1);
            assert_eq!(kept::<[u8; 9]>(), 0, "a ninth type is not kept");
        })
        .join()
        .unwrap();
    }
}
