//! The registry's shared state and its writers' operations (register,
//! unregister, join, leave, the monitor hook that forgets dead actors).

use crate::actor::{Actor, ActorId, ActorRef, StopListener, StopReason};
use crossbeam_epoch::{self as epoch, Atomic, Guard, Owned};
use parking_lot::{Mutex, RwLock};
use std::hash::BuildHasher;
use std::mem::{ManuallyDrop, MaybeUninit};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use super::members::*;
use super::name_table::*;
use super::{Hasher, Name, NONE};

/// The registry's monitor of its actors, shared by all of them.
pub(super) struct Hook<A: Actor> {
    pub(super) inner: Weak<Inner<A>>,
}

impl<A: Actor> StopListener for Hook<A> {
    fn actor_stopped(&self, id: ActorId, token: u64, _reason: &StopReason) {
        if let Some(inner) = self.inner.upgrade() {
            inner.forget(id, token as u32);
        }
    }
}

pub(super) struct Inner<A: Actor> {
    pub(super) hasher: Hasher,
    pub(super) table: Atomic<Table>,
    pub(super) names_len: AtomicUsize,
    pub(super) state: Mutex<State<A>>,
    pub(super) groups: RwLock<Groups<A>>,
    /// Every member, dense (for `dispatch` and `len`); `owners[i]` is
    /// `refs[i]`'s member record, which holds `i` as `all_pos`.
    pub(super) all: RwLock<GroupMembers<A>>,
    /// Name records whose last reader is gone, free for reuse.
    pub(super) limbo: Arc<Mutex<Vec<u32>>>,
    pub(super) hook: Arc<dyn StopListener>,
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
    pub(super) unsafe fn rec<'g>(st: &State<A>, idx: u32, _guard: &'g Guard) -> &'g NameRec<A> {
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
    pub(super) unsafe fn rec_at(v: u64, _guard: &Guard) -> &NameRec<A> {
        let p = (v & PTR_MASK) as *const MaybeUninit<NameRec<A>>;
        // SAFETY: per the caller.
        unsafe { (*p).assume_init_ref() }
    }

    /// The slot, record index and record holding `name`. Inlined into
    /// every caller: the call itself was a sixth of a small-table lookup.
    #[inline(always)]
    pub(super) fn lookup<'g>(
        &self,
        name: &str,
        guard: &'g Guard,
    ) -> Option<(usize, u32, &'g NameRec<A>)> {
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
    pub(super) fn member_of(&self, actor: &ActorRef<A>) -> Option<u32> {
        actor.listener_token(&self.hook).map(|t| t as u32)
    }

    /// A new member record for `actor`, its monitor installed; `None` if
    /// the actor has stopped.
    pub(super) fn new_member(&self, st: &mut State<A>, actor: &ActorRef<A>) -> Option<u32> {
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
    pub(super) fn actor_of(&self, st: &mut State<A>, m: u32) -> Option<ActorRef<A>> {
        let at = st.member(m).all_pos;
        (at != NONE).then(|| self.all.read().refs[at as usize].clone())
    }

    /// Frees member record `m` (its names and groups already gone).
    pub(super) fn free_member(&self, st: &mut State<A>, m: u32) {
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
    pub(super) fn drop_member_if_empty(&self, st: &mut State<A>, m: u32) {
        if !st.is_empty(m) {
            return;
        }
        if let Some(actor) = self.actor_of(st, m) {
            actor.unlisten(&self.hook);
            self.free_member(st, m);
        }
    }

    /// Adds the name record (`name` → `actor`, member `owner`).
    pub(super) fn insert_name(
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
    pub(super) fn grow_if_full(&self, st: &mut State<A>, guard: &Guard) {
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
    pub(super) fn remove_name(&self, st: &mut State<A>, slot: usize, idx: u32, guard: &Guard) {
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
    pub(super) fn take_name(
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
    pub(super) fn leave_group(&self, st: &mut State<A>, m: u32, gid: u32) -> bool {
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
    pub(super) fn forget(&self, id: ActorId, m: u32) {
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
