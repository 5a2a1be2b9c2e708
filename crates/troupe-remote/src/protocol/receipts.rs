//! The sender's book of receipts: one tell's fate, for a caller who asked
//! (`RemoteRef::tell_confirmed`), on top of the link's ledger.
//!
//! Protocol, in order (see "Receipts" in [`envelope`](crate::envelope)):
//! 1. *Ask.* `tell_confirmed` pushes its tell like any other (same link,
//!    same numbers, so it keeps its place among plain tells) with the
//!    tell flag [`FLAG_RECEIPT`](crate::envelope::FLAG_RECEIPT), and, under
//!    the outbox's state lock, files a waiter for its number here. Every
//!    link frame this node writes carries the same flag, which tells the
//!    receiver that this sender reads receipts frames.
//! 2. *Receive.* The receiver notes `(number, fate)` for each flagged tell
//!    it reads; its next ack (sent early, not at the next ack period, when
//!    receipts wait) is preceded in the same message by a receipts frame:
//!    those fates, the link state's `base`, and `total`, the receipts it has
//!    issued in that state.
//! 3. *Resolve.* Here, a receipt resolves its waiter: `Delivered`, or
//!    `Refused` with the receiver's reason. Then the ack that follows it:
//!    every waiter numbered below the ack's `base` is `Lost` (the receiver
//!    restarted, or never saw them, as the ledger counts them); every
//!    waiter up to the ack's `upto` without a receipt is `Lost` when every
//!    receipt the receiver issued has been read here (`seen == total`) and
//!    none was dropped there: the receiver never saw that tell. Otherwise
//!    (a message of receipts was lost) the waiter stays.
//! 4. *Fail.* A batch whose publish failed resolves its waiters `Lost`.
//! 5. *Down.* The peer declared down (`Node::peer_down`): every waiter is
//!    `Lost`, as the ledger counts its unconfirmed tells.
//! 6. *Deadline.* The link task, each tick, resolves the waiters past their
//!    deadline `Unknown` (so a deadline is kept to within one ack period).
//!
//! Invariants:
//! - A waiter is resolved exactly once (it is removed from the book as it
//!   is); a receipt or ack about a number no longer waiting changes nothing.
//! - `Lost` is said only when the tell cannot have reached the actor on a
//!   live receiver; `Unknown` whenever this node cannot know.
//! - Bounded: at most [`MAX_WAITING`] waiters per link (`tell_confirmed`
//!   refuses `Full` beyond); a receipts frame read off the wire changes only
//!   waiters that exist, and its numbers are checked against the segment's.
//! - Lock order: the outbox's state, then this book; the ledger's lock is
//!   never held while taking this one.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Instant;

use crate::protocol::envelope::{Fate, LinkAck, Receipts};
use crate::protocol::stats::Counters;

/// The most receipts one link holds waiting.
pub(crate) const MAX_WAITING: usize = 1 << 16;

/// A tell's confirmed delivery: its receiver handed it to the target
/// actor's mailbox. (Not that the actor handled it: an actor that stops,
/// or a node that dies, drops what its mailbox holds.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivered;

/// Why a tell that asked for a receipt was not confirmed delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Undelivered {
    /// The receiving node read it and did not deliver it, for this reason;
    /// the actor did not get it.
    Refused(TellRefusal),
    /// It did not reach the actor: its publish failed, the receiver's
    /// accounting shows it never arrived, the receiver restarted before
    /// confirming it, or the receiving node was declared down before it
    /// was confirmed (see [`Node::peer_down`](crate::Node::peer_down)).
    Lost,
    /// The deadline passed without an outcome: it may or may not have been
    /// delivered (the receiver is slow or cut off, its receipt was lost,
    /// or it does not issue receipts).
    Unknown,
}

/// The receiver's reason for not delivering a tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TellRefusal {
    /// The actor's bounded mailbox was full, or the actor has stopped.
    Actor,
    /// No actor is exposed under that name on the node.
    UnknownTarget,
    /// The actor does not take this type remotely.
    UnknownType,
    /// The node's shape of the type differs from this one's.
    SchemaMismatch,
    /// The body did not decode to its type there.
    Undecodable,
}

impl fmt::Display for Undelivered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Undelivered::Refused(why) => write!(f, "the receiving node refused the tell: {why}"),
            Undelivered::Lost => write!(f, "the tell was lost on its way; not delivered"),
            Undelivered::Unknown => write!(
                f,
                "no outcome before the deadline: the tell may or may not have been delivered"
            ),
        }
    }
}

impl fmt::Display for TellRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TellRefusal::Actor => "the actor's mailbox was full or the actor has stopped",
            TellRefusal::UnknownTarget => "no such actor is exposed there",
            TellRefusal::UnknownType => "the actor does not take this type remotely",
            TellRefusal::SchemaMismatch => "the type has another shape there",
            TellRefusal::Undecodable => "the body did not decode there",
        })
    }
}

impl std::error::Error for Undelivered {}

/// A receipt's outcome.
pub(crate) type Outcome = Result<Delivered, Undelivered>;

fn outcome(fate: Fate) -> Outcome {
    Err(Undelivered::Refused(match fate {
        Fate::Delivered => return Ok(Delivered),
        Fate::Refused => TellRefusal::Actor,
        Fate::UnknownTarget => TellRefusal::UnknownTarget,
        Fate::UnknownType => TellRefusal::UnknownType,
        Fate::SchemaMismatch => TellRefusal::SchemaMismatch,
        Fate::Undecodable => TellRefusal::Undecodable,
    }))
}

struct Waiter {
    deadline: Instant,
    tx: oneshot::Sender<Outcome>,
}

/// What this book has read of one receiver link state's receipts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seen {
    base: u64,
    /// The highest number a receipt was read for (receipts come in order).
    last: u64,
    /// Receipts read.
    seen: u64,
    /// The receiver's latest `total`.
    total: u64,
    overflowed: bool,
}

/// What resolving changed, for the node's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Resolved {
    pub delivered: u64,
    pub refused: u64,
    pub lost: u64,
    pub unknown: u64,
}

/// The receipts one link waits for.
pub(crate) struct Book {
    waiting: BTreeMap<u64, Waiter>,
    seg: Option<Seen>,
    /// The node's counters (`receipts_*`).
    counters: std::sync::Arc<Counters>,
}

impl Book {
    /// An empty book counting into `counters`.
    pub(crate) fn new(counters: std::sync::Arc<Counters>) -> Self {
        Book {
            waiting: BTreeMap::new(),
            seg: None,
            counters,
        }
    }

    /// Whether another waiter fits.
    pub(crate) fn has_room(&self) -> bool {
        self.waiting.len() < MAX_WAITING
    }

    /// Files the waiter of tell number `seq`.
    pub(crate) fn wait(&mut self, seq: u64, deadline: Instant) -> oneshot::Receiver<Outcome> {
        let (tx, rx) = oneshot::channel();
        self.waiting.insert(seq, Waiter { deadline, tx });
        rx
    }

    /// Waiters filed and not yet resolved.
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Counted in the node's counters before the caller can see it, so a
    /// caller's read of them after its receipt includes it.
    fn resolve(&mut self, seq: u64, o: Outcome, r: &mut Resolved) {
        if let Some(w) = self.waiting.remove(&seq) {
            let c = &self.counters;
            let (mine, theirs) = match o {
                Ok(_) => (&mut r.delivered, &c.receipts_delivered),
                Err(Undelivered::Refused(_)) => (&mut r.refused, &c.receipts_refused),
                Err(Undelivered::Lost) => (&mut r.lost, &c.receipts_lost),
                Err(Undelivered::Unknown) => (&mut r.unknown, &c.receipts_unknown),
            };
            *mine += 1;
            theirs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            // The caller may have dropped its receipt: nothing to tell.
            let _ = w.tx.send(o);
        }
    }

    fn resolve_range(&mut self, lo: u64, hi: u64, o: Outcome, r: &mut Resolved) {
        if lo > hi {
            return;
        }
        let seqs: Vec<u64> = self.waiting.range(lo..=hi).map(|(s, _)| *s).collect();
        for s in seqs {
            self.resolve(s, o, r);
        }
    }

    /// Step 3: a receipts frame, read before its ack. `accepted`: tells
    /// numbered on this link; a frame naming a number past it is refused.
    pub(crate) fn on_receipts(&mut self, rc: &Receipts, accepted: u64) -> Result<Resolved, ()> {
        if rc.base == 0 || rc.list.iter().any(|&(s, _)| s < rc.base || s > accepted) {
            return Err(());
        }
        let seg = match self.seg {
            Some(s) if s.base == rc.base => s,
            Some(s) if s.base > rc.base => return Err(()),
            _ => Seen {
                base: rc.base,
                last: 0,
                seen: 0,
                total: 0,
                overflowed: false,
            },
        };
        let mut seg = seg;
        let mut r = Resolved::default();
        for &(seq, byte) in &rc.list {
            if seq <= seg.last {
                continue; // sent again, or out of order: read once
            }
            seg.last = seq;
            seg.seen = seg.seen.saturating_add(1);
            match Fate::from_u8(byte) {
                Some(f) => self.resolve(seq, outcome(f), &mut r),
                None => self.resolve(seq, Err(Undelivered::Unknown), &mut r),
            }
        }
        seg.total = seg.total.max(rc.total);
        seg.overflowed |= rc.overflowed;
        self.seg = Some(seg);
        Ok(r)
    }

    /// Step 3, the ack after the receipts (already accepted by the ledger).
    pub(crate) fn on_ack(&mut self, ack: &LinkAck) -> Resolved {
        let mut r = Resolved::default();
        if self.waiting.is_empty() {
            return r;
        }
        self.resolve_range(1, ack.base - 1, Err(Undelivered::Lost), &mut r);
        let complete = matches!(self.seg, Some(s) if s.base == ack.base
            && s.seen >= s.total && !s.overflowed);
        if complete {
            self.resolve_range(ack.base, ack.upto, Err(Undelivered::Lost), &mut r);
        }
        r
    }

    /// Step 4: the tells `first..first + tells` were never published.
    pub(crate) fn failed(&mut self, first: u64, tells: u64) -> Resolved {
        let mut r = Resolved::default();
        if tells > 0 {
            self.resolve_range(first, first + tells - 1, Err(Undelivered::Lost), &mut r);
        }
        r
    }

    /// Step 5: the peer was declared down.
    pub(crate) fn down(&mut self) -> Resolved {
        let mut r = Resolved::default();
        self.resolve_range(1, u64::MAX, Err(Undelivered::Lost), &mut r);
        r
    }

    /// Step 6: the waiters past their deadline at `now`.
    pub(crate) fn expire(&mut self, now: Instant) -> Resolved {
        let mut r = Resolved::default();
        let due: Vec<u64> = self
            .waiting
            .iter()
            .filter(|(_, w)| w.deadline <= now)
            .map(|(s, _)| *s)
            .collect();
        for s in due {
            self.resolve(s, Err(Undelivered::Unknown), &mut r);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn receipts(base: u64, total: u64, overflowed: bool, list: &[(u64, Fate)]) -> Receipts {
        Receipts {
            epoch: 1,
            total,
            receiver: "b".into(),
            base,
            overflowed,
            list: list.iter().map(|&(s, f)| (s, f as u8)).collect(),
        }
    }

    fn ack(base: u64, upto: u64) -> LinkAck {
        LinkAck {
            epoch: 1,
            upto,
            receiver: "b".into(),
            base,
            received: 0,
            dropped: 0,
        }
    }

    fn later() -> Instant {
        Instant::now() + Duration::from_secs(60)
    }

    fn got(rx: &oneshot::Receiver<Outcome>) -> Option<Outcome> {
        rx.try_recv().ok()
    }

    #[test]
    fn step_3_a_receipt_resolves_its_waiter_and_a_complete_ack_the_missing() {
        let mut b = Book::new(Default::default());
        let r2 = b.wait(2, later());
        let r4 = b.wait(4, later());
        let r5 = b.wait(5, later());
        let r9 = b.wait(9, later());
        let rc = receipts(1, 2, false, &[(2, Fate::Delivered), (4, Fate::UnknownType)]);
        assert_eq!(b.on_receipts(&rc, 9).map(|r| r.delivered), Ok(1));
        assert_eq!(got(&r2), Some(Ok(Delivered)));
        assert_eq!(
            got(&r4),
            Some(Err(Undelivered::Refused(TellRefusal::UnknownType)))
        );
        // The receiver saw up to 6 and issued 2 receipts, both read: 5 never
        // arrived there. 9 is past the ack: it waits.
        assert_eq!(b.on_ack(&ack(1, 6)).lost, 1);
        assert_eq!(got(&r5), Some(Err(Undelivered::Lost)));
        assert_eq!(got(&r9), None);
        assert_eq!(b.waiting(), 1);
    }

    #[test]
    fn step_3_a_lost_message_of_receipts_leaves_the_missing_waiting() {
        let mut b = Book::new(Default::default());
        let r3 = b.wait(3, later());
        let r4 = b.wait(4, later());
        // The receipt of 3 travelled in a message that was lost: the next
        // says 2 were issued, 1 read here.
        let rc = receipts(1, 2, false, &[(4, Fate::Delivered)]);
        b.on_receipts(&rc, 4).unwrap();
        assert_eq!(b.on_ack(&ack(1, 4)), Resolved::default());
        assert_eq!(got(&r3), None, "not lost: its receipt may have been");
        assert_eq!(got(&r4), Some(Ok(Delivered)));
        // Nor when the receiver could not keep every receipt.
        let r5 = b.wait(5, later());
        b.on_receipts(&receipts(1, 3, true, &[]), 5).unwrap();
        b.on_ack(&ack(1, 5));
        assert_eq!(got(&r5), None);
        assert_eq!(b.expire(later() + Duration::from_secs(1)).unknown, 2);
        assert_eq!(got(&r3), Some(Err(Undelivered::Unknown)));
    }

    #[test]
    fn step_3_numbers_before_a_new_base_are_lost() {
        let mut b = Book::new(Default::default());
        let r1 = b.wait(1, later());
        let r7 = b.wait(7, later());
        b.on_receipts(&receipts(5, 1, false, &[(7, Fate::Refused)]), 7)
            .unwrap();
        assert_eq!(b.on_ack(&ack(5, 7)).lost, 1);
        assert_eq!(got(&r1), Some(Err(Undelivered::Lost)));
        assert_eq!(
            got(&r7),
            Some(Err(Undelivered::Refused(TellRefusal::Actor)))
        );
    }

    #[test]
    fn step_3_hostile_receipts_change_nothing() {
        let mut b = Book::new(Default::default());
        let r3 = b.wait(3, later());
        // A number past what was numbered, one below the base, a zero base.
        assert!(b
            .on_receipts(&receipts(1, 1, false, &[(4, Fate::Delivered)]), 3)
            .is_err());
        assert!(b
            .on_receipts(&receipts(2, 1, false, &[(1, Fate::Delivered)]), 3)
            .is_err());
        assert!(b.on_receipts(&receipts(0, 1, false, &[]), 3).is_err());
        // An unknown fate byte is not taken as delivered.
        let mut rc = receipts(1, 1, false, &[]);
        rc.list.push((3, 200));
        b.on_receipts(&rc, 3).unwrap();
        assert_eq!(got(&r3), Some(Err(Undelivered::Unknown)));
        // An older base than the one read is stale.
        b.on_receipts(&receipts(2, 0, false, &[]), 3).unwrap();
        assert!(b.on_receipts(&receipts(1, 0, false, &[]), 3).is_err());
    }

    #[test]
    fn step_3_a_receipt_sent_twice_is_read_once() {
        let mut b = Book::new(Default::default());
        let _r = b.wait(2, later());
        let rc = receipts(1, 1, false, &[(2, Fate::Delivered)]);
        b.on_receipts(&rc, 2).unwrap();
        b.on_receipts(&rc, 2).unwrap();
        assert_eq!(b.seg.map(|s| s.seen), Some(1));
    }

    #[test]
    fn steps_4_5_6_failure_down_and_deadline() {
        let mut b = Book::new(Default::default());
        let r1 = b.wait(1, later());
        let r2 = b.wait(2, later());
        let r3 = b.wait(3, Instant::now());
        assert_eq!(b.failed(1, 1).lost, 1);
        assert_eq!(got(&r1), Some(Err(Undelivered::Lost)));
        assert_eq!(b.expire(Instant::now()).unknown, 1);
        assert_eq!(got(&r3), Some(Err(Undelivered::Unknown)));
        assert_eq!(b.down().lost, 1);
        assert_eq!(got(&r2), Some(Err(Undelivered::Lost)));
        assert_eq!(b.waiting(), 0);
    }
}
