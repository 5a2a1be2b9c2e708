//! Bad input from the wire: what a node does with a message it cannot use.
//!
//! Every message on every subject the cluster listens to (heartbeats,
//! goodbyes, stop events, control requests and their replies, registry
//! values) that does not decode to its type with no
//! byte left over, names a node other than its subject's, or fails
//! authentication is:
//! - counted, per subject, in [`ClusterStats`](crate::ClusterStats);
//! - logged, at most one line per [`LOG_EVERY`] for the whole node, the
//!   line saying how many were left out since the last one, so a flood of
//!   garbage cannot flood the log (an earlier version wrote 6,488 lines in
//!   one flood);
//! - answered with [`CtlReply::BadRequest`](crate::wire::CtlReply) where a
//!   reply is expected (a control request), so its sender does not wait out
//!   its timeout.

use std::fmt;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// The shortest time between two log lines about bad input.
pub const LOG_EVERY: Duration = Duration::from_secs(5);

/// Where a bad message came in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Inlet {
    Heartbeat,
    Bye,
    StopEvent,
    Control,
    ControlReply,
    RegistryValue,
    DownedNotice,
    MarkDown,
}

impl fmt::Display for Inlet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Inlet::Heartbeat => "heartbeat",
            Inlet::Bye => "goodbye",
            Inlet::StopEvent => "stop event",
            Inlet::Control => "control request",
            Inlet::ControlReply => "control reply",
            Inlet::RegistryValue => "registry value",
            Inlet::DownedNotice => "downed notice",
            Inlet::MarkDown => "mark-down",
        })
    }
}

/// A log gate: admits one line per period and counts the rest.
pub(crate) struct RateLog {
    period: Duration,
    state: Mutex<(Option<Instant>, u64)>,
}

impl Default for RateLog {
    fn default() -> Self {
        RateLog::new(LOG_EVERY)
    }
}

impl RateLog {
    pub fn new(period: Duration) -> Self {
        RateLog {
            period,
            state: Mutex::new((None, 0)),
        }
    }

    /// `Some(left_out)` if a line may be written now (`left_out`: lines
    /// suppressed since the last one), `None` if this one is suppressed.
    pub fn admit(&self, now: Instant) -> Option<u64> {
        let mut st = self.state.lock();
        let (last, suppressed) = &mut *st;
        match last {
            Some(t) if now.saturating_duration_since(*t) < self.period => {
                *suppressed = suppressed.saturating_add(1);
                None
            }
            _ => {
                *last = Some(now);
                Some(std::mem::take(suppressed))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_period_with_the_count_left_out() {
        let log = RateLog::new(Duration::from_secs(5));
        let t0 = Instant::now();
        assert_eq!(log.admit(t0), Some(0));
        for i in 1..=1000 {
            assert_eq!(log.admit(t0 + Duration::from_millis(i)), None);
        }
        assert_eq!(log.admit(t0 + Duration::from_secs(5)), Some(1000));
        assert_eq!(log.admit(t0 + Duration::from_secs(6)), None);
    }
}
