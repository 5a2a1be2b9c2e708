//! Counters a node keeps about its traffic, bad input included.
//!
//! # As a receiver
//!
//! Every frame a node receives ends in exactly one of: `delivered`,
//! `asks_served`, `refused` (the local actor was full or stopped),
//! `unknown_target`, `unknown_type`, `undecodable`, `schema_mismatches`,
//! `link_frames` (the link
//! and ack frames of the delivery accounting), or, for frames that could
//! not even be framed, `bad_frames` (once per NATS message, since nothing after
//! a bad length can be re-framed). Beside them, per link (sender node):
//! `frames_missed` counts the sequence numbers that never arrived (a gap
//! before a batch's first number), and `unlinked` the tells that came in a
//! message without a link frame (delivered all the same, but no sender can
//! account for them).
//!
//! # As a sender
//!
//! Every tell that `tell` accepted ends, on the sending node, in exactly one
//! of four buckets:
//!
//! ```text
//! accepted = tells_confirmed + tells_refused_by_peer + frames_lost + tells_unconfirmed
//! ```
//!
//! - `tells_confirmed`: the peer's acks say its actor took it;
//! - `tells_refused_by_peer`: the peer received it and did not deliver it
//!   (the actor was full or stopped, or the target or type is unknown there,
//!   or the type has another shape there, or the body did not decode): the
//!   peer's own `refused`, `unknown_target`, `unknown_type`,
//!   `schema_mismatches` and `undecodable` tells from us;
//! - `frames_lost`: known not delivered: its publish failed here, or the
//!   peer's acks show it never arrived (a gap in the numbers, or numbers
//!   before a peer's new link state began: a peer that restarted may have
//!   taken some of those before it died, but never confirmed them);
//! - `tells_unconfirmed` (a gauge, not a counter): not yet accounted. It
//!   drains to 0 within a few link-sync intervals once the link is quiet and
//!   connected and the peer is alive; it stays up while the peer is absent.
//!
//! A tell's peer declared down ([`Node::peer_down`](crate::Node::peer_down))
//! moves its unconfirmed tells to `frames_lost` (and `tells_lost_to_down`).
//! `tells_confirmed` means "handed to the actor's mailbox", never "handled":
//! a peer that dies drops what its mailboxes held, confirmed or not.
//!
//! Receipts (tells sent with
//! [`RemoteRef::tell_confirmed`](crate::RemoteRef::tell_confirmed)) are in
//! these buckets like any tell, and are also counted by outcome:
//! `receipts_delivered + receipts_refused + receipts_lost + receipts_unknown
//! + receipts_waiting` is every receipt asked for.
//!
//! The sum holds at any instant up to the skew of relaxed reads (a tell is
//! counted in `frames_lost` a moment before its link's gauge drops).
//!
//! The counters only grow; they are relaxed
//! atomics, read as a snapshot that is consistent per field, not across fields.
//! Bad input is logged (`tracing::warn!`) at its 1st, 2nd, 4th, 8th...
//! occurrence per counter, so a flood of garbage cannot flood the log; so are
//! the receiver's missed numbers. A sender logs every ack that reveals loss.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

#[derive(Default, Debug)]
pub(crate) struct Counters {
    pub frames_sent: AtomicU64,
    pub batches_sent: AtomicU64,
    pub frames_lost: AtomicU64,
    pub frames_received: AtomicU64,
    pub delivered: AtomicU64,
    pub asks_served: AtomicU64,
    pub refused: AtomicU64,
    pub unknown_target: AtomicU64,
    pub unknown_type: AtomicU64,
    pub undecodable: AtomicU64,
    pub bad_frames: AtomicU64,
    pub bad_replies: AtomicU64,
    pub tells_confirmed: AtomicU64,
    pub tells_refused_by_peer: AtomicU64,
    pub probes_sent: AtomicU64,
    pub acks_sent: AtomicU64,
    pub link_frames: AtomicU64,
    pub frames_missed: AtomicU64,
    pub unlinked: AtomicU64,
    pub panics: AtomicU64,
    pub links_refused: AtomicU64,
    pub unauthenticated: AtomicU64,
    pub schema_mismatches: AtomicU64,
    pub tells_lost_to_down: AtomicU64,
    pub receipts_delivered: AtomicU64,
    pub receipts_refused: AtomicU64,
    pub receipts_lost: AtomicU64,
    pub receipts_unknown: AtomicU64,
    pub receipts_issued: AtomicU64,
}

pub(crate) fn bump(c: &AtomicU64) {
    c.fetch_add(1, Relaxed);
}

/// Counts one more and says whether this one should be logged: the 1st,
/// 2nd, 4th, 8th... so a peer flooding a node with bad frames cannot flood
/// its log too (the counter keeps the exact number).
pub(crate) fn bump_and_log(c: &AtomicU64) -> bool {
    add_and_log(c, 1)
}

/// Adds `n` and says whether to log: when the total passes a power of two.
/// Saturates at `u64::MAX`: `n` may come off the wire (a gap in a peer's
/// sequence numbers), so neither the sum nor the log test may wrap.
pub(crate) fn add_and_log(c: &AtomicU64, n: u64) -> bool {
    if n == 0 {
        return false;
    }
    let before = match c.fetch_update(Relaxed, Relaxed, |v| Some(v.saturating_add(n))) {
        Ok(v) | Err(v) => v,
    };
    let after = before.saturating_add(n);
    // `before == 0` first: `ilog2` of 0 panics, and `after >= n > 0`.
    before == 0 || after.ilog2() > before.ilog2()
}

/// A snapshot of a node's counters; see the module docs for what each counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// Frames handed to NATS (tells, in batches).
    pub frames_sent: u64,
    /// NATS messages those frames travelled in (`frames_sent / batches_sent`
    /// is the coalescing factor).
    pub batches_sent: u64,
    /// Tells accepted and known not delivered: their publish failed (the
    /// connection closed under them), or the peer's acks show they never
    /// arrived; logged.
    pub frames_lost: u64,
    /// Tells the peer's acks confirm its actor took.
    pub tells_confirmed: u64,
    /// Tells the peer received and did not deliver (refused, unknown target
    /// or type, undecodable there).
    pub tells_refused_by_peer: u64,
    /// Gauge: tells accepted and not yet in one of `tells_confirmed`,
    /// `tells_refused_by_peer`, `frames_lost` (see the module docs).
    pub tells_unconfirmed: u64,
    /// Probes sent: batches holding only a link frame, sent on a quiet link
    /// with unconfirmed tells.
    pub probes_sent: u64,
    /// Acks this node sent to its senders.
    pub acks_sent: u64,
    /// Frames received that could be framed.
    pub frames_received: u64,
    /// Link and ack frames received.
    pub link_frames: u64,
    /// Sequence numbers of senders' tells that never arrived here (gaps).
    pub frames_missed: u64,
    /// Tells received in a message without a link frame (delivered, but
    /// outside any sender's accounting).
    pub unlinked: u64,
    /// Tells handed to a local actor.
    pub delivered: u64,
    /// Asks handed to a local actor.
    pub asks_served: u64,
    /// Frames the local actor refused (full mailbox or stopped).
    pub refused: u64,
    /// Frames for a target not exposed here.
    pub unknown_target: u64,
    /// Frames whose type the target does not take.
    pub unknown_type: u64,
    /// Frames whose body did not decode to their type.
    pub undecodable: u64,
    /// NATS messages that held garbage: bad version, kind, or length.
    pub bad_frames: u64,
    /// Replies to this node's asks that did not decode.
    pub bad_replies: u64,
    /// Inbox messages whose handling panicked (a bug: the message was
    /// dropped, logged, and the node went on serving).
    pub panics: u64,
    /// Batches from a new sender while the link table was full
    /// ([`NodeBuilder::max_links`](crate::NodeBuilder::max_links)): their
    /// tells were delivered but not acknowledged.
    pub links_refused: u64,
    /// Gauge: senders whose link state this node holds now.
    pub links: u64,
    /// Messages refused for want of a good seal (this node has a cluster
    /// key and they were not sealed with it); requests among them were
    /// answered `bad frame`.
    pub unauthenticated: u64,
    /// Tells and asks refused because the sender's shape of the type
    /// differs from this node's under one stable name (received tells and
    /// asks, and asks of this node refused by the peer for that reason);
    /// see [`schema`](crate::schema) and
    /// [`Node::last_schema_mismatch`](crate::Node::last_schema_mismatch).
    pub schema_mismatches: u64,
    /// Of `frames_lost`: tells not yet accounted when their peer was
    /// declared down ([`Node::peer_down`](crate::Node::peer_down)); a peer
    /// that was alive after all may still confirm some (logged as late).
    pub tells_lost_to_down: u64,
    /// Receipts ([`RemoteRef::tell_confirmed`](crate::RemoteRef::tell_confirmed))
    /// resolved `Delivered`.
    pub receipts_delivered: u64,
    /// Receipts resolved `Refused` (the peer gave its reason).
    pub receipts_refused: u64,
    /// Receipts resolved `Lost`.
    pub receipts_lost: u64,
    /// Receipts resolved `Unknown` (their deadline passed).
    pub receipts_unknown: u64,
    /// Gauge: receipts waiting for an outcome.
    pub receipts_waiting: u64,
    /// As a receiver: receipts this node issued for tells that asked.
    pub receipts_issued: u64,
}

impl Counters {
    pub(crate) fn snapshot(&self) -> NodeStats {
        NodeStats {
            frames_sent: self.frames_sent.load(Relaxed),
            batches_sent: self.batches_sent.load(Relaxed),
            frames_lost: self.frames_lost.load(Relaxed),
            frames_received: self.frames_received.load(Relaxed),
            delivered: self.delivered.load(Relaxed),
            asks_served: self.asks_served.load(Relaxed),
            refused: self.refused.load(Relaxed),
            unknown_target: self.unknown_target.load(Relaxed),
            unknown_type: self.unknown_type.load(Relaxed),
            undecodable: self.undecodable.load(Relaxed),
            bad_frames: self.bad_frames.load(Relaxed),
            bad_replies: self.bad_replies.load(Relaxed),
            tells_confirmed: self.tells_confirmed.load(Relaxed),
            tells_refused_by_peer: self.tells_refused_by_peer.load(Relaxed),
            tells_unconfirmed: 0,
            probes_sent: self.probes_sent.load(Relaxed),
            acks_sent: self.acks_sent.load(Relaxed),
            link_frames: self.link_frames.load(Relaxed),
            frames_missed: self.frames_missed.load(Relaxed),
            unlinked: self.unlinked.load(Relaxed),
            panics: self.panics.load(Relaxed),
            links_refused: self.links_refused.load(Relaxed),
            links: 0,
            unauthenticated: self.unauthenticated.load(Relaxed),
            schema_mismatches: self.schema_mismatches.load(Relaxed),
            tells_lost_to_down: self.tells_lost_to_down.load(Relaxed),
            receipts_delivered: self.receipts_delivered.load(Relaxed),
            receipts_refused: self.receipts_refused.load(Relaxed),
            receipts_lost: self.receipts_lost.load(Relaxed),
            receipts_unknown: self.receipts_unknown.load(Relaxed),
            receipts_waiting: 0,
            receipts_issued: self.receipts_issued.load(Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adding_logs_when_the_total_passes_a_power_of_two() {
        let c = AtomicU64::new(0);
        let logged: Vec<bool> = [1, 1, 1, 5, 0, 100, 2]
            .iter()
            .map(|&n| add_and_log(&c, n))
            .collect();
        // totals 1, 2, 3, 8, 8, 108, 110
        assert_eq!(logged, [true, true, false, true, false, true, false]);
        assert_eq!(c.load(Relaxed), 110);
    }

    #[test]
    fn adding_saturates_instead_of_wrapping() {
        let c = AtomicU64::new(999);
        // The total would wrap to 0 (and `ilog2(0)` would panic).
        assert!(add_and_log(&c, u64::MAX - 998));
        assert_eq!(c.load(Relaxed), u64::MAX);
        assert!(!add_and_log(&c, u64::MAX));
        assert_eq!(c.load(Relaxed), u64::MAX);
    }
}
