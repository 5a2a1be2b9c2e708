//! Links: the receiver's half of the delivery accounting, and the link task.
//!
//! Every batch of tells starts with a link frame (sender epoch, sender name,
//! first sequence number; see [`envelope`](crate::envelope)). The inbox loop
//! keeps, per sender name, `{epoch, base, upto, received, dropped, dirty}`:
//! a new epoch (the sender restarted) or a first sight starts fresh state
//! with `base` = the batch's first number. A batch with first `F` and `k`
//! tells sets `upto = max(upto, F + k - 1)`, adds `k` to `received` and its
//! undelivered tells to `dropped`, counts `F - (upto + 1)` missed numbers if
//! it skips ahead, and marks the state dirty (a probe, `k = 0`, too, so an
//! ack lost on the way is sent again). One small *link task* per node runs
//! every ack period ([`NodeBuilder::ack_period`](crate::NodeBuilder::ack_period)):
//! it publishes an ack for each dirty state to the sender's inbox, and asks
//! each of this node's outboxes whether its link wants a probe (see
//! `outbox.rs`). Acks arriving here are handed to the outbox of the peer
//! that sent them, if it is this epoch's. The inbox loop takes the link
//! table's lock once per message and allocates only at a sender's first
//! sight.
//!
//! The link table is keyed by names read off the wire, so it is bounded:
//! at most `max_links` states (a new sender beyond them is not tracked: its
//! tells are delivered, counted in `links_refused`, and its sender sees
//! them unconfirmed), and the link task drops a state that has been acked
//! and quiet for `link_idle`. Dropping such a state loses nothing: the
//! sender's next batch starts a fresh one whose base follows the last
//! number acked, and a sender whose last ack was lost probes (at least
//! every 32 periods) long before the state goes.
//!
//! Receipts (see `receipts.rs`): a run's flagged tells leave
//! `(number, fate)` in the link state (at most [`MAX_HELD_RECEIPTS`];
//! beyond, the state is marked `overflowed` and the sender will say
//! `Unknown` rather than `Lost`), and wake the link task at once, so a
//! receipt travels within a round trip rather than an ack period. For a
//! sender that reads receipts (its link frames say so), every ack is
//! preceded, in the same message, by a receipts frame holding those not
//! yet sent and the state's `total` (also when 0: so that the sender can
//! say `Lost` of a flagged tell that never arrived). A message
//! that could not be published puts its receipts back.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::protocol::core::{node_subject, Core};
use crate::protocol::envelope::{
    append_seal, Frame, LinkAck, Receipts, HEADER_LEN, SEAL_FRAME_LEN,
};
use crate::protocol::outbox::Outbox;
use crate::protocol::stats::{add_and_log, bump, bump_and_log};

/// The largest gap in a sender's sequence numbers counted as missed tells;
/// a larger jump restarts the link state (see `Core::account_run`).
pub(crate) const MAX_GAP: u64 = 1 << 24;

/// The most receipts one link state holds between two acks.
pub(crate) const MAX_HELD_RECEIPTS: usize = 1 << 16;

/// The receiver's state of one link (tells from one sender node).
pub(crate) struct LinkIn {
    /// The sender's inbox, where acks go.
    subject: String,
    epoch: u64,
    base: u64,
    upto: u64,
    received: u64,
    dropped: u64,
    /// Changed since the last ack was sent.
    dirty: bool,
    /// The link task's tick when a batch last came in on this link.
    seen_tick: u64,
    /// The sender reads receipts frames.
    reads_receipts: bool,
    /// Receipts not yet sent: `(number, fate)`, ascending.
    receipts: Vec<(u64, u8)>,
    /// Receipts issued in this state (sent, held, or not kept).
    receipts_total: u64,
    /// A receipt of this state could not be kept.
    overflowed: bool,
}

impl LinkIn {
    fn fresh(&mut self, epoch: u64, first: u64) {
        self.epoch = epoch;
        self.base = first;
        self.upto = first.saturating_sub(1);
        self.received = 0;
        self.dropped = 0;
        self.receipts.clear();
        self.receipts_total = 0;
        self.overflowed = false;
    }
}

/// The link a run of tells in one message belongs to.
pub(crate) struct LinkRun<'a> {
    pub sender: &'a str,
    pub epoch: u64,
    pub first: u64,
    pub tells: u64,
    pub dropped: u64,
    /// The link frame says the sender reads receipts frames.
    pub reads_receipts: bool,
    /// The run's flagged tells: `(number, fate)`.
    pub receipts: Vec<(u64, u8)>,
}

impl Core {
    /// The link task: every `period`, acks and probes (see the module docs).
    pub(super) async fn link_task(weak: Weak<Core>, period: Duration) {
        // The first tick one period after start: a tick at once would find
        // nothing to do, and would come at a time that depends on when the
        // runtime first polls this task.
        let first = tokio::time::Instant::now() + period;
        let mut tick = tokio::time::interval_at(first, period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            // Receipts waiting wake the task before its tick: they go out
            // with an ack at once (an early ack is an ack; the tick's own
            // round stays on its period).
            let due = match weak.upgrade() {
                Some(core) => {
                    let due = core.receipts_due.clone();
                    drop(core);
                    due
                }
                None => break,
            };
            let early = tokio::select! {
                _ = tick.tick() => false,
                _ = due.notified() => true,
            };
            let Some(core) = weak.upgrade() else { break };
            if core.closed.load(Ordering::Acquire) {
                break;
            }
            if early {
                if core.transport.is_connected() {
                    core.send_acks().await;
                }
                continue;
            }
            let tick = std::panic::AssertUnwindSafe(core.link_tick());
            if futures::FutureExt::catch_unwind(tick).await.is_err() {
                bump(&core.counters.panics);
                tracing::error!(node = %core.name, "the link task's tick panicked; it goes on");
            }
        }
    }

    /// Accounts a run of tells in the sender's link state.
    pub(super) fn end_run(&self, r: LinkRun<'_>) {
        let receipts = !r.receipts.is_empty();
        self.account_run_of(r);
        if receipts {
            self.receipts_due.notify_one();
        }
    }

    fn account_run_of(&self, r: LinkRun<'_>) {
        let now = self.tick.load(Ordering::Relaxed);
        let mut links = self.links.lock();
        let full = links.len() >= self.max_links;
        match links.get_mut(r.sender) {
            Some(st) => {
                st.seen_tick = now;
                self.account_run(st, &r)
            }
            None if full => {
                drop(links);
                if bump_and_log(&self.counters.links_refused) {
                    let count = self.counters.links_refused.load(Ordering::Relaxed);
                    tracing::warn!(node = %self.name, sender = %r.sender, count, max = self.max_links, "the link table is full: this sender's tells are not acknowledged");
                }
            }
            None => {
                // A sender's first sight: the one allocation of its link.
                let mut st = LinkIn {
                    subject: node_subject(&self.cluster, r.sender),
                    epoch: r.epoch,
                    base: 0,
                    upto: 0,
                    received: 0,
                    dropped: 0,
                    dirty: false,
                    seen_tick: now,
                    reads_receipts: false,
                    receipts: Vec::new(),
                    receipts_total: 0,
                    overflowed: false,
                };
                st.fresh(r.epoch, r.first);
                self.account_run(&mut st, &r);
                links.insert(r.sender.to_string(), st);
            }
        }
    }

    fn account_run(&self, st: &mut LinkIn, r: &LinkRun<'_>) {
        if st.epoch != r.epoch {
            st.fresh(r.epoch, r.first);
        }
        let expected = st.upto.saturating_add(1);
        if r.first > expected {
            let missed = r.first - expected;
            if missed > MAX_GAP {
                // No sender loses this many in one gap (an outage loses
                // what the buffers held, ~10^6 at most): a forged or
                // garbled number. Start the state over at it, as a new
                // epoch would; the sender's ledger then counts the
                // numbers before it lost, and `frames_missed` keeps its
                // meaning.
                self.bad_frame(
                    &format_args!("a link frame skipping {missed} sequence numbers"),
                    0,
                );
                st.fresh(r.epoch, r.first);
            } else if add_and_log(&self.counters.frames_missed, missed) {
                let total = self.counters.frames_missed.load(Ordering::Relaxed);
                tracing::warn!(node = %self.name, sender = %r.sender, missed, total, "tells from this sender never arrived");
            }
        }
        // `first >= 1` (checked at decoding), so neither side wraps.
        st.upto = st
            .upto
            .max(r.first.saturating_add(r.tells).saturating_sub(1));
        st.received = st.received.saturating_add(r.tells);
        st.dropped = st.dropped.saturating_add(r.dropped);
        st.dirty = true;
        st.reads_receipts |= r.reads_receipts;
        if !r.receipts.is_empty() {
            let n = r.receipts.len() as u64;
            st.receipts_total = st.receipts_total.saturating_add(n);
            self.counters
                .receipts_issued
                .fetch_add(n, Ordering::Relaxed);
            let room = MAX_HELD_RECEIPTS.saturating_sub(st.receipts.len());
            if room < r.receipts.len() {
                st.overflowed = true;
            }
            st.receipts.extend(r.receipts.iter().take(room).copied());
        }
    }

    /// Hands a peer's receipts frame to the outbox for that peer.
    pub(super) fn on_receipts(&self, frame: &Frame<'_>, len: usize) {
        let rc = match Receipts::decode(frame) {
            Ok(r) => r,
            Err(e) => {
                return self.bad_frame(
                    &format_args!("a receipts frame that did not decode: {e}"),
                    len,
                )
            }
        };
        if rc.epoch != self.epoch {
            return;
        }
        let outbox = self.peers.lock().get(rc.receiver.as_str()).cloned();
        if let Some(o) = outbox {
            o.on_receipts(&rc);
        }
    }

    /// The peer `node` was declared down: the tells to it not yet
    /// accounted are counted lost, their receipts resolved `Lost`. Returns
    /// how many tells.
    pub(crate) fn peer_down(&self, node: &str) -> u64 {
        let outbox = self.peers.lock().get(node).cloned();
        let lost = outbox.map_or(0, |o| o.peer_down(&self.counters));
        if lost > 0 {
            tracing::warn!(node = %self.name, peer = %node, tells = lost, "peer declared down: its unconfirmed tells are counted lost");
        }
        lost
    }

    /// Hands a peer's ack to the outbox for that peer.
    pub(super) fn on_ack(&self, frame: &Frame<'_>, len: usize) {
        let ack = match LinkAck::decode(frame) {
            Ok(a) => a,
            Err(e) => return self.bad_frame(&format_args!("an ack that did not decode: {e}"), len),
        };
        if ack.epoch != self.epoch {
            tracing::debug!(node = %self.name, peer = %ack.receiver, "an ack for an earlier connection of this node");
            return;
        }
        let outbox = self.peers.lock().get(ack.receiver.as_str()).cloned();
        match outbox {
            Some(o) => o.on_ack(&ack, &self.counters),
            None => {
                tracing::debug!(node = %self.name, peer = %ack.receiver, "an ack from a node this one never sent to")
            }
        }
    }

    /// The link task's work: acks for dirty receiver states, probes for quiet
    /// outboxes with unconfirmed tells.
    async fn link_tick(&self) {
        let now = self.tick.fetch_add(1, Ordering::Relaxed) + 1;
        if !self.transport.is_connected() {
            return;
        }
        self.send_acks().await;
        // After the acks: a state still dirty (its ack failed) stays.
        let idle = self.idle_ticks;
        self.links
            .lock()
            .retain(|_, l| l.dirty || now.saturating_sub(l.seen_tick) <= idle);
        let outboxes: Vec<Arc<Outbox>> = self.peers.lock().values().cloned().collect();
        let at = std::time::Instant::now();
        for o in outboxes {
            o.expire_receipts(at);
            if o.wants_probe() {
                o.push_probe();
            }
        }
    }

    /// Publishes an ack for every receiver link state that changed since its
    /// last one.
    pub(super) async fn send_acks(&self) {
        type Held = Vec<(u64, u8)>;
        let acks: Vec<(String, String, Vec<u8>, Held)> = {
            let mut links = self.links.lock();
            links
                .iter_mut()
                .filter(|(_, l)| l.dirty)
                .map(|(sender, l)| {
                    l.dirty = false;
                    let mut out =
                        Vec::with_capacity(2 * HEADER_LEN + self.name.len() + SEAL_FRAME_LEN);
                    // Taken now, kept until the message is published.
                    let mut held = std::mem::take(&mut l.receipts);
                    if l.reads_receipts {
                        let rc = Receipts {
                            epoch: l.epoch,
                            total: l.receipts_total,
                            receiver: self.name.to_string(),
                            base: l.base,
                            overflowed: l.overflowed,
                            list: held,
                        };
                        rc.encode(&mut out);
                        held = rc.list;
                    } else {
                        // A sender that does not read receipts gets none.
                        held.clear();
                    }
                    let ack = LinkAck {
                        epoch: l.epoch,
                        upto: l.upto,
                        receiver: self.name.to_string(),
                        base: l.base,
                        received: l.received,
                        dropped: l.dropped,
                    };
                    ack.encode(&mut out);
                    if let Some(key) = &self.key {
                        append_seal(&mut out, key, &l.subject);
                    }
                    (sender.clone(), l.subject.clone(), out, held)
                })
                .collect()
        };
        for (sender, subject, bytes, held) in acks {
            match self.transport.publish(&subject, bytes.into()).await {
                Ok(()) => bump(&self.counters.acks_sent),
                Err(e) => {
                    tracing::debug!(node = %self.name, sender = %sender, error = %e, "could not send an ack; will again");
                    if let Some(l) = self.links.lock().get_mut(&sender) {
                        l.dirty = true;
                        // The receipts go with the next ack, before any
                        // issued since (the state may have started over:
                        // then they belong to no one).
                        if !held.is_empty() && held.first().is_some_and(|&(s, _)| s >= l.base) {
                            let newer = std::mem::replace(&mut l.receipts, held);
                            l.receipts.extend(newer);
                        }
                    }
                }
            }
        }
    }
}
