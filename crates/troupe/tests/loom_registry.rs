//! A loom model of the registry's name-table protocol (`src/registry.rs`):
//! a writer publishes a record and then its slot (release); a reader loads
//! the slot (acquire) and then reads the record; removing a name turns its
//! slot into a tombstone and hands the record back for reuse only once every
//! reader that could have seen it is gone. Run with:
//!
//! `RUSTFLAGS="--cfg loom" cargo test -p troupe --test loom_registry --release`
//!
//! This is a model of the protocol, not the registry's code: the registry
//! gets "gone" from `crossbeam-epoch` (a deferred function runs after every
//! guard alive at the time has dropped), which the model stands in for with a
//! counter of active readers that the writer reads with an RMW before reusing
//! a record. Records live in loom cells, so a reuse that races with a reader
//! is reported as a data race; a mutation below shows the model catching it.
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

const EMPTY: u64 = 0;
const TOMB: u64 = 1;
const LIVE: u64 = 1 << 63;

/// A name (an id standing for the string) and its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rec {
    name: u64,
    value: u64,
}

/// Two slots, two records; a name's probe starts at slot `name % 2`.
struct Table {
    slots: [AtomicU64; 2],
    recs: [UnsafeCell<Rec>; 2],
    readers: AtomicUsize,
}

/// The writer's own state (one writer, as under the registry's lock): it
/// knows what it stored, so it reads no shared memory to find its way.
#[derive(Default)]
struct Writer {
    free: Vec<usize>,
    fresh: usize,
    pending: Vec<usize>,
    slots: [u64; 2],
    names: [u64; 2],
}

impl Table {
    fn new() -> Self {
        Table {
            slots: [AtomicU64::new(EMPTY), AtomicU64::new(EMPTY)],
            recs: [
                UnsafeCell::new(Rec { name: 0, value: 0 }),
                UnsafeCell::new(Rec { name: 0, value: 0 }),
            ],
            readers: AtomicUsize::new(0),
        }
    }

    /// A reader's lookup under a guard: the value found for `name`.
    fn get(&self, name: u64) -> Option<u64> {
        self.readers.fetch_add(1, Ordering::AcqRel);
        let mut found = None;
        for k in 0..2 {
            let i = ((name as usize) + k) % 2;
            let v = self.slots[i].load(Ordering::Acquire);
            if v == EMPTY {
                break;
            }
            if v & LIVE != 0 {
                // SAFETY: loom checks this read against every write to the
                // record; finding a race is the point of the model.
                let rec = self.recs[(v & 1) as usize].with(|p| unsafe { *p });
                if rec.name == name {
                    found = Some(rec.value);
                    break;
                }
            }
        }
        self.readers.fetch_sub(1, Ordering::AcqRel);
        found
    }

    /// Records come back for reuse once no reader is active: an RMW on the
    /// readers' counter, ordered after the tombstone stores (the epoch
    /// advance in the registry).
    fn reclaim(&self, w: &mut Writer, reuse_at_once: bool) {
        if reuse_at_once || self.readers.fetch_add(0, Ordering::AcqRel) == 0 {
            w.free.append(&mut w.pending);
        }
    }

    fn insert(&self, w: &mut Writer, name: u64, value: u64) {
        let idx = w.free.pop().unwrap_or_else(|| {
            w.fresh += 1;
            w.fresh - 1
        });
        assert!(idx < 2, "the model has two records");
        // SAFETY: the record is free (never published, or back from
        // `pending` after its readers); loom checks it.
        self.recs[idx].with_mut(|p| unsafe { *p = Rec { name, value } });
        w.names[idx] = name;
        for k in 0..2 {
            let i = ((name as usize) + k) % 2;
            if w.slots[i] <= TOMB {
                w.slots[i] = LIVE | idx as u64;
                self.slots[i].store(w.slots[i], Ordering::Release);
                return;
            }
        }
        panic!("the model's table is full");
    }

    fn remove(&self, w: &mut Writer, name: u64) {
        for k in 0..2 {
            let i = ((name as usize) + k) % 2;
            let v = w.slots[i];
            if v & LIVE != 0 && w.names[(v & 1) as usize] == name {
                w.slots[i] = TOMB;
                self.slots[i].store(TOMB, Ordering::Release);
                w.pending.push((v & 1) as usize);
                return;
            }
        }
    }
}

/// The writer publishes `a`, removes it, and publishes `b` (reusing `a`'s
/// record if it came back) while a reader looks both up: a lookup finds its
/// own name's value or nothing, never the other name's.
fn name_reuse(reuse_at_once: bool) {
    let mut b = loom::model::Builder::new();
    // Small enough to explore every interleaving (a fraction of a second).
    b.preemption_bound = None;
    b.check(move || {
        let t = Arc::new(Table::new());
        let (a, b) = (2u64, 3u64);
        let writer = {
            let t = t.clone();
            thread::spawn(move || {
                let mut w = Writer::default();
                t.insert(&mut w, a, 10);
                t.remove(&mut w, a);
                t.reclaim(&mut w, reuse_at_once);
                t.insert(&mut w, b, 20);
            })
        };
        for name in [a, b, a] {
            match t.get(name) {
                None => {}
                Some(v) => assert_eq!(v, if name == a { 10 } else { 20 }),
            }
        }
        writer.join().unwrap();
        assert_eq!(t.get(a), None);
        assert_eq!(t.get(b), Some(20));
    });
}

#[test]
fn registry_record_reuse_waits_for_readers() {
    name_reuse(false);
}

/// The mutation: reuse a removed record at once. The model must fail.
#[test]
#[should_panic]
fn registry_model_catches_reuse_without_waiting() {
    name_reuse(true);
}
