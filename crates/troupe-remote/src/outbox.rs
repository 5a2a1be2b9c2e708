//! Coalescing and the sender's half of a link: one outbox per peer node
//! gathers the frames of every tell bound there, numbers them, and one
//! flusher task publishes them as few NATS messages; the peer's acks are
//! accounted here.
//!
//! Protocol:
//! 1. `tell` locks the outbox and gives the tell the link's next sequence
//!    number (1, 2, 3...; under the lock, so number order is wire order). If
//!    the open batch is empty it first writes the batch's link frame (epoch,
//!    first number, node name; see `envelope`), then writes the tell's frame
//!    straight into the open batch. If the batch would pass `batch_bytes` it
//!    seals the frames before this tell as a finished batch, and the new open
//!    batch starts with its own link frame (first = this tell's number)
//!    followed by the tell. If no wake-up is pending it sets `signalled` and
//!    notifies the flusher (after unlocking).
//! 2. The flusher wakes, takes every sealed batch and the open one under the
//!    lock, clears `signalled`, unlocks, and publishes them in order.
//!    While it publishes, new tells fill a fresh batch: the longer NATS takes,
//!    the more a burst coalesces; a lone tell still goes out at once. A batch
//!    whose publish fails is counted in `frames_lost` and its numbers are
//!    recorded in the ledger as failed, so an ack never counts them again.
//! 3. The peer acks `(base, upto, received, dropped)` for the link; the
//!    [`Ledger`] turns each ack into deltas of confirmed, refused and lost
//!    tells. A link that has unconfirmed tells and no new tell since the last
//!    tick of the node's link task gets a *probe* (a batch holding only a link
//!    frame, first = the next number), so the peer learns how far the sender
//!    has counted and a tail lost in an outage is revealed; an unanswered
//!    probe doubles the gap to the next one, up to [`MAX_PROBE_GAP`] ticks.
//!
//! Invariants:
//! - Frames leave in the order `tell` accepted them (one flusher, batches in
//!   order), so tells from one node to one actor arrive in order, and the
//!   tells of one batch have consecutive numbers starting at its link frame's
//!   `first`.
//! - A batch is never larger than `batch_bytes` (≤ the server's max payload)
//!   unless it holds a single tell, whose body the node bounds so that the
//!   tell and its link frame fit the max payload.
//! - `queued` counts accepted bytes not yet taken by the flusher; `tell`
//!   refuses with `Full` above `queue_bytes`, which bounds memory.
//! - No wake-up is lost: `signalled` is cleared under the lock in the same
//!   critical section that empties the outbox, and `Notify` keeps a permit
//!   when the flusher is not yet waiting.
//! - Accounting: every accepted tell (number `1..next_seq`) is in exactly one
//!   of the ledger's confirmed, refused, lost, failed, or else unconfirmed
//!   (the gauge `next_seq - 1 - accounted`). The ledger's lock is never held
//!   while taking the state's, nor the other way round.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use async_nats::{Client, Subject};
use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::Notify;

use crate::auth::ClusterKey;
use crate::envelope::{
    append_seal, encode_frame, encode_link, link_frame_len, EncodeError, Header, LinkAck,
    SEAL_FRAME_LEN,
};
use crate::stats::Counters;

/// The longest gap between two unanswered probes, in link-task ticks.
pub(crate) const MAX_PROBE_GAP: u32 = 32;

/// A finished batch: its bytes, the number of its first tell, how many tells.
struct Batch {
    bytes: Vec<u8>,
    first: u64,
    tells: u64,
}

struct State {
    open: Vec<u8>,
    open_tells: u64,
    /// The number of the open batch's first tell (as written in its link frame).
    open_first: u64,
    sealed: Vec<Batch>,
    queued: usize,
    signalled: bool,
    closed: bool,
    /// The flusher holds batches it has not finished publishing.
    publishing: bool,
    /// The number the next accepted tell gets; `next_seq - 1` were accepted.
    next_seq: u64,
    /// A tell was accepted since the link task's last tick.
    pushed: bool,
}

/// Why an outbox refused a frame.
pub(crate) enum Refusal {
    Closed,
    Full,
    Encode(EncodeError),
}

pub(crate) struct Outbox {
    subject: Subject,
    /// This node's epoch and name, written in every link frame.
    epoch: u64,
    node: Arc<str>,
    link_len: usize,
    batch_bytes: usize,
    queue_bytes: usize,
    state: Mutex<State>,
    ledger: Mutex<Ledger>,
    notify: Notify,
    /// Seals every batch, when the node has a cluster key (the node keeps
    /// `batch_bytes` a seal frame short of the max payload).
    key: Option<ClusterKey>,
}

impl Outbox {
    pub(crate) fn new(
        subject: Subject,
        epoch: u64,
        node: Arc<str>,
        batch_bytes: usize,
        queue_bytes: usize,
        key: Option<ClusterKey>,
    ) -> Self {
        Outbox {
            subject,
            epoch,
            link_len: link_frame_len(&node),
            node,
            batch_bytes,
            queue_bytes,
            state: Mutex::new(State {
                open: Vec::new(),
                open_tells: 0,
                open_first: 1,
                sealed: Vec::new(),
                queued: 0,
                signalled: false,
                closed: false,
                publishing: false,
                next_seq: 1,
                pushed: false,
            }),
            ledger: Mutex::new(Ledger::default()),
            notify: Notify::new(),
            key,
        }
    }

    pub(crate) fn subject(&self) -> &Subject {
        &self.subject
    }

    /// Appends one tell frame of `value`, giving it the link's next number.
    pub(crate) fn push<T: Serialize>(
        &self,
        header: Header,
        value: &T,
        max_body: usize,
    ) -> Result<(), Refusal> {
        let mut st = self.state.lock();
        if st.closed {
            return Err(Refusal::Closed);
        }
        if st.queued >= self.queue_bytes {
            return Err(Refusal::Full);
        }
        let seq = st.next_seq;
        let start = st.open.len();
        let mut link = 0;
        if start == 0 {
            link = encode_link(&mut st.open, self.epoch, seq, &self.node);
            st.open_first = seq;
        }
        let frame_start = st.open.len();
        let n = match encode_frame(&mut st.open, header, value, max_body) {
            Ok(n) => n,
            Err(e) => {
                st.open.truncate(start);
                return Err(Refusal::Encode(e));
            }
        };
        if st.open_tells > 0 && st.open.len() > self.batch_bytes {
            // Seal the tells before this one; this tell opens the next
            // batch, behind a link frame of its own.
            let mut next = Vec::with_capacity(self.batch_bytes.max(self.link_len + n));
            link = encode_link(&mut next, self.epoch, seq, &self.node);
            next.extend_from_slice(&st.open[frame_start..]);
            st.open.truncate(frame_start);
            let bytes = std::mem::replace(&mut st.open, next);
            let tells = std::mem::replace(&mut st.open_tells, 0);
            let first = std::mem::replace(&mut st.open_first, seq);
            st.sealed.push(Batch {
                bytes,
                first,
                tells,
            });
        }
        st.open_tells += 1;
        st.next_seq = seq + 1;
        st.pushed = true;
        st.queued += n + link;
        let wake = !st.signalled;
        st.signalled = true;
        drop(st);
        if wake {
            self.notify.notify_one();
        }
        Ok(())
    }

    /// Queues a probe (a batch holding only a link frame whose first is the
    /// next number) unless a batch is already open, which carries a link
    /// frame of its own. Returns whether it queued one.
    pub(crate) fn push_probe(&self) -> bool {
        let mut st = self.state.lock();
        if st.closed || !st.open.is_empty() {
            return false;
        }
        let seq = st.next_seq;
        st.open_first = seq;
        let n = encode_link(&mut st.open, self.epoch, seq, &self.node);
        st.queued += n;
        let wake = !st.signalled;
        st.signalled = true;
        drop(st);
        if wake {
            self.notify.notify_one();
        }
        true
    }

    /// Whether frames wait for the flusher.
    pub(crate) fn pending(&self) -> bool {
        let st = self.state.lock();
        st.queued > 0 || st.publishing
    }

    /// Tells accepted so far on this link.
    fn accepted(&self) -> u64 {
        self.state.lock().next_seq - 1
    }

    /// Tells accepted and not yet accounted (confirmed, refused, lost or failed).
    pub(crate) fn unconfirmed(&self) -> u64 {
        let accepted = self.accepted();
        self.ledger.lock().unconfirmed(accepted)
    }

    /// The link task's tick: whether this link wants a probe now. It does
    /// when tells are unconfirmed and none was accepted since the last tick
    /// (a new batch would carry a link frame anyway), spaced out while the
    /// peer does not answer.
    pub(crate) fn wants_probe(&self) -> bool {
        let (pushed, accepted) = {
            let mut st = self.state.lock();
            (std::mem::take(&mut st.pushed), st.next_seq - 1)
        };
        self.ledger.lock().wants_probe(pushed, accepted)
    }

    /// Accounts the peer's ack; pushes the deltas into the node's counters.
    pub(crate) fn on_ack(&self, ack: &LinkAck, counters: &Counters) {
        let accepted = self.accepted();
        let result = self.ledger.lock().on_ack(ack, accepted);
        let d = match result {
            Ok(d) => d,
            Err(why) => {
                tracing::debug!(peer = %ack.receiver, ?why, ?ack, "ignored a link ack");
                return;
            }
        };
        counters.tells_confirmed.fetch_add(d.confirmed, Relaxed);
        counters.tells_refused_by_peer.fetch_add(d.refused, Relaxed);
        counters.frames_lost.fetch_add(d.lost, Relaxed);
        if d.hole > 0 {
            tracing::warn!(
                peer = %ack.receiver,
                tells = d.hole,
                base = ack.base,
                "the peer's link state starts after tells it never confirmed (it restarted, or they were lost): counted lost"
            );
        }
        if d.lost > d.hole {
            tracing::warn!(peer = %ack.receiver, tells = d.lost - d.hole, upto = ack.upto, "the peer's ack reveals tells lost in transit");
        }
        if d.late > 0 {
            tracing::warn!(peer = %ack.receiver, tells = d.late, "tells already counted lost arrived late");
        }
    }

    /// Refuses further frames; the flusher sends what is queued and ends.
    pub(crate) fn close(&self) {
        self.state.lock().closed = true;
        self.notify.notify_one();
    }

    /// The flusher task: publishes batches until the outbox is closed and empty.
    pub(crate) async fn flusher(self: Arc<Self>, client: Client, counters: Arc<Counters>) {
        loop {
            self.notify.notified().await;
            let (batches, closed) = {
                let mut st = self.state.lock();
                st.signalled = false;
                let mut batches = std::mem::take(&mut st.sealed);
                if !st.open.is_empty() {
                    let cap = st.open.len().min(self.batch_bytes);
                    let bytes = std::mem::replace(&mut st.open, Vec::with_capacity(cap));
                    batches.push(Batch {
                        bytes,
                        first: st.open_first,
                        tells: std::mem::replace(&mut st.open_tells, 0),
                    });
                }
                st.queued = 0;
                st.publishing = true;
                (batches, st.closed)
            };
            for Batch {
                mut bytes,
                first,
                tells,
            } in batches
            {
                if let Some(key) = &self.key {
                    bytes.reserve_exact(SEAL_FRAME_LEN);
                    append_seal(&mut bytes, key, &self.subject);
                }
                match client.publish(self.subject.clone(), bytes.into()).await {
                    Ok(()) if tells == 0 => {
                        counters.probes_sent.fetch_add(1, Relaxed);
                    }
                    Ok(()) => {
                        counters.frames_sent.fetch_add(tells, Relaxed);
                        counters.batches_sent.fetch_add(1, Relaxed);
                    }
                    Err(_) if tells == 0 => {}
                    Err(e) => {
                        // Recorded before the next batch goes out, so no ack
                        // revealing these numbers can be accounted first.
                        self.ledger.lock().record_failed(first, tells);
                        counters.frames_lost.fetch_add(tells, Relaxed);
                        tracing::warn!(subject = %self.subject, frames = tells, error = %e, "lost a batch of tells");
                    }
                }
            }
            self.state.lock().publishing = false;
            if closed {
                break;
            }
        }
    }
}

/// What one ack changed, in tells.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Delta {
    /// Newly confirmed delivered.
    pub confirmed: u64,
    /// Newly confirmed refused by the peer.
    pub refused: u64,
    /// Newly counted lost, `hole` included.
    pub lost: u64,
    /// Of `lost`: numbers before the ack's `base` that the peer never
    /// confirmed (it restarted, or the first batches never arrived).
    pub hole: u64,
    /// Tells that had been counted lost and that the peer now says arrived
    /// (cannot happen while NATS keeps one publisher's messages in order;
    /// counted in `confirmed` or `refused` as well, and logged).
    pub late: u64,
}

/// Why an ack changed nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ignored {
    /// Older than what the ledger holds (a late ack of the same segment, or
    /// of an earlier one).
    Stale,
    /// Numbers that cannot be: `upto` past what was accepted, more received
    /// than numbered, a base inside the current segment.
    Invalid,
}

/// The part of the link the peer's acks cover since its state began: the
/// values of the last ack applied, and the loss counted for it.
#[derive(Clone, Copy, Debug)]
struct Segment {
    base: u64,
    upto: u64,
    received: u64,
    dropped: u64,
    lost: u64,
}

/// The sender's accounting of one link. An ack `(B, U, R, D)` for the
/// current segment (same base `B`) gives, cumulatively for the segment:
/// delivered `R - D`, refused `D`, lost `(U - B + 1) - R - failed_in(B..=U)`;
/// the ledger adds the difference to the last ack's. An ack with a later
/// base closes the segment: the numbers between its last `upto` and the new
/// base, not already failed, count as lost (never confirmed), and a new
/// segment starts.
#[derive(Debug)]
pub(crate) struct Ledger {
    seg: Option<Segment>,
    /// Numbers whose publish failed here: disjoint inclusive ranges in
    /// ascending order (batches fail in order, so neighbours merge).
    failed: Vec<(u64, u64)>,
    failed_total: u64,
    confirmed: u64,
    refused: u64,
    lost: u64,
    /// An ack made progress since the last tick.
    progress: bool,
    /// Ticks between probes while the peer does not answer; ticks to wait.
    probe_gap: u32,
    probe_wait: u32,
}

impl Default for Ledger {
    fn default() -> Self {
        Ledger {
            seg: None,
            failed: Vec::new(),
            failed_total: 0,
            confirmed: 0,
            refused: 0,
            lost: 0,
            progress: false,
            probe_gap: 1,
            probe_wait: 0,
        }
    }
}

impl Ledger {
    /// Records that the tells `first..first + tells` were never published.
    pub(crate) fn record_failed(&mut self, first: u64, tells: u64) {
        if tells == 0 {
            return;
        }
        let last = first + tells - 1;
        match self.failed.last_mut() {
            Some((_, end)) if *end + 1 == first => *end = last,
            _ => self.failed.push((first, last)),
        }
        self.failed_total += tells;
    }

    /// Failed numbers in `lo..=hi`.
    fn failed_in(&self, lo: u64, hi: u64) -> u64 {
        self.failed
            .iter()
            .filter(|(a, b)| *a <= hi && *b >= lo)
            .map(|(a, b)| (*b).min(hi) - (*a).max(lo) + 1)
            .sum()
    }

    fn accounted(&self) -> u64 {
        self.confirmed + self.refused + self.lost + self.failed_total
    }

    /// Of `accepted` tells, those not yet in a bucket.
    pub(crate) fn unconfirmed(&self, accepted: u64) -> u64 {
        accepted.saturating_sub(self.accounted())
    }

    /// Applies an ack from the peer; `accepted` is how many tells this link
    /// has numbered.
    pub(crate) fn on_ack(&mut self, ack: &LinkAck, accepted: u64) -> Result<Delta, Ignored> {
        let (base, upto, received, dropped) = (ack.base, ack.upto, ack.received, ack.dropped);
        if base == 0
            || upto > accepted
            || upto.saturating_add(1) < base
            || received > upto + 1 - base
            || dropped > received
        {
            return Err(Ignored::Invalid);
        }
        let mut d = Delta::default();
        match self.seg {
            Some(s) if base == s.base => {
                if upto < s.upto || received < s.received || dropped < s.dropped {
                    return Err(Ignored::Stale);
                }
            }
            Some(s) if base < s.base => return Err(Ignored::Stale),
            Some(s) if base <= s.upto => return Err(Ignored::Invalid),
            _ => {
                // A new segment: what lies between the last one and it was
                // never confirmed.
                let prev_end = self.seg.map_or(0, |s| s.upto);
                let gap = base - 1 - prev_end;
                d.hole = gap - self.failed_in(prev_end + 1, base - 1).min(gap);
                d.lost = d.hole;
                self.failed.retain(|&(_, end)| end >= base);
                self.seg = Some(Segment {
                    base,
                    upto: base - 1,
                    received: 0,
                    dropped: 0,
                    lost: 0,
                });
            }
        }
        let failed = self.failed_in(base, upto);
        let Some(s) = self.seg.as_mut() else {
            return Err(Ignored::Invalid);
        };
        let lost_now = (upto + 1 - base).saturating_sub(received + failed);
        d.confirmed = (received - dropped).saturating_sub(s.received - s.dropped);
        d.refused = dropped - s.dropped;
        d.lost += lost_now.saturating_sub(s.lost);
        d.late = s.lost.saturating_sub(lost_now);
        *s = Segment {
            base,
            upto,
            received,
            dropped,
            lost: s.lost.max(lost_now),
        };
        self.confirmed += d.confirmed;
        self.refused += d.refused;
        self.lost += d.lost;
        if d.confirmed + d.refused + d.lost > 0 {
            self.progress = true;
        }
        Ok(d)
    }

    /// See [`Outbox::wants_probe`].
    fn wants_probe(&mut self, pushed: bool, accepted: u64) -> bool {
        if std::mem::take(&mut self.progress) {
            self.probe_gap = 1;
            self.probe_wait = 0;
        }
        if pushed || self.unconfirmed(accepted) == 0 {
            return false;
        }
        if self.probe_wait > 0 {
            self.probe_wait -= 1;
            return false;
        }
        self.probe_wait = self.probe_gap;
        self.probe_gap = (self.probe_gap * 2).min(MAX_PROBE_GAP);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::{decode_body, Frames, Kind};

    fn ack(base: u64, upto: u64, received: u64, dropped: u64) -> LinkAck {
        LinkAck {
            epoch: 1,
            upto,
            receiver: "b".into(),
            base,
            received,
            dropped,
        }
    }

    fn delta(confirmed: u64, refused: u64, lost: u64, hole: u64) -> Delta {
        Delta {
            confirmed,
            refused,
            lost,
            hole,
            late: 0,
        }
    }

    #[test]
    fn a_gap_and_refusals_are_accounted() {
        let mut l = Ledger::default();
        // 1..=10 sent; 4 and 5 never arrived; 2 of the 8 that did were refused.
        assert_eq!(l.on_ack(&ack(1, 10, 8, 2), 10), Ok(delta(6, 2, 2, 0)));
        assert_eq!(l.unconfirmed(10), 0);
        assert_eq!(l.unconfirmed(15), 5);
        // The next ack adds only the difference.
        assert_eq!(l.on_ack(&ack(1, 15, 13, 2), 15), Ok(delta(5, 0, 0, 0)));
        assert_eq!(l.unconfirmed(15), 0);
        assert_eq!((l.confirmed, l.refused, l.lost), (11, 2, 2));
    }

    #[test]
    fn a_stale_ack_is_ignored() {
        let mut l = Ledger::default();
        l.on_ack(&ack(1, 20, 20, 0), 20).unwrap();
        assert_eq!(l.on_ack(&ack(1, 10, 10, 0), 20), Err(Ignored::Stale));
        assert_eq!(l.on_ack(&ack(1, 20, 20, 0), 20), Ok(Delta::default()));
        assert_eq!(l.confirmed, 20);
    }

    #[test]
    fn impossible_acks_are_refused() {
        let mut l = Ledger::default();
        assert_eq!(l.on_ack(&ack(1, 11, 5, 0), 10), Err(Ignored::Invalid)); // upto > accepted
        assert_eq!(l.on_ack(&ack(1, 5, 6, 0), 10), Err(Ignored::Invalid)); // received > numbered
        assert_eq!(l.on_ack(&ack(1, 5, 3, 4), 10), Err(Ignored::Invalid)); // dropped > received
        assert_eq!(l.on_ack(&ack(0, 5, 3, 0), 10), Err(Ignored::Invalid));
        l.on_ack(&ack(3, 8, 6, 0), 10).unwrap();
        assert_eq!(l.on_ack(&ack(5, 9, 1, 0), 10), Err(Ignored::Invalid)); // base inside
        assert_eq!(l.on_ack(&ack(2, 9, 1, 0), 10), Err(Ignored::Stale)); // older base
    }

    #[test]
    fn a_new_base_counts_the_unconfirmed_hole_as_lost() {
        let mut l = Ledger::default();
        // The first batches never arrived: the peer's state starts at 4.
        assert_eq!(l.on_ack(&ack(4, 10, 7, 0), 10), Ok(delta(7, 0, 3, 3)));
        // The peer restarts: its new state starts at 31; 11..=30 unconfirmed.
        assert_eq!(l.unconfirmed(35), 25);
        assert_eq!(l.on_ack(&ack(31, 35, 5, 1), 35), Ok(delta(4, 1, 20, 20)));
        assert_eq!(l.unconfirmed(35), 0);
        // A probe-only ack of a new state (upto = base - 1) works too.
        assert_eq!(l.on_ack(&ack(41, 40, 0, 0), 40), Ok(delta(0, 0, 5, 5)));
        assert_eq!(l.unconfirmed(40), 0);
    }

    #[test]
    fn failed_publishes_are_not_counted_twice() {
        let mut l = Ledger::default();
        l.record_failed(5, 3); // 5..=7
        l.record_failed(8, 2); // 8..=9, merged
        l.record_failed(20, 1);
        assert_eq!(l.failed, vec![(5, 9), (20, 20)]);
        assert_eq!(l.unconfirmed(25), 19);
        // 1..=12 seen by the peer except the failed 5..=9 and a lost 11.
        assert_eq!(l.on_ack(&ack(1, 12, 6, 0), 25), Ok(delta(6, 0, 1, 0)));
        assert_eq!(l.unconfirmed(25), 12); // 13..=25 but the failed 20
                                           // A peer restart whose new base lies past the failed 20: the hole
                                           // 13..=21 holds one failed number, so 8 are lost.
        assert_eq!(l.on_ack(&ack(22, 25, 4, 0), 25), Ok(delta(4, 0, 8, 8)));
        assert_eq!(l.unconfirmed(25), 0);
        assert_eq!(l.failed_total + l.lost + l.confirmed, 25);
    }

    #[test]
    fn probes_back_off_while_the_peer_is_silent_and_reset_on_progress() {
        let mut l = Ledger::default();
        let probes: Vec<bool> = (0..12).map(|_| l.wants_probe(false, 5)).collect();
        let at: Vec<usize> = (0..12).filter(|&i| probes[i]).collect();
        assert_eq!(at, vec![0, 2, 5, 10]);
        assert!(
            !l.wants_probe(true, 5),
            "a tell since the last tick carries a link frame"
        );
        l.on_ack(&ack(1, 3, 3, 0), 5).unwrap();
        assert!(l.wants_probe(false, 5), "progress resets the gap");
        l.on_ack(&ack(1, 5, 5, 0), 5).unwrap();
        assert!(!l.wants_probe(false, 5), "nothing unconfirmed");
    }

    /// The link frames and first numbers of the batches an outbox holds.
    fn links(o: &Outbox) -> Vec<(u64, u64)> {
        let st = o.state.lock();
        let mut all: Vec<&[u8]> = st.sealed.iter().map(|b| &b.bytes[..]).collect();
        all.push(&st.open);
        all.iter()
            .map(|bytes| {
                let frames: Vec<_> = Frames::new(bytes, 1 << 20).map(|f| f.unwrap()).collect();
                assert_eq!(
                    frames[0].kind,
                    Kind::Link,
                    "a batch starts with a link frame"
                );
                assert_eq!(frames[0].type_id, 7);
                assert_eq!(decode_body::<&str>(frames[0].body), Ok("a"));
                assert!(frames[1..].iter().all(|f| f.kind == Kind::Tell));
                (frames[0].correlation, frames.len() as u64 - 1)
            })
            .collect()
    }

    #[test]
    fn a_sealed_overflow_starts_the_next_batch_with_its_own_link_frame() {
        // Room for the link frame (34 bytes) and three 33-byte tells.
        let o = Outbox::new(
            Subject::from("s"),
            7,
            "a".into(),
            34 + 3 * 33,
            1 << 20,
            None,
        );
        let h = Header::new(Kind::Tell, 1, 2, 0);
        for i in 0..7u8 {
            o.push(h, &i, 100).ok().unwrap();
        }
        assert_eq!(links(&o), vec![(1, 3), (4, 3), (7, 1)]);
        {
            let st = o.state.lock();
            assert!(st.sealed.iter().all(|b| b.bytes.len() <= 34 + 3 * 33));
            let firsts: Vec<_> = st.sealed.iter().map(|b| (b.first, b.tells)).collect();
            assert_eq!(firsts, vec![(1, 3), (4, 3)]);
            assert_eq!((st.open_first, st.open_tells, st.next_seq), (7, 1, 8));
        }
        // A refused tell takes no number and leaves the batch as it was.
        assert!(matches!(
            o.push(h, &vec![0u8; 200], 100),
            Err(Refusal::Encode(_))
        ));
        assert_eq!(o.accepted(), 7);
        assert!(!o.push_probe(), "a batch is open: its link frame does");
        assert_eq!(o.unconfirmed(), 7);
    }

    #[test]
    fn a_probe_is_a_lone_link_frame_with_the_next_number() {
        let o = Outbox::new(Subject::from("s"), 7, "a".into(), 1024, 1 << 20, None);
        let h = Header::new(Kind::Tell, 1, 2, 0);
        o.push(h, &1u8, 100).ok().unwrap();
        o.push(h, &2u8, 100).ok().unwrap();
        o.state.lock().open.clear(); // as if the flusher took it
        assert!(o.push_probe());
        assert_eq!(links(&o), vec![(3, 0)]);
    }
}
