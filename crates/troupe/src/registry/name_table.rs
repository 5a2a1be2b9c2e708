//! The lock-free name table: `u64` slots holding a 16-bit tag (15 bits of
//! hash and a set top bit) above the
//! 48-bit address of a name record; readers probe under an epoch guard and
//! write nothing shared.

use crate::actor::{Actor, ActorRef};
use std::mem::ManuallyDrop;
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};

use super::Name;

/// An empty slot ends a probe.
pub(super) const EMPTY: u64 = 0;
/// A removed entry: probes go on past it.
pub(super) const TOMB: u64 = 1;
/// A live slot: 16 bits of tag above a 48-bit record address.
pub(super) const TAG_MASK: u64 = 0xFFFF_0000_0000_0000;
pub(super) const PTR_MASK: u64 = !TAG_MASK;

/// The top 16 bits of a slot: 15 bits of the hash and a set top bit (so that
/// no live slot equals `EMPTY` or `TOMB`).
#[inline]
pub(super) fn tag_of(hash: u64) -> u64 {
    (hash | (1 << 63)) & TAG_MASK
}

/// A live slot for the record at `rec`. Records are heap memory, whose
/// user-space addresses fit in 48 bits on the 64-bit targets Troupe runs on
/// (x86-64 and AArch64 hand out higher ones only when asked); checked.
#[inline]
pub(super) fn slot_of<T>(tag: u64, rec: *const T) -> u64 {
    let addr = rec as u64;
    assert!(
        addr & TAG_MASK == 0,
        "registry: record address {addr:#x} does not fit in 48 bits"
    );
    tag | addr
}

/// Byte equality without a `memcmp` call for names up to 24 bytes (the
/// inline ones): two or three overlapping word compares. `memcmp` was a
/// quarter of a lookup's time.
#[inline(always)]
pub(super) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], at: usize| -> u64 {
        debug_assert!(at + 8 <= s.len());
        // SAFETY: callers pass `at + 8 <= n` (checked by the branches below).
        unsafe { ptr::read_unaligned(s.as_ptr().add(at) as *const u64) }
    };
    match n {
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        17..=24 => {
            word(a, 0) == word(b, 0) && word(a, 8) == word(b, 8) && word(a, n - 8) == word(b, n - 8)
        }
        _ => a == b,
    }
}

/// Slots (a power of two of them): `EMPTY`, `TOMB`, or tag | record
/// address (the record, not its index: no chunk lookup on the read path).
pub(super) struct Table {
    pub(super) slots: Box<[AtomicU64]>,
}

impl Table {
    pub(super) fn new(len: usize) -> Self {
        Table {
            slots: (0..len).map(|_| AtomicU64::new(EMPTY)).collect(),
        }
    }

    /// Where a new entry with `hash` goes: the first tombstone or empty slot
    /// on its probe path (writers only).
    pub(super) fn free_slot(&self, hash: u64) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = hash as usize & mask;
        loop {
            if self.slots[i].load(Ordering::Relaxed) <= TOMB {
                return i;
            }
            i = (i + 1) & mask;
        }
    }
}

/// A name and the actor holding it; immutable while reachable from the
/// table. `owner` is the holder's member record, `idx` the record's own
/// index (for reuse).
pub(super) struct NameRec<A: Actor> {
    pub(super) name: ManuallyDrop<Name>,
    pub(super) actor: ManuallyDrop<ActorRef<A>>,
    pub(super) owner: u32,
    pub(super) idx: u32,
}
