//! The unbounded mailbox: a lock-free multi-producer, single-consumer queue of
//! linked blocks, each holding `BLOCK_CAP` slots.
//!
//! The shape is tokio's `sync/mpsc/list.rs` and `block.rs`: a sender claims
//! its slot with one `fetch_add` on the tail word, so a claim never fails and
//! never retries, however many senders race; it then finds its block by
//! walking forward from `block_tail`. Blocks are pre-linked and recycled: the
//! consumer hands a drained block back to the tail end of the list, so a
//! queue in its steady state allocates nothing. Unlike tokio, a slot's
//! "written" mark is a plain store into the slot's own state word, not a
//! `fetch_or` on a per-block word every sender writes, and the actor's state
//! bits live in the tail word.
//!
//! # The tail word: queue index and actor state in one atomic
//! The tail word is `index << SHIFT | flags`, where `index` counts the slots
//! ever claimed and the flags are the actor's state bits (`SCHEDULED`,
//! `CLOSED`, stop requests; see `state_word.rs`) and the release `EPOCH`. Slot `i` lives in the block
//! whose `start` is `i - i % BLOCK_CAP`, at offset `i % BLOCK_CAP`. (The index
//! has 56 bits on 64-bit targets: it would take a century at 10^9 sends a
//! second to wrap.)
//!
//! # Protocol
//! * **Claim.** A sender does `prev = tail.fetch_add(ONE)`: one RMW, no
//!   retry. If `prev` has `CLOSED`, the send is refused and hands its value
//!   back; it touches no block, and the index it took is never written (see
//!   *Close*). Otherwise slot `prev >> SHIFT` is the sender's.
//! * **Idle to scheduled.** A claim schedules the actor (its sender takes
//!   the task) when it is the first RMW on the tail word since a successful
//!   release, and it tells that from `prev` and one plain load, with no
//!   second RMW: every release flips the word's `EPOCH` bit and, just
//!   before its CAS, stores the word it writes, without the state bits
//!   (`MARK`: index and epoch), in `released_at`. The claim takes the task
//!   iff `prev` has `SCHEDULED` clear and `prev & MARK == released_at`. So
//!   `SCHEDULED` stays clear through a busy period that a claim started
//!   (the bit is set only at spawn and by a close), and "the actor has a
//!   task" reads: the bit is set, or the word's mark differs from
//!   `released_at`. Exact, because:
//!   - *the first claim after a release takes the task*: its `fetch_add`
//!     reads from the release CAS (or from a `fetch_add(0)` after it, in
//!     its release sequence), so it sees that release's `released_at` or
//!     a later store; a later store is made by a task holder, and none
//!     exists until this claim's slot is read;
//!   - *no other claim does*: a mark `(k, epoch)` is stored only by release
//!     attempts at head index `k`, all with the same epoch (the flipped
//!     one), and at most one of them succeeds (after it, head `k` is only
//!     passed by a new task holder). A claim at index `k` with `prev`
//!     carrying that epoch came after the successful one (before it, the
//!     word had the other epoch): it is the first claim after it. A claim
//!     whose `prev` has the epoch of an older release finds in
//!     `released_at` an older index, or the other epoch: a release that
//!     failed because this very claim came first stored `(k, flipped)`,
//!     and the claim's `prev` has `(k, not flipped)`. Without the epoch
//!     that failed release would hand the claim a task the worker still
//!     holds (`Mutation::ReleaseKeepsEpoch`).
//!
//!   A stop request decides the same way from its `fetch_or`'s `prev`. A
//!   send to a busy actor costs one RMW; a send that wakes it, one RMW and
//!   a load from the same line (the epoch protocol replaced a
//!   `fetch_or(SCHEDULED)` race on this path: pingpong paid for it).
//! * **Finding the block.** After its claim the sender loads `block_tail`
//!   and walks `next` pointers to its block. A missing `next` is linked by
//!   the walker (`Block::grow`): a block it allocates and loses the link race
//!   with is appended further down the list, never thrown away (the append
//!   follows set links with loads and CASes only a `next` it saw null, so
//!   its RMWs do not grow with the distance it walks). The very
//!   first block is allocated by the first send (an actor that never gets a
//!   message allocates no block); the one that installs it also writes the
//!   consumer's `head_block`.
//! * **Advancing `block_tail`.** A walker moves `block_tail` on, block by
//!   block, as it walks (tokio's `distance > offset` rule picks the walkers
//!   that try), so `block_tail` keeps up with the claims and a walk is one
//!   block long. This costs a few RMWs per block, never per message. Unlike
//!   tokio, the move does not wait until every slot of the block behind is
//!   written: a sender preempted between its claim and its write would
//!   otherwise pin `block_tail` and make every later send walk the whole
//!   backlog (measured: 2.5 µs a message at 20 senders on a loaded
//!   machine). So a slow sender may load a `block_tail` already past its
//!   block; it then walks back along `prev`, which is safe because every
//!   block from its own onwards holds or follows its unwritten slot and
//!   cannot be recycled. The walker that moved `block_tail` past a block
//!   then reads the tail with `fetch_add(0)` (an RMW: it reads the latest
//!   claim, and the release it carries orders the move before any later
//!   claim's load of `block_tail`) and stores that index in the block as
//!   `released`: every sender that may still hold a pointer to the block,
//!   having loaded it after its claim, claimed a slot below that index.
//! * **Write.** The sender writes its value, then sets the slot's `WRITE`
//!   bit (Release). The consumer reads a slot only after seeing `WRITE`
//!   (Acquire). A slot that is claimed but not yet written keeps the queue
//!   non-empty, so the worker cannot release the actor: it comes back
//!   shortly (the writer is a few instructions away), and nothing is
//!   stranded.
//! * **Pop and recycle.** Only one consumer runs `pop` / `try_release` at a
//!   time (the holder of the actor's task). It walks `head_block` forward as
//!   its index crosses block starts. A block it has left (between
//!   `free_head` and `head_block`) is recycled once it is `released` and the
//!   consumer's index has reached the released index: then no sender holds a
//!   pointer to it. The consumer resets it and links it after the block
//!   `block_tail` points at, with one compare-and-swap on that block's
//!   `next`; if that `next` is taken (a spare is already there) the block is
//!   freed. So an idle actor keeps at most its current block and one spare.
//! * **Release.** The worker gives up the task with one compare-and-swap
//!   of the tail word from `head << SHIFT | flags` to the same word with
//!   `SCHEDULED` clear and `EPOCH` flipped, after storing that word's mark
//!   in `released_at`: it fails if any slot was claimed since the worker
//!   looked, because the claim changed the index.
//! * **Close.** A stop request or the finalizer sets `CLOSED` (with
//!   `SCHEDULED`) by `fetch_or`; the one that set it first stores the index
//!   it saw as `closed_at`. Claims before it (indices below `closed_at`) are
//!   accepted and will be written; claims after it are refused and their
//!   indices are never written. The final drain (`pop_final`) takes every
//!   slot below `closed_at`, waiting for half-written ones; `is_empty`,
//!   `len` and `try_release` count claims only up to `closed_at` once
//!   `CLOSED` is set (and, in the instant before `closed_at` is stored,
//!   count every claim: conservative, never empty too early).
//! * **Drop.** With `&mut self` no send is in flight: the remaining values
//!   are popped and dropped, and every block is freed by walking `next` from
//!   `free_head` (every block ever allocated is on that one list, or was
//!   freed by a failed recycle).
//!
//! FIFO: slots are claimed in tail-index order and read in the same order, so
//! two messages from one sender arrive in the order they were sent.
//!
//! # Layout
//! `repr(C)`: the consumer's fields first, then at least 64 bytes (a cache
//! line) that no sender or consumer writes per message (`closed_at`, and
//! last `released_at`, which a waking send reads and a release writes),
//! then the senders' words (`kind`, where the [`Mailbox`](super::Mailbox)
//! enum keeps its tag, `block_tail`, `tail`), which the actor cell's other
//! sender-read fields follow. A send never touches a line the consumer's
//! per-message `head_index` store or its per-block stores write
//! (`senders_and_consumer_do_not_share_a_line`).
//!
//! # Budget (shared lines written, per message)
//! Send to a busy actor: one RMW (the claim) on the tail line, one store to
//! the slot. Send that wakes the actor: the same RMW and a load of
//! `released_at` on the same line. Per block:
//! a `next` link (one CAS, by a walker or by the consumer's recycle), one
//! move of `block_tail` (a CAS; a walker that loses it stops trying) and its
//! `fetch_add(0)`. Pop: one
//! store to `head_index` (the consumer's own line). Release: a store to
//! `released_at` and one CAS, both on the tail line.
//!
//! `tests/loom.rs` checks the claim across a block boundary (including the
//! walk back), the append after a lost link race, recycling, close against
//! send, the idle-to-scheduled decision (with a release that fails against
//! a claim, and against a stop request), each with a mutation (`Mutation`,
//! under `cfg(loom)` only) that must fail.

use crate::engine::state_word::{CLOSED, SCHEDULED, STOPPED, STOP_ANY};
use crate::engine::sync::{AtomicPtr, AtomicUsize, Backoff, Ordering, UnsafeCell};
use std::mem::MaybeUninit;
use std::ptr;

/// Slots per block. 31, not 63: an actor that has had a message keeps one
/// block (and at most one spare) while idle, and with 8-byte messages a
/// 31-slot block is 528 bytes (a 63-slot one, 1,040); the per-block costs
/// (three RMWs or so) are already about 0.1 per message at 31. (Not 32: the
/// index math is a multiply by a constant either way, and 31 slots of 16
/// bytes plus the 32-byte header keep the block near a power of two.)
/// Loom needs tiny blocks to reach the block-boundary cases within its
/// budget.
#[cfg(not(loom))]
const BLOCK_CAP: usize = 31;
#[cfg(loom)]
const BLOCK_CAP: usize = 2;
// The contention budget charges its per-block share per this many slots.
#[cfg(all(feature = "contention", not(loom)))]
const _: () = assert!(BLOCK_CAP as u64 == crate::engine::sync::contention::budget::BLOCK_SLOTS);
/// Slot state bit: the value has been written.
const WRITE: usize = 1;
/// `Block::released` bit: `block_tail` has moved past the block; the rest
/// of the word is the tail index seen then.
const RELEASED: usize = 1;
/// Low bits of the tail word hold the actor's state flags.
const SHIFT: usize = 8;
const FLAGS: usize = (1 << SHIFT) - 1;
/// The release epoch: a flag bit (none of `state_word`'s) that every
/// successful release flips, so that a word the release wrote differs from
/// any word of the busy period before it at the same index.
const EPOCH: usize = 1 << (SHIFT - 1);
const _: () = assert!(EPOCH & crate::engine::state_word::FLAGS_USED == 0);
/// The actor's state bits of the tail word (`flags()`), without the epoch.
const STATE: usize = FLAGS & !EPOCH;
/// What identifies a release: the index and the epoch (`released_at`).
const MARK: usize = !STATE;
/// One claimed slot in the tail word.
const ONE: usize = 1 << SHIFT;
/// `closed_at` before the mailbox is closed.
const OPEN: usize = usize::MAX;

/// The first index of the block holding slot `index`.
#[inline(always)]
fn block_start(index: usize) -> usize {
    index - index % BLOCK_CAP
}

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

/// A deliberate protocol error the loom models must catch. Outside loom
/// no queue carries one, and every check of it compiles to `false`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(not(loom), allow(dead_code))]
pub enum Mutation {
    /// The protocol as written.
    None,
    /// A sender that finds `block_tail` already past its block (others
    /// claimed and moved it on between its claim and its load) walks on
    /// from there instead of back along `prev`.
    NoWalkBack,
    /// Recycle a drained block without waiting for the index it was
    /// released at: a sender may still be walking through it.
    RecycleEarly,
    /// Record `closed_at` from a load before the `fetch_or` that closes: a
    /// claim between the two is accepted but never drained.
    CloseIndexFromLoad,
    /// Schedule on the claim's `SCHEDULED` bit alone, without comparing
    /// with `released_at`: every sender that claims while the actor is idle
    /// takes its task.
    ScheduleWithoutRace,
    /// Release without flipping `EPOCH`: a release that fails because a
    /// claim came first leaves a `released_at` that claim's word matches,
    /// and it takes the task the worker still holds.
    ReleaseKeepsEpoch,
    /// A walker that lost the race to link the block after its own appends
    /// its block further down with a plain store on the first null `next`
    /// it loads, not a CAS: a link another walker makes between that load
    /// and the store is overwritten, and the block holding that walker's
    /// slot drops out of the list.
    AppendByStore,
}

/// Recycled blocks' `next` links are set (by a CAS) only on a block that
/// nobody else can be resetting; see the module docs.
struct Slot<T> {
    value: UnsafeCell<MaybeUninit<T>>,
    state: AtomicUsize,
}

struct Block<T> {
    /// Index of slot 0. Written only while no one else can reach the block
    /// (before it is linked, or when the consumer recycles it), read after
    /// the Acquire load that found the block.
    start: UnsafeCell<usize>,
    /// The block before this one when it was linked (null for the first
    /// block); written like `start`. A sender that finds `block_tail`
    /// already past its block walks back along it.
    prev: UnsafeCell<*mut Block<T>>,
    next: AtomicPtr<Block<T>>,
    /// 0, or `tail index << 1 | RELEASED` once `block_tail` moved past it.
    released: AtomicUsize,
    slots: [Slot<T>; BLOCK_CAP],
}

impl<T> Block<T> {
    /// A new block, unlinked. Outside loom it is allocated raw and zeroed
    /// in place (a `memset`): every field of a block is valid as zero
    /// bytes (index 0, null pointers, atomics at 0, slots unwritten), so
    /// no 528-byte value is built and copied. (Measured against
    /// `alloc_zeroed` and against 06deb1f's 15-slot block: the cost that
    /// `actor_creation` pays per actor for its first block is the
    /// allocator's, `_int_malloc` and `_int_free` for the larger chunk, not
    /// the initialisation; see `bench/results/2026-12-02-engine-ab`.)
    #[cfg(not(loom))]
    fn new(start: usize, prev: *mut Block<T>) -> *mut Block<T> {
        use std::alloc::{alloc, handle_alloc_error, Layout};
        #[cfg(test)]
        tests::BLOCKS_ALLOCATED.with(|n| n.set(n.get() + 1));
        let layout = Layout::new::<Block<T>>();
        // SAFETY: the layout is a `Block<T>`'s, never zero-sized (it holds
        // atomics).
        let block = unsafe { alloc(layout) } as *mut Block<T>;
        if block.is_null() {
            handle_alloc_error(layout);
        }
        // All-zero bytes are a valid `Block<T>`: `start` 0, `prev` null,
        // `next` null, `released` 0, each slot's state 0 and its value
        // uninitialized (the shim's atomics, counted or not, wrap the
        // standard ones, and its `UnsafeCell` the standard one).
        // `Box::from_raw` frees the block with the same layout.
        // SAFETY: `block` is a fresh allocation for one `Block<T>`, ours
        // alone, and initialized by the zeroing (above).
        unsafe {
            ptr::write_bytes(block, 0, 1);
            Block::place(block, start, prev);
        }
        block
    }

    #[cfg(loom)]
    fn new(start: usize, prev: *mut Block<T>) -> *mut Block<T> {
        Box::into_raw(Box::new(Block {
            start: UnsafeCell::new(start),
            prev: UnsafeCell::new(prev),
            next: AtomicPtr::new(ptr::null_mut()),
            released: AtomicUsize::new(0),
            slots: std::array::from_fn(|_| Slot {
                value: UnsafeCell::new(MaybeUninit::uninit()),
                state: AtomicUsize::new(0),
            }),
        }))
    }

    #[inline(always)]
    fn start(&self) -> usize {
        // `start` is written only while the block is unreachable by anyone
        // else (module docs); this reader found the block through an
        // Acquire load, which orders that write before this read. (Loom's
        // shared `with`, so that it checks readers against the recycler.)
        #[cfg(loom)]
        // SAFETY: as the comment above says: no write races this read.
        return self.start.with(|p| unsafe { *p });
        #[cfg(not(loom))]
        // SAFETY: as the comment above says: no write races this read.
        return self.start.with_mut(|p| unsafe { *p });
    }

    #[inline(always)]
    fn prev(&self) -> *mut Block<T> {
        #[cfg(loom)]
        // SAFETY: as for `start`: written only while unreachable.
        return self.prev.with(|p| unsafe { *p });
        #[cfg(not(loom))]
        // SAFETY: as for `start`: written only while unreachable.
        return self.prev.with_mut(|p| unsafe { *p });
    }

    /// Sets `start` and `prev` of a block no one else can reach.
    ///
    /// # Safety
    /// The caller owns `block` alone.
    unsafe fn place(block: *mut Block<T>, start: usize, prev: *mut Block<T>) {
        // SAFETY: caller contract.
        unsafe {
            (*block).start.with_mut(|p| *p = start);
            (*block).prev.with_mut(|p| *p = prev);
        }
    }

    /// Links `new` (owned by the caller, reachable by no one) at the end of
    /// the list that continues from `curr`, fixing its `start` on the way.
    ///
    /// # Safety
    /// `curr` and every block after it must stay alive meanwhile: the caller
    /// holds a claimed, unwritten slot in `curr` or after it, so the consumer
    /// cannot recycle any of them.
    ///
    /// Links already there are followed with loads, and the CAS is tried
    /// only on a `next` this walker saw null: a CAS that fails is an RMW
    /// (it takes the line exclusive) all the same, and an appender that was
    /// preempted may be tens of blocks behind the end (measured: 43 failed
    /// CASes per append at 16 workers on 2 cores, 0.14 RMWs per message,
    /// when every step of the walk was a CAS). So a failed CAS now means
    /// another link landed on the same `next` between this walker's load
    /// and its CAS, and the RMWs of an append do not grow with the
    /// distance walked.
    unsafe fn append(curr: *mut Block<T>, new: *mut Block<T>) {
        // SAFETY: forwarded caller contract.
        unsafe { Self::append_with(curr, new, false) }
    }

    /// [`append`](Self::append); `by_store` links with a plain store
    /// instead of the CAS (`Mutation::AppendByStore`, loom only).
    ///
    /// # Safety
    /// As for [`append`](Self::append).
    #[inline(always)]
    unsafe fn append_with(mut curr: *mut Block<T>, new: *mut Block<T>, by_store: bool) {
        loop {
            // SAFETY: caller contract: `curr` and every block after it are
            // alive, `new` is ours.
            unsafe {
                let mut next = (*curr).next.load(Ordering::Acquire);
                while !next.is_null() {
                    curr = next;
                    next = (*curr).next.load(Ordering::Acquire);
                }
                Self::place(new, (*curr).start() + BLOCK_CAP, curr);
                if by_store {
                    (*curr).next.store(new, Ordering::Release);
                    return;
                }
                match (*curr).next.compare_exchange(
                    ptr::null_mut(),
                    new,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => return,
                    Err(next) => curr = next,
                }
            }
        }
    }

    /// Allocates the block after this one and links it; if another walker
    /// linked one first, returns theirs and appends ours further down (so
    /// no allocation is thrown away).
    ///
    /// # Safety
    /// As for [`append`](Self::append), for `self`.
    unsafe fn grow(&self, append_by_store: bool) -> *mut Block<T> {
        let new = Block::new(self.start() + BLOCK_CAP, self as *const _ as *mut _);
        match self
            .next
            .compare_exchange(ptr::null_mut(), new, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => new,
            Err(next) => {
                // SAFETY: forwarded caller contract; `next` comes after `self`.
                unsafe { Self::append_with(next, new, append_by_store) };
                next
            }
        }
    }
}

/// The tag the `Mailbox` enum stores in this byte: a one-valued field gives
/// the enum a niche here, beside the senders' words, so a send that reads
/// the tag reads no line the consumer writes.
#[repr(u8)]
#[derive(Clone, Copy)]
enum Kind {
    Unbounded = 1,
}

/// The bytes of an [`Unbounded`] the consumer writes per message or per
/// block (`head_index`, `head_block`, `free_head`), for the cell's layout
/// test. (The layout does not depend on `T`: the fields are words.)
#[cfg(all(test, not(loom)))]
pub(crate) const CONSUMER_BYTES: std::ops::Range<usize> = {
    use std::mem::offset_of;
    offset_of!(Unbounded<u8>, head_index)..offset_of!(Unbounded<u8>, free_head) + 8
};

/// The bytes of an [`Unbounded`] a send reads or writes per message
/// (`kind`, the enum's tag, to `tail`; a send that wakes the actor also
/// reads `released_at`, just before them).
#[cfg(all(test, not(loom)))]
pub(crate) const SENDER_BYTES: std::ops::Range<usize> = {
    use std::mem::offset_of;
    offset_of!(Unbounded<u8>, kind)..offset_of!(Unbounded<u8>, tail) + 8
};

/// An unbounded lock-free MPSC queue. See the module docs for the protocol.
#[repr(C)]
pub struct Unbounded<T> {
    // The consumer's fields.
    /// Index of the next slot to read. Written by the consumer only; atomic
    /// so that `len` and `is_empty` can be read from any thread.
    head_index: AtomicUsize,
    /// The block the head index points into. Written by the send that
    /// installs the first block, afterwards by the consumer only.
    head_block: AtomicPtr<Block<T>>,
    /// The oldest block not yet recycled (the list's first block). Written
    /// by the first block's installer, then by the consumer only.
    free_head: AtomicPtr<Block<T>>,
    // The gap: 64 bytes no one writes per message.
    /// The index at which the mailbox was closed (`OPEN` before). Written
    /// once by the closer; read by the consumer and snapshots.
    closed_at: AtomicUsize,
    _gap: [MaybeUninit<usize>; 6],
    /// The `MARK` bits of the tail word the last successful release wrote
    /// (`OPEN` before the first). Stored by the task holder just before each
    /// release CAS, read by a claim or close that saw `SCHEDULED` clear:
    /// not per message. The gap's last word, 24 bytes before the tail word
    /// (on its line in three of the four placements of a 16-byte aligned
    /// cell) and a full line after the consumer's last word.
    released_at: AtomicUsize,
    // The senders' words.
    /// Never read by name: the `Mailbox` enum reads it as its tag.
    #[allow(dead_code)]
    kind: Kind,
    /// The block senders start their walk from (null before the first send).
    block_tail: AtomicPtr<Block<T>>,
    /// `index of the next slot to claim << SHIFT | actor state flags`.
    tail: AtomicUsize,
    #[cfg(loom)]
    mutation: Mutation,
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
            head_index: AtomicUsize::new(0),
            head_block: AtomicPtr::new(ptr::null_mut()),
            free_head: AtomicPtr::new(ptr::null_mut()),
            closed_at: AtomicUsize::new(OPEN),
            _gap: [MaybeUninit::uninit(); 6],
            released_at: AtomicUsize::new(OPEN),
            kind: Kind::Unbounded,
            block_tail: AtomicPtr::new(ptr::null_mut()),
            tail: AtomicUsize::new(SCHEDULED),
            #[cfg(loom)]
            mutation: Mutation::None,
        }
    }

    /// A queue carrying a deliberate protocol error, for the loom models.
    #[cfg(loom)]
    pub fn with_mutation(mutation: Mutation) -> Self {
        let mut q = Self::new();
        q.mutation = mutation;
        q
    }

    #[cfg(loom)]
    #[inline(always)]
    fn mutated(&self, m: Mutation) -> bool {
        self.mutation == m
    }

    #[cfg(not(loom))]
    #[inline(always)]
    fn mutated(&self, _: Mutation) -> bool {
        false
    }

    /// Appends `value` unless the actor is closed (then it comes back).
    /// `Ok(true)`: the actor was idle and the caller now holds its task and
    /// must schedule it. Wait-free claim; any number of threads may push at
    /// once.
    #[inline]
    pub fn push(&self, value: T) -> Result<bool, T> {
        let prev = self.tail.fetch_add(ONE, Ordering::AcqRel);
        if prev & CLOSED != 0 {
            return Err(value);
        }
        let schedule = prev & SCHEDULED == 0 && self.first_since_release(prev);
        let index = prev >> SHIFT;
        let block = self.find_block(index);
        // SAFETY: slot `index` is ours alone (the claim), and its block lives
        // until the consumer has read it, which needs our `WRITE` first.
        unsafe {
            let slot = (*block).slots.get_unchecked(index % BLOCK_CAP);
            slot.value.with_mut(|p| p.write(MaybeUninit::new(value)));
            slot.state.store(WRITE, Ordering::Release);
        }
        Ok(schedule)
    }

    /// Whether the RMW that returned `prev` (a claim or a close, with
    /// `SCHEDULED` clear in `prev`) was the first on the tail word since the
    /// actor was released: then its caller takes the task. A plain load,
    /// no RMW: see "Idle to scheduled" in the module docs for why it is
    /// exact.
    #[inline(always)]
    fn first_since_release(&self, prev: usize) -> bool {
        if self.mutated(Mutation::ScheduleWithoutRace) {
            return true;
        }
        self.released_at.load(Ordering::Acquire) == prev & MARK
    }

    /// The block holding slot `index`, linking blocks and moving
    /// `block_tail` on the way as the module docs say.
    #[inline]
    fn find_block(&self, index: usize) -> *mut Block<T> {
        let start = block_start(index);
        let mut block = self.block_tail.load(Ordering::Acquire);
        if block.is_null() {
            block = self.install_first();
        }
        // SAFETY: `block` was `block_tail` after our claim: either it is not
        // yet released, or it was released at an index above ours, so the
        // consumer keeps it (and what follows it) until our slot is read.
        unsafe {
            if (*block).start() == start {
                return block;
            }
            self.walk(block, index)
        }
    }

    /// The slow part of [`find_block`](Self::find_block): our block is not
    /// the tail block.
    ///
    /// # Safety
    /// `block` was loaded from `block_tail` after the claim of `index`.
    #[cold]
    #[inline(never)]
    unsafe fn walk(&self, mut block: *mut Block<T>, index: usize) -> *mut Block<T> {
        let start = block_start(index);
        let offset = index % BLOCK_CAP;
        // SAFETY (whole body): as for `find_block`; every block after a live
        // block on our way is also kept until our slot is read.
        unsafe {
            let distance = start.wrapping_sub((*block).start());
            if (distance as isize) < 0 && !self.mutated(Mutation::NoWalkBack) {
                // Others claimed past our block and moved `block_tail` on
                // between our claim and our load. Every block from ours to
                // this one holds or follows our unwritten slot, so none of
                // them is recycled: walk back along `prev`.
                while (*block).start() != start {
                    block = (*block).prev();
                }
                return block;
            }
            let mut try_advance = distance > offset;
            loop {
                let b = &*block;
                let here = b.start();
                if here == start {
                    return block;
                }
                assert!(
                    start.wrapping_sub(here) as isize > 0,
                    "a sender passed its block"
                );
                let mut next = b.next.load(Ordering::Acquire);
                if next.is_null() {
                    next = b.grow(self.mutated(Mutation::AppendByStore));
                }
                if try_advance {
                    if self
                        .block_tail
                        .compare_exchange(block, next, Ordering::Release, Ordering::Relaxed)
                        .is_ok()
                    {
                        let seen = self.tail.fetch_add(0, Ordering::Release) >> SHIFT;
                        b.released.store(seen << 1 | RELEASED, Ordering::Release);
                    } else {
                        try_advance = false;
                    }
                }
                block = next;
            }
        }
    }

    /// The first send's install of the first block (start 0). A sender that
    /// loses the race appends its block after the winner's.
    #[cold]
    #[inline(never)]
    fn install_first(&self) -> *mut Block<T> {
        let new = Block::new(0, ptr::null_mut());
        match self.block_tail.compare_exchange(
            ptr::null_mut(),
            new,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                self.free_head.store(new, Ordering::Relaxed);
                self.head_block.store(new, Ordering::Release);
                new
            }
            Err(first) => {
                // SAFETY: `first` was `block_tail` after our claim (as in
                // `find_block`), and `new` is ours alone.
                unsafe { Block::append(first, new) };
                first
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
        let mut block = self.head_block.load(Ordering::Acquire);
        if block.is_null() {
            return None;
        }
        let index = self.head_index.load(Ordering::Relaxed);
        let offset = index % BLOCK_CAP;
        // SAFETY: the head block lives until its consumer (us) recycles it;
        // a slot is read only after its WRITE bit (Acquire), so the
        // producer's write of the value happens before our read.
        unsafe {
            if offset == 0 && (*block).start() != index {
                block = self.advance_head(block, index)?;
            }
            if self.free_head.load(Ordering::Relaxed) != block {
                self.recycle_behind(block, index);
            }
            let slot = (*block).slots.get_unchecked(offset);
            if slot.state.load(Ordering::Acquire) & WRITE == 0 {
                return None;
            }
            let value = slot.value.with_mut(|p| p.read().assume_init());
            self.head_index.store(index + 1, Ordering::Release);
            Some(value)
        }
    }

    /// The consumer's step into the next block (once per block).
    ///
    /// # Safety
    /// Consumer only; `block` is the head block and `index` the head index,
    /// the first of the next block.
    #[cold]
    #[inline(never)]
    unsafe fn advance_head(&self, block: *mut Block<T>, index: usize) -> Option<*mut Block<T>> {
        // SAFETY: every slot of `block` was read, so no sender writes it;
        // `next` is set by whoever claimed a slot in the next block.
        unsafe {
            let next = (*block).next.load(Ordering::Acquire);
            if next.is_null() {
                return None;
            }
            debug_assert_eq!((*next).start(), index);
            self.head_block.store(next, Ordering::Relaxed);
            Some(next)
        }
    }

    /// Recycles the blocks between `free_head` and `head` that no sender can
    /// reach any more (released at an index the consumer has reached).
    ///
    /// # Safety
    /// Consumer only; `head` is the head block, `index` the head index.
    #[cold]
    #[inline(never)]
    unsafe fn recycle_behind(&self, head: *mut Block<T>, index: usize) {
        let mut free = self.free_head.load(Ordering::Relaxed);
        while free != head {
            // SAFETY: `free` is behind the head: drained; no one frees it but us.
            let (released, next) = unsafe {
                (
                    (*free).released.load(Ordering::Acquire),
                    (*free).next.load(Ordering::Relaxed),
                )
            };
            let early = self.mutated(Mutation::RecycleEarly);
            if released & RELEASED == 0 || (!early && released >> 1 > index) {
                break;
            }
            // SAFETY: released, and every sender that may hold a pointer to
            // it claimed below `released >> 1 <= index`: its slot is read, so
            // it is done with the block.
            unsafe { self.recycle(free) };
            free = next;
        }
        self.free_head.store(free, Ordering::Relaxed);
    }

    /// Resets a block no one references and links it after the block
    /// `block_tail` points at, or frees it if a spare is already there.
    ///
    /// # Safety
    /// The caller hands over the only reference to `block`, whose values
    /// have all been read.
    unsafe fn recycle(&self, block: *mut Block<T>) {
        // SAFETY: caller contract; `block_tail` is never released, so it and
        // its successor are alive (only we free blocks, and only released ones).
        unsafe {
            for slot in (*block).slots.iter() {
                slot.state.store(0, Ordering::Relaxed);
            }
            (*block).next.store(ptr::null_mut(), Ordering::Relaxed);
            (*block).released.store(0, Ordering::Relaxed);
            let tail = self.block_tail.load(Ordering::Acquire);
            Block::place(block, (*tail).start() + BLOCK_CAP, tail);
            if (*tail)
                .next
                .compare_exchange(ptr::null_mut(), block, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
            {
                drop(Box::from_raw(block));
            }
        }
    }

    /// The final drain's pop: removes the oldest claimed message, waiting for
    /// its sender to finish writing it if the slot is claimed but not yet
    /// written. `None` only once every accepted slot has been read.
    ///
    /// Once `CLOSED` is set no slot can be accepted any more, so after a
    /// stop the accepted slots are a fixed set (those below `closed_at`) and
    /// every one of them is, or is about to be, written: a sender between
    /// its claim and its `WRITE` store runs no user code and cannot fail, so
    /// the wait is short and ends. A plain [`pop`](Self::pop) would stop at
    /// the half-written slot and strand it and everything after it (issue
    /// 13, defect 2).
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

    /// Claims that were (or will be) written, from a tail word: every claim
    /// while open, only those below `closed_at` once closed.
    #[inline(always)]
    fn accepted(&self, tail: usize) -> usize {
        let claimed = tail >> SHIFT;
        if tail & CLOSED == 0 {
            claimed
        } else {
            claimed.min(self.closed_at.load(Ordering::Acquire))
        }
    }

    /// Whether no accepted message is unread. Safe from any thread at any
    /// time: it compares the indices and never touches a block.
    #[inline]
    pub fn is_empty(&self) -> bool {
        // `<=`, not `==`: the consumer never passes the accepted claims, but
        // a snapshot that reads `closed_at` late must not spin a drain.
        self.accepted(self.tail.load(Ordering::Acquire)) <= self.head_index.load(Ordering::Acquire)
    }

    /// Messages popped so far; exact on the consumer, a snapshot elsewhere
    /// (the metrics layer's dequeue count, at no cost on the hot path).
    pub(crate) fn popped(&self) -> u64 {
        self.head_index.load(Ordering::Acquire) as u64
    }

    /// Number of messages accepted and not yet read; a snapshot from any
    /// thread.
    pub(crate) fn len(&self) -> usize {
        let head = self.head_index.load(Ordering::Acquire);
        self.accepted(self.tail.load(Ordering::Acquire))
            .saturating_sub(head)
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
                return Release::Stop(tail & STATE);
            }
            if self.accepted(tail) != head {
                return Release::NotEmpty;
            }
            let idle = if self.mutated(Mutation::ReleaseKeepsEpoch) {
                tail & !SCHEDULED
            } else {
                (tail & !SCHEDULED) ^ EPOCH
            };
            // Before the CAS, whose release publishes it to the next claim.
            self.released_at.store(idle & MARK, Ordering::Relaxed);
            match self
                .tail
                .compare_exchange_weak(tail, idle, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Release::Released,
                Err(t) => tail = t,
            }
        }
    }

    /// The actor's state flags.
    #[inline]
    pub fn flags(&self) -> usize {
        self.tail.load(Ordering::Acquire) & STATE
    }

    /// Sets `bits | CLOSED | SCHEDULED` and, if this closed the mailbox,
    /// records where. Returns the previous tail word.
    fn close(&self, bits: usize) -> usize {
        if self.mutated(Mutation::CloseIndexFromLoad) {
            let seen = self.tail.load(Ordering::Acquire);
            if seen & CLOSED == 0 {
                self.closed_at.store(seen >> SHIFT, Ordering::Release);
            }
            return self
                .tail
                .fetch_or(bits | CLOSED | SCHEDULED, Ordering::AcqRel);
        }
        let prev = self
            .tail
            .fetch_or(bits | CLOSED | SCHEDULED, Ordering::AcqRel);
        if prev & CLOSED == 0 {
            self.closed_at.store(prev >> SHIFT, Ordering::Release);
        }
        prev
    }

    /// Sets `bits | CLOSED | SCHEDULED`; true if the caller must schedule the
    /// actor (it was idle) so it sees them.
    pub fn request_stop(&self, bits: usize) -> bool {
        let prev = self.close(bits);
        prev & SCHEDULED == 0 && self.first_since_release(prev)
    }

    /// Finalized: closed, stopped, and scheduled for good.
    pub fn mark_stopped(&self) {
        self.close(STOPPED);
    }
}

impl<T> Drop for Unbounded<T> {
    fn drop(&mut self) {
        // SAFETY: `&mut self` makes us the only consumer, and no producer is
        // mid-push, so every accepted slot has been written; every block is
        // on the list from `free_head` (module docs), and freed once.
        unsafe {
            while self.pop().is_some() {}
            let mut block = self.free_head.load(Ordering::Relaxed);
            while !block.is_null() {
                let next = (*block).next.load(Ordering::Relaxed);
                drop(Box::from_raw(block));
                block = next;
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::engine::state_word::STOP_DRAIN;
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

    /// Counts the blocks on the list (consumer side, single-threaded test).
    fn blocks_on_list<T>(q: &Unbounded<T>) -> usize {
        let mut n = 0;
        let mut b = q.free_head.load(Ordering::Relaxed);
        while !b.is_null() {
            n += 1;
            // SAFETY: single-threaded test; the list is intact.
            b = unsafe { (*b).next.load(Ordering::Relaxed) };
        }
        n
    }

    std::thread_local! {
        /// Blocks allocated by this thread (`Block::new`), for the
        /// allocation tests (per thread: other tests run beside them).
        pub(super) static BLOCKS_ALLOCATED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// The steady state allocates nothing: a stream that never has more
    /// than a few messages waiting cycles through two blocks (the current
    /// one and the recycled spare), however many blocks it crosses.
    #[test]
    fn steady_state_recycles_two_blocks() {
        let allocated = || BLOCKS_ALLOCATED.with(|n| n.get());
        let q = Unbounded::new();
        for i in 0..50 * BLOCK_CAP {
            let _ = q.push(i);
            if i % 3 == 2 {
                for j in i - 2..=i {
                    // SAFETY: single-threaded test: we are the only consumer.
                    assert_eq!(unsafe { q.pop() }, Some(j));
                }
            }
            assert!(blocks_on_list(&q) <= 2, "kept more at message {i}");
        }
        assert_eq!(allocated(), 2, "blocks allocated over 50 blocks' worth");
        // A burst grows the list; draining it gives the memory back down to
        // the current block and one spare.
        for i in 0..10 * BLOCK_CAP {
            let _ = q.push(i);
        }
        assert!(blocks_on_list(&q) >= 10);
        // SAFETY: as above.
        while unsafe { q.pop() }.is_some() {}
        let _ = q.push(0);
        // SAFETY: as above.
        while unsafe { q.pop() }.is_some() {}
        assert!(
            blocks_on_list(&q) <= 3,
            "{} blocks kept",
            blocks_on_list(&q)
        );
    }

    #[test]
    fn a_send_after_close_comes_back_and_is_not_counted() {
        let q = Unbounded::new();
        assert_eq!(q.push(1), Ok(false), "the spawner holds the task");
        assert!(!q.request_stop(crate::engine::state_word::STOP_DRAIN));
        assert_eq!(q.push(2), Err(2));
        assert_eq!(q.push(3), Err(3));
        assert_eq!(q.len(), 1, "refused claims are not messages");
        // SAFETY: single-threaded test: we are the only consumer.
        assert_eq!(unsafe { q.pop_final() }, Some(1));
        // SAFETY: as above.
        assert_eq!(unsafe { q.pop_final() }, None);
        assert!(q.is_empty());
        assert_eq!(q.popped(), 1);
    }

    #[test]
    fn one_sender_takes_an_idle_actor() {
        let q = Unbounded::new();
        // SAFETY: single-threaded test: we hold the spawner's task.
        assert_eq!(unsafe { q.try_release() }, Release::Released);
        assert_eq!(q.push(1), Ok(true), "idle: the first send schedules");
        assert_eq!(q.push(2), Ok(false));
        // SAFETY: as above, we hold the task the first send took.
        assert_eq!(unsafe { q.try_release() }, Release::NotEmpty);
        // SAFETY: as above.
        unsafe {
            assert_eq!(q.pop(), Some(1));
            assert_eq!(q.pop(), Some(2));
            assert_eq!(q.try_release(), Release::Released);
        }
        assert_eq!(q.push(3), Ok(true));
    }

    /// A busy period a claim started keeps `SCHEDULED` clear; the claims
    /// and stop requests in it still see the actor as scheduled, and the
    /// next release makes the next claim (or stop) the one that takes it.
    #[test]
    fn a_busy_period_begun_by_a_claim_has_one_task() {
        let q = Unbounded::new();
        // SAFETY (whole test): single-threaded; we hold whichever task the
        // calls below hand us.
        unsafe {
            assert_eq!(q.try_release(), Release::Released);
            assert_eq!(q.push(1), Ok(true), "the first claim takes the task");
            assert_eq!(q.flags() & SCHEDULED, 0, "the bit stays clear");
            assert_eq!(q.push(2), Ok(false), "busy, though the bit is clear");
            assert_eq!(q.pop(), Some(1));
            assert_eq!(q.try_release(), Release::NotEmpty);
            assert_eq!(q.push(3), Ok(false), "a failed release keeps the task");
            assert_eq!(q.pop(), Some(2));
            assert_eq!(q.pop(), Some(3));
            assert_eq!(q.try_release(), Release::Released);
            assert_eq!(q.push(4), Ok(true));
            assert!(!q.request_stop(STOP_DRAIN), "the claim holds the task");
            assert_eq!(q.pop(), Some(4));
            assert!(matches!(q.try_release(), Release::Stop(b) if b & EPOCH == 0));
        }
        let idle = Unbounded::<u8>::new();
        // SAFETY: as above.
        assert_eq!(unsafe { idle.try_release() }, Release::Released);
        assert!(idle.request_stop(STOP_DRAIN), "a stop wakes an idle actor");
        assert_eq!(idle.push(1), Err(1));
    }

    /// The layout promise of the module docs: the consumer's fields end at
    /// least a cache line before the first byte a send reads, and the
    /// `Mailbox` enum keeps its tag in `kind` (no word added in front).
    #[test]
    fn senders_and_consumer_do_not_share_a_line() {
        use std::mem::{offset_of, size_of};
        type U = Unbounded<u64>;
        let consumer_end = offset_of!(U, free_head) + 8;
        let first_sender_byte = offset_of!(U, kind);
        assert!(
            first_sender_byte - consumer_end >= 64,
            "consumer fields end at {consumer_end}, senders start at {first_sender_byte}"
        );
        assert!(offset_of!(U, block_tail) > first_sender_byte);
        assert!(offset_of!(U, tail) > first_sender_byte);
        // Aligned words whose starts are 64 bytes apart never share a line.
        assert!(
            offset_of!(U, released_at) - offset_of!(U, free_head) >= 64,
            "a waking send's `released_at` load may share the consumer's line"
        );
        assert!(offset_of!(U, released_at) < first_sender_byte);
        assert!(std::mem::align_of::<U>() >= 8);
        assert_eq!(
            size_of::<super::super::Mailbox<u64>>(),
            size_of::<U>(),
            "the enum's tag went outside `kind`"
        );
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

    /// Senders race a consumer that drains and releases, as a worker does:
    /// never two task holders, every message handled exactly once.
    #[test]
    fn racing_sends_and_releases_hand_out_one_task_at_a_time() {
        use std::sync::atomic::{AtomicBool, AtomicUsize as Count, Ordering as O};
        const P: usize = 3;
        const N: usize = if cfg!(miri) { 100 } else { 20_000 };
        let q = Arc::new(Unbounded::new());
        let running = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Count::new(0));
        let turn = |q: &Unbounded<usize>, running: &AtomicBool, seen: &Count| loop {
            assert!(!running.swap(true, O::SeqCst), "two consumers at once");
            // SAFETY: we hold the task (asserted above).
            while unsafe { q.pop() }.is_some() {
                seen.fetch_add(1, O::SeqCst);
            }
            running.store(false, O::SeqCst);
            // SAFETY: as above.
            match unsafe { q.try_release() } {
                Release::Released => return,
                Release::NotEmpty => std::hint::spin_loop(),
                Release::Stop(_) => unreachable!(),
            }
        };
        // SAFETY-free: the spawner's task is released at once.
        turn(&q, &running, &seen);
        let handles: Vec<_> = (0..P)
            .map(|_| {
                let (q, running, seen) = (q.clone(), running.clone(), seen.clone());
                std::thread::spawn(move || {
                    for i in 0..N {
                        if q.push(i).unwrap() {
                            turn(&q, &running, &seen);
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(seen.load(O::SeqCst), P * N, "lost or duplicated");
        assert!(q.is_empty());
    }
}
