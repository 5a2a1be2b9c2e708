//! The read side: stored events read back as typed values, by
//! persistence id or by tag, up to now or live, and projections that feed
//! them to a read model ([`projection`]).
//!
//! Floors: this module stands on [`journal`](crate::journal) (the raw
//! [`ReadJournal`] of a store, which knows where events are kept) and
//! [`codec`](crate::codec) (which turns records into events: the same
//! codec, upcasters and accepted names as recovery, so a reader sees
//! every stored event as the actor would). It names no store type.
//!
//! Invariants: an [`EventReader`] returns events in offset order, each
//! once per stream, and ends a stream after its first error (a record the
//! codec cannot read is an error naming it, never skipped).
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use futures::StreamExt;
//! # use troupe_persistence::*;
//! # async fn demo<A: PersistentActor>(store: Arc<JetStreamStore>) {
//! let reader = troupe_persistence::query::reader::<A>(store);
//! let mut orders = reader.by_tag("order", Offset::START, Follow::Live);
//! while let Some(Ok(envelope)) = orders.next().await {
//!     println!("{} #{} at {}", envelope.id, envelope.seq, envelope.offset);
//! }
//! # }
//! ```

pub mod projection;

use crate::codec::Codec;
use crate::error::PersistError;
use crate::event_sourced::PersistentActor;
use crate::id::PersistenceId;
use crate::journal::{Follow, Offset, Query, ReadJournal, Selection};
use futures::stream::BoxStream;
use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::borrow::Cow;
use std::sync::Arc;

/// One event read back, with whose it is and where it stands.
#[derive(Clone, Debug, PartialEq)]
pub struct EventEnvelope<E> {
    /// Whose journal it is in.
    pub id: PersistenceId,
    /// Its number in that journal (1, 2, 3, …).
    pub seq: u64,
    /// Where it stands in the journal as a whole: give it back as `after`
    /// to go on from the next event.
    pub offset: Offset,
    /// Its tags.
    pub tags: Vec<Cow<'static, str>>,
    /// The event, decoded (and upcast) by the actor's codec.
    pub event: E,
}

/// Reads an event type's stored events back (see the module docs).
pub struct EventReader<E, S> {
    journal: Arc<dyn ReadJournal>,
    codec: Arc<Codec<E, S>>,
}

impl<E, S> Clone for EventReader<E, S> {
    fn clone(&self) -> Self {
        EventReader {
            journal: self.journal.clone(),
            codec: self.codec.clone(),
        }
    }
}

impl<E, S> EventReader<E, S>
where
    E: Serialize + DeserializeOwned + Send + 'static,
    S: Serialize + DeserializeOwned + 'static,
    Codec<E, S>: Send + Sync,
{
    /// A reader of `journal`'s events through `codec`.
    pub fn new(journal: Arc<dyn ReadJournal>, codec: Codec<E, S>) -> Self {
        EventReader {
            journal,
            codec: Arc::new(codec),
        }
    }

    /// The events of `id` numbered after `after` (0: from the first).
    pub fn by_id(
        &self,
        id: &PersistenceId,
        after: u64,
        follow: Follow,
    ) -> BoxStream<'static, Result<EventEnvelope<E>, PersistError>> {
        self.query(Query {
            select: Selection::Id(id.clone()),
            after: Offset {
                append: 0,
                seq: after,
            },
            follow,
        })
    }

    /// Every event tagged `tag` after the offset `after`
    /// ([`Offset::START`]: from the first).
    pub fn by_tag(
        &self,
        tag: &str,
        after: Offset,
        follow: Follow,
    ) -> BoxStream<'static, Result<EventEnvelope<E>, PersistError>> {
        self.query(Query {
            select: Selection::Tag(tag.to_string()),
            after,
            follow,
        })
    }

    /// The events of `query`, decoded; the stream ends after an error.
    pub fn query(
        &self,
        query: Query,
    ) -> BoxStream<'static, Result<EventEnvelope<E>, PersistError>> {
        let codec = self.codec.clone();
        let mut failed = false;
        self.journal
            .events(query)
            .map(move |stored| {
                let stored = stored?;
                let event = codec.decode_event(&stored.id, &stored.record)?;
                Ok(EventEnvelope {
                    id: stored.id,
                    seq: stored.record.seq,
                    offset: stored.offset,
                    tags: stored.record.tags,
                    event,
                })
            })
            .take_while(move |r: &Result<EventEnvelope<E>, PersistError>| {
                let go = !failed;
                failed |= r.is_err();
                futures::future::ready(go)
            })
            .boxed()
    }
}

/// A reader of `journal` with the codec of the persistent actor `A` (its
/// encoding, upcasters and accepted names: what its recovery reads).
pub fn reader<A>(journal: Arc<impl ReadJournal>) -> EventReader<A::Event, A::State>
where
    A: PersistentActor,
    A::Event: Send,
    Codec<A::Event, A::State>: Send + Sync,
{
    EventReader::new(journal, A::codec())
}
