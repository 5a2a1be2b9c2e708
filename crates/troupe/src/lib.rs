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
//! Where things live: [`actor`] (the trait, context and references),
//! `mailbox` (queues), `scheduler` (workers, stealing, parking), `cell` (an
//! actor's memory and its turn), `system` (spawn, shutdown). The hot path is
//! described in `docs/architecture.md`.

#![warn(missing_docs)]

pub mod actor;
mod ask;
#[cfg(feature = "async")]
pub mod bridge;
mod cell;
pub mod channel;
pub mod dispatcher;
mod error;
pub mod limits;
pub mod mailbox;
pub mod mchain;
pub mod recipient;
pub mod registry;
mod scheduler;
pub mod shared;
mod state;
pub mod states;
pub mod supervision;
mod sync;
mod system;
pub mod timer;

pub use actor::{Actor, ActorId, ActorRef, Context, WatchId};
pub use ask::{AskFuture, ReplyTo};
pub use dispatcher::{io_pool_size, Dispatcher, DispatcherKind};
pub use error::{AskError, SendError, StopReason};
pub use mailbox::{MailboxConfig, OverflowPolicy};
pub use system::{ActorSystem, ShutdownReport, SpawnOptions, SystemBuilder, SystemHandle};

pub use channel::{Channel, Subscription};
pub use limits::{LimitPolicy, LimitStats, Limited, MessageLimit};
pub use mchain::{
    case, select, Close, MChain, MChainOverflow, Receive, ReceiveResult, ReceiveStatus, RecvError,
};
pub use recipient::{Deliver, DeliveryError, Recipient};
pub use states::{Flow, StateMachine, StateTable, StateTimeout, Stateful};
pub use timer::{send_delayed, send_periodic, TimerHandle};

pub use registry::{NamedSendError, RegisterError, Registry};
pub use supervision::{ChildSpec, Restart, Strategy, SupervisedRef, SupervisorRef, SupervisorSpec};

/// Internals exposed for the loom model tests only.
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_exports {
    pub use crate::mailbox::unbounded::{Release, Unbounded};
    pub use crate::state::ActorState;
    pub use crate::state::{CLOSED, SCHEDULED, STOP_DRAIN};
}
