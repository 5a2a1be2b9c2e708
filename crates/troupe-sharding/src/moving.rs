//! Hand-overs in progress on this node, as the coordinator publishes them
//! for an operator's view ([`Sharding::handovers`](crate::Sharding::handovers)).
//!
//! The coordinator rewrites the list at the end of every tick, and adds a
//! shard when it starts handing it over (the region's release may take up
//! to the hand-over timeout, inside the tick):
//! - [`Phase::Releasing`]: this node owns the shard and placement wants it
//!   elsewhere; its entities are being stopped (or did not stop in time
//!   and the release is retried next tick);
//! - [`Phase::TakingOver`]: this node claimed the shard from an owner that
//!   may still deliver, and waits for that owner's lease to run out before
//!   its region delivers (see the coordinator's "Taking over").
//!
//! Invariant: the list holds at most one row per shard, so at most the
//! kind's shard count; it is read under a lock the coordinator takes a few
//! times per tick (once per hand-over), never on a message's path.

use std::time::{Duration, Instant};

/// Where a moving shard is in its move, seen from this node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Owned here, desired elsewhere: its entities stop, then the record
    /// is released.
    Releasing,
    /// Claimed here from an owner that may still deliver: waiting out its
    /// lease.
    TakingOver,
}

impl Phase {
    /// `"releasing"` or `"taking_over"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Releasing => "releasing",
            Phase::TakingOver => "taking_over",
        }
    }
}

/// One shard moving to or from this node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Handover {
    /// The shard.
    pub shard: u32,
    /// Where it is in its move.
    pub phase: Phase,
    /// The node it moves to (this node while taking over), if known.
    pub to: Option<String>,
    /// How long it has been moving, as this node saw it.
    pub moving_for: Duration,
    /// While taking over: how long until this node's region delivers.
    pub wait_left: Option<Duration>,
}

/// A row as the coordinator keeps it (instants, turned into durations
/// when read).
#[derive(Clone, Debug)]
pub(crate) struct Row {
    pub shard: u32,
    pub phase: Phase,
    pub to: Option<String>,
    pub since: Instant,
    pub due: Option<Instant>,
}

impl Row {
    pub fn view(&self, now: Instant) -> Handover {
        Handover {
            shard: self.shard,
            phase: self.phase,
            to: self.to.clone(),
            moving_for: now.saturating_duration_since(self.since),
            wait_left: self.due.map(|d| d.saturating_duration_since(now)),
        }
    }
}

/// Rows carried over from the last list keep their start.
pub(crate) fn since(old: &[Row], shard: u32, phase: Phase, now: Instant) -> Instant {
    old.iter()
        .find(|r| r.shard == shard && r.phase == phase)
        .map_or(now, |r| r.since)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_reads_as_durations_and_keeps_its_start() {
        let t0 = Instant::now();
        let r = Row {
            shard: 3,
            phase: Phase::TakingOver,
            to: Some("a".into()),
            since: t0,
            due: Some(t0 + Duration::from_millis(500)),
        };
        let v = r.view(t0 + Duration::from_millis(200));
        assert_eq!(v.moving_for, Duration::from_millis(200));
        assert_eq!(v.wait_left, Some(Duration::from_millis(300)));
        assert_eq!(
            r.view(t0 + Duration::from_secs(1)).wait_left,
            Some(Duration::ZERO)
        );
        let later = t0 + Duration::from_secs(2);
        assert_eq!(
            since(std::slice::from_ref(&r), 3, Phase::TakingOver, later),
            t0
        );
        assert_eq!(since(&[r], 3, Phase::Releasing, later), later);
    }
}
