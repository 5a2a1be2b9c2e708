//! Turn slots: what each worker of a watched pool runs now, published for
//! the stall watchdog (`system::watchdog`) and the workers' view.
//!
//! A pool built with `PoolConfig::watch` has one slot per worker, each on
//! its own cache line. A turn (`ActorCell::run`) publishes itself on its
//! worker's slot when it starts and marks the slot idle when it ends
//! ([`TurnSlot::begin`], [`Turn`]'s drop). Per turn that is four plain
//! stores and two loads of the worker's own line, no read-modify-write and
//! no clock read; nothing per message. A pool built without `watch` has no
//! slots, and a turn pays one test of a null pointer.
//!
//! Protocol (one writer, the slot's worker; any number of readers):
//! * `seq` counts the slot's turns: `2n + 1` while the worker runs its
//!   `n`th turn, `2n + 2` once that turn has ended. It only grows, so two
//!   readings that agree mean that no turn began or ended in between.
//! * The writer stores `key` and `id` (relaxed), then the odd `seq`
//!   (release); at the end, the even `seq` (release).
//! * A reader loads `seq` (acquire), then `key` and `id`, then `seq` again
//!   ([`TurnSlot::read`]): if both `seq` readings are the same odd value,
//!   `key` and `id` are that turn's (a store to them for a later turn
//!   comes after the even `seq` of this one, which the second load would
//!   then see). While that turn runs, the actor it runs holds its table
//!   entry, so a reader that looks the key up and then sees `seq`
//!   unchanged has looked up the actor that runs.

use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering};

/// One worker's slot. See the module docs for the protocol.
#[derive(Default)]
pub(crate) struct TurnSlot {
    seq: AtomicU64,
    /// The running actor's key in its system's actor table.
    key: AtomicU64,
    /// The running actor's id ([`ActorId`](crate::ActorId) as a number).
    id: AtomicU64,
}

/// What a reader saw on a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Seen {
    /// The slot's turn counter (odd: a turn runs).
    pub(crate) seq: u64,
    /// The running actor's table key and id, if a turn runs.
    pub(crate) running: Option<(u64, u64)>,
}

impl TurnSlot {
    /// Publishes a turn of actor `id` (table key `key`); the returned guard
    /// marks the slot idle when it is dropped. Only the slot's worker calls
    /// this.
    #[inline]
    pub(crate) fn begin(&self, key: u64, id: u64) -> Turn<'_> {
        self.key.store(key, Ordering::Relaxed);
        self.id.store(id, Ordering::Relaxed);
        let seq = self.seq.load(Ordering::Relaxed);
        // Even (idle) to the next odd value. A nested turn (a manual pool
        // driven from inside a handler) finds it odd and goes on to the
        // next odd one; its end leaves the slot idle until the outer turn's
        // own end. Either way the counter only grows.
        let next = if seq & 1 == 0 { seq + 1 } else { seq + 2 };
        self.seq.store(next, Ordering::Release);
        Turn { slot: self }
    }

    /// The slot now: its counter, and the running turn's key and id (see
    /// the module docs).
    pub(crate) fn read(&self) -> Seen {
        let seq = self.seq.load(Ordering::Acquire);
        if seq & 1 == 0 {
            return Seen { seq, running: None };
        }
        let key = self.key.load(Ordering::Relaxed);
        let id = self.id.load(Ordering::Relaxed);
        // Orders the loads above before the check below.
        std::sync::atomic::fence(Ordering::Acquire);
        if self.seq.load(Ordering::Relaxed) != seq {
            // The turn ended meanwhile: report the slot as it is now, idle
            // or running a turn whose key the next read will take.
            return Seen {
                seq: seq + 1,
                running: None,
            };
        }
        Seen {
            seq,
            running: Some((key, id)),
        }
    }

    /// The counter now (for a reader's check that a turn still runs).
    pub(crate) fn seq(&self) -> u64 {
        self.seq.load(Ordering::Acquire)
    }

    /// The running actor's id, if a turn runs: read by the worker itself
    /// (an ask from a handler names its asker), so no protocol is needed.
    pub(crate) fn own_actor(&self) -> Option<u64> {
        (self.seq.load(Ordering::Relaxed) & 1 == 1).then(|| self.id.load(Ordering::Relaxed))
    }
}

/// A published turn: marks its slot idle when dropped, on every way out
/// of the turn.
pub(crate) struct Turn<'a> {
    slot: &'a TurnSlot,
}

impl Drop for Turn<'_> {
    #[inline]
    fn drop(&mut self) {
        let seq = self.slot.seq.load(Ordering::Relaxed);
        // Odd (running) to the next even value.
        self.slot.seq.store((seq | 1) + 1, Ordering::Release);
    }
}

/// A watched pool's slots, one per worker.
pub(crate) struct TurnSlots(Box<[CachePadded<TurnSlot>]>);

impl TurnSlots {
    pub(crate) fn new(threads: usize) -> Self {
        TurnSlots((0..threads).map(|_| CachePadded::default()).collect())
    }

    /// Worker `i`'s slot.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> &TurnSlot {
        &self.0[i]
    }

    /// Every slot, by worker index.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &TurnSlot> {
        self.0.iter().map(|s| &**s)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_turn_is_odd_while_it_runs_and_even_after() {
        let slot = TurnSlot::default();
        assert_eq!(
            slot.read(),
            Seen {
                seq: 0,
                running: None
            }
        );
        {
            let _t = slot.begin(7, 42);
            assert_eq!(
                slot.read(),
                Seen {
                    seq: 1,
                    running: Some((7, 42))
                }
            );
            assert_eq!(slot.own_actor(), Some(42));
        }
        assert_eq!(
            slot.read(),
            Seen {
                seq: 2,
                running: None
            }
        );
        assert_eq!(slot.own_actor(), None);
        let t = slot.begin(8, 43);
        assert_eq!(slot.seq(), 3);
        drop(t);
        assert_eq!(slot.seq(), 4);
    }
}
