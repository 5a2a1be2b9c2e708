//! Events, snapshots and states to bytes and back, tagged with the stable
//! type name and the schema fingerprint of `troupe-remote`, and how
//! records written by older shapes of a type are read ([`Codec`]).
//!
//! # Reading a record
//!
//! A stored event has a stable name, a shape fingerprint and an encoding
//! ([`Encoding`], told by the record itself: `encoding.rs`). A
//! [`Codec<E, S>`] reads it as the first of these that applies:
//!
//! 1. its name is `E::NAME` or one of [`Codec::accept_name`]'s and its
//!    shape is `E`'s: decoded as `E`;
//! 2. an upcaster of [`Codec::upcast`] was given for its (name, shape):
//!    decoded as the old type, then converted;
//! 3. its name is `E`'s (or accepted) and it is CBOR: decoded as `E` by
//!    field and variant names, which succeeds where the shapes differ only
//!    in ways the rules below call compatible; otherwise it fails as 4;
//! 4. otherwise: an error naming both sides, never a misread:
//!    [`PersistError::SchemaMismatch`] (the name is known, the shape is
//!    not) or [`PersistError::EventType`] (the name is unknown).
//!
//! A snapshot is read the same way, without names; one that cannot be
//! read is skipped by the actor, which replays its journal from the start
//! (the events are the truth). A fingerprint of 0 (a type whose shape
//! could not be traced) matches any shape. Both decoders refuse trailing
//! bytes.
//!
//! # Which changes need an upcaster
//!
//! | change to the event (or state) type | postcard (default) | CBOR |
//! |---|---|---|
//! | rename or move the Rust type | nothing | nothing |
//! | add a variant | upcaster | nothing |
//! | add a field of type `Option<T>`, or with `#[serde(default)]` | upcaster | nothing |
//! | remove a field | upcaster | nothing (the stored value is ignored) |
//! | reorder struct fields | upcaster | nothing |
//! | rename a field or a variant | upcaster | upcaster, or `#[serde(alias = "old")]` |
//! | change a field's type | upcaster | upcaster (widening an integer: nothing) |
//! | remove or reorder a tuple's fields, remove a stored variant | upcaster | upcaster |
//! | change the stable name, same shape | [`Codec::accept_name`] | [`Codec::accept_name`] |
//! | keep names and types but change what a field means | a new stable name and an upcaster | the same |
//!
//! With postcard every change of the serde shape changes the fingerprint
//! (`troupe_remote::schema`): the old records are read only through an
//! upcaster for the old shape (even where postcard's bytes would happen to
//! decode, as for a variant added at the end), so nothing is read by a
//! type it was not written by. With CBOR the record names its fields and
//! variants, so the compatible changes above decode without a rule.
//!
//! Each upcaster converts one old shape straight to the current type; keep
//! the old type (a copy of its definition, e.g. in a `v1` module) and
//! chain the conversions in its function (`|v1| V3::from(V2::from(v1))`).
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use troupe_persistence::{Codec, PersistenceId};
//!
//! mod v1 {
//!     #[derive(serde::Serialize, serde::Deserialize)]
//!     pub enum Event { Opened { owner: String } }
//! }
//! #[troupe_remote::remote("doc.account.Event")]
//! #[derive(Debug, PartialEq, Serialize, Deserialize)]
//! enum Event { Opened { holder: String }, Closed }
//!
//! let codec = Codec::<Event, u64>::postcard().upcast::<v1::Event>(
//!     "doc.account.Event",
//!     |v1::Event::Opened { owner }| Event::Opened { holder: owner },
//! );
//! // A record as version 1 wrote it reads as the current type.
//! let id = PersistenceId::new("account", "1").unwrap();
//! let old = Codec::<v1::Event, u64>::postcard_named("doc.account.Event")
//!     .encode_event(&id, 1, &v1::Event::Opened { owner: "ada".into() })
//!     .unwrap();
//! assert_eq!(codec.decode_event(&id, &old), Ok(Event::Opened { holder: "ada".into() }));
//! ```

mod encoding;
mod upcast;

pub use encoding::{Encoding, CBOR};

use crate::error::PersistError;
use crate::id::PersistenceId;
use crate::journal::{from_bytes, to_bytes, EventRecord, Snapshot};
use encoding::{encode, Stored};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::borrow::Cow;
use std::fmt;
use troupe_remote::schema::{fingerprint, UNCHECKED};
use troupe_remote::RemoteMessage;
use upcast::Upcasters;

/// How a persistent actor's events `E` and snapshots `S` are written and
/// read, and which older shapes it reads (see the [module docs](self)).
/// Built once per actor, by
/// [`PersistentActor::codec`](crate::PersistentActor::codec).
pub struct Codec<E, S> {
    encoding: Encoding,
    /// The stable name new events are written under.
    name: &'static str,
    /// Other names whose records have `E`'s shape.
    names: Vec<&'static str>,
    event_shape: u64,
    state_shape: u64,
    events: Upcasters<E>,
    snapshots: Upcasters<S>,
}

impl<E, S> Codec<E, S>
where
    E: Serialize + DeserializeOwned + 'static,
    S: Serialize + DeserializeOwned + 'static,
{
    /// Writes in `encoding`, events under `name`, reading only the current
    /// shapes.
    fn with(encoding: Encoding, name: &'static str) -> Self {
        Codec {
            encoding,
            name,
            names: Vec::new(),
            // Each looks up a global cache under a lock: done once here.
            event_shape: fingerprint::<E>(),
            state_shape: fingerprint::<S>(),
            events: Upcasters::default(),
            snapshots: Upcasters::default(),
        }
    }

    /// Like [`postcard`](Self::postcard) for an event type that is not a
    /// remote type, writing its events under `name` (an old shape kept to
    /// make test data, say).
    pub fn postcard_named(name: &'static str) -> Self {
        Self::with(Encoding::Postcard, name)
    }

    /// Like [`cbor`](Self::cbor), writing events under `name`.
    pub fn cbor_named(name: &'static str) -> Self {
        Self::with(Encoding::Cbor, name)
    }

    /// Also reads events stored under `name` (a former stable name) that
    /// have `E`'s shape, as if stored under `E`'s. New events are written
    /// under `E`'s name.
    pub fn accept_name(mut self, name: &'static str) -> Self {
        if name != self.name && !self.names.contains(&name) {
            self.names.push(name);
        }
        self
    }

    /// Reads events stored under `name` with `Old`'s shape (in either
    /// encoding) as `f(old)`. `Old` is the event type as it was (a copy of
    /// its old definition); `name` is its stable name then, `E`'s own or a
    /// former one.
    pub fn upcast<Old>(
        mut self,
        name: &'static str,
        f: impl Fn(Old) -> E + Send + Sync + 'static,
    ) -> Self
    where
        Old: DeserializeOwned + 'static,
    {
        self.events.add(name, f);
        self
    }

    /// Reads snapshots of `Old`'s shape (in either encoding) as `f(old)`;
    /// without one, a snapshot of an older shape is skipped and the journal
    /// replayed from the start.
    pub fn upcast_snapshot<Old>(mut self, f: impl Fn(Old) -> S + Send + Sync + 'static) -> Self
    where
        Old: DeserializeOwned + 'static,
    {
        self.snapshots.add("", f);
        self
    }

    /// The encoding new records are written in.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Event `seq` as a record: under `E`'s stable name, in this codec's
    /// encoding.
    pub fn encode_event(
        &self,
        id: &PersistenceId,
        seq: u64,
        event: &E,
    ) -> Result<EventRecord, PersistError> {
        let (fingerprint, payload) = encode(id, self.encoding, self.event_shape, event)?;
        Ok(EventRecord {
            seq,
            name: Cow::Borrowed(self.name),
            fingerprint,
            payload,
            tags: Vec::new(),
        })
    }

    /// Reads a stored event (see [Reading a record](self#reading-a-record)).
    pub fn decode_event(
        &self,
        id: &PersistenceId,
        record: &EventRecord,
    ) -> Result<E, PersistError> {
        let stored = Stored::parse(id, record.fingerprint, &record.payload)?;
        let name = record.name.as_ref();
        let current = name == self.name || self.names.contains(&name);
        if current && same_shape(stored.shape, self.event_shape) {
            return stored.decode(id);
        }
        if let Some(upcast) = self.events.upcast(id, name, &stored) {
            return upcast;
        }
        if !current && !self.events.reads_name(name) {
            return Err(PersistError::EventType {
                id: id.to_string(),
                stored: name.to_string(),
                local: self.name,
            });
        }
        // A former name's records of an unknown shape are not tried as `E`:
        // only `E`'s own names are taken by names.
        self.tolerant::<E>(id, name, &stored, self.event_shape, current)
    }

    /// A state that includes events `1..=seq` as a snapshot, in this
    /// codec's encoding.
    pub fn encode_snapshot(
        &self,
        id: &PersistenceId,
        seq: u64,
        state: &S,
    ) -> Result<Snapshot, PersistError> {
        let (fingerprint, payload) = encode(id, self.encoding, self.state_shape, state)?;
        Ok(Snapshot {
            seq,
            fingerprint,
            payload,
        })
    }

    /// Reads a stored snapshot: its shape is `S`'s, or an upcaster reads
    /// it, or (CBOR) it decodes by names; else `SchemaMismatch`.
    pub fn decode_snapshot(
        &self,
        id: &PersistenceId,
        snapshot: &Snapshot,
    ) -> Result<S, PersistError> {
        let stored = Stored::parse(id, snapshot.fingerprint, &snapshot.payload)?;
        if same_shape(stored.shape, self.state_shape) {
            return stored.decode(id);
        }
        if let Some(upcast) = self.snapshots.upcast(id, "", &stored) {
            return upcast;
        }
        self.tolerant::<S>(
            id,
            std::any::type_name::<S>(),
            &stored,
            self.state_shape,
            true,
        )
    }

    /// Step 3: a CBOR record of another shape decoded by names (where
    /// `by_names`); a postcard one, or a CBOR one that does not decode, is
    /// a `SchemaMismatch`.
    fn tolerant<T: DeserializeOwned>(
        &self,
        id: &PersistenceId,
        name: &str,
        stored: &Stored<'_>,
        local: u64,
        by_names: bool,
    ) -> Result<T, PersistError> {
        let mismatch = || PersistError::SchemaMismatch {
            id: id.to_string(),
            name: name.to_string(),
            rust_type: std::any::type_name::<T>(),
            stored: stored.shape,
            local,
        };
        if !by_names || stored.encoding != Encoding::Cbor {
            return Err(mismatch());
        }
        stored.decode(id).map_err(|e| {
            tracing::debug!(%id, error = %e, "a CBOR record of another shape does not decode by names");
            mismatch()
        })
    }
}

impl<E: RemoteMessage, S> Codec<E, S>
where
    S: Serialize + DeserializeOwned + 'static,
{
    /// Compact records (postcard), reading only the current shapes: the
    /// default, and the format of every journal written before codecs.
    pub fn postcard() -> Self {
        Self::with(Encoding::Postcard, E::NAME)
    }

    /// Self-describing records (CBOR with field and variant names), which
    /// read records of older shapes after compatible changes without an
    /// upcaster (see the [rules](self#which-changes-need-an-upcaster)).
    /// Records in postcard written before are still read.
    pub fn cbor() -> Self {
        Self::with(Encoding::Cbor, E::NAME)
    }
}

impl<E, S> fmt::Debug for Codec<E, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Codec")
            .field("encoding", &self.encoding)
            .field("name", &self.name)
            .field("accepted_names", &self.names)
            .field("event_shape", &format_args!("{:#018x}", self.event_shape))
            .field("state_shape", &format_args!("{:#018x}", self.state_shape))
            .field("event_upcasters", &self.events)
            .field("snapshot_upcasters", &self.snapshots)
            .finish()
    }
}

/// Whether a stored shape is the local one (0 on either side: unchecked).
fn same_shape(stored: u64, local: u64) -> bool {
    stored == local || stored == UNCHECKED || local == UNCHECKED
}

/// Encodes a durable state (postcard).
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

/// Decodes a durable state, checking its fingerprint first.
pub(crate) fn decode_state<S: DeserializeOwned + 'static>(
    id: &PersistenceId,
    snapshot: &Snapshot,
) -> Result<S, PersistError> {
    let local = fingerprint::<S>();
    if !same_shape(snapshot.fingerprint, local) {
        return Err(PersistError::SchemaMismatch {
            id: id.to_string(),
            name: std::any::type_name::<S>().to_string(),
            rust_type: std::any::type_name::<S>(),
            stored: snapshot.fingerprint,
            local,
        });
    }
    from_bytes(id, &snapshot.payload)
}
