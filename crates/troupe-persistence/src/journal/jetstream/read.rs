//! The read side on JetStream: stored events by persistence id or by tag,
//! up to now or live ([`ReadJournal`]).
//!
//! Protocol of one query:
//! 1. The subject filter: the entity's subject for [`Selection::Id`],
//!    the whole journal (`troupe.<ns>.journal.>`) for [`Selection::Tag`].
//! 2. Up to now: the end is the stream sequence of the last message the
//!    filter holds now (the entity's last message; the stream's last
//!    sequence); nothing there, or nothing after the start, ends the
//!    stream at once. Live: no end.
//! 3. An ordered consumer on the filter delivers from the query's start
//!    (`after.append`, at least 1), on the store's runtime; a task there
//!    turns each message into events and sends them down a bounded
//!    channel ([`CHANNEL`]), so a slow reader holds the consumer back
//!    instead of filling memory.
//! 4. For a tag, a message whose `Troupe-Tags` header does not name the
//!    tag is skipped without decoding its body; of a message that does,
//!    only the events whose own list names it are returned.
//! 5. Events at or before `after` are skipped (the first message may hold
//!    some). Up to now, the stream ends after the message at the end, or
//!    when the consumer reports nothing pending.
//!
//! Invariants: events come in offset order, each once per query; a
//! message that does not decode, a subject that names no persistence id,
//! or a `Troupe-Tags` header that does not fit its batch ends the stream
//! with `Corrupt` (a reader never skips an event silently); up to now, a
//! consumer silent for the store's timeout ends it with `Unavailable`.
//! Dropping the stream ends the task at its next send.

use super::batch::{header_has_tag, parse_tags, Batch, TAGS_HEADER};
use super::{JetStreamStore, Shared};
use crate::error::PersistError;
use crate::id::PersistenceId;
use crate::journal::{from_bytes, Follow, Offset, Query, ReadJournal, Selection, StoredEvent};
use async_nats::jetstream::consumer;
use futures::stream::BoxStream;
use futures::StreamExt;
use std::sync::Arc;
use tokio::sync::mpsc;

/// How many events a query holds decoded ahead of its reader.
pub(super) const CHANNEL: usize = 1024;

type Tx = mpsc::Sender<Result<StoredEvent, PersistError>>;

impl ReadJournal for JetStreamStore {
    fn events(&self, query: Query) -> BoxStream<'static, Result<StoredEvent, PersistError>> {
        let (tx, rx) = mpsc::channel(CHANNEL);
        let shared = self.shared.clone();
        self.shared.handle.spawn(async move {
            if let Err(e) = shared.query(&query, &tx).await {
                let _ = tx.send(Err(e)).await;
            }
        });
        futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|item| (item, rx))
        })
        .boxed()
    }
}

/// A query's error for `what`, named after its selection.
fn failed(select: &Selection, what: &str, e: impl std::fmt::Display) -> PersistError {
    PersistError::Unavailable {
        id: match select {
            Selection::Id(id) => id.to_string(),
            Selection::Tag(tag) => format!("tag {tag}"),
        },
        reason: format!("{what}: {e}"),
    }
}

impl Shared {
    /// The persistence id of a journal subject, `troupe.<ns>.journal.<kind>.<id>`.
    fn id_of(&self, subject: &str) -> Result<PersistenceId, PersistError> {
        let corrupt = || PersistError::Corrupt {
            id: format!("subject {subject}"),
            reason: "a journal message on a subject that names no persistence id".into(),
        };
        let rest = subject
            .strip_prefix("troupe.")
            .and_then(|s| s.strip_prefix(self.ns.as_str()))
            .and_then(|s| s.strip_prefix(".journal."))
            .ok_or_else(corrupt)?;
        let (kind, id) = rest.split_once('.').ok_or_else(corrupt)?;
        PersistenceId::new(kind, id).map_err(|_| corrupt())
    }

    /// Runs `query`, sending its events down `tx` (see the module docs).
    async fn query(self: &Arc<Self>, query: &Query, tx: &Tx) -> Result<(), PersistError> {
        let filter = match &query.select {
            Selection::Id(id) => self.subject(id),
            Selection::Tag(_) => format!("troupe.{}.journal.>", self.ns),
        };
        let start = query.after.append.max(1);
        let end = match query.follow {
            Follow::Live => u64::MAX,
            Follow::UpToNow => {
                let end = match &query.select {
                    Selection::Id(id) => self.last(id, &filter).await?.1,
                    Selection::Tag(_) => {
                        self.stream
                            .get_info()
                            .await
                            .map_err(|e| {
                                failed(&query.select, "cannot read the journal stream", e)
                            })?
                            .state
                            .last_sequence
                    }
                };
                if end < start {
                    return Ok(());
                }
                end
            }
        };
        let consumer = tokio::time::timeout(
            self.timeout,
            self.stream.create_consumer(consumer::pull::OrderedConfig {
                filter_subject: filter,
                deliver_policy: consumer::DeliverPolicy::ByStartSequence {
                    start_sequence: start,
                },
                ..Default::default()
            }),
        )
        .await
        .map_err(|e| failed(&query.select, "no read consumer", e))?
        .map_err(|e| failed(&query.select, "no read consumer", e))?;
        let mut messages = consumer
            .messages()
            .await
            .map_err(|e| failed(&query.select, "the read consumer failed", e))?;
        loop {
            let next = match query.follow {
                Follow::Live => tokio::select! {
                    next = messages.next() => next,
                    () = tx.closed() => return Ok(()),
                },
                Follow::UpToNow => tokio::time::timeout(self.timeout, messages.next())
                    .await
                    .map_err(|_| {
                        failed(
                            &query.select,
                            "the read consumer",
                            format!("no message within {:?}", self.timeout),
                        )
                    })?,
            };
            let msg = match next {
                Some(Ok(msg)) => msg,
                Some(Err(e)) => return Err(failed(&query.select, "the read consumer failed", e)),
                None => return Ok(()),
            };
            let (stream_seq, pending) = match msg.info() {
                Ok(info) => (info.stream_sequence, info.pending),
                Err(e) => return Err(failed(&query.select, "a message without its info", e)),
            };
            let header = msg
                .headers
                .as_ref()
                .and_then(|h| h.get(TAGS_HEADER))
                .map(|v| v.as_str());
            let wanted = match &query.select {
                Selection::Id(_) => true,
                Selection::Tag(tag) => header.is_some_and(|h| header_has_tag(h, tag)),
            };
            if wanted
                && !self
                    .send(query, stream_seq, &msg.subject, header, &msg.payload, tx)
                    .await?
            {
                return Ok(());
            }
            if query.follow == Follow::UpToNow && (stream_seq >= end || pending == 0) {
                return Ok(());
            }
        }
    }

    /// Sends the selected events of one message; `false` once the reader
    /// is gone.
    async fn send(
        &self,
        query: &Query,
        append: u64,
        subject: &str,
        header: Option<&str>,
        payload: &[u8],
        tx: &Tx,
    ) -> Result<bool, PersistError> {
        let id = self.id_of(subject)?;
        let batch: Batch = from_bytes(&id, payload)?;
        let tags = parse_tags(&id, header, batch.events.len())?;
        for (mut record, tags) in batch.events.into_iter().zip(tags) {
            let offset = Offset {
                append,
                seq: record.seq,
            };
            let selected = match &query.select {
                Selection::Id(_) => record.seq > query.after.seq,
                Selection::Tag(tag) => offset > query.after && tags.iter().any(|t| t == tag),
            };
            if !selected {
                continue;
            }
            record.tags = tags;
            let event = StoredEvent {
                id: id.clone(),
                offset,
                record,
            };
            if tx.send(Ok(event)).await.is_err() {
                return Ok(false);
            }
        }
        Ok(true)
    }
}
