//! Durable-state actors: the whole state is stored on each change, with a
//! revision check, instead of a journal of events.
//!
//! A [`Durable<A>`] is a Troupe [`AsyncActor`] (spawn it with
//! [`spawn_durable`]). On start it loads the stored state and its revision
//! (the type's default and revision 0 when none is stored). For each
//! command, `handle_command` returns a [`Change`]: a new state or none, and
//! callbacks. A new state is stored with the revision the actor last saw;
//! only when the store confirms does the actor take the new state and run
//! the callbacks with `Ok`. If another writer stored a newer revision, the
//! store refuses ([`PersistError::StateConflict`]), the callbacks get the
//! error (a command told without one is counted in
//! [`PersistenceStats::unanswered_failures`](crate::PersistenceStats) and
//! logged), and the actor reloads before its next command.
//!
//! Invariants: the actor's state is always one the store holds; a stale
//! writer never overwrites a newer state; a stored state whose schema
//! fingerprint differs from the local type's is refused at load (the actor
//! stops with a `Failed` reason naming both), never misread.

use crate::codec::{decode_state, encode_state};
use crate::error::PersistError;
use crate::id::PersistenceId;
use crate::journal::{from_bytes, to_bytes, Snapshot, StateStore};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::sync::Arc;
use troupe::{ActorRef, ActorSystem, Async, AsyncActor, AsyncContext, ReplyTo, StopReason};

/// An actor whose whole state is stored on each change (see the module
/// docs).
pub trait DurableActor: Sized + Send + 'static {
    /// What the actor is told or asked.
    type Command: Send + 'static;
    /// The state stored whole.
    type State: Default + Clone + Serialize + DeserializeOwned + Send + 'static;

    /// Whose state this is; read once, at start.
    fn persistence_id(&self) -> PersistenceId;

    /// Decides what a command does: a new state to store, or none.
    fn handle_command(&mut self, state: &Self::State, cmd: Self::Command) -> Change<Self>;

    /// A command that could not be handled because the actor could not
    /// reload its state; the default drops it.
    fn rejected(&mut self, _cmd: Self::Command, _error: PersistError) {}
}

type After<S> = Box<dyn FnOnce(Result<&S, &PersistError>) + Send>;

/// What a durable command does: a new state, then callbacks (replies).
pub struct Change<A: DurableActor> {
    state: Option<A::State>,
    after: Vec<After<A::State>>,
}

impl<A: DurableActor> Change<A> {
    /// Stores nothing.
    pub fn none() -> Self {
        Change {
            state: None,
            after: Vec::new(),
        }
    }

    /// Stores `state` as the new state.
    pub fn set(state: A::State) -> Self {
        Change {
            state: Some(state),
            after: Vec::new(),
        }
    }

    /// Runs `f` once the state is stored (`Ok(&state)`), or with the error.
    pub fn then(
        mut self,
        f: impl FnOnce(Result<&A::State, &PersistError>) + Send + 'static,
    ) -> Self {
        self.after.push(Box::new(f));
        self
    }

    /// Replies `Ok(f(&state))` once the state is stored, or the error.
    pub fn reply<R: Send + 'static>(
        self,
        to: ReplyTo<Result<R, PersistError>>,
        f: impl FnOnce(&A::State) -> R + Send + 'static,
    ) -> Self {
        self.then(move |outcome| {
            to.reply(outcome.map(f).map_err(Clone::clone));
        })
    }
}

/// A [`DurableActor`] as a Troupe [`AsyncActor`].
pub struct Durable<A: DurableActor> {
    actor: A,
    id: PersistenceId,
    state: A::State,
    revision: u64,
    stale: bool,
    /// Why recovery at start failed: the actor is stopping, and the
    /// commands it still drains are rejected with this at once.
    failed: Option<PersistError>,
    store: Arc<dyn StateStore>,
}

/// A reference to a spawned durable actor: it takes `A::Command`.
pub type DurableRef<A> = ActorRef<Async<Durable<A>>>;

/// Spawns `actor` on `system` with `store` holding its state.
pub fn spawn_durable<A: DurableActor, S: StateStore>(
    system: &ActorSystem,
    actor: A,
    store: Arc<S>,
) -> DurableRef<A> {
    system.spawn(Async::new(Durable::new(actor, store)))
}

impl<A: DurableActor> Durable<A> {
    /// Wraps `actor` with `store` holding its state.
    pub fn new(actor: A, store: Arc<dyn StateStore>) -> Self {
        let id = actor.persistence_id();
        Durable {
            actor,
            id,
            state: A::State::default(),
            revision: 0,
            stale: true,
            failed: None,
            store,
        }
    }

    /// [`load_once`](Self::load_once), retried for up to 30 s while the
    /// store is unavailable.
    async fn load(&mut self) -> Result<(), PersistError> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            match self.load_once().await {
                Err(PersistError::Unavailable { .. }) if std::time::Instant::now() < deadline => {
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                done => return done,
            }
        }
    }

    async fn load_once(&mut self) -> Result<(), PersistError> {
        match self.store.get(&self.id).await? {
            None => {
                self.state = A::State::default();
                self.revision = 0;
            }
            Some(stored) => {
                let snapshot: Snapshot = from_bytes(&self.id, &stored.bytes)?;
                self.state = decode_state(&self.id, &snapshot)?;
                self.revision = stored.revision;
            }
        }
        self.stale = false;
        Ok(())
    }

    async fn command(&mut self, cmd: A::Command) {
        if let Some(e) = &self.failed {
            let e = e.clone();
            self.actor.rejected(cmd, e);
            return;
        }
        if self.stale {
            if let Err(e) = self.load().await {
                let e = PersistError::recovery(&self.id, &e);
                self.actor.rejected(cmd, e);
                return;
            }
        }
        let Change { state, after } = self.actor.handle_command(&self.state, cmd);
        if let Some(new) = state {
            let stored = match encode_state(&self.id, self.revision, &new)
                .and_then(|s| to_bytes(&self.id, &s))
            {
                Ok(bytes) => self.store.put(&self.id, self.revision, bytes).await,
                Err(e) => Err(e),
            };
            match stored {
                Ok(revision) => {
                    self.state = new;
                    self.revision = revision;
                }
                Err(e) => {
                    self.stale = true;
                    crate::stats::write_failed(&self.id, &e, after.is_empty());
                    for f in after {
                        f(Err(&e));
                    }
                    return;
                }
            }
        }
        for f in after {
            f(Ok(&self.state));
        }
    }
}

impl<A: DurableActor> AsyncActor for Durable<A> {
    type Msg = A::Command;

    async fn started(&mut self, ctx: &mut AsyncContext<Self>) {
        if let Err(e) = self.load().await {
            self.failed = Some(PersistError::recovery(&self.id, &e));
            tracing::error!(id = %self.id, error = %e, "loading the durable state failed");
            ctx.stop_with(StopReason::Failed(format!(
                "loading {} failed: {e}",
                self.id
            )));
        }
    }

    async fn handle(&mut self, cmd: A::Command, _ctx: &mut AsyncContext<Self>) {
        self.command(cmd).await;
    }
}
