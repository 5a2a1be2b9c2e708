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

use crate::actor::{Actor, Context};

/// A future started by [`Context::spawn_future`](crate::Context::spawn_future);
/// [`abort`](Self::abort) cancels it (its message is then never sent).
/// Dropping the handle does not cancel.
#[derive(Debug)]
pub struct FutureHandle(pub(crate) tokio::task::JoinHandle<()>);

impl FutureHandle {
    /// Cancels the future.
    pub fn abort(&self) {
        self.0.abort();
    }

    /// Whether the future has completed (and its message was sent).
    pub fn is_finished(&self) -> bool {
        self.0.is_finished()
    }
}

impl<A: Actor> Context<'_, A> {
    /// Runs `fut` on the system's async runtime (see the [module docs](self));
    /// when it completes, this actor receives `to_msg(output)`. The worker is
    /// not blocked meanwhile. If the actor has stopped by then, the message
    /// is dropped and counted (and an ask inside it fails at once).
    pub fn spawn_future<F>(
        &self,
        fut: F,
        to_msg: impl FnOnce(F::Output) -> A::Msg + Send + 'static,
    ) -> FutureHandle
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let me = self.myself();
        let handle = self.system().inner().bridge.lock().handle();
        FutureHandle(handle.spawn(async move {
            let out = fut.await;
            if let Err(e) = me.tell(to_msg(out)) {
                me.drop_undelivered(e.into_inner());
            }
        }))
    }
}
