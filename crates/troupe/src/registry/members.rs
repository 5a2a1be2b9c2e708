//! Members and groups: per-actor member records (16 bytes) and group
//! membership, touched by writers only, under the registry's write lock.

use crate::actor::{Actor, ActorRef};
use parking_lot::RwLock;
use std::collections::HashMap;

use super::chunks::*;
use super::name_table::*;
use super::{Hasher, Name, NONE};

/// One registered actor: what to undo when it stops (16 bytes; names and
/// groups beyond the first in [`State::more`]).
pub(super) struct Member {
    /// Its position in the list of all members (`NONE`: a vacant record).
    pub(super) all_pos: u32,
    /// Its first name record (`NONE`: none).
    pub(super) name: u32,
    /// Its first group and its position there (`NONE`: none).
    pub(super) gid: u32,
    pub(super) pos: u32,
}

/// Names and groups beyond a member's first.
#[derive(Default)]
pub(super) struct More {
    pub(super) names: Vec<u32>,
    pub(super) groups: Vec<(u32, u32)>,
}

impl More {
    pub(super) fn is_empty(&self) -> bool {
        self.names.is_empty() && self.groups.is_empty()
    }
}

impl Member {
    pub(super) fn new(all_pos: u32) -> Self {
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
pub(super) struct GroupMembers<A: Actor> {
    pub(super) refs: Vec<ActorRef<A>>,
    pub(super) owners: Vec<u32>,
}

pub(super) struct Group<A: Actor> {
    pub(super) name: Name,
    pub(super) members: RwLock<GroupMembers<A>>,
}

pub(super) struct Groups<A: Actor> {
    pub(super) by_name: HashMap<Name, u32, Hasher>,
    pub(super) list: Vec<Group<A>>,
}

impl<A: Actor> Groups<A> {
    pub(super) fn get(&self, name: &str) -> Option<&Group<A>> {
        self.by_name.get(name).map(|&g| &self.list[g as usize])
    }
}

/// What the write lock guards.
pub(super) struct State<A: Actor> {
    /// The name records (readers reach them by address, not through here).
    pub(super) names: Chunked<NameRec<A>>,
    pub(super) members: Chunked<Member>,
    /// Member records initialized so far.
    pub(super) members_hwm: usize,
    pub(super) free_members: Vec<u32>,
    /// Names and groups beyond the first, by member record (rare).
    pub(super) more: HashMap<u32, More, Hasher>,
    /// Name records initialized so far (reused ones come from `limbo`).
    pub(super) names_hwm: usize,
    /// Table slots in use and tombstones.
    pub(super) live: usize,
    pub(super) tombs: usize,
}

impl<A: Actor> State<A> {
    pub(super) fn member(&mut self, m: u32) -> &mut Member {
        debug_assert!((m as usize) < self.members_hwm);
        let p = self.members.at(m as usize);
        // SAFETY: records below `members_hwm` were initialized (and only
        // writers, serialized by the lock we hold, touch them).
        unsafe { (*p).assume_init_mut() }
    }

    pub(super) fn names_of(&mut self, m: u32) -> Vec<u32> {
        let first = self.member(m).name;
        let more = self.more.get(&m).into_iter().flat_map(|x| x.names.iter());
        (first != NONE)
            .then_some(first)
            .into_iter()
            .chain(more.copied())
            .collect()
    }

    pub(super) fn groups_of(&mut self, m: u32) -> Vec<(u32, u32)> {
        let Member { gid, pos, .. } = *self.member(m);
        let more = self.more.get(&m).into_iter().flat_map(|x| x.groups.iter());
        (gid != NONE)
            .then_some((gid, pos))
            .into_iter()
            .chain(more.copied())
            .collect()
    }

    pub(super) fn add_name(&mut self, m: u32, idx: u32) {
        let member = self.member(m);
        if member.name == NONE {
            member.name = idx;
        } else {
            self.more.entry(m).or_default().names.push(idx);
        }
    }

    pub(super) fn remove_name(&mut self, m: u32, idx: u32) {
        if self.member(m).name == idx {
            let next = self.more.get_mut(&m).and_then(|x| x.names.pop());
            self.member(m).name = next.unwrap_or(NONE);
        } else if let Some(x) = self.more.get_mut(&m) {
            x.names.retain(|&n| n != idx);
        }
        self.trim(m);
    }

    pub(super) fn group_pos(&mut self, m: u32, gid: u32) -> Option<u32> {
        let member = self.member(m);
        if member.gid == gid {
            return Some(member.pos);
        }
        let x = self.more.get(&m)?;
        x.groups.iter().find(|g| g.0 == gid).map(|g| g.1)
    }

    pub(super) fn add_group(&mut self, m: u32, gid: u32, pos: u32) {
        let member = self.member(m);
        if member.gid == NONE {
            (member.gid, member.pos) = (gid, pos);
        } else {
            self.more.entry(m).or_default().groups.push((gid, pos));
        }
    }

    pub(super) fn set_pos(&mut self, m: u32, gid: u32, pos: u32) {
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

    pub(super) fn remove_group(&mut self, m: u32, gid: u32) {
        if self.member(m).gid == gid {
            let next = self.more.get_mut(&m).and_then(|x| x.groups.pop());
            let member = self.member(m);
            (member.gid, member.pos) = next.unwrap_or((NONE, 0));
        } else if let Some(x) = self.more.get_mut(&m) {
            x.groups.retain(|g| g.0 != gid);
        }
        self.trim(m);
    }

    pub(super) fn trim(&mut self, m: u32) {
        if self.more.get(&m).is_some_and(More::is_empty) {
            self.more.remove(&m);
        }
    }

    /// Holds no name and no group.
    pub(super) fn is_empty(&mut self, m: u32) -> bool {
        let member = self.member(m);
        member.name == NONE && member.gid == NONE
    }
}
