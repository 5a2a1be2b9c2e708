//! The [`Actor`] trait: what a user implements.

use super::context::Context;

/// An actor: a plain struct that owns its state and handles messages of one
/// type (`Msg`, usually an enum), one at a time.
///
/// ```
/// use troupe::{Actor, ActorSystem, Context};
///
/// struct Counter { total: u64 }
///
/// impl Actor for Counter {
///     type Msg = u64;
///     fn handle(&mut self, n: u64, ctx: &mut Context<'_, Self>) {
///         self.total += n;
///         if n == 0 { ctx.stop(); }
///     }
/// }
///
/// let system = ActorSystem::new();
/// let counter = system.spawn(Counter { total: 0 });
/// counter.tell(5).unwrap();
/// counter.tell(0).unwrap();
/// assert_eq!(counter.join(), troupe::StopReason::Normal);
/// ```
pub trait Actor: Sized + Send + 'static {
    /// The messages this actor handles.
    type Msg: Send + 'static;

    /// Runs once, on a worker, before the first message.
    fn started(&mut self, _ctx: &mut Context<'_, Self>) {}

    /// Handles one message.
    fn handle(&mut self, msg: Self::Msg, ctx: &mut Context<'_, Self>);

    /// Runs once when the actor stops (not after a panic).
    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {}
}
