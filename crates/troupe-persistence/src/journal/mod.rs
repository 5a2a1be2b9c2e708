//! The storage seam: what a persistent actor needs from a store, and two
//! stores that provide it.
//!
//! * [`Journal`]: per persistence id, an append-only list of events
//!   numbered 1, 2, 3, … . [`Journal::append`] takes the sequence number
//!   the writer believes is last and fails with
//!   [`PersistError::Conflict`] if the journal's last is another: two
//!   writers can never both append event N (optimistic concurrency). The
//!   events of one append are stored all or none.
//!   [`Journal::delete_through`] deletes the oldest events, whole appends
//!   only, and never the last one (it carries the journal's position).
//! * [`SnapshotStore`]: the snapshots of a state, newest first, each with
//!   the sequence number of the last event it includes;
//!   [`SnapshotStore::retain`] keeps the newest N.
//! * [`StateStore`]: a whole state per persistence id, with a revision
//!   that every update must name (0: none yet), so a stale writer fails.
//!
//! Implementations: [`memory::MemoryStore`] (tests, single process) and
//! [`jetstream::JetStreamStore`] (NATS JetStream; the only module that
//! knows async-nats). The actors above (`event_sourced`, `durable`) name
//! no store type.
//!
//! Invariant every implementation keeps: a future that returns `Ok` has
//! stored what it was given (for JetStream: the server acknowledged it with
//! the stream's replication); an `Err` other than `Unavailable` stored
//! nothing.

pub mod jetstream;
pub mod memory;

use crate::error::PersistError;
use crate::id::PersistenceId;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// One stored event: its sequence number, its type's stable name and
/// schema fingerprint, its bytes, and its tags.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventRecord {
    /// 1 for the first event of a persistence id, then 2, 3, … .
    pub seq: u64,
    /// The event type's stable name (`troupe_remote::RemoteMessage::NAME`):
    /// borrowed when encoded here (no allocation per event), owned when
    /// read back.
    pub name: Cow<'static, str>,
    /// The event type's schema fingerprint (`troupe_remote::schema`).
    pub fingerprint: u64,
    /// The event, encoded with postcard.
    pub payload: Vec<u8>,
    /// The event's tags (see [`check_tags`] for what a tag may hold),
    /// which the read side selects by. Not part of the record's postcard
    /// bytes: JetStream stores them in the message's `Troupe-Tags` header
    /// (docs/journal-format.md), readable without decoding the body.
    /// [`Journal::read`] (recovery) may return them empty.
    #[serde(skip)]
    pub tags: Vec<Cow<'static, str>>,
}

/// The longest tag accepted, in bytes.
pub const MAX_TAG_LEN: usize = 64;

/// The most tags one event may carry.
pub const MAX_TAGS: usize = 16;

/// Checks an event's tags: at most [`MAX_TAGS`], each non-empty, at most
/// [`MAX_TAG_LEN`] bytes of ASCII letters, digits, `-`, `_` and `=` (so a
/// tag is one NATS subject token and needs no escaping in a header).
pub fn check_tags(id: &PersistenceId, tags: &[Cow<'static, str>]) -> Result<(), PersistError> {
    let bad = |reason: String| PersistError::Encode {
        id: id.to_string(),
        reason,
    };
    if tags.len() > MAX_TAGS {
        return Err(bad(format!(
            "an event has {} tags; at most {MAX_TAGS}",
            tags.len()
        )));
    }
    for tag in tags {
        if !is_tag(tag) {
            return Err(bad(format!(
                "the tag {tag:?} is empty, longer than {MAX_TAG_LEN} bytes, or holds a character other than ASCII letters, digits, '-', '_', '='"
            )));
        }
    }
    Ok(())
}

/// Whether `tag` is a valid tag (see [`check_tags`]).
pub fn is_tag(tag: &str) -> bool {
    !tag.is_empty()
        && tag.len() <= MAX_TAG_LEN
        && tag
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'='))
}

/// Where an event stands in the journal as a whole: the stream sequence
/// of the message (the append) that holds it, then the event's number in
/// its persistence id. Offsets order every stored event (appends in the
/// order the store took them, events of one append in their order);
/// [`Offset::START`] is before all of them.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Offset {
    /// The stream sequence of the append (JetStream: the journal stream's
    /// message sequence).
    pub append: u64,
    /// The event's sequence number in its persistence id.
    pub seq: u64,
}

impl Offset {
    /// Before every event.
    pub const START: Offset = Offset { append: 0, seq: 0 };
}

impl std::fmt::Display for Offset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.append, self.seq)
    }
}

/// An event as the read side sees it: whose it is, where it stands, and
/// the record (with its tags).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredEvent {
    /// Whose journal it is in.
    pub id: PersistenceId,
    /// Where it stands in the journal as a whole.
    pub offset: Offset,
    /// The stored record; `record.seq == offset.seq`.
    pub record: EventRecord,
}

/// Which events a [`ReadJournal`] query returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    /// One persistence id's events, those numbered after `after.seq`
    /// (`after.append`, if not 0, is where the store may start looking).
    Id(PersistenceId),
    /// Every event that carries this tag, after the offset `after`.
    Tag(String),
}

/// Whether a query ends once it has returned what is stored now, or
/// follows new events as they are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Follow {
    /// Up to the last event stored when the query started, then the
    /// stream ends.
    UpToNow,
    /// Every event stored so far, then each new one as it is stored; the
    /// stream never ends by itself (drop it to stop).
    Live,
}

/// A read-side query of a [`ReadJournal`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    /// Which events.
    pub select: Selection,
    /// Only the events after this one (see [`Selection`]).
    pub after: Offset,
    /// Up to now, or live.
    pub follow: Follow,
}

/// The read side of a journal: stored events by persistence id or by tag,
/// in offset order, as raw records (the typed reader,
/// [`query::EventReader`](crate::query::EventReader), decodes them).
pub trait ReadJournal: Send + Sync + 'static {
    /// The events `query` selects, in offset order. A stream that fails
    /// ends after its `Err`.
    fn events(&self, query: Query) -> BoxStream<'static, Result<StoredEvent, PersistError>>;
}

/// Where each projection stands: an offset per projection name, stored
/// with a revision that every update must name (0: none yet), so that a
/// second runner of one projection is fenced off.
pub trait OffsetStore: Send + Sync + 'static {
    /// The stored offset of projection `name` and its revision.
    fn load<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<(Offset, u64)>, PersistError>>;

    /// Stores `offset` for `name` if the stored revision is `expected` (0:
    /// nothing stored yet) and returns the new revision; otherwise
    /// [`PersistError::StateConflict`] and nothing is stored.
    fn save<'a>(
        &'a self,
        name: &'a str,
        offset: Offset,
        expected: u64,
    ) -> BoxFuture<'a, Result<u64, PersistError>>;
}

/// A stored snapshot: a state that includes events `1..=seq`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// The last event the state includes.
    pub seq: u64,
    /// The state type's schema fingerprint.
    pub fingerprint: u64,
    /// The state, encoded with postcard.
    pub payload: Vec<u8>,
}

/// A stored durable state and its revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Revisioned {
    /// The revision to name in the next [`StateStore::put`] (never 0).
    pub revision: u64,
    /// The stored bytes.
    pub bytes: Vec<u8>,
}

/// An append-only event journal per persistence id (see the module docs).
pub trait Journal: Send + Sync + 'static {
    /// Appends `events` (numbered `expected + 1`, `expected + 2`, …) after
    /// event `expected` (0: the journal is empty) and returns the new last
    /// sequence number. All or none are stored.
    fn append<'a>(
        &'a self,
        id: &'a PersistenceId,
        expected: u64,
        events: Vec<EventRecord>,
    ) -> BoxFuture<'a, Result<u64, PersistError>>;

    /// The events with sequence numbers `from` and up, in order (those
    /// not deleted: after [`delete_through`](Self::delete_through) the
    /// first may be later than `from`).
    fn read<'a>(
        &'a self,
        id: &'a PersistenceId,
        from: u64,
    ) -> BoxFuture<'a, Result<Vec<EventRecord>, PersistError>>;

    /// Deletes the events numbered `seq` and below, as far as whole
    /// appends allow: an append that holds an event after `seq` is kept
    /// whole, and so is the journal's last append (where the next one is
    /// checked against). Returns the number of the newest event no longer
    /// stored (0: none is deleted). Appends go on numbered as before.
    fn delete_through<'a>(
        &'a self,
        id: &'a PersistenceId,
        seq: u64,
    ) -> BoxFuture<'a, Result<u64, PersistError>>;
}

/// The snapshots of each persistence id, the latest first.
pub trait SnapshotStore: Send + Sync + 'static {
    /// Stores `snapshot` as the latest one (older ones stay until
    /// [`retain`](Self::retain) drops them).
    fn save<'a>(
        &'a self,
        id: &'a PersistenceId,
        snapshot: Snapshot,
    ) -> BoxFuture<'a, Result<(), PersistError>>;

    /// The latest snapshot, if any.
    fn load<'a>(
        &'a self,
        id: &'a PersistenceId,
    ) -> BoxFuture<'a, Result<Option<Snapshot>, PersistError>>;

    /// Every kept snapshot, the latest first.
    fn history<'a>(
        &'a self,
        id: &'a PersistenceId,
    ) -> BoxFuture<'a, Result<Vec<Snapshot>, PersistError>>;

    /// Deletes all but the newest `keep` snapshots (at least one is kept).
    fn retain<'a>(
        &'a self,
        id: &'a PersistenceId,
        keep: usize,
    ) -> BoxFuture<'a, Result<(), PersistError>>;
}

/// A whole state per persistence id, updated with a revision check.
pub trait StateStore: Send + Sync + 'static {
    /// The stored state, if any.
    fn get<'a>(
        &'a self,
        id: &'a PersistenceId,
    ) -> BoxFuture<'a, Result<Option<Revisioned>, PersistError>>;

    /// Stores `bytes` if the stored revision is `expected` (0: nothing
    /// stored yet) and returns the new revision; otherwise
    /// [`PersistError::StateConflict`] and nothing is stored.
    fn put<'a>(
        &'a self,
        id: &'a PersistenceId,
        expected: u64,
        bytes: Vec<u8>,
    ) -> BoxFuture<'a, Result<u64, PersistError>>;
}

/// Checks that `events` are numbered `expected + 1, expected + 2, …`
/// and that their tags are valid.
pub(crate) fn check_numbering(
    id: &PersistenceId,
    expected: u64,
    events: &[EventRecord],
) -> Result<u64, PersistError> {
    let mut last = expected;
    for e in events {
        check_tags(id, &e.tags)?;
        if Some(e.seq) != last.checked_add(1) {
            return Err(PersistError::Corrupt {
                id: id.to_string(),
                reason: format!("event #{} appended after #{last}", e.seq),
            });
        }
        last = e.seq;
    }
    Ok(last)
}

/// Postcard bytes of `value`.
pub(crate) fn to_bytes<T: Serialize + ?Sized>(
    id: &PersistenceId,
    value: &T,
) -> Result<Vec<u8>, PersistError> {
    postcard::to_stdvec(value).map_err(|e| PersistError::Encode {
        id: id.to_string(),
        reason: e.to_string(),
    })
}

/// `T` from postcard bytes, refusing trailing bytes.
pub(crate) fn from_bytes<T: DeserializeOwned>(
    id: &PersistenceId,
    bytes: &[u8],
) -> Result<T, PersistError> {
    let corrupt = |reason: String| PersistError::Corrupt {
        id: id.to_string(),
        reason,
    };
    let (value, rest) =
        postcard::take_from_bytes(bytes).map_err(|e| corrupt(format!("does not decode: {e}")))?;
    if !rest.is_empty() {
        return Err(corrupt(format!("{} trailing bytes", rest.len())));
    }
    Ok(value)
}
