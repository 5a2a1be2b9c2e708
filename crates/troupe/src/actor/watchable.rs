//! [`Watchable`]: anything whose stop can be watched (an ordinary actor, a
//! parallel one), so that monitors, links, supervisors and registries work
//! on every kind of actor through one API.

use super::error::StopReason;
use super::id::ActorId;
use super::lifecycle::WatchId;

/// An actor of any kind whose stop can be watched, and that can be killed.
/// Implemented by [`ActorRef`](crate::ActorRef) and
/// [`SharedRef`](crate::parallel::SharedRef).
pub trait Watchable {
    /// The actor's id.
    fn id(&self) -> ActorId;

    /// Calls `f` with the reason when the actor stops (at once if it has).
    /// `f` runs on the thread that stops the actor, before its joiners
    /// return; it must not join the actor itself.
    fn on_stop(&self, f: impl FnOnce(ActorId, &StopReason) + Send + 'static) -> WatchId;

    /// Cancels a watcher set with [`on_stop`](Self::on_stop); `false` if it
    /// has already run or was cancelled before.
    fn demonitor(&self, watch: WatchId) -> bool;

    /// Stops the actor without handling what is left in its mailbox
    /// (reason `Killed`).
    fn kill(&self);
}
