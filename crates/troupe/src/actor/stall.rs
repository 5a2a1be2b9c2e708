//! The actor core's share of stall and ask-cycle detection: the settings a
//! system's actors share ([`Watching`]), an actor's own stall threshold as
//! its cell keeps it ([`StallSetting`]), and what the watchdog reads of a
//! running actor ([`Described`]).
//!
//! The watchdog itself is the system's (`system::watchdog`): it reads the
//! workers' turn slots (`engine::scheduler::watch`), looks a long turn's
//! actor up in the system's table, and asks it to describe itself
//! (`Stoppable::describe`). The actor core only publishes its turns and
//! keeps the per-actor threshold; nothing here runs per message.
//!
//! Invariant: a cell's threshold is written once, at spawn, before the
//! actor is published; `Watching::shortest_ns` only decreases.

use super::ask_cycle::WaitGraph;
use super::id::ActorId;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What a system watches, shared by its actors.
pub(crate) struct Watching {
    /// The system's stall threshold, if stall detection is on.
    pub(crate) stall: Option<Duration>,
    /// The shortest threshold in use (the system's or an actor's), in
    /// nanoseconds: the watchdog scans at a fraction of it.
    pub(crate) shortest_ns: AtomicU64,
    /// The wait graph, if ask-cycle detection is on (`ask_cycle`).
    pub(crate) cycles: Option<WaitGraph>,
}

impl Watching {
    pub(crate) fn new(stall: Option<Duration>, cycles: bool) -> Self {
        Watching {
            stall,
            shortest_ns: AtomicU64::new(stall.map_or(u64::MAX, nanos)),
            cycles: cycles.then(WaitGraph::default),
        }
    }

    /// Whether the pools publish their workers' turns.
    pub(crate) fn pools(&self) -> bool {
        self.stall.is_some() || self.cycles.is_some()
    }

    /// An actor spawned with its own threshold `d`.
    pub(crate) fn note_threshold(&self, d: Duration) {
        if self.stall.is_some() {
            self.shortest_ns
                .fetch_min(nanos(d).max(1), Ordering::Relaxed);
        }
    }

    /// The shortest threshold in use.
    pub(crate) fn shortest(&self) -> Duration {
        Duration::from_nanos(self.shortest_ns.load(Ordering::Relaxed))
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// An actor's own stall threshold in two bytes (it fits the padding at the
/// end of the cell): 0 = the system's; `u16::MAX` = never; below `0x8000`,
/// milliseconds (1 ms to 32.767 s); from `0x8000`, whole seconds above it
/// (33 s to about 9 hours, rounded up).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct StallSetting(pub(crate) u16);

const SECONDS: u16 = 0x8000;

impl StallSetting {
    /// The setting for `d`: at least 1 ms; `never` past the largest.
    pub(crate) fn of(d: Option<Duration>) -> Self {
        let Some(d) = d else {
            return StallSetting(0);
        };
        let ms = d.as_millis();
        if ms < u128::from(SECONDS) {
            return StallSetting((ms as u16).max(1));
        }
        let secs = d.as_secs().saturating_add(u64::from(d.subsec_nanos() > 0));
        match u16::try_from(secs) {
            Ok(s) if s < u16::MAX - SECONDS => StallSetting(SECONDS + s),
            _ => StallSetting(u16::MAX),
        }
    }

    /// The actor's threshold: `None` for the system's, `Some(None)` for
    /// never.
    pub(crate) fn threshold(self) -> Option<Option<Duration>> {
        match self.0 {
            0 => None,
            u16::MAX => Some(None),
            v if v < SECONDS => Some(Some(Duration::from_millis(u64::from(v)))),
            v => Some(Some(Duration::from_secs(u64::from(v - SECONDS)))),
        }
    }
}

/// A running actor as the watchdog sees it (`Stoppable::describe`).
pub(crate) struct Described {
    pub(crate) id: ActorId,
    pub(crate) name: Option<Arc<String>>,
    pub(crate) type_name: &'static str,
    /// Its message type (`std::any::type_name`).
    pub(crate) msg_type: &'static str,
    /// Messages popped from its mailbox so far: unchanged while one
    /// handler runs.
    pub(crate) popped: u64,
    pub(crate) stall: StallSetting,
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_threshold_survives_its_two_bytes() {
        let ms = Duration::from_millis;
        assert_eq!(StallSetting::of(None).threshold(), None);
        assert_eq!(
            StallSetting::of(Some(ms(250))).threshold(),
            Some(Some(ms(250)))
        );
        assert_eq!(StallSetting::of(Some(ms(0))).threshold(), Some(Some(ms(1))));
        assert_eq!(
            StallSetting::of(Some(ms(32_767))).threshold(),
            Some(Some(ms(32_767)))
        );
        assert_eq!(
            StallSetting::of(Some(ms(32_768))).threshold(),
            Some(Some(Duration::from_secs(33)))
        );
        assert_eq!(
            StallSetting::of(Some(Duration::from_secs(3_600))).threshold(),
            Some(Some(Duration::from_secs(3_600)))
        );
        assert_eq!(
            StallSetting::of(Some(Duration::MAX)).threshold(),
            Some(None)
        );
    }
}
