//! A registry of actors of one type: unique names, groups, lookups and
//! dispatch (the Gleam library `chip` of seed 001, with Troupe's names).
//!
//! ```
//! use troupe::{Actor, ActorSystem, Context};
//! use troupe::registry::Registry;
//!
//! struct Session;
//! impl Actor for Session {
//!     type Msg = u32;
//!     fn handle(&mut self, _n: u32, _ctx: &mut Context<'_, Self>) {}
//! }
//!
//! let system = ActorSystem::builder().threads(2).build();
//! let registry = Registry::new();
//! let alice = system.spawn(Session);
//! registry.register("alice", &alice).unwrap();
//! registry.join("sessions", &alice);
//! assert_eq!(registry.find("alice"), Some(alice.clone()));
//! assert_eq!(registry.dispatch_group("sessions", 7), 1);
//! alice.stop();
//! alice.join();
//! // The actor left the registry by itself (through its monitor).
//! assert!(registry.find("alice").is_none());
//! # system.shutdown();
//! ```
//!
//! # Layout
//!
//! * **Names**: Troupe's own open-addressing hash table (linear probing,
//!   foldhash). A slot is one `u64`: 16 bits of the name's hash above the
//!   48-bit address of a *name record* (the name, up to 24 bytes inline,
//!   and the `ActorRef`). Records live in chunks that never move (16, 16,
//!   32, …, 512, then 1,024 records each), so a lookup is: hash, one slot
//!   load, one record load, one compare. Lookups take no lock and write no shared
//!   memory: they run under an epoch guard (`crossbeam-epoch`), and
//!   [`Registry::reader`] holds one guard for many lookups.
//! * The protocol (publish a record, then its slot; read a slot, then its
//!   record; reuse a record only after its last reader) is model-checked
//!   in `tests/loom_registry.rs`.
//! * **Writes** (register, unregister, join, leave, and the cleanup of a
//!   stopped actor) are serialized by one mutex. A removed name's slot
//!   becomes a tombstone; its record (and the `ActorRef` it holds) is freed
//!   for reuse only after every guard that could have seen it is gone. The
//!   table is rebuilt (doubled, or purged of tombstones) at 7/8 full and
//!   the old one freed the same way.
//! * **Members**: one 16-byte record per registered actor (its place in
//!   the list of all members, its first name, its first group and its
//!   position there; more in a side map), in the same kind of chunks,
//!   touched only by writers.
//! * **Groups**: per group, a dense vector of `ActorRef`s (and of their
//!   member records, for O(1) removal by swap) under a read-write lock;
//!   dispatch iterates it under the read lock.
//!
//! # Invariants
//!
//! * A registered actor has exactly one monitor from this registry: a
//!   *listener* entry in its cell holding the registry's shared hook and the
//!   member record's index (no allocation per actor). It is installed under
//!   the write lock, before any name or group of the actor is visible.
//! * When the actor stops, the hook removes its member record, every name it
//!   holds and its group memberships, before the actor's `join` returns. A name found in that instant gives
//!   [`SendError::Stopped`] on send. The hook checks that the member
//!   record still belongs to that actor, so a late hook never removes
//!   another actor's entry.
//! * A name held by an actor that no longer accepts messages may be taken
//!   over by a new registration (a restarted child registering again).
//! * Dispatch costs one read lock per group and one `tell` per member: the
//!   per-message cost does not grow with the number of registered actors or
//!   monitors (seed 001's "selector bloat" cannot happen: monitors are
//!   entries in the watched actor, not entries scanned per message).
//!
//! Dispatch sends with [`ActorRef::try_tell`]: it never waits, neither for
//! a member to handle the message nor for room in a full bounded mailbox
//! (whatever its overflow policy, such a member is skipped and not
//! counted). It holds the group's read lock (for [`Registry::dispatch`],
//! that of the list of all members) while sending; since it never blocks
//! there, the cleanup of a stopping member (which takes the write lock on a
//! worker thread) waits only for the sends themselves. Called from inside an
//! actor, each woken member is scheduled on the caller's worker (cheap);
//! from a plain thread, through the global queue.
//!
//! # Memory
//!
//! Per registered actor with one name and one group: the 40-byte name
//! record, the 16-byte member record, 9 to 18 bytes of table slots, 12 to 24
//! bytes in the list of all members and as much in the group's vectors; the
//! monitor sits inline in the actor's cell. The `registry` benchmark
//! measures 100 to 125 bytes per entry (`mallinfo2`) from 1,000 to 1,000,000
//! entries. Each group costs about 200 bytes more (which dominates with 10
//! groups of 1 member), and each thread that reads a registry registers once
//! with the epoch collector.

use crate::actor::{Actor, ActorId, ActorRef, SendError, StopListener, StopReason};
use crossbeam_epoch::{self as epoch, Atomic, Guard, Owned};
use parking_lot::{Mutex, MutexGuard, RwLock};
use std::collections::HashMap;
use std::fmt;
use std::hash::BuildHasher;
use std::mem::{ManuallyDrop, MaybeUninit};
use std::ptr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

type Hasher = foldhash::fast::RandomState;

/// A registered name: up to 24 bytes stored inline (no allocation, no
/// pointer to chase on lookup), longer ones on the heap.
type Name = compact_str::CompactString;

/// "No record" in a member's first-name or first-group field.
const NONE: u32 = u32::MAX;

/// Why a registration failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegisterError {
    /// The name is held by another live actor.
    NameTaken {
        /// The name asked for.
        name: String,
        /// The actor holding it.
        holder: ActorId,
    },
    /// The actor has already stopped; it was not registered.
    ActorStopped(ActorId),
}

impl fmt::Display for RegisterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegisterError::NameTaken { name, holder } => {
                write!(
                    f,
                    "the name {name:?} is already registered by actor {holder}"
                )
            }
            RegisterError::ActorStopped(id) => {
                write!(f, "actor {id} has stopped and cannot be registered")
            }
        }
    }
}

impl std::error::Error for RegisterError {}

// ---------------------------------------------------------------------------
// Chunked storage: elements at stable addresses, found by index.

/// Chunk `c` holds 16, 16, 32, …, 512 elements for `c` < 7 (1,024 in all),
/// then 1,024 each: little slack for small registries, at most 1,023 spare
/// elements for large ones, and no element ever moves.
const fn chunk_len(c: usize) -> usize {
    if c == 0 {
        16
    } else if c < 7 {
        8 << c
    } else {
        1024
    }
}

/// The chunk and offset of element `i`.
#[inline]
fn locate(i: usize) -> (usize, usize) {
    if i < 16 {
        (0, i)
    } else if i < 1024 {
        let b = i.ilog2() as usize;
        (b - 3, i - (1 << b))
    } else {
        ((i >> 10) + 6, i & 1023)
    }
}

/// Elements that never move: chunks are allocated once and never
/// reallocated, so a reader may hold an element's address while the writer
/// adds more. Only the writer (under the registry's lock) finds elements by
/// index; readers reach name records by the address in a table slot. Holds
/// raw `MaybeUninit<T>`: whoever writes an element drops it.
struct Chunked<T> {
    /// Chunk `c` has `chunk_len(c)` elements (a leaked boxed slice).
    chunks: Vec<*mut MaybeUninit<T>>,
}

// SAFETY: the chunks are owned memory holding `T`s; sending the store sends
// them.
unsafe impl<T: Send> Send for Chunked<T> {}

impl<T> Chunked<T> {
    fn new() -> Self {
        Chunked { chunks: Vec::new() }
    }

    /// Element `i`, which [`ensure`](Self::ensure) made addressable.
    #[inline]
    fn at(&self, i: usize) -> *mut MaybeUninit<T> {
        let (c, off) = locate(i);
        // SAFETY: `off < chunk_len(c)`, the length chunk `c` was allocated
        // with (indexing `chunks` panics if it was not).
        unsafe { self.chunks[c].add(off) }
    }

    /// Makes element `i` addressable.
    fn ensure(&mut self, i: usize) {
        let (c, _) = locate(i);
        while self.chunks.len() <= c {
            let chunk: Box<[MaybeUninit<T>]> = (0..chunk_len(self.chunks.len()))
                .map(|_| MaybeUninit::uninit())
                .collect();
            self.chunks
                .push(Box::into_raw(chunk) as *mut MaybeUninit<T>);
        }
    }
}

impl<T> Drop for Chunked<T> {
    /// Frees the chunks; the elements' owners have dropped them already.
    fn drop(&mut self) {
        for (c, &p) in self.chunks.iter().enumerate() {
            let chunk = ptr::slice_from_raw_parts_mut(p, chunk_len(c));
            // SAFETY: allocated in `ensure` as a boxed slice of this length.
            drop(unsafe { Box::from_raw(chunk) });
        }
    }
}

// ---------------------------------------------------------------------------
// The name table.

/// An empty slot ends a probe.
const EMPTY: u64 = 0;
/// A removed entry: probes go on past it.
const TOMB: u64 = 1;
/// A live slot: 16 bits of tag above a 48-bit record address.
const TAG_MASK: u64 = 0xFFFF_0000_0000_0000;
const PTR_MASK: u64 = !TAG_MASK;

/// The top 16 bits of a slot: 15 bits of the hash and a set top bit (so that
/// no live slot equals `EMPTY` or `TOMB`).
#[inline]
fn tag_of(hash: u64) -> u64 {
    (hash | (1 << 63)) & TAG_MASK
}

/// A live slot for the record at `rec`. Records are heap memory, whose
/// user-space addresses fit in 48 bits on the 64-bit targets Troupe runs on
/// (x86-64 and AArch64 hand out higher ones only when asked); checked.
#[inline]
fn slot_of<T>(tag: u64, rec: *const T) -> u64 {
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
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
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
struct Table {
    slots: Box<[AtomicU64]>,
}

impl Table {
    fn new(len: usize) -> Self {
        Table {
            slots: (0..len).map(|_| AtomicU64::new(EMPTY)).collect(),
        }
    }

    /// Where a new entry with `hash` goes: the first tombstone or empty slot
    /// on its probe path (writers only).
    fn free_slot(&self, hash: u64) -> usize {
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
struct NameRec<A: Actor> {
    name: ManuallyDrop<Name>,
    actor: ManuallyDrop<ActorRef<A>>,
    owner: u32,
    idx: u32,
}

// ---------------------------------------------------------------------------
// Members and groups (writers only, under the write lock).

/// One registered actor: what to undo when it stops (16 bytes; names and
/// groups beyond the first in [`State::more`]).
struct Member {
    /// Its position in the list of all members (`NONE`: a vacant record).
    all_pos: u32,
    /// Its first name record (`NONE`: none).
    name: u32,
    /// Its first group and its position there (`NONE`: none).
    gid: u32,
    pos: u32,
}

/// Names and groups beyond a member's first.
#[derive(Default)]
struct More {
    names: Vec<u32>,
    groups: Vec<(u32, u32)>,
}

impl More {
    fn is_empty(&self) -> bool {
        self.names.is_empty() && self.groups.is_empty()
    }
}

impl Member {
    fn new(all_pos: u32) -> Self {
        Member {
            all_pos,
            name: NONE,
            gid: NONE,
            pos: 0,
        }
    }
}

/// A group's members, dense for dispatch; `owners[i]` is `refs[i]`'s member
/// record.
struct GroupMembers<A: Actor> {
    refs: Vec<ActorRef<A>>,
    owners: Vec<u32>,
}

struct Group<A: Actor> {
    name: Name,
    members: RwLock<GroupMembers<A>>,
}

struct Groups<A: Actor> {
    by_name: HashMap<Name, u32, Hasher>,
    list: Vec<Group<A>>,
}

impl<A: Actor> Groups<A> {
    fn get(&self, name: &str) -> Option<&Group<A>> {
        self.by_name.get(name).map(|&g| &self.list[g as usize])
    }
}

/// What the write lock guards.
struct State<A: Actor> {
    /// The name records (readers reach them by address, not through here).
    names: Chunked<NameRec<A>>,
    members: Chunked<Member>,
    /// Member records initialized so far.
    members_hwm: usize,
    free_members: Vec<u32>,
    /// Names and groups beyond the first, by member record (rare).
    more: HashMap<u32, More, Hasher>,
    /// Name records initialized so far (reused ones come from `limbo`).
    names_hwm: usize,
    /// Table slots in use and tombstones.
    live: usize,
    tombs: usize,
}

impl<A: Actor> State<A> {
    fn member(&mut self, m: u32) -> &mut Member {
        debug_assert!((m as usize) < self.members_hwm);
        let p = self.members.at(m as usize);
        // SAFETY: records below `members_hwm` were initialized (and only
        // writers, serialized by the lock we hold, touch them).
        unsafe { (*p).assume_init_mut() }
    }

    fn names_of(&mut self, m: u32) -> Vec<u32> {
        let first = self.member(m).name;
        let more = self.more.get(&m).into_iter().flat_map(|x| x.names.iter());
        (first != NONE)
            .then_some(first)
            .into_iter()
            .chain(more.copied())
            .collect()
    }

    fn groups_of(&mut self, m: u32) -> Vec<(u32, u32)> {
        let Member { gid, pos, .. } = *self.member(m);
        let more = self.more.get(&m).into_iter().flat_map(|x| x.groups.iter());
        (gid != NONE)
            .then_some((gid, pos))
            .into_iter()
            .chain(more.copied())
            .collect()
    }

    fn add_name(&mut self, m: u32, idx: u32) {
        let member = self.member(m);
        if member.name == NONE {
            member.name = idx;
        } else {
            self.more.entry(m).or_default().names.push(idx);
        }
    }

    fn remove_name(&mut self, m: u32, idx: u32) {
        if self.member(m).name == idx {
            let next = self.more.get_mut(&m).and_then(|x| x.names.pop());
            self.member(m).name = next.unwrap_or(NONE);
        } else if let Some(x) = self.more.get_mut(&m) {
            x.names.retain(|&n| n != idx);
        }
        self.trim(m);
    }

    fn group_pos(&mut self, m: u32, gid: u32) -> Option<u32> {
        let member = self.member(m);
        if member.gid == gid {
            return Some(member.pos);
        }
        let x = self.more.get(&m)?;
        x.groups.iter().find(|g| g.0 == gid).map(|g| g.1)
    }

    fn add_group(&mut self, m: u32, gid: u32, pos: u32) {
        let member = self.member(m);
        if member.gid == NONE {
            (member.gid, member.pos) = (gid, pos);
        } else {
            self.more.entry(m).or_default().groups.push((gid, pos));
        }
    }

    fn set_pos(&mut self, m: u32, gid: u32, pos: u32) {
        let member = self.member(m);
        if member.gid == gid {
            member.pos = pos;
        } else if let Some(g) = self
            .more
            .get_mut(&m)
            .and_then(|x| x.groups.iter_mut().find(|g| g.0 == gid))
        {
            g.1 = pos;
        }
    }

    fn remove_group(&mut self, m: u32, gid: u32) {
        if self.member(m).gid == gid {
            let next = self.more.get_mut(&m).and_then(|x| x.groups.pop());
            let member = self.member(m);
            (member.gid, member.pos) = next.unwrap_or((NONE, 0));
        } else if let Some(x) = self.more.get_mut(&m) {
            x.groups.retain(|g| g.0 != gid);
        }
        self.trim(m);
    }

    fn trim(&mut self, m: u32) {
        if self.more.get(&m).is_some_and(More::is_empty) {
            self.more.remove(&m);
        }
    }

    /// Holds no name and no group.
    fn is_empty(&mut self, m: u32) -> bool {
        let member = self.member(m);
        member.name == NONE && member.gid == NONE
    }
}

/// The registry's monitor of its actors, shared by all of them.
struct Hook<A: Actor> {
    inner: Weak<Inner<A>>,
}

impl<A: Actor> StopListener for Hook<A> {
    fn actor_stopped(&self, id: ActorId, token: u64, _reason: &StopReason) {
        if let Some(inner) = self.inner.upgrade() {
            inner.forget(id, token as u32);
        }
    }
}

struct Inner<A: Actor> {
    hasher: Hasher,
    table: Atomic<Table>,
    names_len: AtomicUsize,
    state: Mutex<State<A>>,
    groups: RwLock<Groups<A>>,
    /// Every member, dense (for `dispatch` and `len`); `owners[i]` is
    /// `refs[i]`'s member record, which holds `i` as `all_pos`.
    all: RwLock<GroupMembers<A>>,
    /// Name records whose last reader is gone, free for reuse.
    limbo: Arc<Mutex<Vec<u32>>>,
    hook: Arc<dyn StopListener>,
}

// SAFETY: the name records (read from any thread) hold `ActorRef`s and names,
// both `Send + Sync`; everything else is behind locks or atomics.
unsafe impl<A: Actor> Sync for Inner<A> {}
// SAFETY: as above.
unsafe impl<A: Actor> Send for Inner<A> {}

impl<A: Actor> Inner<A> {
    /// The record at `idx`, valid while `guard` lives.
    ///
    /// # Safety
    /// `idx` is a live record's (its owner's list, under the write lock).
    #[inline]
    unsafe fn rec<'g>(st: &State<A>, idx: u32, _guard: &'g Guard) -> &'g NameRec<A> {
        let p = st.names.at(idx as usize);
        // SAFETY: per the caller; records are reused only after every guard
        // that could see them is gone, and chunks never move.
        unsafe { (*p).assume_init_ref() }
    }

    /// The record a live slot value points to.
    ///
    /// # Safety
    /// `v` was read from a table slot under `guard` (or under the write
    /// lock): the record is initialized (the slot's release store came
    /// after) and is not reused while the guard lives (records are reused
    /// only after every guard that could see them is gone; their chunks are
    /// never freed before the registry).
    #[inline]
    unsafe fn rec_at(v: u64, _guard: &Guard) -> &NameRec<A> {
        let p = (v & PTR_MASK) as *const MaybeUninit<NameRec<A>>;
        // SAFETY: per the caller.
        unsafe { (*p).assume_init_ref() }
    }

    /// The slot, record index and record holding `name`. Inlined into
    /// every caller: the call itself was a sixth of a small-table lookup.
    #[inline(always)]
    fn lookup<'g>(&self, name: &str, guard: &'g Guard) -> Option<(usize, u32, &'g NameRec<A>)> {
        let hash = self.hasher.hash_one(name);
        let tag = tag_of(hash);
        // SAFETY: the table is never null; a replaced one is freed only once
        // every guard that could have loaded it is gone.
        let table = unsafe { self.table.load(Ordering::Acquire, guard).deref() };
        let mask = table.slots.len() - 1;
        let mut i = hash as usize & mask;
        loop {
            let v = table.slots[i].load(Ordering::Acquire);
            if v == EMPTY {
                return None;
            }
            if v & TAG_MASK == tag {
                // SAFETY: read from a slot under `guard` (acquire pairs with
                // the writer's release store after initializing it).
                let rec = unsafe { Self::rec_at(v, guard) };
                if same_bytes(rec.name.as_bytes(), name.as_bytes()) {
                    return Some((i, rec.idx, rec));
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// The member record of `actor` in this registry, if it has one.
    fn member_of(&self, actor: &ActorRef<A>) -> Option<u32> {
        actor.listener_token(&self.hook).map(|t| t as u32)
    }

    /// A new member record for `actor`, its monitor installed; `None` if
    /// the actor has stopped.
    fn new_member(&self, st: &mut State<A>, actor: &ActorRef<A>) -> Option<u32> {
        let m = match st.free_members.pop() {
            Some(m) => m,
            None => {
                let m = st.members_hwm;
                st.members.ensure(m);
                let p = st.members.at(m);
                // SAFETY: just made addressable; uninitialized until now.
                unsafe { (*p).write(Member::new(NONE)) };
                st.members_hwm += 1;
                m as u32
            }
        };
        if !actor.listen(self.hook.clone(), m as u64) {
            st.free_members.push(m);
            return None;
        }
        let mut all = self.all.write();
        *st.member(m) = Member::new(all.refs.len() as u32);
        all.refs.push(actor.clone());
        all.owners.push(m);
        Some(m)
    }

    /// The actor of live member record `m`.
    fn actor_of(&self, st: &mut State<A>, m: u32) -> Option<ActorRef<A>> {
        let at = st.member(m).all_pos;
        (at != NONE).then(|| self.all.read().refs[at as usize].clone())
    }

    /// Frees member record `m` (its names and groups already gone).
    fn free_member(&self, st: &mut State<A>, m: u32) {
        let at = std::mem::replace(&mut st.member(m).all_pos, NONE);
        if at == NONE {
            return;
        }
        *st.member(m) = Member::new(NONE);
        st.more.remove(&m);
        let mut all = self.all.write();
        all.refs.swap_remove(at as usize);
        all.owners.swap_remove(at as usize);
        if let Some(&moved) = all.owners.get(at as usize) {
            st.member(moved).all_pos = at;
        }
        st.free_members.push(m);
    }

    /// Frees `m` if it holds no name and no group any more, and removes its
    /// monitor.
    fn drop_member_if_empty(&self, st: &mut State<A>, m: u32) {
        if !st.is_empty(m) {
            return;
        }
        if let Some(actor) = self.actor_of(st, m) {
            actor.unlisten(&self.hook);
            self.free_member(st, m);
        }
    }

    /// Adds the name record (`name` → `actor`, member `owner`).
    fn insert_name(
        &self,
        st: &mut State<A>,
        name: &str,
        actor: &ActorRef<A>,
        owner: u32,
        guard: &Guard,
    ) -> u32 {
        let idx = match self.limbo.lock().pop() {
            Some(i) => i as usize,
            None => {
                let i = st.names_hwm;
                st.names.ensure(i);
                st.names_hwm += 1;
                i
            }
        };
        let rec = NameRec {
            name: ManuallyDrop::new(Name::from(name)),
            actor: ManuallyDrop::new(actor.clone()),
            owner,
            idx: idx as u32,
        };
        let at = st.names.at(idx);
        // SAFETY: unreachable by readers: fresh, or back from `limbo` after
        // its last reader (its old contents were moved out by `remove_name`).
        unsafe { (*at).write(rec) };
        self.grow_if_full(st, guard);
        // SAFETY: as in `lookup`.
        let table = unsafe { self.table.load(Ordering::Acquire, guard).deref() };
        let hash = self.hasher.hash_one(name);
        let i = table.free_slot(hash);
        if table.slots[i].load(Ordering::Relaxed) == TOMB {
            st.tombs -= 1;
        }
        table.slots[i].store(slot_of(tag_of(hash), at), Ordering::Release);
        st.live += 1;
        self.names_len.fetch_add(1, Ordering::Relaxed);
        idx as u32
    }

    /// Rebuilds the table, doubled or purged of tombstones, when one more
    /// entry would fill it past 7/8. Sized for at most 7/16 full after.
    fn grow_if_full(&self, st: &mut State<A>, guard: &Guard) {
        let old = self.table.load(Ordering::Acquire, guard);
        // SAFETY: as in `lookup`.
        let table = unsafe { old.deref() };
        let len = table.slots.len();
        if (st.live + st.tombs + 1) * 8 <= len * 7 {
            return;
        }
        let mut new_len = 16;
        while (st.live + 1) * 16 > new_len * 7 {
            new_len *= 2;
        }
        let new = Table::new(new_len);
        for s in table.slots.iter() {
            let v = s.load(Ordering::Relaxed);
            if v > TOMB {
                // SAFETY: a live slot (read under the write lock).
                let rec = unsafe { Self::rec_at(v, guard) };
                let i = new.free_slot(self.hasher.hash_one(rec.name.as_str()));
                new.slots[i].store(v, Ordering::Relaxed);
            }
        }
        self.table.store(Owned::new(new), Ordering::Release);
        st.tombs = 0;
        // SAFETY: `old` is unreachable for guards taken from now on.
        unsafe { guard.defer_destroy(old) };
        // A whole table: hand it to the collector now rather than when this
        // thread's bag of deferred frees fills up.
        guard.flush();
    }

    /// Removes the entry at table slot `slot` (record `idx`): a tombstone
    /// now, the record's contents dropped and the record reused once no
    /// guard can see it.
    fn remove_name(&self, st: &mut State<A>, slot: usize, idx: u32, guard: &Guard) {
        // SAFETY: as in `lookup`.
        let table = unsafe { self.table.load(Ordering::Acquire, guard).deref() };
        table.slots[slot].store(TOMB, Ordering::Release);
        st.live -= 1;
        st.tombs += 1;
        self.names_len.fetch_sub(1, Ordering::Relaxed);
        // SAFETY: `idx` was live in the table under the write lock.
        let rec = unsafe { Self::rec(st, idx, guard) };
        // The record is unreachable for new lookups and rewritten only after
        // it comes back from `limbo`: its contents move out exactly once
        // here. Readers that still see it read the same bits, whose targets
        // stay alive until the deferred drop below.
        // SAFETY: as just said.
        let (name, actor) = unsafe { (ptr::read(&*rec.name), ptr::read(&*rec.actor)) };
        let limbo = self.limbo.clone();
        guard.defer(move || {
            drop(actor);
            drop(name);
            limbo.lock().push(idx);
        });
    }

    /// Removes `name`'s entry and drops it from its owner's names; returns
    /// the owner's member record and its actor.
    fn take_name(
        &self,
        st: &mut State<A>,
        name: &str,
        guard: &Guard,
    ) -> Option<(u32, ActorRef<A>)> {
        let (slot, idx, rec) = self.lookup(name, guard)?;
        let owner = rec.owner;
        let actor = (*rec.actor).clone();
        self.remove_name(st, slot, idx, guard);
        st.remove_name(owner, idx);
        Some((owner, actor))
    }

    /// Removes member `m` from group `gid`, keeping the group dense.
    fn leave_group(&self, st: &mut State<A>, m: u32, gid: u32) -> bool {
        let Some(pos) = st.group_pos(m, gid) else {
            return false;
        };
        let groups = self.groups.read();
        let mut g = groups.list[gid as usize].members.write();
        let pos = pos as usize;
        g.refs.swap_remove(pos);
        g.owners.swap_remove(pos);
        if let Some(&moved) = g.owners.get(pos) {
            st.set_pos(moved, gid, pos as u32);
        }
        drop(g);
        drop(groups);
        st.remove_group(m, gid);
        true
    }

    /// The stopped actor's monitor: forget everything about it.
    fn forget(&self, id: ActorId, m: u32) {
        let guard = epoch::pin();
        let mut st = self.state.lock();
        if m as usize >= st.members_hwm {
            return;
        }
        // A late call for a record freed (and maybe reused) since: leave it.
        if self.actor_of(&mut st, m).map(|a| a.id()) != Some(id) {
            return;
        }
        let (names, groups) = (st.names_of(m), st.groups_of(m));
        for idx in names {
            // SAFETY: the member's names are live records (under the lock).
            let rec = unsafe { Self::rec(&st, idx, &guard) };
            if let Some((slot, found, _)) = self.lookup(rec.name.as_str(), &guard) {
                if found == idx {
                    self.remove_name(&mut st, slot, idx, &guard);
                }
            }
        }
        for (gid, _) in groups {
            self.leave_group(&mut st, m, gid);
        }
        self.free_member(&mut st, m);
    }
}

impl<A: Actor> Drop for Inner<A> {
    fn drop(&mut self) {
        // SAFETY: we are the last user: no guard can reach this table.
        let guard = unsafe { epoch::unprotected() };
        let table = self
            .table
            .swap(epoch::Shared::null(), Ordering::Relaxed, guard);
        // SAFETY: the table came from `Owned::new`; nobody else holds it.
        let table = unsafe { table.into_owned() };
        for s in table.slots.iter() {
            let v = s.load(Ordering::Relaxed);
            if v > TOMB {
                let p = (v & PTR_MASK) as *mut MaybeUninit<NameRec<A>>;
                // SAFETY: a live record, dropped once here.
                unsafe { (*p).assume_init_drop() };
            }
        }
        let st = self.state.get_mut();
        for m in 0..st.members_hwm {
            // SAFETY: initialized below `members_hwm`.
            unsafe { (*st.members.at(m)).assume_init_drop() };
        }
    }
}

impl<A: Actor> Drop for NameRec<A> {
    fn drop(&mut self) {
        // SAFETY: only called for a record still owning its contents (a live
        // one, from `Inner::drop`).
        unsafe {
            ManuallyDrop::drop(&mut self.name);
            ManuallyDrop::drop(&mut self.actor);
        }
    }
}

/// Actors of type `A` by unique name and by group; see the [module
/// docs](self). Cheap to clone (a shared handle); `Send + Sync`.
pub struct Registry<A: Actor> {
    inner: Arc<Inner<A>>,
}

impl<A: Actor> Clone for Registry<A> {
    fn clone(&self) -> Self {
        Registry {
            inner: self.inner.clone(),
        }
    }
}

impl<A: Actor> Default for Registry<A> {
    fn default() -> Self {
        Self::new()
    }
}

impl<A: Actor> fmt::Debug for Registry<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("names", &self.names_len())
            .field("members", &self.len())
            .finish()
    }
}

impl<A: Actor> Registry<A> {
    /// An empty registry.
    pub fn new() -> Self {
        Registry {
            inner: Arc::new_cyclic(|weak| Inner {
                hasher: Hasher::default(),
                table: Atomic::new(Table::new(16)),
                names_len: AtomicUsize::new(0),
                state: Mutex::new(State {
                    names: Chunked::new(),
                    members: Chunked::new(),
                    members_hwm: 0,
                    free_members: Vec::new(),
                    more: HashMap::default(),
                    names_hwm: 0,
                    live: 0,
                    tombs: 0,
                }),
                groups: RwLock::new(Groups {
                    by_name: HashMap::default(),
                    list: Vec::new(),
                }),
                all: RwLock::new(GroupMembers {
                    refs: Vec::new(),
                    owners: Vec::new(),
                }),
                limbo: Arc::new(Mutex::new(Vec::new())),
                hook: Arc::new(Hook {
                    inner: weak.clone(),
                }),
            }),
        }
    }

    /// The write lock, and `actor`'s member record (created, with its
    /// monitor, if it has none). `None` if the actor has stopped.
    fn lock_member(&self, actor: &ActorRef<A>) -> Option<(MutexGuard<'_, State<A>>, u32)> {
        let mut st = self.inner.state.lock();
        if !actor.is_alive() {
            return None;
        }
        let m = match self.inner.member_of(actor) {
            Some(m) => m,
            None => self.inner.new_member(&mut st, actor)?,
        };
        Some((st, m))
    }

    /// Registers `actor` under the unique `name`. An actor may hold several
    /// names. Fails if another live actor holds the name, or if `actor` has
    /// stopped. The entry goes away by itself when the actor stops, or with
    /// [`unregister`](Self::unregister).
    pub fn register(
        &self,
        name: impl AsRef<str>,
        actor: &ActorRef<A>,
    ) -> Result<(), RegisterError> {
        let name: &str = name.as_ref();
        let guard = epoch::pin();
        let inner = &*self.inner;
        let (mut st, m) = self
            .lock_member(actor)
            .ok_or(RegisterError::ActorStopped(actor.id()))?;
        if let Some((_, _, rec)) = inner.lookup(name, &guard) {
            let holder = &*rec.actor;
            if holder.id() == actor.id() {
                return Ok(());
            }
            if holder.is_alive() {
                let holder = holder.id();
                // A member created for this call alone goes again.
                inner.drop_member_if_empty(&mut st, m);
                return Err(RegisterError::NameTaken {
                    name: name.to_string(),
                    holder,
                });
            }
            // The holder is stopping and its monitor has not run yet: take
            // the name over.
            if let Some((owner, _)) = inner.take_name(&mut st, name, &guard) {
                inner.drop_member_if_empty(&mut st, owner);
            }
        }
        let idx = inner.insert_name(&mut st, name, actor, m, &guard);
        st.add_name(m, idx);
        Ok(())
    }

    /// Removes `name`; returns the actor that held it. The actor stays in
    /// its groups.
    pub fn unregister(&self, name: &str) -> Option<ActorRef<A>> {
        let guard = epoch::pin();
        let mut st = self.inner.state.lock();
        let (owner, actor) = self.inner.take_name(&mut st, name, &guard)?;
        self.inner.drop_member_if_empty(&mut st, owner);
        Some(actor)
    }

    /// Adds `actor` to `group` (created on first use). Returns `false` if it
    /// was already a member, or has stopped; an actor may be in any number
    /// of groups.
    pub fn join(&self, group: &str, actor: &ActorRef<A>) -> bool {
        let Some((mut st, m)) = self.lock_member(actor) else {
            return false;
        };
        let gid = {
            let found = self.inner.groups.read().by_name.get(group).copied();
            match found {
                Some(gid) => gid,
                None => {
                    let mut groups = self.inner.groups.write();
                    let gid = groups.list.len() as u32;
                    groups.list.push(Group {
                        name: Name::from(group),
                        members: RwLock::new(GroupMembers {
                            refs: Vec::new(),
                            owners: Vec::new(),
                        }),
                    });
                    groups.by_name.insert(Name::from(group), gid);
                    gid
                }
            }
        };
        if st.group_pos(m, gid).is_some() {
            return false;
        }
        let pos = {
            let groups = self.inner.groups.read();
            let mut g = groups.list[gid as usize].members.write();
            g.refs.push(actor.clone());
            g.owners.push(m);
            g.refs.len() - 1
        };
        st.add_group(m, gid, pos as u32);
        true
    }

    /// Removes `actor` from `group`; `false` if it was not a member.
    pub fn leave(&self, group: &str, actor: &ActorRef<A>) -> bool {
        let mut st = self.inner.state.lock();
        let Some(m) = self.inner.member_of(actor) else {
            return false;
        };
        let Some(gid) = self.inner.groups.read().by_name.get(group).copied() else {
            return false;
        };
        let left = self.inner.leave_group(&mut st, m, gid);
        self.inner.drop_member_if_empty(&mut st, m);
        left
    }

    /// The actor registered under `name`. Lock-free: an epoch guard and a
    /// probe; see [`reader`](Self::reader) to look up many names under one
    /// guard without cloning.
    #[inline]
    pub fn find(&self, name: &str) -> Option<ActorRef<A>> {
        let guard = epoch::pin();
        self.inner
            .lookup(name, &guard)
            .map(|(_, _, rec)| (*rec.actor).clone())
    }

    /// A read handle holding one epoch guard: [`Reader::find`] then costs
    /// only the hash and the probe, and returns a borrowed reference. Keep it
    /// short-lived: removed entries are freed only once no guard that saw
    /// them is alive.
    pub fn reader(&self) -> Reader<'_, A> {
        Reader {
            inner: &self.inner,
            guard: epoch::pin(),
        }
    }

    /// Sends `msg` to the actor registered under `name`: `Closed(msg)` if
    /// no actor holds the name, else what the actor's `tell` says.
    pub fn send(&self, name: &str, msg: A::Msg) -> Result<(), SendError<A::Msg>> {
        let guard = epoch::pin();
        let Some((_, _, rec)) = self.inner.lookup(name, &guard) else {
            return Err(SendError::Closed(msg));
        };
        rec.actor.tell(msg)
    }

    /// The members of `group` (a snapshot; empty for an unknown group).
    pub fn members(&self, group: &str) -> Vec<ActorRef<A>> {
        let groups = self.inner.groups.read();
        groups
            .get(group)
            .map(|g| g.members.read().refs.clone())
            .unwrap_or_default()
    }

    /// How many actors are in `group`.
    pub fn group_len(&self, group: &str) -> usize {
        let groups = self.inner.groups.read();
        groups.get(group).map_or(0, |g| g.members.read().refs.len())
    }

    /// The names of the groups that have members.
    pub fn groups(&self) -> Vec<String> {
        let groups = self.inner.groups.read();
        groups
            .list
            .iter()
            .filter(|g| !g.members.read().refs.is_empty())
            .map(|g| g.name.to_string())
            .collect()
    }

    /// Registered actors (named or in a group).
    pub fn len(&self) -> usize {
        self.inner.all.read().refs.len()
    }

    /// Whether no actor is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Names registered.
    pub fn names_len(&self) -> usize {
        self.inner.names_len.load(Ordering::Relaxed)
    }

    /// Sends a clone of `msg` to every member of `group`, without waiting
    /// for any of them to handle it; returns how many accepted it (a member
    /// that stopped or whose bounded mailbox is full is skipped).
    pub fn dispatch_group(&self, group: &str, msg: A::Msg) -> usize
    where
        A::Msg: Clone,
    {
        self.dispatch_group_with(group, |_| msg.clone())
    }

    /// As [`dispatch_group`](Self::dispatch_group), building each member's
    /// message with `make`.
    pub fn dispatch_group_with(
        &self,
        group: &str,
        mut make: impl FnMut(&ActorRef<A>) -> A::Msg,
    ) -> usize {
        let groups = self.inner.groups.read();
        let Some(g) = groups.get(group) else {
            return 0;
        };
        let members = g.members.read();
        let mut sent = 0;
        for m in &members.refs {
            sent += m.try_tell(make(m)).is_ok() as usize;
        }
        sent
    }

    /// Sends a clone of `msg` to every registered actor (named or in a
    /// group), without waiting; returns how many accepted it.
    pub fn dispatch(&self, msg: A::Msg) -> usize
    where
        A::Msg: Clone,
    {
        self.dispatch_with(|_| msg.clone())
    }

    /// As [`dispatch`](Self::dispatch), building each message with `make`.
    pub fn dispatch_with(&self, mut make: impl FnMut(&ActorRef<A>) -> A::Msg) -> usize {
        let all = self.inner.all.read();
        let mut sent = 0;
        for a in &all.refs {
            sent += a.try_tell(make(a)).is_ok() as usize;
        }
        sent
    }
}

/// Many lookups under one epoch guard; from [`Registry::reader`].
pub struct Reader<'a, A: Actor> {
    inner: &'a Inner<A>,
    guard: Guard,
}

impl<A: Actor> Reader<'_, A> {
    /// The actor registered under `name`, borrowed for the reader's life.
    #[inline]
    pub fn find(&self, name: &str) -> Option<&ActorRef<A>> {
        self.inner
            .lookup(name, &self.guard)
            .map(|(_, _, rec)| &*rec.actor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_bytes_agrees_with_slice_equality() {
        let base: Vec<u8> = (0..40u8).map(|b| b'a' + b % 26).collect();
        for n in 0..=40 {
            let a = &base[..n];
            let copy = a.to_vec();
            assert!(same_bytes(a, copy.as_slice()));
            for at in 0..n {
                let mut b = a.to_vec();
                b[at] ^= 1;
                assert!(!same_bytes(a, &b), "length {n}, differing at {at}");
            }
            if n > 0 {
                assert!(!same_bytes(a, &base[..n - 1]));
            }
        }
    }

    #[test]
    fn slots_keep_tag_and_address_apart() {
        let rec = Box::new(7u64);
        let tag = tag_of(u64::MAX);
        let v = slot_of(tag, &*rec as *const u64);
        assert!(v > TOMB);
        assert_eq!(v & TAG_MASK, tag);
        assert_eq!((v & PTR_MASK) as *const u64, &*rec as *const u64);
        assert_ne!(tag_of(0) & TAG_MASK, 0, "a tag is never zero");
    }

    #[test]
    #[should_panic(expected = "does not fit in 48 bits")]
    fn an_address_above_48_bits_is_refused() {
        slot_of(tag_of(1), (1u64 << 48) as *const u8);
    }

    #[test]
    fn chunks_tile_the_indices_without_gaps_or_overlaps() {
        let mut expected = (0usize, 0usize);
        for i in 0..10_000 {
            let (c, off) = locate(i);
            if c != expected.0 {
                assert_eq!(
                    expected.1,
                    chunk_len(expected.0),
                    "chunk {} not full",
                    expected.0
                );
                expected = (expected.0 + 1, 0);
            }
            assert_eq!((c, off), expected, "index {i}");
            assert!(off < chunk_len(c));
            expected.1 += 1;
        }
    }
}
