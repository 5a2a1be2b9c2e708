//! A loom model of the retirement's uniqueness check (issue 24): a stopped
//! actor's table entry is dropped in place and its memory kept for the next
//! spawn (`actor::recycle`) only when the entry is the cell's sole
//! reference. Meanwhile another thread may hold a `Weak` to the cell (a
//! monitor's callback, a `WeakActorRef`), upgrade it, use the cell and drop
//! both.
//!
//! The model keeps `Arc`'s two counts as std does (the weak count is one
//! more than the number of `Weak`s while any strong reference lives) and
//! runs the holder's steps against two checks:
//! * the check the runtime makes (`system::actor_table::is_sole_reference`, which
//!   is `Arc::get_mut`): lock the weak count (1 -> `usize::MAX`, Acquire),
//!   read the strong count (Acquire), unlock;
//! * the mutation, the check the runtime made before: two `Relaxed` loads.
//!   Loom finds the interleaving where the `Weak` is upgraded between the
//!   two loads, and the missing happens-before edge, and must fail it.
//!
//! `RUSTFLAGS="--cfg loom" cargo test -p troupe --test loom_unique --release`
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

/// An allocation's counts and contents, as `std::sync::Arc` keeps them.
struct Counted {
    strong: AtomicUsize,
    /// Number of `Weak`s, plus one while any strong reference lives.
    weak: AtomicUsize,
    /// The cell: read by a holder, dropped in place by the retirement.
    value: UnsafeCell<u64>,
}

impl Counted {
    /// One strong reference (the table's entry) and one `Weak`.
    fn new() -> Self {
        Counted {
            strong: AtomicUsize::new(1),
            weak: AtomicUsize::new(2),
            value: UnsafeCell::new(7),
        }
    }

    /// `Weak::upgrade`: a strong reference unless the count reached 0.
    fn upgrade(&self) -> bool {
        let mut n = self.strong.load(Ordering::Relaxed);
        loop {
            if n == 0 {
                return false;
            }
            match self
                .strong
                .compare_exchange_weak(n, n + 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(seen) => n = seen,
            }
        }
    }

    /// Dropping a strong reference other than the last.
    fn drop_strong(&self) {
        self.strong.fetch_sub(1, Ordering::Release);
    }

    /// Dropping a `Weak`.
    fn drop_weak(&self) {
        self.weak.fetch_sub(1, Ordering::Release);
    }

    /// `Arc::get_mut`'s test, as `is_sole_reference` uses it.
    fn sole_locked(&self) -> bool {
        if self
            .weak
            .compare_exchange(1, usize::MAX, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            let unique = self.strong.load(Ordering::Acquire) == 1;
            self.weak.store(1, Ordering::Release);
            unique
        } else {
            false
        }
    }

    /// The retirement's former test: two separate relaxed loads.
    fn sole_two_loads(&self) -> bool {
        self.strong.load(Ordering::Relaxed) == 1 && self.weak.load(Ordering::Relaxed) == 1
    }
}

/// The holder of a `Weak` upgrades it, drops the `Weak`, reads the cell and
/// drops its strong reference, while the retirement, holding the entry,
/// drops the cell in place if `sole` says the entry is alone.
fn retire_against_an_upgrade(sole: fn(&Counted) -> bool) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(move || {
        let c = Arc::new(Counted::new());
        let holder = {
            let c = c.clone();
            thread::spawn(move || {
                if c.upgrade() {
                    c.drop_weak();
                    // SAFETY: in the model, a strong reference is held, so
                    // the cell is alive; loom reports a read that races
                    // with the retirement's write.
                    let v = c.value.with(|p| unsafe { *p });
                    assert_eq!(v, 7, "read a cell already dropped in place");
                    c.drop_strong();
                } else {
                    c.drop_weak();
                }
            })
        };
        if sole(&c) {
            // The drop in place, and the next spawn's write into the kept
            // memory.
            // SAFETY: in the model, `sole` said no one else holds it;
            // loom reports the write if another thread still reads.
            c.value.with_mut(|p| unsafe { *p = 0 });
        }
        holder.join().unwrap();
    });
}

#[test]
fn retirement_never_drops_a_cell_a_weak_holder_uses() {
    retire_against_an_upgrade(Counted::sole_locked);
}

#[test]
#[should_panic]
fn mutation_two_relaxed_loads_are_caught() {
    retire_against_an_upgrade(Counted::sole_two_loads);
}
