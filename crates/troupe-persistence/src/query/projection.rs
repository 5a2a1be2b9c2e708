//! Projections: a user handler fed with the events of a tag, in offset
//! order, that restarts where it stopped.
//!
//! Two ways to keep the offset:
//!
//! * **At least once** ([`run`], a [`Projection`]): the offset is kept in
//!   an [`OffsetStore`] (on JetStream, the KV bucket
//!   `troupe-<ns>-offsets`), written *after* the handler has taken the
//!   events it covers. A runner that stops between the two hands the
//!   events since the last stored offset to the handler again at its
//!   restart: none is lost, some may be seen twice.
//! * **Exactly once** ([`run_exactly_once`], a
//!   [`TransactionalProjection`]): the handler's own store (a database)
//!   keeps the offset, written in the same transaction as the event's
//!   effect; the runner starts after the offset that store returns. A
//!   crash before the commit keeps neither the effect nor the offset.
//!
//! Protocol of [`run`]:
//! 1. Load the stored offset and its revision (none: from the start,
//!    revision 0).
//! 2. Read the tag after that offset ([`EventReader::by_tag`]), live or
//!    up to now as configured.
//! 3. For each event: `handle` it; on `Ok` it is *taken* (its offset is
//!    the latest taken).
//! 4. Every [`ProjectionConfig::save_every`] taken events, or when
//!    [`ProjectionConfig::save_interval`] has passed with some unsaved,
//!    store the latest taken offset, naming the revision read or last
//!    written. A revision that moved means another runner of the same
//!    projection wrote it: this one stops with
//!    [`ProjectionError::Fenced`] and handles nothing more.
//! 5. When the stream ends (up to now), or the handler or the store
//!    fails, store the latest taken offset (step 4), then return.
//!
//! Invariants: an offset is stored only once the handler has taken every
//! event at or before it (at least once); two runners of one name never
//! both advance the stored offset from the same revision (the second is
//! fenced); the handler sees events in offset order.
//!
//! One runner per projection at a time is the deployer's to arrange (a
//! cluster singleton); the revision check makes a second one stop at its
//! first save instead of moving the offset back.

use super::{EventEnvelope, EventReader};
use crate::codec::Codec;
use crate::error::PersistError;
use crate::journal::{Follow, Offset, OffsetStore};
use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::fmt;
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

/// A read model fed from a tag, at least once (see the module docs).
pub trait Projection: Send + 'static {
    /// The event type it reads.
    type Event: Send + 'static;

    /// Takes one event. `Err` stops the runner; the event is handed over
    /// again at the next start.
    fn handle(
        &mut self,
        envelope: EventEnvelope<Self::Event>,
    ) -> impl Future<Output = Result<(), String>> + Send;
}

/// A read model whose own store keeps the offset, in the same
/// transaction as each event's effect: exactly once (see the module
/// docs).
pub trait TransactionalProjection: Send + 'static {
    /// The event type it reads.
    type Event: Send + 'static;

    /// The offset its store holds: the last event committed (`None`: from
    /// the start). Read once, at the runner's start.
    fn offset(&mut self) -> impl Future<Output = Result<Option<Offset>, String>> + Send;

    /// Applies one event and stores `envelope.offset` with it, committed
    /// together or not at all. `Err` stops the runner.
    fn handle(
        &mut self,
        envelope: EventEnvelope<Self::Event>,
    ) -> impl Future<Output = Result<(), String>> + Send;
}

/// How a projection runs.
#[derive(Clone, Debug)]
pub struct ProjectionConfig {
    /// The projection's name: its key in the offset store (ASCII letters,
    /// digits, `-`, `_`, `=`).
    pub name: String,
    /// The tag whose events it reads.
    pub tag: String,
    /// Live (the default: run until stopped) or up to now (return once
    /// caught up).
    pub follow: Follow,
    /// Store the offset after this many events (default 1,000, chosen by
    /// measurement: bench/results/2026-12-03-read-side; 1: after
    /// every event).
    pub save_every: u64,
    /// Store the offset when this long has passed with events unsaved
    /// (default 1 s), also while no event comes.
    pub save_interval: Duration,
}

impl ProjectionConfig {
    /// Projection `name` of tag `tag`, live, saving every 1,000 events or
    /// every second.
    pub fn new(name: &str, tag: &str) -> Self {
        ProjectionConfig {
            name: name.to_string(),
            tag: tag.to_string(),
            follow: Follow::Live,
            save_every: 1000,
            save_interval: Duration::from_secs(1),
        }
    }

    /// Up to now or live.
    pub fn follow(mut self, follow: Follow) -> Self {
        self.follow = follow;
        self
    }

    /// Stores the offset after this many events (at least 1).
    pub fn save_every(mut self, n: u64) -> Self {
        self.save_every = n.max(1);
        self
    }

    /// Stores the offset when this long has passed with events unsaved.
    pub fn save_interval(mut self, interval: Duration) -> Self {
        self.save_interval = interval;
        self
    }
}

/// Why a projection stopped.
#[derive(Clone, Debug, PartialEq)]
pub enum ProjectionError {
    /// Reading events or storing the offset failed.
    Store(PersistError),
    /// The handler refused an event (at `offset`): it is handed over
    /// again at the next start.
    Handler {
        /// The event's offset.
        offset: Offset,
        /// What the handler said.
        reason: String,
    },
    /// Another runner of the projection stored its offset since this one
    /// read it: this one stopped.
    Fenced {
        /// The projection's name.
        name: String,
    },
}

impl fmt::Display for ProjectionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProjectionError::Store(e) => write!(f, "the projection's store failed: {e}"),
            ProjectionError::Handler { offset, reason } => {
                write!(
                    f,
                    "the projection's handler refused the event at {offset}: {reason}"
                )
            }
            ProjectionError::Fenced { name } => write!(
                f,
                "another runner of projection {name} stored its offset: this one stopped (run one at a time)"
            ),
        }
    }
}

impl std::error::Error for ProjectionError {}

impl From<PersistError> for ProjectionError {
    fn from(e: PersistError) -> Self {
        ProjectionError::Store(e)
    }
}

/// Where a projection stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// The offset of the last event the handler took (stored, for [`run`]).
    pub offset: Offset,
    /// How many events this run handed to the handler.
    pub events: u64,
}

/// The stored offset of `name` and its revision, as [`run`] keeps it.
struct Saved<'a> {
    store: &'a dyn OffsetStore,
    name: &'a str,
    revision: u64,
    stored: Offset,
}

impl Saved<'_> {
    async fn save(&mut self, offset: Offset) -> Result<(), ProjectionError> {
        if offset == self.stored {
            return Ok(());
        }
        match self.store.save(self.name, offset, self.revision).await {
            Ok(revision) => {
                self.revision = revision;
                self.stored = offset;
                Ok(())
            }
            Err(PersistError::StateConflict { .. }) => Err(ProjectionError::Fenced {
                name: self.name.to_string(),
            }),
            Err(e) => Err(e.into()),
        }
    }
}

/// Runs `projection` at least once on the events of `config.tag`, its
/// offset in `offsets` (see the module docs). Returns when the stream
/// ends (up to now) or on the first error; live, it runs until the future
/// is dropped (a crash: the events since the last stored offset are
/// handed over again at the next start).
pub async fn run<P, S>(
    reader: &EventReader<P::Event, S>,
    offsets: &dyn OffsetStore,
    config: &ProjectionConfig,
    mut projection: P,
) -> Result<Progress, ProjectionError>
where
    P: Projection,
    P::Event: Serialize + DeserializeOwned,
    S: Serialize + DeserializeOwned + 'static,
    Codec<P::Event, S>: Send + Sync,
{
    let (start, revision) = offsets.load(&config.name).await?.unwrap_or_default();
    let mut saved = Saved {
        store: offsets,
        name: &config.name,
        revision,
        stored: start,
    };
    let mut events = reader.by_tag(&config.tag, start, config.follow);
    let (mut taken, mut count, mut unsaved) = (start, 0u64, 0u64);
    let mut since = Instant::now();
    let outcome = loop {
        let next = if unsaved > 0 {
            let due = since + config.save_interval;
            match tokio::time::timeout_at(due, events.next()).await {
                Ok(next) => next,
                Err(_) => {
                    if let Err(e) = saved.save(taken).await {
                        break Err(e);
                    }
                    unsaved = 0;
                    continue;
                }
            }
        } else {
            events.next().await
        };
        let envelope = match next {
            None => break Ok(()),
            Some(Err(e)) => break Err(e.into()),
            Some(Ok(envelope)) => envelope,
        };
        let offset = envelope.offset;
        if let Err(reason) = projection.handle(envelope).await {
            break Err(ProjectionError::Handler { offset, reason });
        }
        (taken, count) = (offset, count + 1);
        if unsaved == 0 {
            since = Instant::now();
        }
        unsaved += 1;
        if unsaved >= config.save_every || since.elapsed() >= config.save_interval {
            if let Err(e) = saved.save(taken).await {
                break Err(e);
            }
            unsaved = 0;
        }
    };
    // Step 5: what was taken is stored, whatever stopped the run (a
    // fenced runner stores nothing more).
    if !matches!(outcome, Err(ProjectionError::Fenced { .. })) {
        saved.save(taken).await?;
    }
    outcome.map(|()| Progress {
        offset: taken,
        events: count,
    })
}

/// Runs `projection` exactly once on the events of `tag`: it starts after
/// the offset the projection's own store returns, and each event's effect
/// and offset are committed together by its handler (see the module
/// docs). Returns when the stream ends (up to now) or on the first error.
pub async fn run_exactly_once<P, S>(
    reader: &EventReader<P::Event, S>,
    tag: &str,
    follow: Follow,
    mut projection: P,
) -> Result<Progress, ProjectionError>
where
    P: TransactionalProjection,
    P::Event: Serialize + DeserializeOwned,
    S: Serialize + DeserializeOwned + 'static,
    Codec<P::Event, S>: Send + Sync,
{
    let start = match projection.offset().await {
        Ok(offset) => offset.unwrap_or_default(),
        Err(reason) => {
            return Err(ProjectionError::Handler {
                offset: Offset::START,
                reason: format!("cannot read the stored offset: {reason}"),
            })
        }
    };
    let mut events = reader.by_tag(tag, start, follow);
    let mut progress = Progress {
        offset: start,
        events: 0,
    };
    while let Some(next) = events.next().await {
        let envelope = next?;
        let offset = envelope.offset;
        projection
            .handle(envelope)
            .await
            .map_err(|reason| ProjectionError::Handler { offset, reason })?;
        progress.offset = offset;
        progress.events += 1;
    }
    Ok(progress)
}
