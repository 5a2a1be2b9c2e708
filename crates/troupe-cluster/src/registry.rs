//! The node's mirror of the cluster registry (the JetStream KV bucket).
//!
//! Protocol (see [`crate::wire`] for the keys):
//! - writes go to the bucket only (`register`, `join`, deletes); the cache
//!   changes only by what the bucket says, through a KV watch;
//! - (re)sync: start a watch of new updates first, then read a snapshot of
//!   every live key, swap it in whole, then apply the watched updates; every
//!   key keeps its revision and an update older than what the cache holds is
//!   ignored, so the overlap of snapshot and watch is harmless;
//! - a node declared down is taken out of the cache at once
//!   (`drop_node`) and its keys are deleted from the bucket by every
//!   survivor, each delete conditional on the revision the survivor saw (a
//!   restarted node's fresh entry is never deleted); the bucket's `max_age`
//!   is the backstop, and owners re-put their entries every third of it.
//!
//! Invariant: `find` is a read lock and a hash lookup; a typed
//! [`RemoteRef`] is built once per entry and cloned after.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;
use troupe_remote::{RemoteMessage, RemoteRef};

use crate::wire::RegEntry;

/// One live key.
pub(crate) struct Slot {
    pub entry: RegEntry,
    pub revision: u64,
    typed: OnceLock<Box<dyn Any + Send + Sync>>,
}

impl Slot {
    pub fn new(entry: RegEntry, revision: u64) -> Arc<Slot> {
        Arc::new(Slot {
            entry,
            revision,
            typed: OnceLock::new(),
        })
    }

    /// The typed reference, built once with `make`; `None` if the entry is
    /// registered for another type.
    pub fn typed<M: RemoteMessage>(
        &self,
        make: impl FnOnce(&RegEntry) -> Option<RemoteRef<M>>,
    ) -> Option<RemoteRef<M>> {
        if self.entry.type_id != M::TYPE_ID {
            return None;
        }
        let any = match self.typed.get() {
            Some(a) => a,
            None => {
                let r = make(&self.entry)?;
                self.typed.get_or_init(|| Box::new(r))
            }
        };
        any.downcast_ref::<RemoteRef<M>>().cloned()
    }
}

/// What a key names.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Key {
    Name(String),
    Member { group: String, member: String },
}

impl Key {
    pub fn parse(key: &str) -> Option<Key> {
        if let Some(name) = key.strip_prefix("n.") {
            return Some(Key::Name(name.to_string()));
        }
        let rest = key.strip_prefix("g.")?;
        let (group, member) = rest.split_once('.')?;
        Some(Key::Member {
            group: group.to_string(),
            member: member.to_string(),
        })
    }
}

#[derive(Default)]
pub(crate) struct Maps {
    pub names: HashMap<String, Arc<Slot>>,
    /// group -> "node.actor" -> slot
    pub groups: HashMap<String, HashMap<String, Arc<Slot>>>,
    /// Revisions of deletes seen, so a late put does not resurrect a key.
    pub deleted: HashMap<String, u64>,
}

/// The cache: one lock, read on every `find`.
#[derive(Default)]
pub(crate) struct Cache {
    pub maps: RwLock<Maps>,
}

impl Maps {
    fn revision_of(&self, key: &Key, raw: &str) -> u64 {
        let live = match key {
            Key::Name(n) => self.names.get(n).map(|s| s.revision),
            Key::Member { group, member } => self
                .groups
                .get(group)
                .and_then(|g| g.get(member))
                .map(|s| s.revision),
        };
        live.or_else(|| self.deleted.get(raw).copied()).unwrap_or(0)
    }

    /// Applies a put (`Some`) or delete (`None`) at `revision`; older ones are ignored.
    pub fn apply(&mut self, raw: &str, revision: u64, value: Option<RegEntry>) {
        let Some(key) = Key::parse(raw) else { return };
        if revision <= self.revision_of(&key, raw) {
            return;
        }
        match value {
            Some(entry) => {
                self.deleted.remove(raw);
                let slot = Slot::new(entry, revision);
                match key {
                    Key::Name(n) => {
                        self.names.insert(n, slot);
                    }
                    Key::Member { group, member } => {
                        self.groups.entry(group).or_default().insert(member, slot);
                    }
                }
            }
            None => {
                self.deleted.insert(raw.to_string(), revision);
                match key {
                    Key::Name(n) => {
                        self.names.remove(&n);
                    }
                    Key::Member { group, member } => {
                        if let Some(g) = self.groups.get_mut(&group) {
                            g.remove(&member);
                            if g.is_empty() {
                                self.groups.remove(&group);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Removes every entry of `node`'s `incarnation`; returns their keys
    /// and revisions (for conditional deletes in the bucket).
    pub fn drop_node(&mut self, node: &str, incarnation: u64) -> Vec<(String, u64)> {
        let of = |s: &Slot| s.entry.node == node && s.entry.incarnation == incarnation;
        let mut gone = Vec::new();
        self.names.retain(|n, s| {
            let dead = of(s);
            if dead {
                gone.push((crate::wire::name_key(n), s.revision));
            }
            !dead
        });
        for (group, members) in self.groups.iter_mut() {
            members.retain(|m, s| {
                let dead = of(s);
                if dead {
                    gone.push((format!("g.{group}.{m}"), s.revision));
                }
                !dead
            });
        }
        self.groups.retain(|_, m| !m.is_empty());
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(node: &str, inc: u64) -> Option<RegEntry> {
        Some(RegEntry {
            node: node.into(),
            actor: "w".into(),
            type_id: 1,
            incarnation: inc,
        })
    }

    #[test]
    fn older_updates_lose_and_deletes_stick() {
        let mut m = Maps::default();
        m.apply("n.a", 5, e("x", 1));
        m.apply("n.a", 3, e("y", 1));
        assert_eq!(m.names["a"].entry.node, "x");
        m.apply("n.a", 6, None);
        m.apply("n.a", 5, e("x", 1));
        assert!(m.names.is_empty());
        m.apply("n.a", 7, e("z", 1));
        assert_eq!(m.names["a"].entry.node, "z");
    }

    #[test]
    fn drop_node_takes_only_that_incarnation() {
        let mut m = Maps::default();
        m.apply("n.a", 1, e("x", 1));
        m.apply("n.b", 2, e("x", 2));
        m.apply("g.g1.x.w", 3, e("x", 1));
        m.apply("g.g1.y.w", 4, e("y", 1));
        let mut gone = m.drop_node("x", 1);
        gone.sort();
        assert_eq!(
            gone,
            vec![("g.g1.x.w".to_string(), 3), ("n.a".to_string(), 1)]
        );
        assert!(m.names.contains_key("b"));
        assert_eq!(m.groups["g1"].len(), 1);
    }
}
