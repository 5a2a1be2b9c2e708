//! The handle of a future an actor started on the system's async runtime
//! ([`Context::spawn_future`](crate::Context::spawn_future), feature
//! `async`); public as [`bridge::FutureHandle`](crate::bridge::FutureHandle).

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
