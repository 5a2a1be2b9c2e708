//! What the persistent actors count, process-wide: commands whose store
//! write failed ([`PersistenceStats`], read with [`stats`]).
//!
//! A command whose events (or new state) the store did not take is not
//! applied: its callbacks see the error, so an ask learns of it. A
//! command told without a reply has no one to tell; it is counted in
//! `unanswered_failures` and logged (the 1st, 2nd, 4th, 8th... of them,
//! so a store outage cannot flood the log), so the loss is seen. Writers:
//! the actors of both kinds, each with one locked add per failed write
//! (never on a write that succeeds).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::PersistError;
use crate::id::PersistenceId;

static WRITE_FAILURES: AtomicU64 = AtomicU64::new(0);
static UNANSWERED_FAILURES: AtomicU64 = AtomicU64::new(0);

/// A snapshot of the process's persistence counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PersistenceStats {
    /// Commands whose events (event-sourced) or new state (durable) the
    /// store refused or did not answer: not applied, their callbacks
    /// (replies) given the error.
    pub write_failures: u64,
    /// Of `write_failures`, commands with no callback (told, not asked):
    /// lost, with no one told but this counter and the log.
    pub unanswered_failures: u64,
}

/// The counters so far, for the whole process.
pub fn stats() -> PersistenceStats {
    PersistenceStats {
        write_failures: WRITE_FAILURES.load(Ordering::Relaxed),
        unanswered_failures: UNANSWERED_FAILURES.load(Ordering::Relaxed),
    }
}

/// Counts one command of `id` whose write failed with `error`;
/// `unanswered`: it had no callback to hand the error to.
pub(crate) fn write_failed(id: &PersistenceId, error: &PersistError, unanswered: bool) {
    WRITE_FAILURES.fetch_add(1, Ordering::Relaxed);
    if unanswered {
        let n = UNANSWERED_FAILURES
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_add(1);
        if n.is_power_of_two() {
            tracing::warn!(
                %id, %error, lost = n,
                "a told command was not stored and is lost (no reply to carry the error)"
            );
        }
    }
}
