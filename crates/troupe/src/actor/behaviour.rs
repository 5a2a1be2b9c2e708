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

    /// The runtime's hook for actor kinds built on this trait (the async
    /// actor, `actor::async_actor`): called by the worker at the start of a
    /// turn that resumes a suspended actor; `false` if it is still
    /// suspended. Sealed: its last argument cannot be named outside the
    /// crate, so no other implementation can exist, and for every other
    /// actor this compiles to nothing.
    #[doc(hidden)]
    #[inline(always)]
    fn __resume(&mut self, _ctx: &mut Context<'_, Self>, _: Sealed) -> bool {
        true
    }

    /// The runtime's hook before a graceful stop finalizes the actor: `false`
    /// if the actor suspended to finish first (an async `stopped`). Sealed,
    /// as [`__resume`](Self::__resume).
    #[doc(hidden)]
    #[inline(always)]
    fn __stopping(
        &mut self,
        _ctx: &mut Context<'_, Self>,
        _reason: &super::error::StopReason,
        _: Sealed,
    ) -> bool {
        true
    }
}

/// The token that seals [`Actor`]'s runtime hooks: public in a private
/// module, so it cannot be named outside the crate.
pub struct Sealed(pub(crate) ());
