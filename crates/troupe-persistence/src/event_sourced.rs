//! Event-sourced actors: a command handler decides which events happen, a
//! pure [`PersistentActor::apply`] folds each into the state, and the
//! events are journaled before anything else sees them.
//!
//! A [`Persistent<A>`] is a Troupe [`AsyncActor`]: spawn it wrapped in
//! [`Async`] (or with [`spawn_persistent`]). It handles one command at a
//! time, in mailbox order, and awaits each append before taking the next
//! command; the worker thread is free meanwhile. With
//! [`spawn_persistent_with`] and a tokio dispatcher of the store's runtime
//! (`system.tokio_dispatcher("journal", store.runtime())`) its turns run
//! on the connection's thread: an append and its acknowledgement then
//! cross no thread.
//!
//! Protocol of one command:
//! 1. (Only after an earlier failure) reload the state from the stores.
//! 2. `handle_command(&state, cmd)` returns an [`Effect`]: events to
//!    persist, callbacks to run after (a reply), a snapshot request.
//! 3. The events are encoded (stable name + schema fingerprint) and
//!    appended after the actor's last sequence number, as one append.
//! 4. Only when the journal confirms: `apply` each event to the state, then
//!    run the callbacks with `Ok(&state)`: the reply leaves now.
//! 5. If the append fails, the state is unchanged, the callbacks get
//!    `Err(&error)` (a reply carries the error to the caller; a command
//!    told without one is counted in
//!    [`PersistenceStats::unanswered_failures`](crate::PersistenceStats)
//!    and logged, its only trace), and the
//!    actor reloads its state before its next command: after an
//!    `Unavailable` error the events may be stored after all, and after a
//!    `Conflict` another writer has appended.
//! 6. Every [`PersistenceConfig::snapshot_every`] events, or when the
//!    effect asks, the state is saved as a snapshot (after the reply; a
//!    failed snapshot is logged and costs only replay time later).
//!
//! With [`PersistenceConfig::pipeline`] above 1 (the default), steps 3
//! to 5 overlap across commands (the `pipeline` module): the events are
//! applied at once, so the next command is decided on a state that holds
//! them, while one writer task per actor stores them in order, several
//! commands' events in one append; each reply's value is read right after
//! its command's events and sent once they are stored. A failed append
//! fails its commands and every later one in flight, and the actor
//! reloads. A command with an [`Effect::then`] callback or a snapshot
//! waits until nothing else is in flight.
//!
//! Lifetime: after each snapshot all but the newest
//! [`PersistenceConfig::keep_snapshots`] are dropped, and with
//! [`PersistenceConfig::delete_events`] the events the oldest kept one
//! includes are deleted (whole appends, never the last one).
//!
//! Invariants: nothing leaves the actor (a reply, a callback, a snapshot)
//! that holds events the journal has not stored; the state the handler
//! decides on holds only stored events and those of commands in flight;
//! nothing is acknowledged that is not stored; sequence numbers have no
//! gaps. Recovery (in `started`, before the first command) loads the latest
//! snapshot whose shape matches the state type or that the actor's
//! [`codec`](PersistentActor::codec) upcasts (one that neither does is
//! skipped with a warning, and the whole journal is replayed: events are
//! the truth) and applies the events after it, each read by the codec. A recovery that fails stops
//! the actor with [`StopReason::Failed`] naming
//! the cause (an event whose schema differs from the local type's, for
//! one); commands waiting for it then fail with `ActorStopped`. A store
//! that is unavailable is retried first, for up to
//! [`PersistenceConfig::recovery_timeout`].

use crate::codec::Codec;
use crate::error::PersistError;
use crate::id::PersistenceId;
use crate::journal::{EventRecord, Journal, SnapshotStore};
use crate::pipeline::{Deferred, Pending, Pipeline};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe::{
    ActorRef, ActorSystem, Async, AsyncActor, AsyncContext, ReplyTo, SpawnOptions, StopReason,
};
use troupe_remote::RemoteMessage;

/// An event-sourced actor (see the module docs).
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use std::time::Duration;
/// use troupe::{ActorSystem, ReplyTo};
/// use troupe_persistence::{spawn_persistent, Effect, MemoryStore, PersistError,
///     PersistenceId, PersistentActor};
///
/// #[troupe_remote::remote("doc.counter.Added")]
/// #[derive(Serialize, Deserialize)]
/// struct Added(u64);
///
/// struct Counter { id: PersistenceId }
/// enum Cmd { Add(u64, ReplyTo<Result<u64, PersistError>>) }
///
/// impl PersistentActor for Counter {
///     type Command = Cmd;
///     type Event = Added;
///     type State = u64;
///     fn persistence_id(&self) -> PersistenceId { self.id.clone() }
///     fn handle_command(&mut self, _total: &u64, cmd: Cmd) -> Effect<Self> {
///         match cmd {
///             Cmd::Add(n, reply) => Effect::<Self>::persist(Added(n)).reply(reply, |total| *total),
///         }
///     }
///     fn apply(total: &mut u64, event: &Added) { *total += event.0; }
/// }
///
/// let store = MemoryStore::new();
/// let system = ActorSystem::new();
/// let id = PersistenceId::new("counter", "1").unwrap();
/// let counter = spawn_persistent(&system, Counter { id: id.clone() }, store.clone());
/// assert_eq!(counter.ask(|r| Cmd::Add(2, r), Duration::from_secs(5)), Ok(Ok(2)));
/// system.shutdown();
///
/// // A new system recovers the total from the journal.
/// let system = ActorSystem::new();
/// let counter = spawn_persistent(&system, Counter { id }, store);
/// assert_eq!(counter.ask(|r| Cmd::Add(3, r), Duration::from_secs(5)), Ok(Ok(5)));
/// ```
pub trait PersistentActor: Sized + Send + 'static {
    /// What the actor is told or asked.
    type Command: Send + 'static;
    /// What happened: journaled, replayed on recovery. Give it a stable
    /// name with `#[troupe_remote::remote("...")]`.
    type Event: RemoteMessage;
    /// What the events add up to; a snapshot stores it.
    type State: Default + Serialize + DeserializeOwned + Send + 'static;

    /// Whose journal this is; read once, at start.
    fn persistence_id(&self) -> PersistenceId;

    /// Decides what a command does: which events to persist, what to reply
    /// once they are stored. It must not change the state itself.
    fn handle_command(&mut self, state: &Self::State, cmd: Self::Command) -> Effect<Self>;

    /// Folds one event into the state: pure and deterministic (recovery
    /// runs it again on every stored event).
    fn apply(state: &mut Self::State, event: &Self::Event);

    /// How events and snapshots are stored, and which older shapes of them
    /// recovery reads (upcasters, former stable names; see
    /// [`codec`](crate::codec)). Called once per actor. The default writes
    /// postcard and reads only the current shapes.
    fn codec() -> Codec<Self::Event, Self::State> {
        Codec::postcard()
    }

    /// The tags of `event`, stored with it for the read side to select by
    /// (added to those of [`Effect::tagged`]); the default gives none.
    /// Tags are ASCII letters, digits, `-`, `_`, `=`, at most
    /// [`MAX_TAG_LEN`](crate::journal::MAX_TAG_LEN) bytes each.
    fn tags(_event: &Self::Event) -> &'static [&'static str] {
        &[]
    }

    /// A command that could not be handled because the actor could not
    /// reload its state; the default drops it (an ask then fails with
    /// `NoReply`). Override to answer with `error`.
    fn rejected(&mut self, _cmd: Self::Command, _error: PersistError) {}
}

/// An [`Effect::then`] callback.
type ThenFn<S> = Box<dyn FnOnce(Result<&S, &PersistError>) + Send>;

/// A callback of an [`Effect`].
enum After<S> {
    /// [`Effect::then`]: runs with the state once the events are stored
    /// (with a pipeline, once nothing else is in flight).
    Then(ThenFn<S>),
    /// [`Effect::reply`]: its value read off the state as the command
    /// leaves it, sent once the events are stored.
    Reply(Box<dyn Deferred<S>>),
}

impl<S> After<S> {
    /// Runs the callback now, with the state after its command (`Ok`) or
    /// the error.
    fn run(self, outcome: Result<&S, &PersistError>) {
        match self {
            After::Then(f) => f(outcome),
            After::Reply(mut r) => match outcome {
                Ok(state) => {
                    r.read(state);
                    r.finish(Ok(()));
                }
                Err(e) => r.finish(Err(e)),
            },
        }
    }
}

/// The reply of [`Effect::reply`]: `f`, then the value it read.
struct ReplyWith<R: Send + 'static, F> {
    to: ReplyTo<Result<R, PersistError>>,
    f: Option<F>,
    value: Option<R>,
}

impl<S, R, F> Deferred<S> for ReplyWith<R, F>
where
    R: Send + 'static,
    F: FnOnce(&S) -> R + Send + 'static,
{
    fn read(&mut self, state: &S) {
        if let Some(f) = self.f.take() {
            self.value = Some(f(state));
        }
    }

    fn finish(self: Box<Self>, outcome: Result<(), &PersistError>) {
        let ReplyWith { to, value, .. } = *self;
        match (outcome, value) {
            (Ok(()), Some(v)) => {
                to.reply(Ok(v));
            }
            (Err(e), _) => {
                to.reply(Err(e.clone()));
            }
            // Never: a reply is read before it is finished with `Ok`.
            (Ok(()), None) => {}
        }
    }
}

/// What a command does: events to persist, then callbacks (replies).
pub struct Effect<A: PersistentActor> {
    events: Vec<A::Event>,
    after: Vec<After<A::State>>,
    snapshot: bool,
    /// Tags of every event of this effect.
    tags: Vec<Cow<'static, str>>,
}

impl<A: PersistentActor> Effect<A> {
    /// Persists nothing (a query, or a command refused by validation).
    pub fn none() -> Self {
        Effect {
            events: Vec::new(),
            after: Vec::new(),
            snapshot: false,
            tags: Vec::new(),
        }
    }

    /// Persists one event.
    pub fn persist(event: A::Event) -> Self {
        Self::persist_all(vec![event])
    }

    /// Persists these events, all or none, in order.
    pub fn persist_all(events: Vec<A::Event>) -> Self {
        Effect {
            events,
            ..Self::none()
        }
    }

    /// Runs `f` once the events are stored and applied (`Ok(&state)`), or
    /// with the error if they were not.
    pub fn then(
        mut self,
        f: impl FnOnce(Result<&A::State, &PersistError>) + Send + 'static,
    ) -> Self {
        self.after.push(After::Then(Box::new(f)));
        self
    }

    /// Replies `Ok(f(&state))` once the events are stored and applied, or
    /// the error if they were not. `f` reads the state right after this
    /// command's events (with a pipeline, before later commands' events
    /// are applied); the reply leaves once they are stored.
    pub fn reply<R: Send + 'static>(
        mut self,
        to: ReplyTo<Result<R, PersistError>>,
        f: impl FnOnce(&A::State) -> R + Send + 'static,
    ) -> Self {
        self.after.push(After::Reply(Box::new(ReplyWith {
            to,
            f: Some(f),
            value: None,
        })));
        self
    }

    /// Tags every event of this effect with `tag` (beside the tags of
    /// [`PersistentActor::tags`]), for the read side to select them by
    /// ([`query`](crate::query)). A tag is ASCII letters, digits, `-`,
    /// `_`, `=`, at most [`MAX_TAG_LEN`](crate::journal::MAX_TAG_LEN)
    /// bytes; an invalid one fails the command with
    /// [`PersistError::Encode`], storing nothing.
    pub fn tagged(mut self, tag: impl Into<Cow<'static, str>>) -> Self {
        self.tags.push(tag.into());
        self
    }

    /// Saves a snapshot once the events are stored.
    pub fn snapshot(mut self) -> Self {
        self.snapshot = true;
        self
    }
}

/// How a [`Persistent`] actor snapshots and recovers.
#[derive(Clone, Debug)]
pub struct PersistenceConfig {
    /// Save a snapshot after this many events since the last one (`None`,
    /// the default: only on [`Effect::snapshot`]).
    pub snapshot_every: Option<u64>,
    /// How long recovery retries a store that answers
    /// [`PersistError::Unavailable`] (a server restarting, a cluster
    /// electing a new leader) before it gives up; default 30 s.
    pub recovery_timeout: Duration,
    /// How many snapshots to keep, the newest (default 1; at least 1). A
    /// recovery whose latest snapshot does not decode tries the older
    /// ones. JetStream keeps at most
    /// [`SNAPSHOT_HISTORY`](crate::journal::jetstream::SNAPSHOT_HISTORY).
    pub keep_snapshots: usize,
    /// After each snapshot, delete the events that the oldest kept
    /// snapshot includes (default `false`: events are kept for ever).
    /// Recovery then needs a kept snapshot: the events before it are gone.
    pub delete_events: bool,
    /// How many commands may be in flight at once: decided, their events
    /// on the way to the journal, their replies not sent yet (the
    /// `pipeline` module; default [`DEFAULT_PIPELINE`]). 1: each command
    /// is stored before the next is decided.
    pub pipeline: usize,
}

/// The default [`PersistenceConfig::pipeline`], chosen by measurement
/// (bench/results/2026-12-02-journal).
pub const DEFAULT_PIPELINE: usize = 32;

impl Default for PersistenceConfig {
    fn default() -> Self {
        PersistenceConfig {
            snapshot_every: None,
            recovery_timeout: Duration::from_secs(30),
            keep_snapshots: 1,
            delete_events: false,
            pipeline: DEFAULT_PIPELINE,
        }
    }
}

/// A [`PersistentActor`] as a Troupe [`AsyncActor`] (see the module docs).
pub struct Persistent<A: PersistentActor> {
    actor: A,
    id: PersistenceId,
    state: A::State,
    seq: u64,
    since_snapshot: u64,
    stale: bool,
    /// Why recovery at start failed: the actor is stopping, and the
    /// commands it still drains are rejected with this at once.
    failed: Option<PersistError>,
    /// `A::codec()`, built once.
    codec: Codec<A::Event, A::State>,
    journal: Arc<dyn Journal>,
    snapshots: Arc<dyn SnapshotStore>,
    config: PersistenceConfig,
    /// The writer of pipelined appends, started at the first command when
    /// `config.pipeline > 1` (and a tokio runtime is there).
    pipeline: Option<Pipeline<A::State>>,
}

/// A reference to a spawned persistent actor: it takes `A::Command`.
pub type PersistentRef<A> = ActorRef<Async<Persistent<A>>>;

/// Spawns `actor` on `system` with `store` as its journal and snapshot
/// store, and the default [`PersistenceConfig`].
pub fn spawn_persistent<A, S>(system: &ActorSystem, actor: A, store: Arc<S>) -> PersistentRef<A>
where
    A: PersistentActor,
    S: Journal + SnapshotStore,
{
    spawn_persistent_with(system, actor, store, SpawnOptions::new())
}

/// [`spawn_persistent`] with spawn options: a name, a mailbox, a
/// dispatcher. On a JetStream store, put the actor on a tokio dispatcher
/// of the store's runtime, and its turns run beside the connection, with
/// no thread hop per append and per acknowledgement (the fastest place
/// for it; its handler must not block):
///
/// ```no_run
/// # use std::sync::Arc;
/// # use troupe::{ActorSystem, SpawnOptions};
/// # use troupe_persistence::*;
/// # fn demo<A: PersistentActor>(system: &ActorSystem, actor: A, store: Arc<JetStreamStore>) {
/// let journal = system.tokio_dispatcher("journal", store.runtime());
/// let entity = spawn_persistent_with(system, actor, store, SpawnOptions::new().dispatcher(&journal));
/// # }
/// ```
pub fn spawn_persistent_with<A, S>(
    system: &ActorSystem,
    actor: A,
    store: Arc<S>,
    options: SpawnOptions,
) -> PersistentRef<A>
where
    A: PersistentActor,
    S: Journal + SnapshotStore,
{
    system.spawn_with(Async::new(Persistent::new(actor, store)), options)
}

impl<A: PersistentActor> Persistent<A> {
    /// Wraps `actor` with `store` as its journal and snapshot store.
    pub fn new<S: Journal + SnapshotStore>(actor: A, store: Arc<S>) -> Self {
        let snapshots: Arc<dyn SnapshotStore> = store.clone();
        Self::with_stores(actor, store, snapshots)
    }

    /// Wraps `actor` with a journal and a snapshot store apart.
    pub fn with_stores(
        actor: A,
        journal: Arc<dyn Journal>,
        snapshots: Arc<dyn SnapshotStore>,
    ) -> Self {
        let id = actor.persistence_id();
        Persistent {
            actor,
            id,
            state: A::State::default(),
            seq: 0,
            since_snapshot: 0,
            stale: true,
            failed: None,
            codec: A::codec(),
            journal,
            snapshots,
            config: PersistenceConfig::default(),
            pipeline: None,
        }
    }

    /// Sets how it snapshots.
    pub fn config(mut self, config: PersistenceConfig) -> Self {
        self.config = config;
        self
    }

    /// [`recover_once`](Self::recover_once), retried while the store is
    /// unavailable, up to the configured recovery timeout.
    async fn recover(&mut self) -> Result<(), PersistError> {
        let deadline = Instant::now() + self.config.recovery_timeout;
        loop {
            match self.recover_once().await {
                Err(PersistError::Unavailable { .. }) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                done => return done,
            }
        }
    }

    /// Loads the latest usable snapshot and applies the events after it.
    async fn recover_once(&mut self) -> Result<(), PersistError> {
        let mut state = A::State::default();
        let mut seq = 0;
        if let Some((s, at)) = self.usable_snapshot().await? {
            state = s;
            seq = at;
        }
        let records = self.journal.read(&self.id, seq + 1).await?;
        if let Some(first) = records.first().filter(|r| r.seq != seq + 1) {
            return Err(PersistError::Corrupt {
                id: self.id.to_string(),
                reason: format!(
                    "the journal starts at event #{} (the events before it are deleted) and no kept snapshot after #{} could be read",
                    first.seq,
                    first.seq - 1
                ),
            });
        }
        for record in records {
            let event = self.codec.decode_event(&self.id, &record)?;
            A::apply(&mut state, &event);
            seq = record.seq;
        }
        self.state = state;
        self.seq = seq;
        self.since_snapshot = 0;
        self.stale = false;
        Ok(())
    }

    /// The latest snapshot that decodes, and its event number: the latest
    /// one, else the older kept ones, newest first (each one skipped with
    /// a warning).
    async fn usable_snapshot(&mut self) -> Result<Option<(A::State, u64)>, PersistError> {
        let Some(latest) = self.snapshots.load(&self.id).await? else {
            return Ok(None);
        };
        fn skipped(id: &PersistenceId, e: &PersistError, seq: u64) {
            tracing::warn!(%id, snapshot = seq, error = %e, "snapshot skipped");
        }
        match self.codec.decode_snapshot(&self.id, &latest) {
            Ok(s) => return Ok(Some((s, latest.seq))),
            Err(e) => skipped(&self.id, &e, latest.seq),
        }
        for older in self.snapshots.history(&self.id).await? {
            if older.seq >= latest.seq {
                continue;
            }
            match self.codec.decode_snapshot(&self.id, &older) {
                Ok(s) => return Ok(Some((s, older.seq))),
                Err(e) => skipped(&self.id, &e, older.seq),
            }
        }
        tracing::warn!(id = %self.id, "no snapshot could be read; replaying the whole journal");
        Ok(None)
    }

    async fn save_snapshot(&mut self) {
        let result = match self.codec.encode_snapshot(&self.id, self.seq, &self.state) {
            Ok(snapshot) => self.snapshots.save(&self.id, snapshot).await,
            Err(e) => Err(e),
        };
        match result {
            Ok(()) => {
                self.since_snapshot = 0;
                self.trim().await;
            }
            Err(e) => tracing::warn!(id = %self.id, error = %e, "snapshot not saved"),
        }
    }

    /// After a snapshot: drops the snapshots past the newest
    /// `keep_snapshots`, then (with `delete_events`) the events the oldest
    /// kept one includes. A failure is logged: it costs only space.
    async fn trim(&mut self) {
        let keep = self.config.keep_snapshots.max(1);
        if let Err(e) = self.snapshots.retain(&self.id, keep).await {
            tracing::warn!(id = %self.id, error = %e, "old snapshots not dropped");
            return;
        }
        if !self.config.delete_events {
            return;
        }
        let oldest = if keep == 1 {
            Some(self.seq)
        } else {
            match self.snapshots.history(&self.id).await {
                Ok(kept) => kept.last().map(|s| s.seq),
                Err(e) => {
                    tracing::warn!(id = %self.id, error = %e, "events not deleted");
                    return;
                }
            }
        };
        if let Some(through) = oldest {
            if let Err(e) = self.journal.delete_through(&self.id, through).await {
                tracing::warn!(id = %self.id, error = %e, "events not deleted");
            }
        }
    }

    async fn command(&mut self, cmd: A::Command) {
        if let Some(e) = &self.failed {
            let e = e.clone();
            self.actor.rejected(cmd, e);
            return;
        }
        if self.config.pipeline > 1 && self.pipeline.is_none() {
            self.pipeline =
                Pipeline::start(self.journal.clone(), self.id.clone(), self.config.pipeline);
        }
        if self.pipeline.is_some() {
            return self.pipelined(cmd).await;
        }
        if self.stale {
            if let Err(e) = self.recover().await {
                let e = PersistError::recovery(&self.id, &e);
                self.actor.rejected(cmd, e);
                return;
            }
        }
        let Effect {
            events,
            after,
            snapshot,
            tags,
        } = self.actor.handle_command(&self.state, cmd);
        if !events.is_empty() {
            let stored = self.append(events, &tags).await;
            if let Err(e) = stored {
                self.stale = true;
                crate::stats::write_failed(&self.id, &e, after.is_empty());
                for f in after {
                    f.run(Err(&e));
                }
                return;
            }
        }
        for f in after {
            f.run(Ok(&self.state));
        }
        if snapshot || self.snapshot_due() {
            self.save_snapshot().await;
        }
    }

    fn snapshot_due(&self) -> bool {
        let due = self
            .config
            .snapshot_every
            .is_some_and(|n| n > 0 && self.since_snapshot >= n);
        due && self.seq > 0
    }

    /// One command with the pipeline (the `pipeline` module's protocol).
    async fn pipelined(&mut self, cmd: A::Command) {
        let pipe = self.pipeline.as_mut().expect("started");
        if pipe.failure().is_some() {
            // Step 4: every queued command is failed; then reload.
            pipe.wait_until(0).await;
            pipe.clear_failure();
            self.stale = true;
        }
        if self.stale {
            if let Err(e) = self.recover().await {
                let e = PersistError::recovery(&self.id, &e);
                self.actor.rejected(cmd, e);
                return;
            }
        }
        let Effect {
            events,
            after,
            snapshot,
            tags,
        } = self.actor.handle_command(&self.state, cmd);
        let pipe = self.pipeline.as_mut().expect("started");
        if events.is_empty() && pipe.in_flight() == 0 {
            // Nothing in flight: the state is all stored.
            for f in after {
                f.run(Ok(&self.state));
            }
            if snapshot {
                self.save_snapshot().await;
            }
            return;
        }
        let mut records = Vec::with_capacity(events.len());
        for (i, e) in (1u64..).zip(&events) {
            match self.codec.encode_event(&self.id, self.seq + i, e) {
                Ok(r) => records.push(tag::<A>(r, e, &tags)),
                Err(e) => {
                    // Nothing of it is queued: the state is unchanged.
                    crate::stats::write_failed(&self.id, &e, after.is_empty());
                    for f in after {
                        f.run(Err(&e));
                    }
                    return;
                }
            }
        }
        let expected = self.seq;
        for e in &events {
            A::apply(&mut self.state, e);
        }
        self.seq += records.len() as u64;
        self.since_snapshot += records.len() as u64;
        // Step 5: a `then` callback or a snapshot waits for the store.
        let barrier =
            snapshot || self.snapshot_due() || after.iter().any(|f| matches!(f, After::Then(_)));
        let unanswered = after.is_empty();
        let mut replies = Vec::new();
        let mut held = Vec::new();
        for f in after {
            match f {
                After::Reply(mut r) if !barrier => {
                    r.read(&self.state);
                    replies.push(r);
                }
                f => held.push(f),
            }
        }
        let pending = Pending {
            expected,
            records,
            replies,
            writes: !events.is_empty(),
            unanswered,
        };
        let pipe = self.pipeline.as_mut().expect("started");
        if let Err(pending) = pipe.send(pending) {
            let e = PersistError::Unavailable {
                id: self.id.to_string(),
                reason: "the journal's writer task is gone (its runtime stopped)".into(),
            };
            for r in pending.replies {
                r.finish(Err(&e));
            }
            for f in held {
                f.run(Err(&e));
            }
            self.stale = true;
            return;
        }
        if !barrier {
            let depth = self.config.pipeline as u64;
            pipe.wait_until(depth - 1).await;
            return;
        }
        pipe.wait_until(0).await;
        match pipe.failure() {
            Some(e) => {
                for f in held {
                    f.run(Err(&e));
                }
            }
            None => {
                for f in held {
                    f.run(Ok(&self.state));
                }
                if snapshot || self.snapshot_due() {
                    self.save_snapshot().await;
                }
            }
        }
    }

    /// Journals `events`, then applies them.
    async fn append(
        &mut self,
        events: Vec<A::Event>,
        tags: &[Cow<'static, str>],
    ) -> Result<(), PersistError> {
        let mut records = Vec::with_capacity(events.len());
        for (i, e) in (1u64..).zip(&events) {
            let record = self.codec.encode_event(&self.id, self.seq + i, e)?;
            records.push(tag::<A>(record, e, tags));
        }
        let last = self.journal.append(&self.id, self.seq, records).await?;
        for e in &events {
            A::apply(&mut self.state, e);
        }
        self.since_snapshot += last - self.seq;
        self.seq = last;
        Ok(())
    }
}

/// `record` with the effect's tags and the event's own
/// ([`PersistentActor::tags`]); no allocation for an untagged event.
fn tag<A: PersistentActor>(
    mut record: EventRecord,
    event: &A::Event,
    tags: &[Cow<'static, str>],
) -> EventRecord {
    let own = A::tags(event);
    if !tags.is_empty() || !own.is_empty() {
        record.tags.reserve_exact(tags.len() + own.len());
        record.tags.extend_from_slice(tags);
        record.tags.extend(own.iter().map(|t| Cow::Borrowed(*t)));
    }
    record
}

impl<A: PersistentActor> AsyncActor for Persistent<A> {
    type Msg = A::Command;

    async fn started(&mut self, ctx: &mut AsyncContext<Self>) {
        if let Err(e) = self.recover().await {
            self.failed = Some(PersistError::recovery(&self.id, &e));
            tracing::error!(id = %self.id, error = %e, "recovery failed");
            ctx.stop_with(StopReason::Failed(format!(
                "recovery of {} failed: {e}",
                self.id
            )));
        }
    }

    async fn handle(&mut self, cmd: A::Command, _ctx: &mut AsyncContext<Self>) {
        self.command(cmd).await;
    }

    /// A graceful stop waits for the commands in flight: the actor is
    /// gone only once their events are stored (or failed).
    async fn stopped(&mut self, _ctx: &mut AsyncContext<Self>) {
        if let Some(pipe) = self.pipeline.as_mut() {
            pipe.wait_until(0).await;
        }
    }
}
