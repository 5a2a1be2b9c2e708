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
//! * **Names**: a lock-free hash map (`papaya`, foldhash) from name to
//!   `ActorRef`. A lookup is plain atomic loads under an epoch guard; the
//!   guard is the only per-call cost beyond the probe, and
//!   [`Registry::reader`] lets a caller hold one guard for many lookups.
//!   Cost does not depend on the number of entries (beyond the cache misses
//!   a larger table takes).
//! * **Members**: one record per registered actor (its names and groups),
//!   in 16 shards by actor id, each under a `parking_lot::RwLock`. Every
//!   mutation of an actor's registration takes its shard's write lock, so an
//!   actor's registration and its cleanup are serialized.
//! * **Groups**: a dense `Vec<ActorRef>` per group (plus a position index for
//!   O(1) removal by swap), under a read-write lock; dispatch iterates the
//!   vector under the read lock. Groups are found by name in a small map.
//!
//! # Invariants
//!
//! * An actor that has a record has exactly one monitor installed by this
//!   registry (`ActorRef::on_stop`), installed after its record is inserted
//!   and outside every lock (the monitor runs at once if the actor has
//!   already stopped). The monitor holds only a `Weak` to the registry and
//!   the actor's id: a dropped registry frees its memory.
//! * When an actor stops, its monitor removes its record, every name it holds
//!   (`remove_if` the entry is still this actor: a name taken over by a new
//!   actor is left alone) and its group memberships. No entry outlives its
//!   actor by more than the monitor's run; an entry found in that instant
//!   gives [`NamedSendError::Stopped`] on send.
//! * A name held by a stopped actor whose monitor has not run yet may be
//!   taken over by a new registration (the old entry is replaced only if it
//!   is still that dead actor).
//! * Dispatch costs one read lock per group and one `tell` per member: the
//!   per-message cost does not grow with the number of registered actors or
//!   monitors (seed 001's "selector bloat" cannot happen: monitors are
//!   callbacks on the watched actor, not entries scanned per message).
//!
//! Dispatch sends with `tell`: it never waits for a member to handle the
//! message. Called from inside an actor, each woken member is scheduled on
//! the caller's worker (cheap); from a plain thread, through the global
//! queue. It holds the group's read lock while sending: with
//! `OverflowPolicy::Block` mailboxes, a plain-thread dispatch that blocks on
//! a full member also holds up joins, leaves and cleanups of that group
//! until the member has room.
//!
//! # Memory
//!
//! Per registered actor with one name and one group (measured with
//! `mallinfo2` at 10,000 entries): ~230 bytes for the name entry (names up
//! to 24 bytes are stored inline), the member record and the monitor's
//! closure, ~45 bytes for the group membership, plus 80 bytes for the
//! actor's watcher list when this monitor is its first watcher (the runtime
//! allocates room for four).

use crate::actor::{Actor, ActorId, ActorRef};
use crate::error::SendError;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Weak};

type Hasher = foldhash::fast::RandomState;

const SHARDS: usize = 16;

/// A registered name: up to 24 bytes stored inline (no allocation, no
/// pointer to chase on lookup), longer ones on the heap.
type Name = compact_str::CompactString;

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

/// Why a send by name failed; holds the message.
#[derive(PartialEq, Eq)]
pub enum NamedSendError<M> {
    /// No actor is registered under that name.
    UnknownName(M),
    /// The registered actor has stopped (its entry is being removed).
    Stopped(M),
    /// The registered actor's bounded mailbox is full.
    Full(M),
}

impl<M> NamedSendError<M> {
    /// The message that was not delivered.
    pub fn into_inner(self) -> M {
        match self {
            NamedSendError::UnknownName(m)
            | NamedSendError::Stopped(m)
            | NamedSendError::Full(m) => m,
        }
    }
}

impl<M> fmt::Debug for NamedSendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NamedSendError::UnknownName(_) => "NamedSendError::UnknownName(..)",
            NamedSendError::Stopped(_) => "NamedSendError::Stopped(..)",
            NamedSendError::Full(_) => "NamedSendError::Full(..)",
        })
    }
}

impl<M> fmt::Display for NamedSendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NamedSendError::UnknownName(_) => {
                "no actor is registered under that name; the message is returned"
            }
            NamedSendError::Stopped(_) => {
                "the registered actor has stopped; the message is returned"
            }
            NamedSendError::Full(_) => {
                "the registered actor's bounded mailbox is full; the message is returned"
            }
        })
    }
}

impl<M> std::error::Error for NamedSendError<M> {}

/// One registered actor: what to undo when it stops.
struct Member<A: Actor> {
    names: Few<Name>,
    groups: Few<Arc<Group<A>>>,
    actor: ActorRef<A>,
}

/// A list that usually holds one element: no allocation for zero or one.
enum Few<T> {
    Zero,
    One(T),
    Many(Vec<T>),
}

impl<T> Few<T> {
    fn push(&mut self, t: T) {
        *self = match std::mem::replace(self, Few::Zero) {
            Few::Zero => Few::One(t),
            Few::One(a) => Few::Many(vec![a, t]),
            Few::Many(mut v) => {
                v.push(t);
                Few::Many(v)
            }
        }
    }

    fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        *self = match std::mem::replace(self, Few::Zero) {
            Few::Zero => Few::Zero,
            Few::One(a) if keep(&a) => Few::One(a),
            Few::One(_) => Few::Zero,
            Few::Many(mut v) => {
                v.retain(keep);
                match (v.pop(), v.is_empty()) {
                    (None, _) => Few::Zero,
                    (Some(a), true) => Few::One(a),
                    (Some(a), false) => {
                        v.push(a);
                        Few::Many(v)
                    }
                }
            }
        }
    }

    fn is_empty(&self) -> bool {
        matches!(self, Few::Zero)
    }

    fn iter(&self) -> std::slice::Iter<'_, T> {
        match self {
            Few::Zero => [].iter(),
            Few::One(a) => std::slice::from_ref(a).iter(),
            Few::Many(v) => v.iter(),
        }
    }
}

/// A group's members, dense for dispatch.
struct GroupMembers<A: Actor> {
    refs: Vec<ActorRef<A>>,
    pos: HashMap<ActorId, usize, Hasher>,
}

struct Group<A: Actor> {
    members: RwLock<GroupMembers<A>>,
}

impl<A: Actor> Group<A> {
    fn new() -> Self {
        Group {
            members: RwLock::new(GroupMembers {
                refs: Vec::new(),
                pos: HashMap::default(),
            }),
        }
    }

    fn add(&self, actor: &ActorRef<A>) -> bool {
        let mut g = self.members.write();
        if g.pos.contains_key(&actor.id()) {
            return false;
        }
        let at = g.refs.len();
        g.refs.push(actor.clone());
        g.pos.insert(actor.id(), at);
        true
    }

    fn remove(&self, id: ActorId) -> bool {
        let mut g = self.members.write();
        let Some(at) = g.pos.remove(&id) else {
            return false;
        };
        g.refs.swap_remove(at);
        if let Some(moved) = g.refs.get(at) {
            let moved = moved.id();
            g.pos.insert(moved, at);
        }
        true
    }
}

/// One shard of the member records.
type MemberShard<A> = RwLock<HashMap<ActorId, Member<A>, Hasher>>;

struct Inner<A: Actor> {
    names: papaya::HashMap<Name, ActorRef<A>, Hasher>,
    members: Box<[MemberShard<A>]>,
    groups: RwLock<HashMap<String, Arc<Group<A>>, Hasher>>,
}

impl<A: Actor> Inner<A> {
    fn shard(&self, id: ActorId) -> &MemberShard<A> {
        &self.members[(id.as_u64() as usize) % SHARDS]
    }

    fn group(&self, name: &str) -> Option<Arc<Group<A>>> {
        self.groups.read().get(name).cloned()
    }

    fn group_or_create(&self, name: &str) -> Arc<Group<A>> {
        if let Some(g) = self.group(name) {
            return g;
        }
        self.groups
            .write()
            .entry(name.to_string())
            .or_insert_with(|| Arc::new(Group::new()))
            .clone()
    }

    /// The stopped actor's monitor: forget everything about it.
    fn forget(&self, id: ActorId) {
        let Some(member) = self.shard(id).write().remove(&id) else {
            return;
        };
        let guard = self.names.guard();
        for name in member.names.iter() {
            let _ = self.names.remove_if(&**name, |_, v| v.id() == id, &guard);
        }
        for g in member.groups.iter() {
            g.remove(id);
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
            .field("names", &self.inner.names.len())
            .field("members", &self.len())
            .finish()
    }
}

impl<A: Actor> Registry<A> {
    /// An empty registry.
    pub fn new() -> Self {
        Registry {
            inner: Arc::new(Inner {
                names: papaya::HashMap::builder()
                    .hasher(Hasher::default())
                    .resize_mode(papaya::ResizeMode::Blocking)
                    .build(),
                members: (0..SHARDS)
                    .map(|_| RwLock::new(HashMap::default()))
                    .collect(),
                groups: RwLock::new(HashMap::default()),
            }),
        }
    }

    /// Adds `actor` as a member if it is not one yet; runs `f` on its record
    /// under its shard's lock. Installs the monitor for a new member. A
    /// record left empty (`f` failed) is removed again.
    fn with_member<R>(
        &self,
        actor: &ActorRef<A>,
        f: impl FnOnce(&mut Member<A>) -> Result<R, RegisterError>,
    ) -> Result<R, RegisterError> {
        let id = actor.id();
        let (r, new) = {
            let mut shard = self.inner.shard(id).write();
            if !actor.is_alive() {
                return Err(RegisterError::ActorStopped(id));
            }
            let mut new = false;
            let m = shard.entry(id).or_insert_with(|| {
                new = true;
                Member {
                    names: Few::Zero,
                    groups: Few::Zero,
                    actor: actor.clone(),
                }
            });
            let r = f(m);
            if m.names.is_empty() && m.groups.is_empty() {
                shard.remove(&id);
                return r;
            }
            (r, new)
        };
        if new {
            // Outside the lock: it runs at once if the actor already stopped.
            let weak: Weak<Inner<A>> = Arc::downgrade(&self.inner);
            actor.on_stop(move |id, _| {
                if let Some(inner) = weak.upgrade() {
                    inner.forget(id);
                }
            });
        }
        r
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
        let id = actor.id();
        self.with_member(actor, |m| {
            let guard = self.inner.names.guard();
            let key = Name::from(name);
            loop {
                match self
                    .inner
                    .names
                    .try_insert(key.clone(), actor.clone(), &guard)
                {
                    Ok(_) => {
                        m.names.push(key);
                        return Ok(());
                    }
                    Err(occupied) => {
                        let holder = occupied.current.clone();
                        if holder.id() == id {
                            return Ok(());
                        }
                        if holder.is_alive() {
                            return Err(RegisterError::NameTaken {
                                name: name.to_string(),
                                holder: holder.id(),
                            });
                        }
                        // The holder stopped and its monitor has not run
                        // yet: take the name over, if it is still that one.
                        let _ =
                            self.inner
                                .names
                                .remove_if(name, |_, v| v.id() == holder.id(), &guard);
                    }
                }
            }
        })
    }

    /// Removes `name`; returns the actor that held it. The actor stays in
    /// its groups.
    pub fn unregister(&self, name: &str) -> Option<ActorRef<A>> {
        let actor = self.inner.names.pin().get(name).cloned()?;
        let id = actor.id();
        let mut shard = self.inner.shard(id).write();
        let removed = self
            .inner
            .names
            .pin()
            .remove_if(name, |_, v| v.id() == id)
            .ok()
            .flatten()
            .map(|(_, v)| v.clone());
        if let Some(m) = shard.get_mut(&id) {
            m.names.retain(|n| &**n != name);
            if m.names.is_empty() && m.groups.is_empty() {
                shard.remove(&id);
            }
        }
        removed
    }

    /// Adds `actor` to `group` (created on first use). Returns `false` if it
    /// was already a member; an actor may be in any number of groups.
    pub fn join(&self, group: &str, actor: &ActorRef<A>) -> bool {
        let g = self.inner.group_or_create(group);
        self.with_member(actor, |m| {
            if g.add(actor) {
                m.groups.push(g.clone());
                Ok(true)
            } else {
                Ok(false)
            }
        })
        .unwrap_or(false)
    }

    /// Removes `actor` from `group`; `false` if it was not a member.
    pub fn leave(&self, group: &str, actor: &ActorRef<A>) -> bool {
        let Some(g) = self.inner.group(group) else {
            return false;
        };
        let id = actor.id();
        let mut shard = self.inner.shard(id).write();
        let removed = g.remove(id);
        if let Some(m) = shard.get_mut(&id) {
            m.groups.retain(|x| !Arc::ptr_eq(x, &g));
            if m.names.is_empty() && m.groups.is_empty() {
                shard.remove(&id);
            }
        }
        removed
    }

    /// The actor registered under `name`. Lock-free: an epoch guard and a
    /// probe; see [`reader`](Self::reader) to look up many names under one
    /// guard without cloning.
    #[inline]
    pub fn find(&self, name: &str) -> Option<ActorRef<A>> {
        self.inner.names.pin().get(name).cloned()
    }

    /// A read handle holding one epoch guard: [`Reader::find`] then costs
    /// only the hash and the probe, and returns a borrowed reference. Keep it
    /// short-lived: removed entries are freed only once no guard that saw
    /// them is alive.
    pub fn reader(&self) -> Reader<'_, A> {
        Reader {
            map: self.inner.names.pin(),
        }
    }

    /// Sends `msg` to the actor registered under `name`.
    pub fn send(&self, name: &str, msg: A::Msg) -> Result<(), NamedSendError<A::Msg>> {
        let names = self.inner.names.pin();
        let Some(actor) = names.get(name) else {
            return Err(NamedSendError::UnknownName(msg));
        };
        actor.tell(msg).map_err(|e| match e {
            SendError::Stopped(m) => NamedSendError::Stopped(m),
            SendError::Full(m) => NamedSendError::Full(m),
        })
    }

    /// The members of `group` (a snapshot; empty for an unknown group).
    pub fn members(&self, group: &str) -> Vec<ActorRef<A>> {
        self.inner
            .group(group)
            .map(|g| g.members.read().refs.clone())
            .unwrap_or_default()
    }

    /// How many actors are in `group`.
    pub fn group_len(&self, group: &str) -> usize {
        self.inner
            .group(group)
            .map(|g| g.members.read().refs.len())
            .unwrap_or(0)
    }

    /// The names of the groups that have members.
    pub fn groups(&self) -> Vec<String> {
        self.inner
            .groups
            .read()
            .iter()
            .filter(|(_, g)| !g.members.read().refs.is_empty())
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Registered actors (named or in a group).
    pub fn len(&self) -> usize {
        self.inner.members.iter().map(|s| s.read().len()).sum()
    }

    /// Whether no actor is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Names registered.
    pub fn names_len(&self) -> usize {
        self.inner.names.len()
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
        let Some(g) = self.inner.group(group) else {
            return 0;
        };
        let members = g.members.read();
        let mut sent = 0;
        for m in &members.refs {
            sent += m.tell(make(m)).is_ok() as usize;
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
        let mut sent = 0;
        for shard in self.inner.members.iter() {
            let shard = shard.read();
            for m in shard.values() {
                sent += m.actor.tell(make(&m.actor)).is_ok() as usize;
            }
        }
        sent
    }
}

/// Many lookups under one epoch guard; from [`Registry::reader`].
pub struct Reader<'a, A: Actor> {
    map: papaya::HashMapRef<'a, Name, ActorRef<A>, Hasher, papaya::LocalGuard<'a>>,
}

impl<A: Actor> Reader<'_, A> {
    /// The actor registered under `name`, borrowed for the reader's life.
    #[inline]
    pub fn find(&self, name: &str) -> Option<&ActorRef<A>> {
        self.map.get(name)
    }
}
