//! [`SupervisedRef`]: a reference that follows a supervised child across
//! its restarts. Waiting for the next instance blocks on the child's slot
//! (signalled at every start and when the child is removed), never polls.

use super::spec::RefSlot;
use crate::actor::{Actor, ActorRef, AskError, ReplyTo, SendError};
use crate::engine::deadline;
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A reference to a supervised child that keeps working across restarts:
/// it always sends to the current instance.
///
/// While the child is down (between a failure and its restart, or for good
/// once it is not restarted), [`tell`](Self::tell) returns
/// `SendError::Stopped(msg)`: the message comes back to the caller, never
/// silently lost. [`tell_wait`](Self::tell_wait) waits for the next instance
/// instead. See the [module docs](crate::supervision) for messages already queued in a
/// failed instance.
pub struct SupervisedRef<A: Actor> {
    slot: Arc<RefSlot<A>>,
}

impl<A: Actor> Clone for SupervisedRef<A> {
    fn clone(&self) -> Self {
        SupervisedRef {
            slot: self.slot.clone(),
        }
    }
}

impl<A: Actor> fmt::Debug for SupervisedRef<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SupervisedRef(generation {})", self.generation())
    }
}

impl<A: Actor> SupervisedRef<A> {
    pub(super) fn new(slot: Arc<RefSlot<A>>) -> Self {
        SupervisedRef { slot }
    }

    /// Waits on the slot until `done()` or the deadline; `done()`'s last
    /// value.
    fn wait_until(&self, deadline: Option<Instant>, mut done: impl FnMut() -> bool) -> bool {
        let (lock, cv) = &self.slot.changed;
        let mut g = lock.lock();
        deadline::wait_while(cv, &mut g, deadline, |_| !done())
    }

    /// The current instance, if one has been started.
    pub fn current(&self) -> Option<ActorRef<A>> {
        self.slot.current.load_full().map(|a| (*a).clone())
    }

    /// Sends to the current instance; `Stopped(msg)` while it is down.
    #[inline]
    pub fn tell(&self, msg: A::Msg) -> Result<(), SendError<A::Msg>> {
        match &*self.slot.current.load() {
            Some(actor) => actor.tell(msg),
            None => Err(SendError::Stopped(msg)),
        }
    }

    /// Sends to the current instance; if it is down, waits (up to `timeout`;
    /// one too large for the clock waits as long as it takes) for the
    /// supervisor to start the next one and sends there. Fails with the
    /// message at once if the child will not be restarted. Blocks: plain
    /// threads only, not from inside an actor.
    pub fn tell_wait(&self, msg: A::Msg, timeout: Duration) -> Result<(), SendError<A::Msg>> {
        let until = deadline::after(timeout);
        let mut msg = msg;
        loop {
            let seen = self.generation();
            match self.tell(msg) {
                Ok(()) => return Ok(()),
                Err(SendError::Stopped(m)) => msg = m,
                Err(e) => return Err(e),
            }
            // Down: wait for a newer instance (or the end of the child).
            let newer = self.wait_until(until, || self.generation() > seen || self.is_closed());
            if !newer || (self.is_closed() && self.generation() == seen) {
                return Err(SendError::Stopped(msg));
            }
        }
    }

    /// Asks the current instance (see [`ActorRef::ask`]).
    pub fn ask<R: Send + 'static>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> A::Msg,
        timeout: Duration,
    ) -> Result<R, AskError> {
        match self.current() {
            Some(actor) => actor.ask(make, timeout),
            None => Err(AskError::ActorStopped),
        }
    }

    /// Instances started so far (1 after the first start, +1 per restart).
    pub fn generation(&self) -> u64 {
        self.slot.generation.load(Ordering::Acquire)
    }

    /// Waits until more than `generation` instances have been started;
    /// returns the new instance (`None` after `timeout`, or once the child
    /// will not be started again). Plain threads only.
    pub fn wait_generation(&self, generation: u64, timeout: Duration) -> Option<ActorRef<A>> {
        let until = deadline::after(timeout);
        self.wait_until(until, || self.generation() > generation || self.is_closed());
        if self.generation() > generation {
            self.current()
        } else {
            None
        }
    }

    /// Whether the supervisor will start no further instance (the child was
    /// removed, or its supervisor stopped).
    pub fn is_closed(&self) -> bool {
        self.slot.closed.load(Ordering::Acquire)
    }
}
