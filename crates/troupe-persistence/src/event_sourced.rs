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
//! Invariants: the state only ever holds events the journal stored;
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
use crate::journal::{Journal, SnapshotStore};
use serde::de::DeserializeOwned;
use serde::Serialize;
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

    /// A command that could not be handled because the actor could not
    /// reload its state; the default drops it (an ask then fails with
    /// `NoReply`). Override to answer with `error`.
    fn rejected(&mut self, _cmd: Self::Command, _error: PersistError) {}
}

type After<S> = Box<dyn FnOnce(Result<&S, &PersistError>) + Send>;

/// What a command does: events to persist, then callbacks (replies).
pub struct Effect<A: PersistentActor> {
    events: Vec<A::Event>,
    after: Vec<After<A::State>>,
    snapshot: bool,
}

impl<A: PersistentActor> Effect<A> {
    /// Persists nothing (a query, or a command refused by validation).
    pub fn none() -> Self {
        Effect {
            events: Vec::new(),
            after: Vec::new(),
            snapshot: false,
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
        self.after.push(Box::new(f));
        self
    }

    /// Replies `Ok(f(&state))` once the events are stored and applied, or
    /// the error if they were not.
    pub fn reply<R: Send + 'static>(
        self,
        to: ReplyTo<Result<R, PersistError>>,
        f: impl FnOnce(&A::State) -> R + Send + 'static,
    ) -> Self {
        self.then(move |outcome| {
            to.reply(outcome.map(f).map_err(Clone::clone));
        })
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
}

impl Default for PersistenceConfig {
    fn default() -> Self {
        PersistenceConfig {
            snapshot_every: None,
            recovery_timeout: Duration::from_secs(30),
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
        if let Some(snapshot) = self.snapshots.load(&self.id).await? {
            match self.codec.decode_snapshot(&self.id, &snapshot) {
                Ok(s) => {
                    state = s;
                    seq = snapshot.seq;
                }
                Err(e) => {
                    tracing::warn!(id = %self.id, error = %e, "snapshot skipped; replaying the whole journal")
                }
            }
        }
        for record in self.journal.read(&self.id, seq + 1).await? {
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

    async fn save_snapshot(&mut self) {
        let result = match self.codec.encode_snapshot(&self.id, self.seq, &self.state) {
            Ok(snapshot) => self.snapshots.save(&self.id, snapshot).await,
            Err(e) => Err(e),
        };
        match result {
            Ok(()) => self.since_snapshot = 0,
            Err(e) => tracing::warn!(id = %self.id, error = %e, "snapshot not saved"),
        }
    }

    async fn command(&mut self, cmd: A::Command) {
        if let Some(e) = &self.failed {
            let e = e.clone();
            self.actor.rejected(cmd, e);
            return;
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
        } = self.actor.handle_command(&self.state, cmd);
        if !events.is_empty() {
            let stored = self.append(events).await;
            if let Err(e) = stored {
                self.stale = true;
                crate::stats::write_failed(&self.id, &e, after.is_empty());
                for f in after {
                    f(Err(&e));
                }
                return;
            }
        }
        for f in after {
            f(Ok(&self.state));
        }
        let due = self
            .config
            .snapshot_every
            .is_some_and(|n| n > 0 && self.since_snapshot >= n);
        if (snapshot || due) && self.seq > 0 {
            self.save_snapshot().await;
        }
    }

    /// Journals `events`, then applies them.
    async fn append(&mut self, events: Vec<A::Event>) -> Result<(), PersistError> {
        let mut records = Vec::with_capacity(events.len());
        for (i, e) in (1u64..).zip(&events) {
            records.push(self.codec.encode_event(&self.id, self.seq + i, e)?);
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
}
