//! The one error type of persistence: what a journal, a snapshot store or a
//! state store reports, and what a persistent actor's caller receives.
//!
//! Every variant says what happened to the write: [`Conflict`] and
//! [`StateConflict`](PersistError::StateConflict) mean it was refused,
//! nothing stored; [`Unavailable`](PersistError::Unavailable) means the
//! store did not confirm it, so it may or may not be stored (the actor
//! reloads its state from the store before its next command).
//!
//! [`Conflict`]: PersistError::Conflict

use std::fmt;

/// Why a persistence operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PersistError {
    /// Another writer appended to this journal first: the append expected
    /// the last event to be `expected` and the journal has `found` (when
    /// known). Nothing was stored.
    Conflict {
        /// The persistence id.
        id: String,
        /// The last sequence number the writer knew.
        expected: u64,
        /// The last sequence number in the journal, when known.
        found: Option<u64>,
    },
    /// Another writer changed this durable state first: the update expected
    /// `expected` (0: no state yet). Nothing was stored.
    StateConflict {
        /// The persistence id.
        id: String,
        /// The revision the writer knew.
        expected: u64,
    },
    /// The store did not answer or refused for a reason other than a
    /// conflict; a write may or may not be stored.
    Unavailable {
        /// The persistence id.
        id: String,
        /// What the store said.
        reason: String,
    },
    /// A stored record did not decode (bytes damaged, or a gap in the
    /// sequence numbers).
    Corrupt {
        /// The persistence id.
        id: String,
        /// What was wrong.
        reason: String,
    },
    /// A stored event is of another type than this actor's events.
    EventType {
        /// The persistence id.
        id: String,
        /// The stable name stored with the event.
        stored: String,
        /// This actor's event type's stable name.
        local: &'static str,
    },
    /// A stored record's serde shape differs from the local type's under
    /// the same name: decoding it would misread it, so it is refused.
    SchemaMismatch {
        /// The persistence id.
        id: String,
        /// The stable name (events) or Rust type (states).
        name: String,
        /// The local Rust type.
        rust_type: &'static str,
        /// The fingerprint stored with the record.
        stored: u64,
        /// The local type's fingerprint.
        local: u64,
    },
    /// A persistence id, kind or namespace is not a valid name.
    InvalidId {
        /// The offending name.
        id: String,
        /// Why it is refused.
        reason: String,
    },
    /// A value could not be encoded.
    Encode {
        /// The persistence id.
        id: String,
        /// The encoder's message.
        reason: String,
    },
    /// The actor could not reload its state after an earlier failure, so
    /// this command was not handled.
    Recovery {
        /// The persistence id.
        id: String,
        /// Why recovery failed.
        reason: String,
    },
}

impl PersistError {
    /// The load or recovery of `id` failed with `e`: what its commands
    /// are refused with until the actor has recovered.
    pub(crate) fn recovery(id: &impl fmt::Display, e: &impl fmt::Display) -> Self {
        PersistError::Recovery {
            id: id.to_string(),
            reason: e.to_string(),
        }
    }
}

impl fmt::Display for PersistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PersistError::Conflict { id, expected, found } => {
                write!(f, "another writer appended to the journal of {id} first (this writer expected event #{expected} last")?;
                if let Some(found) = found {
                    write!(f, ", the journal has #{found}")?;
                }
                write!(f, "); nothing was stored: run one writer per persistence id, or retry after the actor has reloaded")
            }
            PersistError::StateConflict { id, expected } => write!(
                f,
                "another writer changed the durable state of {id} first (this writer expected revision {expected}); nothing was stored: retry after the actor has reloaded"
            ),
            PersistError::Unavailable { id, reason } => write!(
                f,
                "the store did not confirm the write for {id} ({reason}); it may or may not be stored: check the NATS server and JetStream, then retry"
            ),
            PersistError::Corrupt { id, reason } => {
                write!(f, "a stored record of {id} is damaged: {reason}")
            }
            PersistError::EventType { id, stored, local } => write!(
                f,
                "the journal of {id} holds an event of type \"{stored}\", but this actor's events are \"{local}\": is the persistence id shared by two actor kinds?"
            ),
            PersistError::SchemaMismatch { id, name, rust_type, stored, local } => write!(
                f,
                "the journal of {id} holds \"{name}\" with shape {stored:#018x}, but the local type {rust_type} has shape {local:#018x}: decoding it would misread it; give the new shape a new stable name and convert old records"
            ),
            PersistError::InvalidId { id, reason } => write!(f, "invalid name {id}: {reason}"),
            PersistError::Encode { id, reason } => write!(f, "cannot encode a record of {id}: {reason}"),
            PersistError::Recovery { id, reason } => write!(
                f,
                "{id} could not reload its state ({reason}); the command was not handled"
            ),
        }
    }
}

impl std::error::Error for PersistError {}
