//! The cluster's run loops, on the process's I/O runtime:
//! - `beat`: publishes this node's heartbeat every interval;
//! - `on_heartbeats`, `on_byes`, `on_stop_events`: heartbeats, goodbyes
//!   and stop events of all nodes; `on_ctl`: control requests to this node;
//! - `check`: every interval/20, watches this node's own connection
//!   (reconnected: grace for every peer, registry re-sync, own entries
//!   re-put) and, while connected, declares silent peers down: a peer
//!   overdue by the clock is down only if it was silent before this
//!   node's own heartbeat came back, and then does not answer a ping (see
//!   [`crate::liveness`]).
//!
//! The registry's loops (`mirror`, `refresh`) are in `mirror.rs`.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use troupe_remote::transport::{Message, Subscription};

use crate::bad_input::Inlet;
use crate::core::{encode, Inner};
use crate::liveness::{Heard, Peer};
use crate::split_brain::{Change, SplitBrain};
use crate::wire::{self, decode, Ctl, CtlReply, Heartbeat, StopEvent};

impl Inner {
    pub(crate) async fn beat(self: Arc<Self>) {
        let subject = wire::heartbeat_subject(&self.ns, &self.name);
        let mut inc = self.incarnation();
        let mut payload = self.seal(&subject, encode(&self.heartbeat()));
        let mut tick = tokio::time::interval(self.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if inc != self.incarnation() {
                // Rejoined (liveness.rs, "Down stays down").
                inc = self.incarnation();
                payload = self.seal(&subject, encode(&self.heartbeat()));
            }
            self.intake.sent();
            let _ = self.transport.publish(&subject, payload.clone()).await;
        }
    }

    /// Publishes a heartbeat and waits until this node hears it back on
    /// `hb.*` (see `liveness.rs`, "Late intake is not a silent peer"):
    /// the instant it was published, before which every heartbeat that
    /// reached the server has now been handled; `None` if the connection
    /// dropped meanwhile. After `max(reconnect_grace, 4 intervals)` it
    /// gives up waiting (the heartbeat was lost, or the intake is that far
    /// behind) and returns the instant anyway.
    async fn probe_intake(&self) -> Option<Instant> {
        let subject = wire::heartbeat_subject(&self.ns, &self.name);
        let payload = self.seal(&subject, encode(&self.heartbeat()));
        let at = Instant::now();
        let n = self.intake.sent();
        let _ = self.transport.publish(&subject, payload).await;
        let step = (self.interval / 20).max(Duration::from_millis(2));
        let limit = self.reconnect_grace.max(self.interval * 4);
        loop {
            if tokio::time::timeout(step, self.intake.caught_up(n))
                .await
                .is_ok()
            {
                return Some(at);
            }
            if !self.transport.is_connected() {
                return None;
            }
            if at.elapsed() > limit {
                self.intake.resync();
                tracing::warn!(node = %self.name, ?limit, "this node's own heartbeat did not come back: judging peers by the clock");
                return Some(at);
            }
        }
    }

    /// Counts a message this node cannot use and logs it at a limited
    /// rate (see `bad_input.rs`).
    fn membership(&self, inlet: Inlet, msg: &Message) -> Option<Heartbeat> {
        let payload = self.open(inlet, &msg.subject, &msg.payload)?;
        let Some(hb) = decode::<Heartbeat>(payload) else {
            self.bad(inlet, &msg.subject, &"did not decode");
            return None;
        };
        if hb.node != wire::last_token(&msg.subject) {
            self.bad(inlet, &msg.subject, &"names another node than its subject");
            return None;
        }
        Some(hb)
    }

    pub(crate) async fn on_heartbeats(self: Arc<Self>, mut sub: Subscription) {
        while let Some(msg) = sub.next().await {
            let Some(hb) = self.membership(Inlet::Heartbeat, &msg) else {
                continue;
            };
            if hb.node == self.name {
                if hb.incarnation == self.incarnation() || self.was_me(hb.incarnation) {
                    // An earlier incarnation's heartbeat, published before
                    // a rejoin, is this process's own too (and was
                    // counted as sent).
                    self.intake.heard();
                } else {
                    self.bad(
                        Inlet::Heartbeat,
                        &msg.subject,
                        &"another node with this node's name heartbeats in the cluster",
                    );
                }
                continue;
            }
            if self.ignore_downed(&hb) {
                continue;
            }
            let heard = self.peers.lock().heard(&hb, Instant::now());
            match heard {
                Heard::New => {
                    self.recent_downs.lock().back(&hb.node);
                    self.quorum.lock().found(&hb.node);
                    tracing::info!(node = %self.name, peer = %hb.node, "peer up");
                }
                Heard::Again => {}
                Heard::Restarted { old } => {
                    self.quorum.lock().found(&hb.node);
                    self.node_down(&hb.node, old, "restarted");
                    self.recent_downs.lock().back(&hb.node);
                }
                Heard::Full => {
                    self.counters.peers_refused.fetch_add(1, Ordering::Relaxed);
                    if let Some(left_out) = self.bad_log.admit(Instant::now()) {
                        tracing::warn!(node = %self.name, peer = %hb.node, left_out, "the peer table is full: a new node's heartbeat was refused");
                    }
                }
            }
        }
    }

    pub(crate) async fn on_byes(self: Arc<Self>, mut sub: Subscription) {
        while let Some(msg) = sub.next().await {
            let Some(hb) = self.membership(Inlet::Bye, &msg) else {
                continue;
            };
            if hb.node == self.name || self.ignore_downed(&hb) {
                continue;
            }
            let removed = self
                .peers
                .lock()
                .remove_incarnation(&hb.node, hb.incarnation);
            match removed {
                Some(_) => {
                    // Gone for good: no longer a member.
                    self.quorum.lock().found(&hb.node);
                    self.declared_down(&hb.node, hb.incarnation, "left");
                }
                None => self.bad(
                    Inlet::Bye,
                    &msg.subject,
                    &"a goodbye of a node or incarnation this node does not hold",
                ),
            }
        }
    }

    pub(crate) async fn on_stop_events(self: Arc<Self>, mut sub: Subscription) {
        while let Some(msg) = sub.next().await {
            let node = wire::last_token(&msg.subject);
            let Some(payload) = self.open(Inlet::StopEvent, &msg.subject, &msg.payload) else {
                continue;
            };
            let Some(ev) = decode::<StopEvent>(payload) else {
                self.bad(Inlet::StopEvent, &msg.subject, &"did not decode");
                continue;
            };
            self.standins
                .stop(&format!("{}@{node}", ev.actor), ev.reason.into());
        }
    }

    /// Whether `hb` (a heartbeat or goodbye) comes from an incarnation
    /// this node declared down: then it is ignored (down stays down) and
    /// answered, at most once per interval, by a notice on the node's
    /// `downed` subject, so that it rejoins as a new incarnation.
    fn ignore_downed(&self, hb: &Heartbeat) -> bool {
        let due = {
            let mut downed = self.downed.lock();
            if !downed.contains(&hb.node, hb.incarnation) {
                return false;
            }
            downed.notice_due(&hb.node, hb.incarnation, Instant::now(), self.interval)
        };
        self.counters
            .downed_heartbeats
            .fetch_add(1, Ordering::Relaxed);
        if due {
            let subject = wire::downed_subject(&self.ns, &hb.node);
            let notice = Heartbeat {
                node: hb.node.clone(),
                incarnation: hb.incarnation,
                interval_ms: self.heartbeat().interval_ms,
            };
            let payload = self.seal(&subject, encode(&notice));
            let transport = self.transport.clone();
            self.handle.spawn(async move {
                let _ = transport.publish(&subject, payload).await;
            });
        }
        true
    }

    /// An operator's mark-down (`troupe.<ns>.markdown.<node>`, sealed like
    /// every message, so only a node of the cluster can send one; see
    /// [`Cluster::mark_down`](crate::Cluster::mark_down)): the named
    /// incarnation is declared down here as if it had said goodbye, and
    /// down stays down. The node named ignores it: it learns from its
    /// peers' notices (their answer to its next heartbeat) and rejoins as a
    /// new incarnation. One naming a node or incarnation this node does
    /// not hold is counted as bad input (a late or repeated one included).
    pub(crate) async fn on_mark_downs(self: Arc<Self>, mut sub: Subscription) {
        while let Some(msg) = sub.next().await {
            let Some(hb) = self.membership(Inlet::MarkDown, &msg) else {
                continue;
            };
            if hb.node == self.name {
                continue;
            }
            let removed = self
                .peers
                .lock()
                .remove_incarnation(&hb.node, hb.incarnation);
            match removed {
                Some(_) => {
                    self.quorum.lock().found(&hb.node);
                    self.counters.marked_down.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(node = %self.name, peer = %hb.node, incarnation = hb.incarnation, "peer marked down by an operator");
                    self.declared_down(&hb.node, hb.incarnation, "marked down");
                }
                None => self.bad(
                    Inlet::MarkDown,
                    &msg.subject,
                    &"a mark-down of a node or incarnation this node does not hold",
                ),
            }
        }
    }

    /// Notices that this node was declared down (`troupe.<ns>.downed.<me>`):
    /// one naming the current incarnation makes it rejoin as a new one;
    /// one naming an earlier incarnation is late and ignored.
    pub(crate) async fn on_downed_notices(self: Arc<Self>, mut sub: Subscription) {
        while let Some(msg) = sub.next().await {
            let Some(n) = self.membership(Inlet::DownedNotice, &msg) else {
                continue;
            };
            if n.incarnation == self.incarnation() {
                self.rejoin(n.incarnation);
            } else if !self.was_me(n.incarnation) {
                self.bad(
                    Inlet::DownedNotice,
                    &msg.subject,
                    &"names an incarnation this node never had",
                );
            }
        }
    }

    pub(crate) async fn on_ctl(self: Arc<Self>, mut sub: Subscription) {
        while let Some(msg) = sub.next().await {
            let Some(reply) = msg.reply else {
                self.bad(
                    Inlet::Control,
                    &msg.subject,
                    &"a control request without a reply subject",
                );
                continue;
            };
            let request = self
                .open(Inlet::Control, &msg.subject, &msg.payload)
                .map(decode::<Ctl>);
            let answer = match request {
                None => CtlReply::BadRequest,
                Some(Some(Ctl::Watch { actor })) => self.status_of(&actor),
                Some(Some(Ctl::Kill { actor, reason })) => {
                    let ex = self.exposed.lock();
                    match ex.get(&actor) {
                        None => CtlReply::Unknown,
                        Some(a) => match &a.stopped {
                            Some(r) => CtlReply::Stopped(r.clone()),
                            None => {
                                tracing::info!(node = %self.name, actor = %actor, ?reason, "killed by a link");
                                (a.kill)();
                                CtlReply::Alive
                            }
                        },
                    }
                }
                Some(None) => {
                    self.bad(Inlet::Control, &msg.subject, &"did not decode");
                    CtlReply::BadRequest
                }
            };
            let answer = self.seal(&reply, encode(&answer));
            let _ = self.transport.publish(&reply, answer).await;
        }
    }

    pub(crate) async fn check(self: Arc<Self>) {
        let tick = (self.interval / 20).max(Duration::from_millis(2));
        let mut was_connected = true;
        loop {
            tokio::time::sleep(tick).await;
            let connected = self.transport.is_connected();
            if !connected {
                was_connected = false;
                continue;
            }
            if !was_connected {
                was_connected = true;
                tracing::info!(node = %self.name, "reconnected: grace for peers, registry re-sync");
                // Peers reconnect on their own backoff: none is declared
                // down until `reconnect_grace` after this node is back.
                self.peers
                    .lock()
                    .grace(Instant::now() + self.reconnect_grace);
                // Own heartbeats lost with the connection never come back.
                self.intake.resync();
                self.resync.notify_one();
            }
            self.decide_quorum(false);
            // The clock only asks; the intake and the peer answer (see
            // `liveness.rs`).
            let overdue = self.peers.lock().overdue(Instant::now(), self.down_after);
            if overdue == 0 {
                continue;
            }
            let Some(probed_at) = self.probe_intake().await else {
                was_connected = false;
                continue;
            };
            let silent = self.peers.lock().expired(probed_at, self.down_after);
            let dead = self.confirm_silent(silent).await;
            let spared = overdue.saturating_sub(dead.len()) as u64;
            self.counters
                .verdicts_spared
                .fetch_add(spared, Ordering::Relaxed);
            let now = Instant::now();
            for (node, peer) in dead {
                self.quorum.lock().lost_peer(&node, peer.incarnation, now);
                self.declared_down(&node, peer.incarnation, "silent");
            }
            self.decide_quorum(true);
        }
    }

    /// Whether this node's side of a partition serves (`split_brain.rs`):
    /// decided from the peer table; leaving the quorum takes back the
    /// verdicts on the peers it lost, and is logged and counted; `verdicts`:
    /// peers were just declared down (out of the quorum, those verdicts
    /// are taken back too).
    fn decide_quorum(&self, verdicts: bool) {
        if self.quorum.lock().strategy() == SplitBrain::Off {
            return;
        }
        let up = self.peers.lock().names();
        let (change, lost) = {
            let mut q = self.quorum.lock();
            let change = q.decide(&self.name, &up, Instant::now());
            let forgive = change == Some(Change::Left) || (verdicts && !q.in_quorum());
            let lost = forgive.then(|| q.lost_incarnations());
            (change, lost)
        };
        // Out of the quorum, every verdict on a lost peer is taken back,
        // also those made later: they are the other side of a partition.
        if let Some(lost) = lost {
            let mut downed = self.downed.lock();
            for (node, inc) in lost {
                downed.remove(&node, inc);
            }
        }
        match change {
            Some(Change::Left) => {
                self.in_quorum.store(false, Ordering::Release);
                self.counters.quorum_left.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(node = %self.name, peers_up = up.len(), strategy = ?self.quorum.lock().strategy(), "this node is on the losing side of a partition: it leaves the quorum (its shards are given up, none claimed) until it hears enough peers");
            }
            Some(Change::Joined) => {
                self.in_quorum.store(true, Ordering::Release);
                tracing::info!(node = %self.name, peers_up = up.len(), "this node is in the quorum again");
            }
            None => {}
        }
    }

    /// Of peers silent before this node's intake probe, those that do not
    /// answer a ping within `down_after` of this node's intervals (or
    /// have no one on their inbox): their heartbeats may be stuck in their
    /// own connection's outgoing queue behind a flood it is reading, but
    /// then so is their answer, and a dead node's inbox has no responders
    /// at once. A peer that answers is put back as heard now.
    async fn confirm_silent(&self, silent: Vec<(String, Peer)>) -> Vec<(String, Peer)> {
        if silent.is_empty() {
            return silent;
        }
        let limit = self.interval.mul_f64(self.down_after);
        let pings = silent.into_iter().map(|(node, peer)| async move {
            let subject = troupe_remote::node_subject(&self.ns, &node);
            let ping = troupe_remote::ping_frame(self.key.as_ref(), &subject);
            let answer = self.transport.request(&subject, ping, limit).await;
            (node, peer, answer.is_ok())
        });
        let mut dead = Vec::new();
        for (node, peer, alive) in futures::future::join_all(pings).await {
            if alive {
                tracing::info!(node = %self.name, peer = %node, "a peer silent by its heartbeats answered a ping: not down");
                self.peers.lock().reinstate(&node, peer, Instant::now());
            } else {
                dead.push((node, peer));
            }
        }
        dead
    }

    pub(crate) fn node_down(&self, node: &str, incarnation: u64, why: &'static str) {
        self.declared_down(node, incarnation, why);
    }

    /// `node` (that incarnation) is down: Down to watchers of its actors,
    /// its registry entries out of the cache and the bucket, hooks told.
    pub(crate) fn declared_down(&self, node: &str, incarnation: u64, why: &'static str) {
        if let Some(left_out) = self.down_log.admit(Instant::now()) {
            tracing::warn!(node = %self.name, peer = %node, why, left_out, "peer down");
        }
        self.counters.nodes_down.fetch_add(1, Ordering::Relaxed);
        self.downed.lock().insert(node, incarnation);
        self.recent_downs
            .lock()
            .insert(node, incarnation, why, Instant::now());
        self.standins.stop_node(node);
        let gone = self.cache.maps.write().drop_node(node, incarnation);
        if !gone.is_empty() {
            let kv = self.kv.clone();
            let n = gone.len() as u64;
            self.counters
                .registry_deletes
                .fetch_add(n, Ordering::Relaxed);
            self.handle.spawn(async move {
                for (key, rev) in gone {
                    // Conditional: a restarted node's fresh entry survives.
                    let _ = kv.delete(&key, Some(rev)).await;
                }
            });
        }
        for hook in self.down_hooks.lock().iter() {
            hook(node);
        }
    }
}
