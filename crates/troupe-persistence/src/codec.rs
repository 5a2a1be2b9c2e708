//! Events, snapshots and states to bytes and back, tagged with the stable
//! type name and the schema fingerprint of `troupe-remote`.
//!
//! Invariant: a record is decoded only if its name (events) and its
//! fingerprint match the local type's; a mismatch is an error naming both
//! sides, never a misread. A fingerprint of 0 (a type whose shape could not
//! be traced) is not checked. The decoder refuses trailing bytes.

use crate::error::PersistError;
use crate::id::PersistenceId;
use crate::journal::{from_bytes, to_bytes, EventRecord, Snapshot};
use serde::de::DeserializeOwned;
use serde::Serialize;
use troupe_remote::schema::{fingerprint, UNCHECKED};
use troupe_remote::RemoteMessage;

/// Encodes event `seq`; `fingerprint` is `fingerprint::<E>()`, which the
/// caller looks up once (the lookup takes a global lock).
pub(crate) fn encode_event<E: RemoteMessage>(
    id: &PersistenceId,
    seq: u64,
    fingerprint: u64,
    event: &E,
) -> Result<EventRecord, PersistError> {
    Ok(EventRecord {
        seq,
        name: E::NAME.into(),
        fingerprint,
        payload: to_bytes(id, event)?,
    })
}

/// Decodes an event, checking its name and fingerprint first.
pub(crate) fn decode_event<E: RemoteMessage>(
    id: &PersistenceId,
    record: &EventRecord,
) -> Result<E, PersistError> {
    if record.name != E::NAME {
        return Err(PersistError::EventType {
            id: id.to_string(),
            stored: record.name.to_string(),
            local: E::NAME,
        });
    }
    check_shape::<E>(id, E::NAME, record.fingerprint)?;
    from_bytes(id, &record.payload)
}

/// Encodes a state (a snapshot's or a durable state's).
pub(crate) fn encode_state<S: Serialize + DeserializeOwned + 'static>(
    id: &PersistenceId,
    seq: u64,
    state: &S,
) -> Result<Snapshot, PersistError> {
    Ok(Snapshot {
        seq,
        fingerprint: fingerprint::<S>(),
        payload: to_bytes(id, state)?,
    })
}

/// Decodes a state, checking its fingerprint first.
pub(crate) fn decode_state<S: DeserializeOwned + 'static>(
    id: &PersistenceId,
    snapshot: &Snapshot,
) -> Result<S, PersistError> {
    check_shape::<S>(id, std::any::type_name::<S>(), snapshot.fingerprint)?;
    from_bytes(id, &snapshot.payload)
}

/// Whether a stored fingerprint matches `T`'s (0 on either side: unchecked).
pub(crate) fn check_shape<T: DeserializeOwned + 'static>(
    id: &PersistenceId,
    name: &str,
    stored: u64,
) -> Result<(), PersistError> {
    let local = fingerprint::<T>();
    if stored == local || stored == UNCHECKED || local == UNCHECKED {
        return Ok(());
    }
    Err(PersistError::SchemaMismatch {
        id: id.to_string(),
        name: name.to_string(),
        rust_type: std::any::type_name::<T>(),
        stored,
        local,
    })
}
