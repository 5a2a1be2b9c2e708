//! Remote monitors and links, through local stand-ins.
//!
//! A watched remote actor `actor@node` is represented on the watching node
//! by a *stand-in*: a tiny local actor (in the cluster's own actor system)
//! that is stopped, with the remote actor's reason, when the remote actor
//! stops or its node is declared down. Watchers then use troupe's own
//! monitors on the stand-in, so a remote `Down` is the same message, with
//! the same lifecycle guarantees, as a local one; `Down::id` is the
//! stand-in's id ([`RemoteMonitor::id`]).
//!
//! Protocol:
//! - the serving node tracks every actor exposed through
//!   [`Cluster::expose`](crate::Cluster::expose) with `on_stop`, and when one
//!   stops publishes a `StopEvent` on `troupe.<cluster>.down.<node>` (every
//!   node listens) and remembers the reason;
//! - a new stand-in sends `Ctl::Watch` to the serving node, which answers
//!   `Alive`, `Stopped(reason)` (a stop before the monitor), or `Unknown`;
//!   no answer (no responders, timeout) counts as the node being down;
//! - node down: every stand-in of that node stops with
//!   `Failed("node down: <node>")` ([`node_down_reason`]).
//!
//! Invariants: one live stand-in per `actor@node` (a dead one is replaced
//! on the next monitor); stopping a stand-in twice keeps the first reason.

use std::collections::HashMap;

use parking_lot::Mutex;
use troupe::{Actor, ActorRef, ActorSystem, Context, StopReason};

/// The stop reason remote watchers get when the actor's node is declared
/// down (troupe's `StopReason` is owned by the runtime, so it is a
/// `Failed` with this fixed prefix; see [`is_node_down`]).
///
/// ```
/// let r = troupe_cluster::node_down_reason("n3");
/// assert_eq!(troupe_cluster::is_node_down(&r), Some("n3"));
/// ```
pub fn node_down_reason(node: &str) -> StopReason {
    StopReason::Failed(format!("node down: {node}"))
}

/// The node's name if `reason` is a node-down reason.
pub fn is_node_down(reason: &StopReason) -> Option<&str> {
    match reason {
        StopReason::Failed(m) => m.strip_prefix("node down: "),
        _ => None,
    }
}

/// The local stand-in of a remote actor: it takes no messages.
pub(crate) struct StandIn;

impl Actor for StandIn {
    type Msg = ();
    fn handle(&mut self, _: (), _: &mut Context<'_, Self>) {}
}

#[derive(Default)]
pub(crate) struct StandIns {
    map: Mutex<HashMap<String, ActorRef<StandIn>>>,
}

impl StandIns {
    /// The live stand-in of `target` (`actor@node`); `true` if just made.
    pub fn get(&self, system: &ActorSystem, target: &str) -> (ActorRef<StandIn>, bool) {
        let mut map = self.map.lock();
        if let Some(s) = map.get(target) {
            if s.is_alive() {
                return (s.clone(), false);
            }
        }
        let s = system.spawn(StandIn);
        map.insert(target.to_string(), s.clone());
        (s, true)
    }

    /// Stops `target`'s stand-in with `reason`.
    pub fn stop(&self, target: &str, reason: StopReason) {
        if let Some(s) = self.map.lock().remove(target) {
            s.stop_with(reason);
        }
    }

    /// Stops every stand-in of `node` with the node-down reason.
    pub fn stop_node(&self, node: &str) -> usize {
        let suffix = format!("@{node}");
        let gone: Vec<ActorRef<StandIn>> = {
            let mut map = self.map.lock();
            let keys: Vec<String> = map
                .keys()
                .filter(|k| k.ends_with(&suffix))
                .cloned()
                .collect();
            keys.iter().filter_map(|k| map.remove(k)).collect()
        };
        for s in &gone {
            s.stop_with(node_down_reason(node));
        }
        gone.len()
    }
}

/// A monitor of a remote actor, from [`Cluster::monitor`](crate::Cluster::monitor).
pub struct RemoteMonitor {
    pub(crate) id: troupe::ActorId,
    pub(crate) link: troupe::supervision::MonitorHandle,
}

impl RemoteMonitor {
    /// The id the `Down` will carry (the local stand-in's).
    pub fn id(&self) -> troupe::ActorId {
        self.id
    }

    /// Cancels the monitor: no `Down` after this returns.
    pub fn cancel(&self) {
        self.link.unlink();
    }
}
