//! Operator controls of a sharded kind, shared by every node through the
//! ownership store: **drain** a node (its shards move to the others),
//! mark a node **down** (the others take its shards over as if the
//! cluster had declared it down), and **pause** rebalancing (no owned
//! shard moves for placement's sake).
//!
//! The controls are one list in the store, kept like a member list under
//! the kind `"<kind>.controls"` (a real kind's name has no `.`, so the
//! keys never meet): the entries `paused`, `drain.<node>` and
//! `down.<node>`. Writes are revision-checked ([`update_members`]), so
//! two operators' writes do not lose each other.
//!
//! What each coordinator does with them at every tick (the hook in
//! `coordinator.rs`, after its read of the member list):
//! - a node drained or down is not among the nodes placement chooses
//!   from, in anyone's view, its own included: its own coordinator hands
//!   its shards over (the usual hand-over: entities stop, the record is
//!   released) and claims none;
//! - a node down is not alive either: the others claim its shards without
//!   waiting for its hand-over, with the takeover's lease wait (see
//!   `coordinator.rs`, "Taking over"), so a node down that still runs
//!   never handles an entity's messages while another does;
//! - while paused, a shard whose owner is among placement's nodes stays
//!   where it is (its desired owner is its owner); shards of a node that
//!   is drained, down or gone still move, and free shards are claimed, so
//!   a pause never strands a shard. Those go to a node of placement that
//!   holds shards already (placement's choice among the holders), never
//!   to one that joined during the pause and holds none: a joining node
//!   stays empty until the resume. Only when no node of placement holds a
//!   shard (nothing claimed yet, or every holder gone) does placement
//!   choose among all of its nodes. Pause is therefore "no shard moves
//!   for balance", not "no shard moves": a drain or a down still moves
//!   shards, to the holders.
//!
//! A node's `down` entry is cleared when the node starts its sharding
//! again (a new process rejoins, as after Akka's downing); `drain` stays
//! until [`set_drained`] clears it: the operator took the node out.
//!
//! Invariant: reading the controls fails only when the store does; a
//! tick whose read fails moves nothing (as when its member list read
//! fails). An entry that is none of the three forms is ignored.

use crate::ownership::{update_members, OwnershipStore, StoreError};

/// The controls of one sharded kind, as read from the store.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Controls {
    /// Whether rebalancing is paused.
    pub paused: bool,
    /// The nodes drained (sorted).
    pub drained: Vec<String>,
    /// The nodes marked down (sorted).
    pub down: Vec<String>,
}

impl Controls {
    /// Whether `node` may own shards of the kind (neither drained nor down).
    pub fn serves(&self, node: &str) -> bool {
        !self.drained.iter().any(|n| n == node) && !self.down.iter().any(|n| n == node)
    }

    /// Whether `node` is marked down.
    pub fn is_down(&self, node: &str) -> bool {
        self.down.iter().any(|n| n == node)
    }
}

const PAUSED: &str = "paused";
const DRAIN: &str = "drain.";
const DOWN: &str = "down.";

/// The store's kind under which `kind`'s controls are kept.
fn controls_kind(kind: &str) -> String {
    format!("{kind}.controls")
}

/// A node's name is letters, digits, `_` and `-` (as troupe-remote's).
fn check_node(node: &str) -> Result<(), StoreError> {
    if troupe_remote::is_token(node) {
        Ok(())
    } else {
        Err(StoreError::Unavailable(format!(
            "node {node:?} must be letters, digits, '_' and '-'"
        )))
    }
}

/// Reads `kind`'s controls.
pub fn read(store: &dyn OwnershipStore, kind: &str) -> Result<Controls, StoreError> {
    let (entries, _) = store.members(&controls_kind(kind))?;
    let mut c = Controls::default();
    for e in entries {
        if e == PAUSED {
            c.paused = true;
        } else if let Some(n) = e.strip_prefix(DRAIN) {
            c.drained.push(n.to_string());
        } else if let Some(n) = e.strip_prefix(DOWN) {
            c.down.push(n.to_string());
        }
    }
    c.drained.sort();
    c.drained.dedup();
    c.down.sort();
    c.down.dedup();
    Ok(c)
}

/// Drains `node` (`on = true`: its shards move to the other nodes) or
/// takes it back (`on = false`: it may own shards again; this also lifts
/// a `down` mark).
pub fn set_drained(
    store: &dyn OwnershipStore,
    kind: &str,
    node: &str,
    on: bool,
) -> Result<(), StoreError> {
    check_node(node)?;
    let ck = controls_kind(kind);
    if !on {
        update_members(store, &ck, &format!("{DOWN}{node}"), false)?;
    }
    update_members(store, &ck, &format!("{DRAIN}{node}"), on)
}

/// Marks `node` down: the other nodes take its shards over.
pub fn mark_down(store: &dyn OwnershipStore, kind: &str, node: &str) -> Result<(), StoreError> {
    check_node(node)?;
    update_members(store, &controls_kind(kind), &format!("{DOWN}{node}"), true)
}

/// Clears `node`'s `down` mark (a node starting its sharding calls it).
pub fn rejoined(store: &dyn OwnershipStore, kind: &str, node: &str) -> Result<(), StoreError> {
    check_node(node)?;
    let ck = controls_kind(kind);
    let key = format!("{DOWN}{node}");
    // Read first: a start writes nothing when there is nothing to clear.
    if store.members(&ck)?.0.contains(&key) {
        update_members(store, &ck, &key, false)?;
    }
    Ok(())
}

/// Pauses (`true`) or resumes (`false`) rebalancing.
pub fn set_paused(store: &dyn OwnershipStore, kind: &str, paused: bool) -> Result<(), StoreError> {
    update_members(store, &controls_kind(kind), PAUSED, paused)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ownership::MemoryOwnership;

    #[test]
    fn controls_round_trip_through_the_store() {
        let s = MemoryOwnership::new();
        assert_eq!(read(&s, "k").unwrap(), Controls::default());
        set_drained(&s, "k", "n2", true).unwrap();
        mark_down(&s, "k", "n3").unwrap();
        set_paused(&s, "k", true).unwrap();
        let c = read(&s, "k").unwrap();
        assert!(c.paused);
        assert_eq!(c.drained, ["n2"]);
        assert_eq!(c.down, ["n3"]);
        assert!(!c.serves("n2") && !c.serves("n3") && c.serves("n1"));
        // Another kind is untouched, and so is the kind's member list.
        assert_eq!(read(&s, "other").unwrap(), Controls::default());
        assert!(s.members("k").unwrap().0.is_empty());
        rejoined(&s, "k", "n3").unwrap();
        assert!(read(&s, "k").unwrap().down.is_empty());
        mark_down(&s, "k", "n2").unwrap();
        set_drained(&s, "k", "n2", false).unwrap();
        set_paused(&s, "k", false).unwrap();
        assert_eq!(read(&s, "k").unwrap(), Controls::default());
        assert!(set_drained(&s, "k", "bad name", true).is_err());
        assert!(mark_down(&s, "k", "a.b").is_err());
    }

    #[test]
    fn an_outage_is_an_error_not_empty_controls() {
        let s = MemoryOwnership::new();
        set_paused(&s, "k", true).unwrap();
        s.set_down(true);
        assert!(read(&s, "k").is_err());
    }
}
