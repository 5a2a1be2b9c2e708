//! The actor core: the [`Actor`] trait, the [`Context`] handlers get, the
//! [`ActorRef`] everyone else uses, the cell that holds an actor, its
//! lifecycle (exit records, watchers, stop reasons), and request-reply.
//!
//! This layer sits on the engine (`engine/`) and below the system
//! (`system/`): it reaches the system only through the `runtime::Host`
//! hook. Files: `cell` (memory and the turn), `lifecycle` (stopping,
//! watchers, waiting), `context`, `actor_ref`, `ask`, `ask_cycle` (actors waiting on each other's replies), `stall` (stall detection's settings), `watch`, `watcher` (a stop callback, inline when small), `runtime`
//! (spawning), `runtime_ref` (the sharded count that keeps a runtime alive), `recycle`
//! (stopped cells' memory, reused by the next spawn), `undelivered` (what a
//! stopped actor left in its mailbox, handed to its owner), `error`.

pub(crate) mod actor_ref;
pub(crate) mod ask;
pub(crate) mod ask_cycle;
pub(crate) mod async_actor;
pub(crate) mod behaviour;
pub(crate) mod cell;
pub(crate) mod context;
pub(crate) mod envelope;
pub(crate) mod error;
#[cfg(feature = "async")]
pub(crate) mod future_handle;
pub(crate) mod id;
pub(crate) mod lifecycle;
pub(crate) mod metrics;
pub(crate) mod parallel;
pub(crate) mod recycle;
pub(crate) mod runtime;
pub(crate) mod runtime_ref;
pub(crate) mod stall;
pub(crate) mod undelivered;
pub(crate) mod watchable;
pub(crate) mod watcher;

// The core types are re-exported at the crate root (one path each); this
// module exposes the rest of the actor API.
pub use ask_cycle::{AskCycle, CycleMember, RECENT_CYCLES};
pub use lifecycle::{JoinFuture, StopListener};
pub use watchable::Watchable;

// Short paths for the layers above.
pub(crate) use actor_ref::ActorRef;
pub(crate) use ask::ReplyTo;
pub(crate) use behaviour::Actor;
pub(crate) use context::Context;
pub(crate) use error::{AskError, SendError, StopReason};
pub(crate) use id::ActorId;
pub(crate) use lifecycle::{Down, WatchId};
pub(crate) use runtime::SpawnOptions;
