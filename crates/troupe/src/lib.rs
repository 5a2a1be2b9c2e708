//! # Troupe
//!
//! An in-process actor runtime: typed actors with owned state, `tell` and
//! `ask`, lock-free mailboxes, and a work-stealing scheduler tuned so that a
//! message costs tens of nanoseconds and an actor a couple of hundred bytes.
//!
//! ```
//! use troupe::{Actor, ActorSystem, Context, ReplyTo};
//! use std::time::Duration;
//!
//! struct Greeter { greeted: u32 }
//!
//! enum Msg {
//!     Greet(String),
//!     Count(ReplyTo<u32>),
//! }
//!
//! impl Actor for Greeter {
//!     type Msg = Msg;
//!     fn handle(&mut self, msg: Msg, _ctx: &mut Context<'_, Self>) {
//!         match msg {
//!             Msg::Greet(name) => { println!("hello, {name}"); self.greeted += 1; }
//!             Msg::Count(reply) => { reply.reply(self.greeted); }
//!         }
//!     }
//! }
//!
//! let system = ActorSystem::builder().threads(2).build();
//! let greeter = system.spawn(Greeter { greeted: 0 });
//! greeter.tell(Msg::Greet("world".into())).unwrap();
//! let n = greeter.ask(Msg::Count, Duration::from_secs(1)).unwrap();
//! assert_eq!(n, 1);
//! system.shutdown();
//! ```
//!
//! ## Where things live
//!
//! The crate is built in layers; each imports only from the layers below it
//! (`docs/architecture.md`, "Layers", states the rule and CI checks it):
//!
//! | layer | folder | what |
//! |---|---|---|
//! | engine | `engine/` | mailboxes, the state word, the work-stealing scheduler, parking, dispatchers, the timer thread |
//! | actor core | `actor/` | [`Actor`], [`Context`], [`ActorRef`], the cell, the lifecycle (exit records, watchers, stop reasons), ask |
//! | system | `system/` | [`ActorSystem`], spawn, the actor table, shutdown |
//! | features | `messaging/`, `states.rs`, `parallel.rs`, `supervision/`, `registry/`, `bridge.rs`, `testkit/` | [`Recipient`], [`channel`], [`mchain`], [`limits`], [`timer`]; [`states`]; [`parallel`] actors; [`supervision`]; [`registry`]; the async [`bridge`]; the [`testkit`] |
//! | observability | `observability/` | per-actor, per-worker and per-channel [`observability`] metrics: snapshots, Prometheus text, the HTTP endpoint, the arrival-rate and service-time estimators |
//!
//! The core types are at the crate root; everything else is under its
//! module, and every public item has exactly one path.
//!
//! ## Cargo features
//!
//! On by default: `async` (the tokio bridge, [`bridge`]), `registry`
//! ([`registry`]), `supervision` ([`supervision`]). Turn off what you do not
//! use with `default-features = false`. Off by default: `metrics-http`
//! (`SystemHandle::serve_metrics`, the Prometheus endpoint over HTTP),
//! `trace-context`, and `contention` (the `troupe::contention` counters of
//! a measurement build).

#![warn(missing_docs)]

mod engine;

pub mod actor;
mod system;

mod messaging;
pub mod observability;
pub mod parallel;
pub mod states;
pub mod testkit;

#[cfg(feature = "async")]
pub mod bridge;
#[cfg(feature = "registry")]
pub mod registry;
#[cfg(feature = "supervision")]
pub mod supervision;

pub use actor::actor_ref::{ActorRef, WeakActorRef};
pub use actor::ask::{AskFuture, LocalAsk, ReplyTo};
pub use actor::async_actor::{Async, AsyncActor, AsyncContext};
pub use actor::behaviour::Actor;
pub use actor::context::Context;
pub use actor::error::{AskError, SendError, StopReason};
pub use actor::id::ActorId;
pub use actor::lifecycle::{Down, WatchId};
pub use actor::runtime::SpawnOptions;
pub use actor::undelivered::Undelivered;
pub use engine::dispatcher;
pub use engine::mailbox::{MailboxConfig, Overflow};
pub use engine::scheduler::defer::{batch_wakes, hold_in_batch, let_go_in_batch, BatchHold};
pub use messaging::recipient::{Deliver, Recipient};
pub use messaging::{channel, limits, mchain, timer};
pub use system::{ActorSystem, ShutdownReport, SystemBuilder, SystemHandle};

/// Contention counters (the `contention` feature): what a workload does to
/// shared cache lines, per message. See `docs/architecture.md`,
/// "Contention budget".
#[cfg(all(feature = "contention", not(loom)))]
pub use engine::sync::contention;

/// Internals exposed for the loom model tests only.
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_exports {
    pub use crate::engine::mailbox::unbounded::{Mutation, Release, Unbounded};
    pub use crate::engine::reply_slot::ReplySlot;
    pub use crate::engine::scheduler::park::{Idle, ParkMutation, Unpark};
    pub use crate::engine::state_word::ActorState;
    pub use crate::engine::state_word::{CLOSED, SCHEDULED, STOPPED, STOP_DRAIN, STOP_NOW};
}
