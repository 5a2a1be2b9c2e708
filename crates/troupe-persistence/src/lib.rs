//! # Persistent actors for Troupe
//!
//! An actor's state that survives its process, on NATS JetStream:
//!
//! * **Event sourcing** ([`PersistentActor`]): a command handler returns
//!   events; they are journaled, then a pure `apply` folds them into the
//!   state, then the reply leaves. Recovery replays the journal from the
//!   latest snapshot; snapshots every N events or on demand.
//! * **Durable state** ([`DurableActor`]): the whole state is stored on
//!   each change, with a revision check, so a stale writer fails.
//!
//! Both run as Troupe [`AsyncActor`](troupe::AsyncActor)s: one command at a
//! time, each store operation awaited without blocking a worker thread.
//!
//! Floors, lowest first: [`id`] and [`error`] (names and errors), and
//! [`stats()`] (what failed writes cost, counted) →
//! [`journal`] (the storage seam: [`Journal`], [`SnapshotStore`],
//! [`StateStore`], postcard bytes, and two implementations, `memory` and
//! `jetstream`, the only module that knows async-nats) → [`codec`] (typed
//! records tagged with `troupe-remote`'s stable names and schema
//! fingerprints, in postcard or CBOR, and the upcasters that read older
//! shapes) →
//! [`event_sourced`] and [`durable`] (the actor kinds, which name no store
//! type) → [`query`] (the read side: typed events by persistence id or by
//! tag, and [`query::projection`], the runner that feeds a read model).
//!
//! Invariants every part keeps: nothing is acknowledged to a caller that
//! the store has not confirmed; an actor's state holds only what is stored
//! and what its commands in flight wrote (`pipeline`);
//! two writers cannot both append event N of one journal (the second gets
//! [`PersistError::Conflict`]); a stored record whose schema differs from
//! the local type's is read through an upcaster the actor gave for it, or
//! by names where it is CBOR and the change compatible, or it is an error
//! naming both, never a misread.
//!
//! The example in [`PersistentActor`] runs on the memory store; with a
//! server, use [`JetStreamStore::connect`] instead, and for the most
//! events per second spawn the actors on a tokio dispatcher of the store's
//! runtime ([`spawn_persistent_with`], [`JetStreamStore::runtime`]).

#![warn(missing_docs)]

pub mod codec;
pub mod durable;
pub mod error;
pub mod event_sourced;
pub mod id;
pub mod journal;
mod pipeline;
pub mod query;
pub mod stats;

pub use codec::{Codec, Encoding};
pub use durable::{spawn_durable, Change, Durable, DurableActor, DurableRef};
pub use error::PersistError;
pub use event_sourced::{
    spawn_persistent, spawn_persistent_with, Effect, PersistenceConfig, Persistent,
    PersistentActor, PersistentRef, DEFAULT_PIPELINE,
};
pub use id::PersistenceId;
pub use journal::jetstream::{JetStreamBuilder, JetStreamStore};
pub use journal::memory::MemoryStore;
pub use journal::{
    EventRecord, Follow, Journal, Offset, OffsetStore, Query, ReadJournal, Revisioned, Selection,
    Snapshot, SnapshotStore, StateStore, StoredEvent,
};
pub use stats::{stats, PersistenceStats};
