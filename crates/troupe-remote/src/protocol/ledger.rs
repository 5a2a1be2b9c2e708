//! The sender's ledger of one link: the peer's acks turned into deltas of
//! confirmed, refused and lost tells, and the probe schedule of a quiet
//! link (see `outbox.rs` for the protocol).
//!
//! Invariants:
//! - Every tell number `1..=accepted` is in at most one bucket: confirmed,
//!   refused, lost, or failed (its publish failed here); the rest are
//!   unconfirmed, `accepted - accounted`.
//! - An ack only adds: a stale or impossible ack (numbers that cannot be,
//!   or older than the ledger's) changes nothing and says why.
//! - The ledger holds no lock and knows no transport; the outbox calls it
//!   under its own `ledger` lock, never while holding its state's.

use crate::protocol::envelope::LinkAck;

/// The longest gap between two unanswered probes, in link-task ticks.
pub(crate) const MAX_PROBE_GAP: u32 = 32;

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

    /// The peer was declared down: every number not yet accounted, up to
    /// `accepted`, is counted lost (kept with the failed numbers, so that
    /// no later ack of a new link state counts it again). Returns how many.
    pub(crate) fn declare_down(&mut self, accepted: u64) -> u64 {
        let lo = self.seg.map_or(1, |s| s.upto + 1);
        if lo > accepted {
            return 0;
        }
        let mut gaps = Vec::new();
        let mut at = lo;
        for &(a, b) in &self.failed {
            if b < at {
                continue;
            }
            if a > accepted {
                break;
            }
            if a > at {
                gaps.push((at, a - 1));
            }
            at = b + 1;
        }
        if at <= accepted {
            gaps.push((at, accepted));
        }
        let n: u64 = gaps.iter().map(|(a, b)| b - a + 1).sum();
        self.failed.extend(gaps);
        self.failed.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(self.failed.len());
        for (a, b) in self.failed.drain(..) {
            match merged.last_mut() {
                Some((_, end)) if *end + 1 >= a => *end = (*end).max(b),
                _ => merged.push((a, b)),
            }
        }
        self.failed = merged;
        self.failed_total += n;
        n
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

    /// Whether a quiet link wants a probe now (see `Outbox::wants_probe`).
    pub(crate) fn wants_probe(&mut self, pushed: bool, accepted: u64) -> bool {
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
    fn a_peer_declared_down_makes_every_unaccounted_number_lost_once() {
        let mut l = Ledger::default();
        l.on_ack(&ack(1, 10, 10, 0), 20).unwrap();
        l.record_failed(13, 2); // 13..=14
        assert_eq!(l.unconfirmed(20), 8);
        // 11, 12 and 15..=20: lost; the failed 13..=14 not counted again.
        assert_eq!(l.declare_down(20), 8);
        assert_eq!(l.unconfirmed(20), 0);
        assert_eq!(l.failed, vec![(11, 20)]);
        assert_eq!(l.declare_down(20), 0, "nothing twice");
        // The peer restarts: its new state starts at 26; 21..=25 were sent
        // to it after the down, and only they are the new hole.
        assert_eq!(l.on_ack(&ack(26, 27, 2, 0), 27), Ok(delta(2, 0, 5, 5)));
        assert_eq!(l.unconfirmed(27), 0);
        assert_eq!(l.confirmed + l.lost + l.failed_total, 27);
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
}
