//! Ask cycles: actors that wait on each other's replies.
//!
//! An actor *waits on* another while a handler of it is blocked or
//! suspended on an ask to it: an async handler awaiting
//! [`AsyncContext::ask`](crate::AsyncContext::ask), or a handler on a
//! blocking pool or a dedicated thread in
//! [`ActorRef::ask`](crate::ActorRef::ask). Neither handles another
//! message until the reply comes, so if A waits on B while B waits on A
//! (directly, or through a chain B → C → A), no reply ever comes: each
//! request sits in the mailbox of an actor that waits for the other. A
//! [`Context::ask`](crate::Context::ask), whose reply comes back as a
//! message, makes no such edge: the asker goes on handling.
//!
//! With detection on ([`SystemBuilder::detect_ask_cycles`](crate::SystemBuilder::detect_ask_cycles),
//! always in the test kit) every such ask adds an edge asker → target to
//! the system's wait graph before its request is sent, and removes it
//! when the reply (or the error that replaced it) arrives or the ask is
//! given up. Adding an edge searches the graph from the target for the
//! asker; finding it, the cycle (every member, in order, from the asker)
//! is reported: a `tracing` error event (target `troupe::ask_cycle`), a
//! counter ([`SystemHandle::ask_cycles_detected`](crate::SystemHandle::ask_cycles_detected)),
//! and the last [`RECENT_CYCLES`] cycles
//! ([`SystemHandle::ask_cycles`](crate::SystemHandle::ask_cycles)). The
//! edge that closes a cycle is the one whose ask comes last, so each
//! cycle is reported once, by that ask. Nothing is broken up: the asks
//! time out as they would have.
//!
//! Cost: off (the default outside the test kit), an ask tests one field of
//! its system; on, an ask takes the graph's lock twice, and its search is
//! over the asks pending at that moment. Within one system: an ask to an
//! actor of another system, or over the network, adds no edge.
//!
//! Invariants: the graph holds exactly the edges of the asks pending now
//! (an edge is removed once per edge added, on every way an ask ends); it
//! holds at most one node per waiting actor, and its search visits each
//! node once.

use super::id::ActorId;
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How many detected cycles a system keeps for
/// [`SystemHandle::ask_cycles`](crate::SystemHandle::ask_cycles).
pub const RECENT_CYCLES: usize = 32;

/// One actor in an [`AskCycle`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CycleMember {
    /// The actor's id.
    pub id: ActorId,
    /// Its name, if it was spawned with one.
    pub name: Option<String>,
    /// Its type (`std::any::type_name`), or `""` when the ask that named it
    /// did not know it (a blocking ask names its asker by id only).
    pub type_name: &'static str,
}

impl fmt::Display for CycleMember {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(n) => write!(f, "{n} ({})", self.id)?,
            None => write!(f, "{}", self.id)?,
        }
        if !self.type_name.is_empty() {
            write!(f, " [{}]", super::metrics::short_type_name(self.type_name))?;
        }
        Ok(())
    }
}

/// Actors waiting on each other's replies: `members[0]` waits on
/// `members[1]`, which waits on `members[2]`, ..., and the last waits on
/// `members[0]`. `members[0]` made the ask that closed the cycle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AskCycle {
    /// The cycle's actors, in order (see the type's docs).
    pub members: Vec<CycleMember>,
}

impl fmt::Display for AskCycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for m in &self.members {
            write!(f, "{m} -> ")?;
        }
        match self.members.first() {
            Some(m) => write!(f, "{m}"),
            None => Ok(()),
        }
    }
}

/// An actor as an edge names it.
#[derive(Clone)]
pub(crate) struct Label {
    pub(crate) id: u64,
    pub(crate) name: Option<Arc<String>>,
    pub(crate) type_name: &'static str,
}

impl Label {
    /// The label of an actor of type `A` (the cell's `id` and `name`;
    /// this file names no cell, which sits above it).
    pub(crate) fn of<A>(id: ActorId, name: &Option<Arc<String>>) -> Label {
        Label {
            id: id.as_u64(),
            name: name.clone(),
            type_name: std::any::type_name::<A>(),
        }
    }

    /// An actor known by its id only (a blocking ask's asker).
    pub(crate) fn id_only(id: u64) -> Label {
        Label {
            id,
            name: None,
            type_name: "",
        }
    }

    fn member(&self) -> CycleMember {
        CycleMember {
            id: ActorId(self.id),
            name: self.name.as_deref().cloned(),
            type_name: self.type_name,
        }
    }
}

/// A waiting actor: who it is, and what it waits on (target, asks pending).
struct Node {
    who: Label,
    on: Vec<(Label, u32)>,
}

#[derive(Default)]
struct Graph {
    waits: HashMap<u64, Node>,
    recent: VecDeque<AskCycle>,
}

impl Graph {
    /// The actors after `from` on a shortest path from `from` to `to`
    /// along the edges, `to` included, if there is one (breadth first;
    /// each node visited once).
    fn path(&self, from: u64, to: u64) -> Option<Vec<Label>> {
        // A node's parent on the search tree, and the node's label.
        let mut parent: HashMap<u64, (u64, Label)> = HashMap::new();
        let mut queue = VecDeque::from([from]);
        while let Some(x) = queue.pop_front() {
            let Some(node) = self.waits.get(&x) else {
                continue;
            };
            for (t, _) in &node.on {
                if t.id == to {
                    let mut rev = vec![t.clone()];
                    let mut at = x;
                    while at != from {
                        let (p, label) = &parent[&at];
                        rev.push(label.clone());
                        at = *p;
                    }
                    rev.reverse();
                    return Some(rev);
                }
                if t.id == from || parent.contains_key(&t.id) {
                    continue;
                }
                parent.insert(t.id, (x, t.clone()));
                queue.push_back(t.id);
            }
        }
        None
    }
}

/// A system's wait graph. See the module docs.
#[derive(Default)]
pub(crate) struct WaitGraph {
    graph: Mutex<Graph>,
    detected: AtomicU64,
}

impl WaitGraph {
    /// `asker` now waits on `target`: adds the edge, and reports the cycle
    /// it closes, if any.
    pub(crate) fn wait(&self, asker: Label, target: Label) -> Option<AskCycle> {
        let mut g = self.graph.lock();
        let cycle = if asker.id == target.id {
            Some(vec![asker.clone()])
        } else {
            // target → ... → asker, then asker → target closes it.
            g.path(target.id, asker.id).map(|mut p| {
                p.pop(); // the asker, first already
                let mut members = vec![asker.clone(), target.clone()];
                members.extend(p);
                members
            })
        };
        let node = g.waits.entry(asker.id).or_insert_with(|| Node {
            who: asker.clone(),
            on: Vec::new(),
        });
        if node.who.type_name.is_empty() && !asker.type_name.is_empty() {
            node.who = asker;
        }
        match node.on.iter_mut().find(|(t, _)| t.id == target.id) {
            Some((_, n)) => *n += 1,
            None => node.on.push((target, 1)),
        }
        let cycle = cycle.map(|labels| {
            // A member named by id only in this edge may be better known
            // as the asker of another.
            let members = labels
                .iter()
                .map(|l| match g.waits.get(&l.id) {
                    Some(n) if l.type_name.is_empty() => n.who.member(),
                    _ => l.member(),
                })
                .collect();
            AskCycle { members }
        });
        if let Some(c) = &cycle {
            if g.recent.len() == RECENT_CYCLES {
                g.recent.pop_front();
            }
            g.recent.push_back(c.clone());
            self.detected.fetch_add(1, Ordering::Relaxed);
        }
        drop(g);
        if let Some(c) = &cycle {
            tracing::error!(
                target: "troupe::ask_cycle",
                cycle = %c,
                members = c.members.len(),
                "ask cycle: these actors wait on each other's replies; none will come"
            );
        }
        cycle
    }

    /// An ask of `asker` to `target` ended: removes one such edge.
    pub(crate) fn done(&self, asker: u64, target: u64) {
        let mut g = self.graph.lock();
        let Some(node) = g.waits.get_mut(&asker) else {
            debug_assert!(false, "an ask edge removed twice");
            return;
        };
        if let Some(i) = node.on.iter().position(|(t, _)| t.id == target) {
            node.on[i].1 -= 1;
            if node.on[i].1 == 0 {
                node.on.swap_remove(i);
            }
        }
        if node.on.is_empty() {
            g.waits.remove(&asker);
        }
    }

    /// Cycles detected so far.
    pub(crate) fn detected(&self) -> u64 {
        self.detected.load(Ordering::Relaxed)
    }

    /// The last [`RECENT_CYCLES`] cycles, oldest first.
    pub(crate) fn recent(&self) -> Vec<AskCycle> {
        self.graph.lock().recent.iter().cloned().collect()
    }

    /// Asks pending in the graph (edges, counted with multiplicity).
    #[cfg(test)]
    pub(crate) fn pending(&self) -> u32 {
        let g = self.graph.lock();
        g.waits
            .values()
            .flat_map(|n| n.on.iter().map(|e| e.1))
            .sum()
    }
}

/// An edge of the wait graph held by a pending ask: removed when dropped.
pub(crate) struct Waiting<'a> {
    graph: &'a WaitGraph,
    asker: u64,
    target: u64,
}

impl<'a> Waiting<'a> {
    /// Adds the edge `asker` → `target` to `graph` (see [`WaitGraph::wait`]).
    pub(crate) fn new(graph: &'a WaitGraph, asker: Label, target: Label) -> Self {
        let (a, t) = (asker.id, target.id);
        graph.wait(asker, target);
        Waiting {
            graph,
            asker: a,
            target: t,
        }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.graph.done(self.asker, self.target);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn l(id: u64) -> Label {
        Label {
            id,
            name: None,
            type_name: "T",
        }
    }

    fn ids(c: &AskCycle) -> Vec<u64> {
        c.members.iter().map(|m| m.id.as_u64()).collect()
    }

    #[test]
    fn a_chain_is_no_cycle_and_its_closing_edge_is() {
        let g = WaitGraph::default();
        assert!(g.wait(l(1), l(2)).is_none());
        assert!(g.wait(l(2), l(3)).is_none());
        assert!(g.wait(l(4), l(3)).is_none());
        let c = g.wait(l(3), l(1)).expect("3 -> 1 -> 2 -> 3");
        assert_eq!(ids(&c), [3, 1, 2]);
        assert_eq!(g.detected(), 1);
        assert_eq!(g.recent(), [c]);
        for (a, t) in [(1, 2), (2, 3), (4, 3), (3, 1)] {
            g.done(a, t);
        }
        assert_eq!(g.pending(), 0);
        assert!(g.graph.lock().waits.is_empty());
    }

    #[test]
    fn an_ended_ask_breaks_the_path() {
        let g = WaitGraph::default();
        g.wait(l(1), l(2));
        g.wait(l(1), l(2));
        g.done(1, 2);
        // One of the two asks 1 -> 2 is still pending.
        assert_eq!(ids(&g.wait(l(2), l(1)).unwrap()), [2, 1]);
        g.done(2, 1);
        g.done(1, 2);
        assert!(g.wait(l(2), l(1)).is_none());
        assert_eq!(g.detected(), 1);
    }

    #[test]
    fn an_ask_to_itself_is_a_cycle_of_one() {
        let g = WaitGraph::default();
        assert_eq!(ids(&g.wait(l(5), l(5)).unwrap()), [5]);
    }

    #[test]
    fn the_recent_list_is_bounded() {
        let g = WaitGraph::default();
        for i in 0..(RECENT_CYCLES as u64 + 5) {
            g.wait(l(i), l(i));
        }
        assert_eq!(g.recent().len(), RECENT_CYCLES);
        assert_eq!(g.detected(), RECENT_CYCLES as u64 + 5);
    }
}
