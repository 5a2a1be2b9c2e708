//! A registry of actors of one type: unique names, groups, lookups and
//! dispatch (in the manner of Gleam's `chip` registry, with Troupe's names).
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
//! registry.join_group("sessions", &alice);
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
//!   foldhash). A slot is one `u64`: a 16-bit tag (15 bits of the name's hash and a
//!   set top bit) above the
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
//!   monitors (no "selector bloat", a registry watching ever more actors: monitors are
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

mod chunks;
mod error;
mod inner;
mod members;
mod name_table;

pub use error::RegisterError;

use crate::actor::{Actor, ActorRef, SendError};
use crossbeam_epoch::{self as epoch, Atomic, Guard};
use parking_lot::{Mutex, MutexGuard, RwLock};
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use chunks::*;
use inner::*;
use members::*;
use name_table::*;

pub(super) type Hasher = foldhash::fast::RandomState;

/// A registered name: up to 24 bytes stored inline (no allocation, no
/// pointer to chase on lookup), longer ones on the heap.
pub(super) type Name = compact_str::CompactString;

/// "No record" in a member's first-name or first-group field.
pub(super) const NONE: u32 = u32::MAX;

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
    pub fn join_group(&self, group: &str, actor: &ActorRef<A>) -> bool {
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

    /// Adds `actor` to `group`: the old name of [`join_group`](Self::join_group).
    #[deprecated(
        since = "0.2.0",
        note = "renamed `join_group`: `join` means waiting for an actor's stop"
    )]
    pub fn join(&self, group: &str, actor: &ActorRef<A>) -> bool {
        self.join_group(group, actor)
    }

    /// Removes `actor` from `group`: the old name of [`leave_group`](Self::leave_group).
    #[deprecated(since = "0.2.0", note = "renamed `leave_group`, beside `join_group`")]
    pub fn leave(&self, group: &str, actor: &ActorRef<A>) -> bool {
        self.leave_group(group, actor)
    }

    /// Removes `actor` from `group`; `false` if it was not a member.
    pub fn leave_group(&self, group: &str, actor: &ActorRef<A>) -> bool {
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
