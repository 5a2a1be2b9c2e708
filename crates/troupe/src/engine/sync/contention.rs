//! Contention counters: what a workload does to shared cache lines, counted
//! per call site on the calling thread (the `contention` feature).
//!
//! # What is counted
//! * every read-modify-write (`fetch_*`, `swap`, `compare_exchange*`), every
//!   failed compare-exchange and every store on an atomic that goes through
//!   `engine::sync` (the mailboxes' words, the state word, the reply slot, the
//!   scheduler's idle words), per call site (`file:line`, by
//!   `#[track_caller]`), summed per file (`rmw.unbounded`, `rmw.park`, ...)
//!   and in all (`rmw`);
//! * the scheduler's events (`engine::sync::Event`): injector pushes,
//!   `notify` calls, unparks, parks, searches, placements, steals, budget
//!   ends;
//! * allocations and frees, when the program's global allocator reports
//!   them ([`count_alloc`], [`count_free`]; `troupe-bench` does under its
//!   `contention` feature);
//! * the most workers searching at once (`searching_max`, a gauge).
//!
//! # Why the counting adds no contention
//! Each thread claims a counter block of its own from a static array once
//! (one `fetch_add` on a global per thread's life) and bumps it with a
//! relaxed load and store: no RMW, no line shared with another writer.
//! [`snapshot`] sums all blocks with relaxed loads; a thread's last counts
//! are visible to whoever joined it or received a message it sent after
//! them. Blocks are never freed nor reused, so totals only grow: a run's
//! counts are the difference of two snapshots ([`Snapshot::since`]). Threads
//! beyond the array's size share one overflow block, bumped with
//! `fetch_add` (correct, but then contended). Nothing here allocates, so the
//! allocator may count through it.
//!
//! The gauge `searching_max` is one global word, written only when a new
//! maximum is seen; [`reset_gauges`] clears it before a run.

use super::Event;
use std::cell::Cell;
use std::fmt::Write as _;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, AtomicUsize as StdAtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

/// Distinct call sites counted; later ones share the last (`other`).
const SITES: usize = 128;
/// Per site: RMWs, failed compare-exchanges, stores.
const KINDS: usize = 3;
const RMW: usize = 0;
const CAS_FAIL: usize = 1;
const STORE: usize = 2;
const KIND_NAMES: [&str; KINDS] = ["rmw", "cas_fail", "store"];

/// The events, in `Event`'s order, then the allocator's two.
const EVENT_NAMES: [&str; 15] = [
    "injector_push",
    "notify",
    "unpark",
    "park",
    "search",
    "search_capped",
    "lifo_place",
    "deque_push",
    "steal",
    "budget_yield",
    "budget_continue",
    "half_written",
    "lifo_spill",
    "alloc",
    "free",
];
const ALLOC: usize = 13;
const FREE: usize = 14;
const EVENTS_AT: usize = SITES * KINDS;
const SLOTS: usize = EVENTS_AT + EVENT_NAMES.len();
/// Threads with a block of their own.
const BLOCKS: usize = 2048;

struct Block([AtomicU64; SLOTS]);

impl Block {
    const fn new() -> Self {
        Block([const { AtomicU64::new(0) }; SLOTS])
    }
}

static BLOCK: [Block; BLOCKS] = [const { Block::new() }; BLOCKS];
static OVERFLOW: Block = Block::new();
static CLAIMED: StdAtomicUsize = StdAtomicUsize::new(0);
static SEARCHING_MAX: StdAtomicUsize = StdAtomicUsize::new(0);

/// The call sites seen so far: `(file, line)` by site index.
static SITE_TABLE: Mutex<[(&str, u32); SITES]> = Mutex::new([("", 0); SITES]);
static SITE_COUNT: StdAtomicUsize = StdAtomicUsize::new(0);

/// A per-thread cache from a `Location`'s address to its site index (a
/// site has one `Location` per monomorphization of its function).
const CACHE: usize = 256;

thread_local! {
    static MINE: Cell<usize> = const { Cell::new(usize::MAX) };
    static SITE_CACHE: [Cell<(usize, usize)>; CACHE] =
        const { [const { Cell::new((0, 0)) }; CACHE] };
}

#[inline]
fn bump(slot: usize) {
    let mine = MINE.with(|m| {
        let i = m.get();
        if i != usize::MAX {
            return i;
        }
        let i = CLAIMED.fetch_add(1, Relaxed);
        m.set(i);
        i
    });
    match BLOCK.get(mine) {
        Some(b) => {
            let c = &b.0[slot];
            c.store(c.load(Relaxed) + 1, Relaxed);
        }
        None => {
            OVERFLOW.0[slot].fetch_add(1, Relaxed);
        }
    }
}

/// The site index of `loc`, registering it on first sight. The thread's
/// cache is open-addressed (linear probing), so two hot sites that hash
/// alike do not evict each other into the registry's lock.
#[inline]
fn site(loc: &'static Location<'static>) -> usize {
    let key = loc as *const Location<'static> as usize;
    let h = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) % CACHE;
    SITE_CACHE.with(|c| {
        for probe in 0..CACHE {
            let slot = &c[(h + probe) % CACHE];
            let (k, v) = slot.get();
            if k == key {
                return v;
            }
            if k == 0 {
                let i = register(loc);
                slot.set((key, i));
                return i;
            }
        }
        register(loc)
    })
}

#[cold]
fn register(loc: &'static Location<'static>) -> usize {
    let mut table = SITE_TABLE.lock().unwrap_or_else(|e| e.into_inner());
    let n = SITE_COUNT.load(Relaxed);
    let found = (0..n).find(|&i| table[i] == (loc.file(), loc.line()));
    if let Some(i) = found {
        return i;
    }
    if n == SITES - 1 {
        table[n] = ("other", 0);
        SITE_COUNT.store(SITES, Relaxed);
        return n;
    }
    if n == SITES {
        return SITES - 1;
    }
    table[n] = (loc.file(), loc.line());
    SITE_COUNT.store(n + 1, Relaxed);
    n
}

#[inline]
fn at(loc: &'static Location<'static>, kind: usize) {
    bump(site(loc) * KINDS + kind);
}

/// Counts a scheduler event.
#[inline]
pub(crate) fn event(e: Event) {
    bump(EVENTS_AT + e as usize);
}

/// Records `n` workers searching at once.
#[inline]
pub(crate) fn searching_now(n: usize) {
    if n > SEARCHING_MAX.load(Relaxed) {
        SEARCHING_MAX.fetch_max(n, Relaxed);
    }
}

/// Counts one allocation; for a global allocator (allocates nothing).
#[inline]
pub fn count_alloc() {
    bump(EVENTS_AT + ALLOC);
}

/// Counts one free; for a global allocator (allocates nothing).
#[inline]
pub fn count_free() {
    bump(EVENTS_AT + FREE);
}

/// Clears the gauges (`searching_max`) before a run.
pub fn reset_gauges() {
    SEARCHING_MAX.store(0, Relaxed);
}

/// Every counter's total at one moment, by name.
///
/// Names: `rmw`, `cas_fail`, `store` (all sites); `rmw.<file>` and so on
/// (per source file of the caller: `unbounded`, `state_word`, `park`, ...;
/// a `mod.rs` by its folder); `site.rmw.<folder>/<file>:<line>` per call
/// site; the events (`injector_push`, `notify`, `unpark`, `park`, `search`,
/// `search_capped`, `lifo_place`, `deque_push`, `steal`, `budget_yield`,
/// `budget_continue`, `half_written`, `lifo_spill`, `alloc`, `free`); and
/// the gauge `searching_max`.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    counters: Vec<(String, u64)>,
}

/// Takes a [`Snapshot`] of every thread's counters.
pub fn snapshot() -> Snapshot {
    let claimed = CLAIMED.load(Relaxed).min(BLOCKS);
    let mut sum = [0u64; SLOTS];
    for b in BLOCK[..claimed].iter().chain(std::iter::once(&OVERFLOW)) {
        for (s, c) in sum.iter_mut().zip(b.0.iter()) {
            *s += c.load(Relaxed);
        }
    }
    let sites: Vec<(&str, u32)> = {
        let table = SITE_TABLE.lock().unwrap_or_else(|e| e.into_inner());
        table[..SITE_COUNT.load(Relaxed)].to_vec()
    };
    let mut counters: Vec<(String, u64)> = Vec::new();
    let mut add = |name: String, v: u64| match counters.iter_mut().find(|(n, _)| *n == name) {
        Some((_, t)) => *t += v,
        None => counters.push((name, v)),
    };
    for (k, kind) in KIND_NAMES.iter().enumerate() {
        add((*kind).to_owned(), 0);
        for (i, (file, _)) in sites.iter().enumerate() {
            let v = sum[i * KINDS + k];
            add((*kind).to_owned(), v);
            add(format!("{kind}.{}", class(file)), v);
        }
    }
    for (i, name) in EVENT_NAMES.iter().enumerate() {
        add((*name).to_owned(), sum[EVENTS_AT + i]);
    }
    add(
        "searching_max".to_owned(),
        SEARCHING_MAX.load(Relaxed) as u64,
    );
    for (k, kind) in KIND_NAMES.iter().enumerate() {
        for (i, (file, line)) in sites.iter().enumerate() {
            let v = sum[i * KINDS + k];
            if v > 0 {
                add(format!("site.{kind}.{}:{line}", short(file)), v);
            }
        }
    }
    Snapshot { counters }
}

/// `engine/mailbox/unbounded.rs` → `unbounded`; `.../scheduler/mod.rs` → `scheduler`.
fn class(file: &str) -> &str {
    let mut parts = file.rsplit(['/', '\\']);
    let last = parts.next().unwrap_or(file);
    let stem = last.strip_suffix(".rs").unwrap_or(last);
    if stem == "mod" {
        parts.next().unwrap_or(stem)
    } else {
        stem
    }
}

/// The last two components of a path.
fn short(file: &str) -> &str {
    let mut cut = file.len();
    for _ in 0..2 {
        match file[..cut].rfind(['/', '\\']) {
            Some(i) => cut = i,
            None => return file,
        }
    }
    &file[cut + 1..]
}

impl Snapshot {
    /// The counts since `earlier` (gauges keep this snapshot's value).
    pub fn since(&self, earlier: &Snapshot) -> Snapshot {
        let counters = self
            .counters
            .iter()
            .map(|(n, v)| {
                let v = if n == "searching_max" {
                    *v
                } else {
                    v.saturating_sub(earlier.get(n))
                };
                (n.clone(), v)
            })
            .collect();
        Snapshot { counters }
    }

    /// The counter `name`, 0 if it was never bumped.
    pub fn get(&self, name: &str) -> u64 {
        self.counters
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |(_, v)| *v)
    }

    /// Every counter, in report order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.counters.iter().map(|(n, v)| (n.as_str(), *v))
    }

    /// One line per counter, `contention <name> <per message> <total>`,
    /// for a run of `messages` messages (the gauge's "per message" is its
    /// value). Per-site lines only where nonzero.
    pub fn report(&self, messages: u64) -> String {
        let mut out = String::new();
        for (name, v) in self.iter() {
            let per = if name == "searching_max" {
                v as f64
            } else {
                v as f64 / messages.max(1) as f64
            };
            let _ = writeln!(out, "contention {name} {per:.6} {v}");
        }
        out
    }
}

/// The counted atomics: the standard ones, each operation that writes
/// counted at its caller's site.
pub(crate) mod atomics {
    use super::{at, CAS_FAIL, RMW, STORE};
    use std::panic::Location;
    use std::sync::atomic::{self, Ordering};

    /// A counted `AtomicUsize`.
    #[derive(Debug, Default)]
    #[repr(transparent)]
    pub(crate) struct AtomicUsize(atomic::AtomicUsize);

    #[allow(dead_code)]
    impl AtomicUsize {
        pub(crate) const fn new(v: usize) -> Self {
            AtomicUsize(atomic::AtomicUsize::new(v))
        }
        #[inline(always)]
        pub(crate) fn load(&self, o: Ordering) -> usize {
            self.0.load(o)
        }
        #[inline(always)]
        #[track_caller]
        pub(crate) fn store(&self, v: usize, o: Ordering) {
            at(Location::caller(), STORE);
            self.0.store(v, o)
        }
        #[inline(always)]
        pub(crate) fn get_mut(&mut self) -> &mut usize {
            self.0.get_mut()
        }
        #[inline(always)]
        pub(crate) fn into_inner(self) -> usize {
            self.0.into_inner()
        }
        #[inline(always)]
        #[track_caller]
        pub(crate) fn swap(&self, v: usize, o: Ordering) -> usize {
            at(Location::caller(), RMW);
            self.0.swap(v, o)
        }
        #[inline(always)]
        #[track_caller]
        pub(crate) fn fetch_add(&self, v: usize, o: Ordering) -> usize {
            at(Location::caller(), RMW);
            self.0.fetch_add(v, o)
        }
        #[inline(always)]
        #[track_caller]
        pub(crate) fn fetch_sub(&self, v: usize, o: Ordering) -> usize {
            at(Location::caller(), RMW);
            self.0.fetch_sub(v, o)
        }
        #[inline(always)]
        #[track_caller]
        pub(crate) fn fetch_or(&self, v: usize, o: Ordering) -> usize {
            at(Location::caller(), RMW);
            self.0.fetch_or(v, o)
        }
        #[inline(always)]
        #[track_caller]
        pub(crate) fn fetch_and(&self, v: usize, o: Ordering) -> usize {
            at(Location::caller(), RMW);
            self.0.fetch_and(v, o)
        }
        #[inline(always)]
        #[track_caller]
        pub(crate) fn fetch_xor(&self, v: usize, o: Ordering) -> usize {
            at(Location::caller(), RMW);
            self.0.fetch_xor(v, o)
        }
        #[inline(always)]
        #[track_caller]
        pub(crate) fn fetch_max(&self, v: usize, o: Ordering) -> usize {
            at(Location::caller(), RMW);
            self.0.fetch_max(v, o)
        }
        #[inline(always)]
        #[track_caller]
        pub(crate) fn fetch_min(&self, v: usize, o: Ordering) -> usize {
            at(Location::caller(), RMW);
            self.0.fetch_min(v, o)
        }
        #[inline(always)]
        #[track_caller]
        pub(crate) fn compare_exchange(
            &self,
            current: usize,
            new: usize,
            success: Ordering,
            failure: Ordering,
        ) -> Result<usize, usize> {
            let loc = Location::caller();
            at(loc, RMW);
            let r = self.0.compare_exchange(current, new, success, failure);
            if r.is_err() {
                at(loc, CAS_FAIL);
            }
            r
        }
        #[inline(always)]
        #[track_caller]
        pub(crate) fn compare_exchange_weak(
            &self,
            current: usize,
            new: usize,
            success: Ordering,
            failure: Ordering,
        ) -> Result<usize, usize> {
            let loc = Location::caller();
            at(loc, RMW);
            let r = self.0.compare_exchange_weak(current, new, success, failure);
            if r.is_err() {
                at(loc, CAS_FAIL);
            }
            r
        }
    }

    /// A counted `AtomicPtr`.
    #[derive(Debug, Default)]
    #[repr(transparent)]
    pub(crate) struct AtomicPtr<T>(atomic::AtomicPtr<T>);

    #[allow(dead_code)]
    impl<T> AtomicPtr<T> {
        pub(crate) const fn new(p: *mut T) -> Self {
            AtomicPtr(atomic::AtomicPtr::new(p))
        }
        #[inline(always)]
        pub(crate) fn load(&self, o: Ordering) -> *mut T {
            self.0.load(o)
        }
        #[inline(always)]
        #[track_caller]
        pub(crate) fn store(&self, p: *mut T, o: Ordering) {
            at(Location::caller(), STORE);
            self.0.store(p, o)
        }
        #[inline(always)]
        pub(crate) fn get_mut(&mut self) -> &mut *mut T {
            self.0.get_mut()
        }
        #[inline(always)]
        pub(crate) fn into_inner(self) -> *mut T {
            self.0.into_inner()
        }
        #[inline(always)]
        #[track_caller]
        pub(crate) fn swap(&self, p: *mut T, o: Ordering) -> *mut T {
            at(Location::caller(), RMW);
            self.0.swap(p, o)
        }
        #[inline(always)]
        #[track_caller]
        pub(crate) fn compare_exchange(
            &self,
            current: *mut T,
            new: *mut T,
            success: Ordering,
            failure: Ordering,
        ) -> Result<*mut T, *mut T> {
            let loc = Location::caller();
            at(loc, RMW);
            let r = self.0.compare_exchange(current, new, success, failure);
            if r.is_err() {
                at(loc, CAS_FAIL);
            }
            r
        }
        #[inline(always)]
        #[track_caller]
        pub(crate) fn compare_exchange_weak(
            &self,
            current: *mut T,
            new: *mut T,
            success: Ordering,
            failure: Ordering,
        ) -> Result<*mut T, *mut T> {
            let loc = Location::caller();
            at(loc, RMW);
            let r = self.0.compare_exchange_weak(current, new, success, failure);
            if r.is_err() {
                at(loc, CAS_FAIL);
            }
            r
        }
    }
}

/// The contention budget of the hot paths, in one place: the numbers the
/// table in `docs/architecture.md` ("Contention budget") states and the
/// test `tests/contention_budget.rs` checks against the counters.
pub mod budget {
    /// Slots per block of the unbounded mailbox the budget is written for.
    /// The per-block share below is charged once per this many messages;
    /// a mailbox with larger blocks stays inside the budget.
    pub const BLOCK_SLOTS: u64 = 31;
    /// Shared-line RMWs per tell in the steady state (receiver busy): the
    /// claim on the tail word, which also carries the actor's state bits.
    pub const TELL_RMW_PER_MESSAGE: u64 = 1;
    /// Shared-line RMWs per block on the tell side: linking the next block
    /// when no recycled one is linked yet (a CAS on the block's `next`),
    /// moving `block_tail` past the full block (a CAS), and recording the
    /// tail index the block was released at (`fetch_add(0)`).
    pub const TELL_RMW_PER_BLOCK: u64 = 3;
    /// Shared-line RMWs per block on the pop side: linking the drained
    /// block after the tail block for reuse, or freeing it when a block is
    /// already linked there (pops store `head_index`; they do no RMW per
    /// message).
    pub const POP_RMW_PER_BLOCK: u64 = 1;
    /// Scheduler events (injector pushes, notifies, unparks) per tell in the
    /// steady state: none, the receiver's task is not touched.
    pub const TELL_SCHED_EVENTS: u64 = 0;
    /// Shared-line RMWs of a tell that wakes an idle actor: the same claim;
    /// it learns that it takes the task from the claim's word and a plain
    /// load of `released_at` (no `fetch_or(SCHEDULED)` race any more).
    pub const TELL_WAKE_RMW: u64 = 1;
    /// Shared-line RMWs of a release (the end of a turn that emptied the
    /// mailbox): one CAS of the tail word.
    pub const RELEASE_RMW: u64 = 1;

    /// The most mailbox RMWs `hops` ping-pong hops may do: each hop is a
    /// tell that wakes the other actor and a release, plus each mailbox's
    /// per-block share (two mailboxes, each with half the hops).
    pub const fn ping_pong(hops: u64) -> u64 {
        hops * (TELL_WAKE_RMW + RELEASE_RMW)
            + 2 * (hops / 2 + 1).div_ceil(BLOCK_SLOTS) * (TELL_RMW_PER_BLOCK + POP_RMW_PER_BLOCK)
    }

    /// The most shared-line RMWs `messages` steady-state tells may do.
    pub const fn tell_steady(messages: u64) -> u64 {
        messages * TELL_RMW_PER_MESSAGE + messages.div_ceil(BLOCK_SLOTS) * TELL_RMW_PER_BLOCK
    }

    /// The most shared-line RMWs popping `messages` may do (plus one
    /// release at the end of the turn).
    pub const fn pop_steady(messages: u64) -> u64 {
        messages.div_ceil(BLOCK_SLOTS) * POP_RMW_PER_BLOCK + 1
    }
}
