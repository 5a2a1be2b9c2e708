//! The unbounded mailbox: a lock-free multi-producer, single-consumer queue of
//! linked blocks, each holding `BLOCK_CAP` slots.
//!
//! The design follows crossbeam's `SegQueue`, narrowed to one consumer and with
//! block recycling so that a queue in its steady state allocates nothing.
//!
//! # The tail word: queue index and actor state in one atomic
//! The tail word is `index << SHIFT | flags`, where the flags are the actor's
//! state bits (`SCHEDULED`, `CLOSED`, stop requests; see `state_word.rs`). One CAS
//! by a sender therefore claims a slot, refuses it if the actor is closed, and
//! takes the actor's `SCHEDULED` bit; one CAS by the worker releases the actor
//! only if no slot was claimed since it last looked (`tail index == head`).
//! Two atomic RMWs per message hop instead of three.
//!
//! # Protocol
//! * `index % LAP` is the offset in the tail block. Offset `BLOCK_CAP`
//!   (= `LAP - 1`) is a sentinel meaning "the next block is being installed";
//!   producers wait while they see it.
//! * A producer claims a slot by a CAS on the tail word that also sets
//!   `SCHEDULED`; if that bit was clear, the producer owns the actor's task and
//!   must schedule it once its value is written. The producer that claims the
//!   last slot of a block installs the next block (taken from the `spare`
//!   cache or freshly allocated) *before* it writes its value, so the consumer
//!   always finds `next` set once it has read the last slot.
//! * A producer writes the value, then sets the slot's `WRITE` bit (Release).
//!   The consumer reads a slot only after seeing `WRITE` (Acquire). A slot that
//!   is claimed but not yet written keeps the queue non-empty, so the worker
//!   cannot release the actor: it retries shortly (the writer is a few
//!   instructions away), and nothing is stranded.
//! * Only one consumer runs `pop` / `try_release` at a time (the holder of the
//!   actor's task). When it leaves a block, every slot of that block has been
//!   written and read, so no producer touches the block again: a producer only
//!   dereferences a block after its CAS on the tail word succeeded, which
//!   proves that block is still the tail block (indices never repeat). The
//!   consumer then resets the block and parks it in `spare` for the next
//!   install, or frees it if `spare` is taken.
//!
//! FIFO: slots are claimed in tail-index order and read in the same order, so
//! two messages from one sender arrive in the order they were sent.

use crate::engine::state_word::{CLOSED, SCHEDULED, STOPPED, STOP_ANY};
use crate::engine::sync::{AtomicPtr, AtomicUsize, Backoff, Ordering, UnsafeCell};
use std::mem::MaybeUninit;
use std::ptr;

// Small blocks keep an idle actor's mailbox small; recycling removes the
// per-block allocation cost in steady state. Loom needs tiny blocks to reach
// the block-boundary cases within its budget.
#[cfg(not(loom))]
const LAP: usize = 16;
#[cfg(loom)]
const LAP: usize = 3;
/// Slots per block; offset `BLOCK_CAP` of the tail index is the install sentinel.
const BLOCK_CAP: usize = LAP - 1;
/// Slot state bit: the value has been written.
const WRITE: usize = 1;
/// Low bits of the tail word hold the actor's state flags.
const SHIFT: usize = 8;
const FLAGS: usize = (1 << SHIFT) - 1;
/// One claimed slot in the tail word.
const ONE: usize = 1 << SHIFT;

/// What the consumer's attempt to release the actor found.
#[derive(Debug, PartialEq, Eq)]
pub enum Release {
    /// The actor is idle now; the caller no longer holds its task.
    Released,
    /// A slot was claimed since the consumer last looked (perhaps not yet
    /// written): the caller still holds the task and must come back.
    NotEmpty,
    /// A stop was requested: the caller still holds the task; these are the
    /// flags.
    Stop(usize),
}

struct Slot<T> {
    value: UnsafeCell<MaybeUninit<T>>,
    state: AtomicUsize,
}

struct Block<T> {
    next: AtomicPtr<Block<T>>,
    slots: [Slot<T>; BLOCK_CAP],
}

impl<T> Block<T> {
    fn new() -> *mut Block<T> {
        Box::into_raw(Box::new(Block {
            next: AtomicPtr::new(ptr::null_mut()),
            slots: std::array::from_fn(|_| Slot {
                value: UnsafeCell::new(MaybeUninit::uninit()),
                state: AtomicUsize::new(0),
            }),
        }))
    }
}

/// An unbounded lock-free MPSC queue. See the module docs for the protocol.
pub struct Unbounded<T> {
    /// `index of the next slot to claim << SHIFT | actor state flags`.
    tail: AtomicUsize,
    /// The block the tail index points into (null before the first push).
    tail_block: AtomicPtr<Block<T>>,
    /// Index of the next slot to read. Written by the consumer only; atomic so
    /// that `len` can be read from any thread.
    head_index: AtomicUsize,
    /// The block the head index points into. Written by the first producer
    /// (install of the first block) and afterwards by the consumer only.
    head_block: AtomicPtr<Block<T>>,
    /// One recycled block, reset and ready to be installed.
    spare: AtomicPtr<Block<T>>,
}

// SAFETY: values of `T` move from producer threads to the consumer thread, so
// `T: Send` is required and sufficient; the queue's own fields are atomics and
// blocks owned by the queue.
unsafe impl<T: Send> Send for Unbounded<T> {}
// SAFETY: as above; shared access is what the MPSC protocol is built for. The
// single-consumer rule is enforced by `pop` being `unsafe`.
unsafe impl<T: Send> Sync for Unbounded<T> {}

impl<T> Unbounded<T> {
    /// An empty queue whose actor starts `SCHEDULED` (its spawner holds the
    /// first task). Allocates nothing until the first push.
    #[inline]
    pub fn new() -> Self {
        Unbounded {
            tail: AtomicUsize::new(SCHEDULED),
            tail_block: AtomicPtr::new(ptr::null_mut()),
            head_index: AtomicUsize::new(0),
            head_block: AtomicPtr::new(ptr::null_mut()),
            spare: AtomicPtr::new(ptr::null_mut()),
        }
    }

    fn take_block(&self) -> *mut Block<T> {
        let spare = self.spare.swap(ptr::null_mut(), Ordering::Acquire);
        if spare.is_null() {
            Block::new()
        } else {
            spare
        }
    }

    /// Appends `value` unless the actor is closed (then it comes back).
    /// `Ok(true)`: the actor was idle and the caller now holds its task and
    /// must schedule it. Lock-free; any number of threads may push at once.
    pub fn push(&self, value: T) -> Result<bool, T> {
        let backoff = Backoff::new();
        let mut tail = self.tail.load(Ordering::Acquire);
        let mut block = self.tail_block.load(Ordering::Acquire);
        let mut next_block: *mut Block<T> = ptr::null_mut();

        loop {
            if tail & CLOSED != 0 {
                if !next_block.is_null() {
                    self.recycle_or_free(next_block);
                }
                return Err(value);
            }
            let offset = (tail >> SHIFT) % LAP;

            // Another producer is installing the next block: wait for it.
            if offset == BLOCK_CAP {
                backoff.snooze();
                tail = self.tail.load(Ordering::Acquire);
                block = self.tail_block.load(Ordering::Acquire);
                continue;
            }

            // Whoever claims the last slot installs the next block; get it ready
            // before the CAS so the other producers wait as little as possible.
            if offset + 1 == BLOCK_CAP && next_block.is_null() {
                next_block = self.take_block();
            }

            // The very first push installs the first block.
            if block.is_null() {
                let new = self.take_block();
                if self
                    .tail_block
                    .compare_exchange(block, new, Ordering::Release, Ordering::Relaxed)
                    .is_ok()
                {
                    self.head_block.store(new, Ordering::Release);
                    block = new;
                } else {
                    // Lost the race: keep the block for a later install.
                    if next_block.is_null() {
                        next_block = new;
                    } else {
                        self.recycle_or_free(new);
                    }
                    tail = self.tail.load(Ordering::Acquire);
                    block = self.tail_block.load(Ordering::Acquire);
                    continue;
                }
            }

            let new_tail = (tail + ONE) | SCHEDULED;
            match self.tail.compare_exchange_weak(
                tail,
                new_tail,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    // Our CAS proves `block` (loaded after `tail`; indices never
                    // repeat) is the live tail block and slot `offset` is ours;
                    // SAFETY: the consumer cannot free it before reading our slot.
                    unsafe {
                        if offset + 1 == BLOCK_CAP {
                            let next = next_block;
                            next_block = ptr::null_mut();
                            self.tail_block.store(next, Ordering::Release);
                            // Skip the sentinel offset into the next lap (an
                            // RMW: the flags may change meanwhile).
                            self.tail.fetch_add(ONE, Ordering::Release);
                            (*block).next.store(next, Ordering::Release);
                        }
                        let slot = (*block).slots.get_unchecked(offset);
                        slot.value.with_mut(|p| p.write(MaybeUninit::new(value)));
                        slot.state.store(WRITE, Ordering::Release);
                    }
                    if !next_block.is_null() {
                        self.recycle_or_free(next_block);
                    }
                    return Ok(tail & SCHEDULED == 0);
                }
                Err(t) => {
                    tail = t;
                    block = self.tail_block.load(Ordering::Acquire);
                    backoff.spin();
                }
            }
        }
    }

    /// Removes the oldest written message, or `None` if there is none yet.
    ///
    /// # Safety
    /// At most one thread may call `pop` (or `try_release`) at a time:
    /// the caller must own the actor's `SCHEDULED` bit, or `&mut self`.
    #[inline]
    pub unsafe fn pop(&self) -> Option<T> {
        let block = self.head_block.load(Ordering::Acquire);
        if block.is_null() {
            return None;
        }
        let head = self.head_index.load(Ordering::Relaxed);
        let offset = head % LAP;
        // SAFETY: the head block lives until its consumer (us) leaves it; a
        // slot is read only after its WRITE bit (Acquire), so the producer's
        // write of the value happens before our read.
        unsafe {
            let slot = (*block).slots.get_unchecked(offset);
            if slot.state.load(Ordering::Acquire) & WRITE == 0 {
                return None;
            }
            let value = slot.value.with_mut(|p| p.read().assume_init());
            if offset + 1 == BLOCK_CAP {
                // The producer of the last slot set `next` before writing it.
                let next = (*block).next.load(Ordering::Acquire);
                debug_assert!(!next.is_null());
                self.head_block.store(next, Ordering::Release);
                self.head_index.store(head + 2, Ordering::Release);
                self.recycle_or_free(block);
            } else {
                self.head_index.store(head + 1, Ordering::Release);
            }
            Some(value)
        }
    }

    /// The final drain's pop: removes the oldest claimed message, waiting for
    /// its sender to finish writing it if the slot is claimed but not yet
    /// written. `None` only once every claimed slot has been read.
    ///
    /// Once `CLOSED` is set no slot can be claimed any more, so after a stop
    /// the claimed slots are a fixed set and every one of them is, or is
    /// about to be, written: a sender between its claiming CAS and its
    /// `WRITE` store runs no user code and cannot fail, so the wait is short
    /// and ends. A plain [`pop`](Self::pop) would stop at the half-written
    /// slot and strand it and everything after it (issue 13, defect 2).
    ///
    /// # Safety
    /// As for [`pop`](Self::pop).
    pub unsafe fn pop_final(&self) -> Option<T> {
        let backoff = Backoff::new();
        loop {
            // SAFETY: forwarded caller contract.
            if let Some(v) = unsafe { self.pop() } {
                return Some(v);
            }
            // `is_empty` re-reads the tail, so a slot claimed while the
            // mailbox was still open is waited for, never skipped.
            if self.is_empty() {
                return None;
            }
            backoff.snooze();
        }
    }

    /// Whether no message is claimed and unread. Safe from any thread at any
    /// time: it compares the two indices and never touches a block.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.tail.load(Ordering::Acquire) >> SHIFT == self.head_index.load(Ordering::Acquire)
    }

    /// Messages popped so far; exact on the consumer, a snapshot elsewhere
    /// (the metrics layer's dequeue count, at no cost on the hot path).
    pub(crate) fn popped(&self) -> u64 {
        let head = self.head_index.load(Ordering::Acquire);
        ((head / LAP) * BLOCK_CAP + (head % LAP).min(BLOCK_CAP)) as u64
    }

    /// Number of messages claimed and not yet read; a snapshot from any thread.
    pub(crate) fn len(&self) -> usize {
        let head = self.head_index.load(Ordering::Acquire);
        let tail = self.tail.load(Ordering::Acquire) >> SHIFT;
        let slots = |i: usize| (i / LAP) * BLOCK_CAP + (i % LAP).min(BLOCK_CAP);
        slots(tail).saturating_sub(slots(head))
    }

    /// Consumer only: give up the actor's task if nothing was claimed since
    /// the last pop and no stop is requested. See [`Release`].
    ///
    /// # Safety
    /// As for [`pop`](Self::pop): the caller holds the actor's task.
    #[inline]
    pub unsafe fn try_release(&self) -> Release {
        let head = self.head_index.load(Ordering::Relaxed);
        let mut tail = self.tail.load(Ordering::Acquire);
        loop {
            if tail & STOP_ANY != 0 {
                return Release::Stop(tail & FLAGS);
            }
            if tail >> SHIFT != head {
                return Release::NotEmpty;
            }
            match self.tail.compare_exchange_weak(
                tail,
                tail & !SCHEDULED,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Release::Released,
                Err(t) => tail = t,
            }
        }
    }

    /// The actor's state flags.
    #[inline]
    pub fn flags(&self) -> usize {
        self.tail.load(Ordering::Acquire) & FLAGS
    }

    /// Sets `bits | CLOSED | SCHEDULED`; true if the caller must schedule the
    /// actor (it was idle) so it sees them.
    pub fn request_stop(&self, bits: usize) -> bool {
        self.tail
            .fetch_or(bits | CLOSED | SCHEDULED, Ordering::AcqRel)
            & SCHEDULED
            == 0
    }

    /// Finalized: closed, stopped, and scheduled for good.
    pub(crate) fn mark_stopped(&self) {
        self.tail
            .fetch_or(STOPPED | CLOSED | SCHEDULED, Ordering::AcqRel);
    }

    /// Resets a block that no producer or consumer references any more and
    /// keeps it as the spare, or frees it if a spare is already kept.
    fn recycle_or_free(&self, block: *mut Block<T>) {
        // SAFETY: the caller hands over the only reference to `block`; its
        // values have all been read (or it never held any), so resetting the
        // states and `next` leaves no value behind.
        unsafe {
            for slot in (*block).slots.iter() {
                slot.state.store(0, Ordering::Relaxed);
            }
            (*block).next.store(ptr::null_mut(), Ordering::Relaxed);
        }
        if self
            .spare
            .compare_exchange(ptr::null_mut(), block, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            // SAFETY: `block` came from `Box::into_raw` in `Block::new` and no
            // one else references it.
            drop(unsafe { Box::from_raw(block) });
        }
    }
}

impl<T> Drop for Unbounded<T> {
    fn drop(&mut self) {
        // SAFETY: `&mut self` makes us the only consumer, and no producer is
        // mid-push, so every claimed slot has been written.
        unsafe {
            while self.pop().is_some() {}
            let head = self.head_block.load(Ordering::Relaxed);
            if !head.is_null() {
                drop(Box::from_raw(head));
            }
            let spare = self.spare.load(Ordering::Relaxed);
            if !spare.is_null() {
                drop(Box::from_raw(spare));
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn fifo_across_many_blocks() {
        let q = Unbounded::new();
        for round in 0..3 {
            for i in 0..1000 {
                let _ = q.push(i + round * 1000);
            }
            assert_eq!(q.len(), 1000);
            for i in 0..1000 {
                // SAFETY: single-threaded test: we are the only consumer.
                assert_eq!(unsafe { q.pop() }, Some(i + round * 1000));
            }
            // SAFETY: as above.
            assert_eq!(unsafe { q.pop() }, None);
            assert_eq!(q.len(), 0);
        }
    }

    #[test]
    fn drop_frees_unread_values() {
        let marker = Arc::new(());
        let q = Unbounded::new();
        for _ in 0..100 {
            let _ = q.push(marker.clone());
        }
        drop(q);
        assert_eq!(Arc::strong_count(&marker), 1);
    }

    #[test]
    fn concurrent_producers_exact_and_fifo_per_producer() {
        const P: usize = 4;
        // Miri interprets every instruction: a smaller count, the same protocol.
        const N: usize = if cfg!(miri) { 300 } else { 50_000 };
        let q = Arc::new(Unbounded::new());
        let handles: Vec<_> = (0..P)
            .map(|p| {
                let q = q.clone();
                std::thread::spawn(move || {
                    for i in 0..N {
                        let _ = q.push((p, i));
                    }
                })
            })
            .collect();
        let mut next = [0usize; P];
        let mut got = 0;
        while got < P * N {
            // SAFETY: this thread is the only consumer.
            if let Some((p, i)) = unsafe { q.pop() } {
                assert_eq!(next[p], i, "producer {p} out of order");
                next[p] += 1;
                got += 1;
            } else {
                std::hint::spin_loop();
            }
        }
        for h in handles {
            h.join().unwrap();
        }
        // SAFETY: as above.
        assert_eq!(unsafe { q.pop() }, None);
        assert_eq!(next, [N; P]);
    }
}
