//! Who is alive: the peer table fed by heartbeats.
//!
//! Protocol: every node publishes a `Heartbeat` (`wire.rs`)
//! every `heartbeat` interval on `troupe.<cluster>.hb.<node>` and listens to
//! `troupe.<cluster>.hb.*`. A peer is declared down when it has been silent
//! for `down_after` of *its own* announced intervals (default 1.75, so a
//! node killed just after a heartbeat is declared down after at most
//! 1.75 intervals plus one check tick, inside the promised two), when it
//! says goodbye (`bye`), or when a heartbeat shows a new incarnation of it
//! (it restarted: the old one is down).
//!
//! Invariants:
//! - a node never declares peers down while its own connection is down
//!   (it cannot tell their death from its own isolation); when it
//!   reconnects, every peer gets a fresh `down_after` of grace
//!   (`Peers::grace`), so a server restart fires no Down by itself;
//! - a peer is reported down once per incarnation: `Peers::expired` and
//!   `Peers::remove` take it out of the table.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::wire::Heartbeat;

/// One peer as last heard.
#[derive(Clone, Debug)]
pub(crate) struct Peer {
    pub incarnation: u64,
    pub last_seen: Instant,
    pub interval: Duration,
}

/// What a heartbeat changed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Heard {
    /// First heartbeat of this node.
    New,
    /// A known peer, still alive.
    Again,
    /// A new incarnation replaced this one, which is down.
    Restarted { old: u64 },
}

#[derive(Default)]
pub(crate) struct Peers {
    map: HashMap<String, Peer>,
}

impl Peers {
    pub fn heard(&mut self, hb: &Heartbeat, now: Instant) -> Heard {
        let interval = Duration::from_millis(u64::from(hb.interval_ms.max(1)));
        let fresh = Peer {
            incarnation: hb.incarnation,
            last_seen: now,
            interval,
        };
        match self.map.insert(hb.node.clone(), fresh) {
            None => Heard::New,
            // Incarnation 0: assumed alive before its first heartbeat.
            Some(p) if p.incarnation == hb.incarnation || p.incarnation == 0 => Heard::Again,
            Some(p) => Heard::Restarted { old: p.incarnation },
        }
    }

    /// Adds a peer known alive by other means (it answered a request).
    pub fn assume(&mut self, node: &str, incarnation: u64, interval: Duration, now: Instant) {
        self.map.entry(node.to_string()).or_insert(Peer {
            incarnation,
            last_seen: now,
            interval,
        });
    }

    /// Takes out and returns the peers silent for more than
    /// `down_after` of their intervals.
    pub fn expired(&mut self, now: Instant, down_after: f64) -> Vec<(String, Peer)> {
        let dead: Vec<String> = self
            .map
            .iter()
            .filter(|(_, p)| {
                now.saturating_duration_since(p.last_seen) > p.interval.mul_f64(down_after)
            })
            .map(|(n, _)| n.clone())
            .collect();
        dead.into_iter()
            .filter_map(|n| self.map.remove(&n).map(|p| (n, p)))
            .collect()
    }

    pub fn remove(&mut self, node: &str) -> Option<Peer> {
        self.map.remove(node)
    }

    /// Every peer counts as heard at `until` (after this node reconnects:
    /// a time in the future gives peers that long to come back).
    pub fn grace(&mut self, until: Instant) {
        for p in self.map.values_mut() {
            p.last_seen = p.last_seen.max(until);
        }
    }

    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.map.keys().cloned().collect();
        v.sort();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hb(node: &str, inc: u64) -> Heartbeat {
        Heartbeat {
            node: node.into(),
            incarnation: inc,
            interval_ms: 100,
        }
    }

    #[test]
    fn silent_peer_expires_once_and_restart_is_seen() {
        let t0 = Instant::now();
        let mut p = Peers::default();
        assert_eq!(p.heard(&hb("a", 1), t0), Heard::New);
        assert_eq!(p.heard(&hb("a", 1), t0), Heard::Again);
        assert!(p.expired(t0 + Duration::from_millis(170), 1.75).is_empty());
        let dead = p.expired(t0 + Duration::from_millis(180), 1.75);
        assert_eq!(dead.len(), 1);
        assert_eq!(dead[0].0, "a");
        assert!(p.expired(t0 + Duration::from_secs(9), 1.75).is_empty());
        p.heard(&hb("a", 1), t0);
        assert_eq!(p.heard(&hb("a", 2), t0), Heard::Restarted { old: 1 });
        p.assume("b", 0, Duration::from_millis(100), t0);
        assert_eq!(p.heard(&hb("b", 7), t0), Heard::Again);
    }

    #[test]
    fn grace_resets_the_clock() {
        let t0 = Instant::now();
        let mut p = Peers::default();
        p.heard(&hb("a", 1), t0);
        let later = t0 + Duration::from_millis(500);
        p.grace(later);
        assert!(p
            .expired(later + Duration::from_millis(100), 1.75)
            .is_empty());
        assert_eq!(p.expired(later + Duration::from_millis(200), 1.75).len(), 1);
    }
}
