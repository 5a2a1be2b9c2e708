//! Split brain: which side of a partition keeps serving.
//!
//! A partition makes each side declare the other down. Without a resolver
//! ([`SplitBrain::Off`], the default) each side then acts on what it sees,
//! and the ownership store decides: a JetStream bucket on three servers
//! takes a write only on the side with a quorum of servers, so a side cut
//! off from it claims nothing. But where both sides still reach the store
//! (a partial partition: heartbeats lost between nodes, the store
//! reachable from both), each side takes the other's shards over, again
//! and again: never two live instances (the fencing tokens and the
//! takeover wait see to that), but shards that move instead of serving.
//!
//! With a strategy, a node that finds itself on the losing side of a
//! partition *leaves the quorum*: its sharding layer gives up every shard
//! and claims none (`Cluster::in_quorum`, read by the coordinators), its
//! verdicts on the peers it lost are taken back (they were the other
//! side's, not dead: when the partition heals their heartbeats make them
//! peers again instead of "down stays down" notices that would make them
//! rejoin), and it joins the quorum again once it has heard enough peers
//! for `stable` (two down detections): time to hear every peer that is
//! still there, so that it does not take over the shards of one whose
//! first heartbeat after the partition has not come yet.
//!
//! - [`SplitBrain::KeepMajority`]: the side with more than half of the
//!   members keeps serving; on a tie, the side with the member whose name
//!   sorts first. The members are the peers up, this node, and the peers
//!   declared down for silence in the last `forget_after` (default ten
//!   down detections; forgotten only while in the quorum): a node killed
//!   outright is forgotten then, so the next failure is judged against
//!   the members that are left. Trade-off: a cluster that loses half its
//!   nodes at once (a tie without the first name) or more stops serving
//!   entirely, and a minority of nodes that still has the store's quorum
//!   of servers does not serve (the store alone would let it).
//! - [`SplitBrain::StaticQuorum`]`(n)`: a side of at least `n` nodes (this
//!   one included) keeps serving. Set `n` above half the cluster's fixed
//!   size; a cluster that grows past `2n - 1` nodes can split into two
//!   quorums, and one that shrinks below `n` stops serving.
//!
//! A decision is taken on the check loop's every tick (`tasks.rs`), from
//! the peer table as it stands: a peer counts as lost only once it has
//! been declared down (within two heartbeats of its silence), so a
//! partition is resolved about one down detection after it happens.
//!
//! Invariants:
//! - `lost` holds at most [`LOST_CAP`] peers (names come from the
//!   network): past it the oldest is forgotten, which can only make this
//!   side's count look larger, never take a quorum away;
//! - a peer heard again, or gone with a goodbye, is no longer lost;
//! - with [`SplitBrain::Off`] the node is always in the quorum and nothing
//!   is recorded.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The most peers lost for silence a node keeps counting as members.
pub const LOST_CAP: usize = 1024;

/// How a node decides, in a partition, whether its side keeps serving
/// ([`ClusterBuilder::split_brain`](crate::ClusterBuilder::split_brain);
/// see the [module docs](self) for the trade-offs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum SplitBrain {
    /// No resolver: every node serves what it sees, and the ownership
    /// store's quorum of servers decides which side can claim.
    #[default]
    Off,
    /// The side with a majority of the members keeps serving (on a tie,
    /// the side with the first name).
    KeepMajority,
    /// A side of at least this many nodes, this one included, keeps
    /// serving.
    StaticQuorum(usize),
}

/// What a decision changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// This node left the quorum.
    Left,
    /// This node is in the quorum again.
    Joined,
}

/// One node's split-brain state.
pub(crate) struct Quorum {
    strategy: SplitBrain,
    forget_after: Duration,
    /// Peers declared down for silence: name -> (incarnation, when).
    lost: HashMap<String, (u64, Instant)>,
    in_quorum: bool,
    /// How long a node out of the quorum must have had enough peers.
    stable: Duration,
    /// Since when it has had them.
    ok_since: Option<Instant>,
}

impl Quorum {
    pub fn new(strategy: SplitBrain, forget_after: Duration, stable: Duration) -> Self {
        Quorum {
            strategy,
            forget_after,
            lost: HashMap::new(),
            in_quorum: true,
            stable,
            ok_since: None,
        }
    }

    pub fn strategy(&self) -> SplitBrain {
        self.strategy
    }

    pub fn in_quorum(&self) -> bool {
        self.in_quorum
    }

    /// `node` (that incarnation) was declared down for its silence.
    pub fn lost_peer(&mut self, node: &str, incarnation: u64, now: Instant) {
        if self.strategy == SplitBrain::Off {
            return;
        }
        if !self.lost.contains_key(node) && self.lost.len() >= LOST_CAP {
            let oldest = self
                .lost
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(n, _)| n.clone());
            if let Some(o) = oldest {
                self.lost.remove(&o);
            }
        }
        self.lost.insert(node.to_string(), (incarnation, now));
    }

    /// `node` was heard (up, or in a new incarnation), or said goodbye:
    /// not lost.
    pub fn found(&mut self, node: &str) {
        self.lost.remove(node);
    }

    /// The lost peers' incarnations (taken back when this node leaves the
    /// quorum).
    pub fn lost_incarnations(&self) -> Vec<(String, u64)> {
        self.lost
            .iter()
            .map(|(n, (i, _))| (n.clone(), *i))
            .collect()
    }

    /// Decides at `now`, `me` with the peers `up`.
    pub fn decide(&mut self, me: &str, up: &[String], now: Instant) -> Option<Change> {
        if self.in_quorum {
            let keep = self.forget_after;
            self.lost
                .retain(|_, (_, at)| now.saturating_duration_since(*at) < keep);
        }
        let reachable = up.len().saturating_add(1);
        let ok = match self.strategy {
            SplitBrain::Off => true,
            SplitBrain::StaticQuorum(n) => reachable >= n,
            SplitBrain::KeepMajority => {
                let mut lost = 0usize;
                let mut first_lost: Option<&str> = None;
                for n in self.lost.keys() {
                    if n.as_str() != me && !up.contains(n) {
                        lost += 1;
                        first_lost = Some(first_lost.map_or(n.as_str(), |f| f.min(n.as_str())));
                    }
                }
                let members = reachable.saturating_add(lost);
                if reachable.saturating_mul(2) != members {
                    reachable.saturating_mul(2) > members
                } else {
                    // A tie: the side with the first name keeps serving.
                    let first_here = up.iter().map(String::as_str).chain([me]).min();
                    match (first_here, first_lost) {
                        (Some(h), Some(l)) => h < l,
                        _ => true,
                    }
                }
            }
        };
        if !ok {
            self.ok_since = None;
        }
        match (self.in_quorum, ok) {
            (true, false) => {
                self.in_quorum = false;
                Some(Change::Left)
            }
            (false, true) => {
                let since = *self.ok_since.get_or_insert(now);
                if now.saturating_duration_since(since) < self.stable {
                    return None;
                }
                self.ok_since = None;
                self.in_quorum = true;
                Some(Change::Joined)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    const FORGET: Duration = Duration::from_secs(10);
    const STABLE: Duration = Duration::from_secs(1);

    #[test]
    fn keep_majority_keeps_the_larger_side_and_the_first_name_on_a_tie() {
        let t = Instant::now();
        // a, b | c: c alone leaves, a and b stay.
        let mut c = Quorum::new(SplitBrain::KeepMajority, FORGET, Duration::ZERO);
        c.lost_peer("a", 1, t);
        c.lost_peer("b", 1, t);
        assert_eq!(c.decide("c", &[], t), Some(Change::Left));
        let mut a = Quorum::new(SplitBrain::KeepMajority, FORGET, Duration::ZERO);
        a.lost_peer("c", 1, t);
        assert_eq!(a.decide("a", &names(&["b"]), t), None);
        assert!(a.in_quorum());
        // a | b of two: a has the first name.
        let mut b = Quorum::new(SplitBrain::KeepMajority, FORGET, Duration::ZERO);
        b.lost_peer("a", 1, t);
        assert_eq!(b.decide("b", &[], t), Some(Change::Left));
        let mut a = Quorum::new(SplitBrain::KeepMajority, FORGET, Duration::ZERO);
        a.lost_peer("b", 1, t);
        assert_eq!(a.decide("a", &[], t), None);
        // c hears a and b again: back in.
        c.found("a");
        c.found("b");
        assert_eq!(c.decide("c", &names(&["a", "b"]), t), Some(Change::Joined));
    }

    #[test]
    fn a_dead_peer_is_forgotten_only_while_in_the_quorum() {
        let t = Instant::now();
        let later = t + FORGET + Duration::from_secs(1);
        // a, b: b dies; a ties with the first name and stays, then
        // forgets b.
        let mut a = Quorum::new(SplitBrain::KeepMajority, FORGET, Duration::ZERO);
        a.lost_peer("b", 1, t);
        assert_eq!(a.decide("a", &[], later), None);
        assert!(a.lost_incarnations().is_empty());
        // c alone against a and b: out, and it keeps counting them
        // however long the partition lasts.
        let mut c = Quorum::new(SplitBrain::KeepMajority, FORGET, Duration::ZERO);
        c.lost_peer("a", 1, t);
        c.lost_peer("b", 1, t);
        assert_eq!(c.decide("c", &[], t), Some(Change::Left));
        assert_eq!(c.decide("c", &[], later), None);
        assert!(!c.in_quorum());
        assert_eq!(c.lost_incarnations().len(), 2);
    }

    #[test]
    fn static_quorum_counts_the_side_and_off_never_leaves() {
        let t = Instant::now();
        let mut q = Quorum::new(SplitBrain::StaticQuorum(2), FORGET, STABLE);
        assert_eq!(q.decide("a", &[], t), Some(Change::Left));
        // Back in only after `stable` with enough peers, unbroken.
        assert_eq!(q.decide("a", &names(&["b"]), t), None);
        assert_eq!(q.decide("a", &[], t + STABLE / 2), None);
        assert_eq!(q.decide("a", &names(&["b"]), t + STABLE), None);
        assert_eq!(
            q.decide("a", &names(&["b"]), t + STABLE * 2),
            Some(Change::Joined)
        );
        let mut off = Quorum::new(SplitBrain::Off, FORGET, Duration::ZERO);
        off.lost_peer("b", 1, t);
        off.lost_peer("c", 1, t);
        assert_eq!(off.decide("a", &[], t), None);
        assert!(off.in_quorum() && off.lost_incarnations().is_empty());
    }

    #[test]
    fn the_lost_table_is_bounded() {
        let t = Instant::now();
        let mut q = Quorum::new(SplitBrain::KeepMajority, FORGET, Duration::ZERO);
        for i in 0..LOST_CAP + 10 {
            q.lost_peer(&format!("n{i}"), 1, t + Duration::from_millis(i as u64));
        }
        assert_eq!(q.lost_incarnations().len(), LOST_CAP);
    }
}
