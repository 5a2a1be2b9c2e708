//! The async bridge: a handler starts a future on a tokio runtime and gets
//! its output back as a message, so waiting on I/O never blocks a worker.
//!
//! The runtime is the one passed to
//! [`SystemBuilder::tokio_handle`](crate::SystemBuilder::tokio_handle), or
//! else one the system starts on first use (one worker thread, timers on) and
//! shuts down with itself. If the actor has stopped when the future
//! completes, the output is dropped (and counted as a dropped message).
//!
//! ```
//! use troupe::{Actor, ActorSystem, Context};
//! use std::time::Duration;
//!
//! struct Fetcher { got: Option<u64> }
//! enum Msg { Start, Fetched(u64) }
//!
//! impl Actor for Fetcher {
//!     type Msg = Msg;
//!     fn handle(&mut self, msg: Msg, ctx: &mut Context<'_, Self>) {
//!         match msg {
//!             Msg::Start => {
//!                 // Stands in for network I/O: the worker is free meanwhile.
//!                 ctx.spawn_future(async {
//!                     tokio::time::sleep(Duration::from_millis(5)).await;
//!                     42
//!                 }, Msg::Fetched);
//!             }
//!             Msg::Fetched(v) => { self.got = Some(v); ctx.stop(); }
//!         }
//!     }
//! }
//!
//! let system = ActorSystem::new();
//! let f = system.spawn(Fetcher { got: None });
//! f.tell(Msg::Start).unwrap();
//! assert_eq!(f.join(), troupe::StopReason::Normal);
//! ```

pub use crate::actor::future_handle::FutureHandle;
