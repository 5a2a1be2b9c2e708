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
//! # Late intake is not a silent peer
//!
//! A node's clock says when it *handled* a peer's heartbeat, not when the
//! peer sent it. A flood holds real heartbeats back on both ends: junk on
//! `hb.*` queues in the same subscription as real heartbeats, junk on any
//! subject delays the node's one connection, and async-nats reads all the
//! input there is before it writes (so a node reading a flood publishes
//! its own heartbeats late). By the clock alone, a live peer then looks
//! silent (measured at 200 ms heartbeats, debug build, 2 cores: false
//! downs at 350–380 ms of "silence" while the declaring node's own
//! heartbeat took 40–560 ms to come back, and some with its intake
//! current, the peer's heartbeats late at the source). So the clock only
//! raises the question, and two answers are needed before a verdict:
//!
//! 1. *Is my intake behind?* Each node hears its own heartbeats on `hb.*`,
//!    behind everything the server delivered there before them (`Intake`
//!    counts them out and back). When a peer is overdue by the clock, the
//!    check publishes an extra heartbeat of its own at `P` and waits until
//!    it is heard back: by then every heartbeat that reached the server
//!    before `P` has been handled, so only a peer silent for `down_after`
//!    of its intervals *before `P`* (`Peers::expired` at `P`) stays
//!    suspect. A live peer whose heartbeats were merely queued here is
//!    spared, however far behind the intake was.
//! 2. *Is the peer there?* A suspect is pinged on its node inbox. A dead
//!    node's inbox has no subscriber, so the server answers "no responders"
//!    at once and the verdict is not delayed; a live peer whose heartbeats
//!    are stuck behind a flood in its own connection answers once the flood
//!    lets it, and is put back as heard. No answer within `down_after` of
//!    this node's intervals: down.
//!
//! Both spares are counted in `ClusterStats::verdicts_spared`. A node
//! killed outright is still declared down within `down_after` intervals
//! plus a check tick and two round trips; a peer that hangs with its
//! connection open takes up to `down_after` more intervals (the ping's
//! wait).
//!
//! The limits: the check waits for its own heartbeat at most
//! `max(reconnect_grace, 4 intervals)`; an intake further behind (or an
//! own heartbeat lost, say to a slow-consumer drop) falls back to the
//! clock. A peer whose answer is held back longer than the ping's wait is
//! declared down. A flood on `hb.*` is only slowed down, not refused, by
//! the seal: a client that may publish there can still make the intake
//! that far behind; NATS permissions (the README's "Permissions") keep
//! clients that are not nodes off the cluster's subjects.
//!
//! # Down stays down
//!
//! A verdict is about one incarnation, and it is final. Every node keeps
//! the incarnations it declared down (`Downed`, bounded): a heartbeat
//! or goodbye of one of them is ignored (counted in
//! `ClusterStats::downed_heartbeats`), never a "peer up", so a node cut
//! off, paused or falsely declared down under load does not flap back in
//! and move shards back and forth. Instead the survivor answers it with a
//! notice on `troupe.<ns>.downed.<node>` naming that incarnation (sealed
//! like every message; at most one per entry per heartbeat interval). The
//! downed node, on a notice naming its current incarnation, **rejoins as
//! a new incarnation** (`Inner::rejoin`): a fresh number in its
//! heartbeats, its registry entries and its name's key, and the
//! `on_self_down` hooks told, so the sharding layer drops every shard the
//! old incarnation held and claims anew under the new one. Why rejoin,
//! not stop: a node declared down while it runs was cut off or paused,
//! not broken; to every peer its return is then a join, the case every
//! layer handles already (a restart), and nothing of the old incarnation
//! is trusted. A user who prefers a stop calls `process::exit` from an
//! `on_self_down` hook. The node's own heartbeats of an earlier
//! incarnation, still on their way, are its own, not bad input.
//!
//! Invariants:
//! - a peer declared down in one incarnation never comes back in it: only
//!   a heartbeat of another incarnation enters the table (while the
//!   incarnation is held in `Downed`, `DOWNED_CAP` the most recent);
//! - a node never declares a peer down on its clock alone: only after its
//!   own heartbeat, published after the peer fell overdue, has come back
//!   (or the wait above ran out), only if the peer was silent for
//!   `down_after` of its intervals before that heartbeat was published,
//!   and only if the peer then did not answer a ping;
//! - a node never declares peers down while its own connection is down
//!   (it cannot tell their death from its own isolation); when it
//!   reconnects, every peer gets a fresh `down_after` of grace
//!   (`Peers::grace`), so a server restart fires no Down by itself;
//! - a peer is reported down once per incarnation: `Peers::expired` and
//!   `Peers::remove_incarnation` take it out of the table;
//! - the table is bounded, whatever heartbeats arrive: an announced
//!   interval is clamped into `[1 ms, MAX_INTERVAL]`, so any peer that
//!   falls silent leaves within `down_after * MAX_INTERVAL` (105 s at the
//!   defaults), and at most `cap` peers are held: a heartbeat of a new node
//!   while the table is full is refused (`Heard::Full`, counted by the
//!   caller) rather than evicting a live peer.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::wire::Heartbeat;

/// This node's own heartbeats, counted as published and as heard back on
/// `hb.*` (see the module docs).
///
/// Why counts prove the intake caught up: a node's publishes reach the
/// server in the order they are made, and its `hb.*` subscription hands
/// them back in that order. Take `n = sent()` at `P`, before publishing a
/// probe. Once `heard` reaches `n`, `n` own heartbeats are back, and at
/// most `n - 1` of them were counted (hence published) before `P`: one
/// was published after `P`, so everything that reached the server on
/// `hb.*` before `P` has been handled.
#[derive(Default)]
pub(crate) struct Intake {
    sent: AtomicU64,
    heard: AtomicU64,
    back: Notify,
}

impl Intake {
    /// Counts a heartbeat about to be published; returns its number.
    pub fn sent(&self) -> u64 {
        self.sent.fetch_add(1, Ordering::AcqRel).wrapping_add(1)
    }

    /// Counts one of this node's own heartbeats heard back.
    pub fn heard(&self) {
        self.heard.fetch_add(1, Ordering::AcqRel);
        self.back.notify_waiters();
    }

    /// Waits until `n` heartbeats have been heard back.
    pub async fn caught_up(&self, n: u64) {
        loop {
            let back = self.back.notified();
            let mut back = std::pin::pin!(back);
            back.as_mut().enable();
            if self.heard.load(Ordering::Acquire) >= n {
                return;
            }
            back.await;
        }
    }

    /// Forgets heartbeats that will not come back (lost in a disconnect,
    /// or dropped): the next probe waits only for itself.
    pub fn resync(&self) {
        self.heard
            .fetch_max(self.sent.load(Ordering::Acquire), Ordering::AcqRel);
    }
}

/// The most incarnations a node remembers as declared down; the oldest
/// is forgotten first.
pub const DOWNED_CAP: usize = 4096;

/// The incarnations this node declared down (see "Down stays down" in
/// the module docs), each with when this node last sent it a notice.
#[derive(Default)]
pub(crate) struct Downed {
    map: HashMap<(String, u64), Option<Instant>>,
    order: VecDeque<(String, u64)>,
}

impl Downed {
    /// Remembers `node`'s `incarnation` as down.
    pub fn insert(&mut self, node: &str, incarnation: u64) {
        let key = (node.to_string(), incarnation);
        if self.map.contains_key(&key) {
            return;
        }
        if self.order.len() >= DOWNED_CAP {
            if let Some(old) = self.order.pop_front() {
                self.map.remove(&old);
            }
        }
        self.map.insert(key.clone(), None);
        self.order.push_back(key);
    }

    /// Takes back the verdict on `node`'s `incarnation` (this node left
    /// the quorum: the verdict was a partition's, see `split_brain.rs`).
    pub fn remove(&mut self, node: &str, incarnation: u64) {
        let key = (node.to_string(), incarnation);
        if self.map.remove(&key).is_some() {
            self.order.retain(|k| k != &key);
        }
    }

    /// Whether `node`'s `incarnation` was declared down here.
    pub fn contains(&self, node: &str, incarnation: u64) -> bool {
        self.map.contains_key(&(node.to_string(), incarnation))
    }

    /// Whether a notice to this downed incarnation is due at `now` (none
    /// sent within `every`); records it as sent.
    pub fn notice_due(
        &mut self,
        node: &str,
        incarnation: u64,
        now: Instant,
        every: Duration,
    ) -> bool {
        match self.map.get_mut(&(node.to_string(), incarnation)) {
            None => false,
            Some(last) => {
                if last.is_some_and(|t| now.saturating_duration_since(t) < every) {
                    return false;
                }
                *last = Some(now);
                true
            }
        }
    }
}

/// How many peers declared down a node lists ([`Cluster::down_peers`](crate::Cluster::down_peers));
/// the oldest is forgotten first.
pub const RECENT_DOWN_CAP: usize = 64;
/// How long a peer declared down stays listed, unless it comes back
/// sooner (a heartbeat of a new incarnation) or is pushed out by newer ones.
pub const RECENT_DOWN_KEEP: Duration = Duration::from_secs(600);

/// A peer this node declared down, for an operator's view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DownPeer {
    /// The peer's node name.
    pub name: String,
    /// The incarnation declared down.
    pub incarnation: u64,
    /// Why: `silent`, `left`, `restarted` or `marked down`.
    pub why: &'static str,
    /// How long ago.
    pub since: Duration,
}

/// The peers declared down lately, newest last: at most
/// [`RECENT_DOWN_CAP`], each until [`RECENT_DOWN_KEEP`] has passed or its
/// node is heard again in a new incarnation (it leaves the view).
#[derive(Default)]
pub(crate) struct RecentDowns {
    list: VecDeque<(String, u64, &'static str, Instant)>,
}

impl RecentDowns {
    /// `node`'s `incarnation` was declared down at `now` (an earlier row of
    /// that node goes: one row per node).
    pub fn insert(&mut self, node: &str, incarnation: u64, why: &'static str, now: Instant) {
        self.list.retain(|(n, _, _, _)| n != node);
        if self.list.len() >= RECENT_DOWN_CAP {
            self.list.pop_front();
        }
        self.list
            .push_back((node.to_string(), incarnation, why, now));
    }

    /// `node` is back (a new incarnation heard): no longer listed down.
    pub fn back(&mut self, node: &str) {
        self.list.retain(|(n, _, _, _)| n != node);
    }

    /// The rows younger than [`RECENT_DOWN_KEEP`] at `now`, oldest first
    /// (older ones are dropped).
    pub fn states(&mut self, now: Instant) -> Vec<DownPeer> {
        self.list
            .retain(|(_, _, _, at)| now.saturating_duration_since(*at) < RECENT_DOWN_KEEP);
        self.list
            .iter()
            .map(|(n, i, w, at)| DownPeer {
                name: n.clone(),
                incarnation: *i,
                why: w,
                since: now.saturating_duration_since(*at),
            })
            .collect()
    }
}

/// One peer as last heard.
#[derive(Clone, Debug)]
pub(crate) struct Peer {
    pub incarnation: u64,
    pub last_seen: Instant,
    pub interval: Duration,
}

/// A peer as this node holds it ([`Cluster::peer_states`](crate::Cluster::peer_states)):
/// what an operator's view of the membership shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerState {
    /// The peer's node name.
    pub name: String,
    /// The incarnation this node holds alive.
    pub incarnation: u64,
    /// How long ago this node last heard the peer's heartbeat (or first
    /// learnt of it); zero while the grace after this node's reconnect
    /// counts every peer as heard.
    pub since_heard: Duration,
    /// The heartbeat interval the peer announced (clamped, see above).
    pub heartbeat: Duration,
}

/// The longest heartbeat interval a peer may announce; longer ones are
/// clamped, so a peer's silence is noticed within `down_after` of it.
pub const MAX_INTERVAL: Duration = Duration::from_secs(60);

/// The default bound on the peer table ([`crate::ClusterBuilder::max_peers`]).
pub const DEFAULT_MAX_PEERS: usize = 1024;

/// What a heartbeat changed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Heard {
    /// First heartbeat of this node.
    New,
    /// A known peer, still alive.
    Again,
    /// A new incarnation replaced this one, which is down.
    Restarted { old: u64 },
    /// A new node, but the table holds `cap` peers already: not taken.
    Full,
}

pub(crate) struct Peers {
    map: HashMap<String, Peer>,
    cap: usize,
}

impl Default for Peers {
    fn default() -> Self {
        Peers::with_cap(DEFAULT_MAX_PEERS)
    }
}

impl Peers {
    /// A table holding at most `cap` peers.
    pub fn with_cap(cap: usize) -> Self {
        Peers {
            map: HashMap::new(),
            cap: cap.max(1),
        }
    }

    pub fn heard(&mut self, hb: &Heartbeat, now: Instant) -> Heard {
        let interval = Duration::from_millis(u64::from(hb.interval_ms.max(1))).min(MAX_INTERVAL);
        let fresh = Peer {
            incarnation: hb.incarnation,
            last_seen: now,
            interval,
        };
        if self.map.len() >= self.cap && !self.map.contains_key(&hb.node) {
            return Heard::Full;
        }
        match self.map.insert(hb.node.clone(), fresh) {
            None => Heard::New,
            // Incarnation 0: assumed alive before its first heartbeat.
            Some(p) if p.incarnation == hb.incarnation || p.incarnation == 0 => Heard::Again,
            Some(p) => Heard::Restarted { old: p.incarnation },
        }
    }

    /// Adds a peer known alive by other means (it answered a request).
    pub fn assume(&mut self, node: &str, incarnation: u64, interval: Duration, now: Instant) {
        if self.map.len() >= self.cap && !self.map.contains_key(node) {
            return;
        }
        self.map.entry(node.to_string()).or_insert(Peer {
            incarnation,
            last_seen: now,
            interval,
        });
    }

    /// How many peers have been silent for more than `down_after` of their
    /// intervals by `now` (a question for the intake; see the module docs).
    pub fn overdue(&self, now: Instant, down_after: f64) -> usize {
        self.map
            .values()
            .filter(|p| now.saturating_duration_since(p.last_seen) > p.interval.mul_f64(down_after))
            .count()
    }

    /// Puts back a peer taken out by [`expired`](Self::expired) that
    /// proved alive otherwise (it answered a ping), as heard at `now`;
    /// not if a heartbeat brought it back meanwhile.
    pub fn reinstate(&mut self, node: &str, mut peer: Peer, now: Instant) {
        if self.map.len() >= self.cap && !self.map.contains_key(node) {
            return;
        }
        peer.last_seen = now;
        self.map.entry(node.to_string()).or_insert(peer);
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

    /// Removes `node` only if the table holds this incarnation of it (a
    /// goodbye of another incarnation is stale or forged).
    pub fn remove_incarnation(&mut self, node: &str, incarnation: u64) -> Option<Peer> {
        match self.map.get(node) {
            Some(p) if p.incarnation == incarnation || p.incarnation == 0 => self.map.remove(node),
            _ => None,
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Every peer counts as heard at `until` (after this node reconnects:
    /// a time in the future gives peers that long to come back).
    pub fn grace(&mut self, until: Instant) {
        for p in self.map.values_mut() {
            p.last_seen = p.last_seen.max(until);
        }
    }

    /// Every peer held alive, with its incarnation, sorted by name.
    pub fn incarnations(&self) -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = self
            .map
            .iter()
            .map(|(n, p)| (n.clone(), p.incarnation))
            .collect();
        v.sort();
        v
    }

    /// Every peer held, sorted by name, as seen at `now`.
    pub fn states(&self, now: Instant) -> Vec<PeerState> {
        let mut v: Vec<PeerState> = self
            .map
            .iter()
            .map(|(n, p)| PeerState {
                name: n.clone(),
                incarnation: p.incarnation,
                // `grace` may set `last_seen` past `now`: saturates to 0.
                since_heard: now.saturating_duration_since(p.last_seen),
                heartbeat: p.interval,
            })
            .collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
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
    fn an_announced_interval_is_clamped_and_the_table_is_capped() {
        let t0 = Instant::now();
        let mut p = Peers::with_cap(3);
        let mut slow = hb("slow", 1);
        slow.interval_ms = u32::MAX; // ~50 days of silence before eviction
        assert_eq!(p.heard(&slow, t0), Heard::New);
        let late = t0 + MAX_INTERVAL.mul_f64(1.75) + Duration::from_millis(1);
        assert_eq!(p.expired(late, 1.75).len(), 1, "clamped to MAX_INTERVAL");
        for i in 0..10 {
            let _ = p.heard(&hb(&format!("m{i}"), 1), t0);
        }
        assert_eq!(p.len(), 3);
        assert_eq!(p.heard(&hb("m9", 1), t0), Heard::Full);
        assert_eq!(p.heard(&hb("m0", 1), t0), Heard::Again, "known peers stay");
        p.assume("other", 0, Duration::from_millis(100), t0);
        assert_eq!(p.len(), 3);
    }

    #[test]
    fn a_goodbye_of_another_incarnation_is_ignored() {
        let t0 = Instant::now();
        let mut p = Peers::default();
        p.heard(&hb("a", 1), t0);
        assert!(p.remove_incarnation("a", 2).is_none());
        assert!(p.remove_incarnation("a", 1).is_some());
    }

    #[test]
    fn a_peer_overdue_by_the_clock_is_spared_if_heard_before_the_probe() {
        let t0 = Instant::now();
        let mut p = Peers::default();
        p.heard(&hb("a", 1), t0);
        let probe = t0 + Duration::from_millis(300);
        assert_eq!((p.overdue(probe, 1.75), p.overdue(probe, 4.0)), (1, 0));
        // Its heartbeat was waiting in the intake, handled before the
        // probe came back (after `probe`): not silent before `probe`.
        p.heard(&hb("a", 1), probe + Duration::from_millis(50));
        assert!(p.expired(probe, 1.75).is_empty());
        assert_eq!(p.overdue(probe, 1.75), 0);
        // Taken out, then it answers a ping: back, as heard then.
        let later = probe + Duration::from_secs(1);
        let (name, peer) = p.expired(later, 1.75).pop().unwrap();
        p.reinstate(&name, peer, later);
        assert_eq!(p.overdue(later, 1.75), 0);
        assert_eq!(p.overdue(later + Duration::from_millis(200), 1.75), 1);
    }

    #[test]
    fn the_intake_is_caught_up_once_a_later_heartbeat_is_back() {
        let intake = Intake::default();
        let first = intake.sent();
        let probe = intake.sent();
        assert_eq!((first, probe), (1, 2));
        intake.heard();
        let now = |n| futures::FutureExt::now_or_never(intake.caught_up(n)).is_some();
        assert!(!now(probe), "one of two back is not caught up");
        intake.heard();
        assert!(now(probe));
        // Lost heartbeats: resync, and the next probe waits for itself.
        intake.sent();
        intake.resync();
        let next = intake.sent();
        assert!(!now(next));
        intake.heard();
        assert!(now(next));
    }

    #[test]
    fn a_downed_incarnation_is_remembered_and_noticed_at_a_limited_rate() {
        let t0 = Instant::now();
        let mut d = Downed::default();
        d.insert("a", 1);
        assert!(d.contains("a", 1) && !d.contains("a", 2) && !d.contains("b", 1));
        let every = Duration::from_millis(100);
        assert!(d.notice_due("a", 1, t0, every));
        assert!(!d.notice_due("a", 1, t0 + Duration::from_millis(50), every));
        assert!(d.notice_due("a", 1, t0 + Duration::from_millis(100), every));
        assert!(!d.notice_due("a", 2, t0, every), "not down: no notice");
        for i in 0..DOWNED_CAP as u64 {
            d.insert("m", i);
        }
        assert!(!d.contains("a", 1), "the oldest goes first");
        assert!(d.contains("m", 0) && d.contains("m", DOWNED_CAP as u64 - 1));
    }

    #[test]
    fn states_tell_incarnation_age_and_interval() {
        let t0 = Instant::now();
        let mut p = Peers::default();
        p.heard(&hb("b", 7), t0);
        p.heard(&hb("a", 3), t0 + Duration::from_millis(40));
        let s = p.states(t0 + Duration::from_millis(100));
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].name.as_str(), s[0].incarnation), ("a", 3));
        assert_eq!(s[0].since_heard, Duration::from_millis(60));
        assert_eq!((s[1].name.as_str(), s[1].incarnation), ("b", 7));
        assert_eq!(s[1].since_heard, Duration::from_millis(100));
        assert_eq!(s[1].heartbeat, Duration::from_millis(100));
        // A grace into the future reads as heard just now, not negative.
        p.grace(t0 + Duration::from_secs(5));
        assert!(p
            .states(t0 + Duration::from_secs(1))
            .iter()
            .all(|s| s.since_heard.is_zero()));
    }

    #[test]
    fn recent_downs_are_bounded_and_leave_when_back_or_old() {
        let t0 = Instant::now();
        let mut r = RecentDowns::default();
        r.insert("a", 1, "silent", t0);
        r.insert("b", 2, "left", t0);
        r.insert("a", 3, "marked down", t0 + Duration::from_secs(1));
        let s = r.states(t0 + Duration::from_secs(2));
        assert_eq!(s.len(), 2, "one row per node");
        assert_eq!(
            (s[1].name.as_str(), s[1].incarnation, s[1].why),
            ("a", 3, "marked down")
        );
        assert_eq!(s[1].since, Duration::from_secs(1));
        r.back("b");
        assert_eq!(r.states(t0 + Duration::from_secs(2)).len(), 1);
        assert!(r
            .states(t0 + RECENT_DOWN_KEEP + Duration::from_secs(2))
            .is_empty());
        for i in 0..(RECENT_DOWN_CAP + 10) {
            r.insert(&format!("m{i}"), 1, "silent", t0);
        }
        let s = r.states(t0);
        assert_eq!(s.len(), RECENT_DOWN_CAP);
        assert_eq!(s[0].name, "m10", "the oldest go first");
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
