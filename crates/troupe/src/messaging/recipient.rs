//! [`Recipient<M>`]: "something I can send an `M` to", whatever it is.
//!
//! Channels, message chains, timers and message limits all deliver to a
//! `Recipient`, so any of them can target an actor, a channel, an mchain, or a
//! limit in front of any of those, and a test can point an actor's output at
//! an mchain and read it from plain code.
//!
//! A `Recipient` is an `Arc<dyn Deliver<M>>`: cloning it is one reference
//! count, sending through it one virtual call plus the target's own send. No
//! allocation happens per message.
//!
//! Invariants:
//! - A failed delivery hands the message back in a
//!   [`SendError`](crate::SendError) (`Closed`, `Stopped`, `Full`).
//! - Through a conversion (`M -> A::Msg`, [`Recipient::map`],
//!   [`ActorRef::recipient_for`]) the target's liveness is checked before
//!   converting, so a stopped target hands back the original `M`. If the
//!   target refuses the *converted* message (it stopped in the instant after
//!   the check, or a bounded mailbox filled), there is no way back to `M`:
//!   the converted message is dropped like any message that races an
//!   actor's stop (counted in the actor system's dropped messages when the
//!   target is an actor, logged otherwise), any ask inside it fails at
//!   once, and the send reports success: it was accepted, then dropped,
//!   never silently lost.
//! - [`Recipient::is_closed`] turning `true` is final: channels prune such
//!   subscribers and periodic timers stop.

use crate::actor::ask::drop_undelivered;
use crate::actor::{Actor, ActorRef, SendError};
use std::fmt;
use std::sync::Arc;

/// The one operation every send target implements. Implement it to make your
/// own targets (a log, a metrics sink) usable by channels and timers.
pub trait Deliver<M>: Send + Sync + 'static {
    /// Delivers one message, or hands it back.
    fn deliver(&self, msg: M) -> Result<(), SendError<M>>;

    /// Whether every later delivery will fail (the target stopped or closed).
    fn is_closed(&self) -> bool {
        false
    }
}

/// A cloneable, type-erased target for messages of type `M`: an actor (with
/// or without a conversion to its message type), a [`Channel`](crate::channel::Channel),
/// an [`MChain`](crate::mchain::MChain), a [`MessageLimit`](crate::limits::MessageLimit) in
/// front of any of these, or a closure.
///
/// ```
/// use troupe::{Actor, ActorSystem, Context, Recipient};
/// use troupe::mchain::MChain;
///
/// struct Doubler { out: Recipient<u64> }
/// impl Actor for Doubler {
///     type Msg = u64;
///     fn handle(&mut self, n: u64, _ctx: &mut Context<'_, Self>) {
///         let _ = self.out.send(2 * n);
///     }
/// }
///
/// let system = ActorSystem::builder().threads(1).build();
/// let out = MChain::unbounded();             // observe the actor from a test
/// let doubler = system.spawn(Doubler { out: out.recipient() });
/// doubler.tell(21).unwrap();
/// assert_eq!(out.recv_timeout(std::time::Duration::from_secs(5)), Ok(42));
/// ```
pub struct Recipient<M> {
    target: Arc<dyn Deliver<M>>,
}

impl<M> Clone for Recipient<M> {
    fn clone(&self) -> Self {
        Recipient {
            target: self.target.clone(),
        }
    }
}

impl<M> fmt::Debug for Recipient<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Recipient(..)")
    }
}

impl<M: 'static> Recipient<M> {
    /// Wraps any [`Deliver`] implementation.
    pub fn new(target: impl Deliver<M>) -> Self {
        Recipient {
            target: Arc::new(target),
        }
    }

    /// A recipient that calls `f` with each message (on the sender's thread).
    pub fn from_fn(f: impl Fn(M) + Send + Sync + 'static) -> Self {
        struct FnTarget<F>(F);
        impl<M, F: Fn(M) + Send + Sync + 'static> Deliver<M> for FnTarget<F> {
            fn deliver(&self, msg: M) -> Result<(), SendError<M>> {
                (self.0)(msg);
                Ok(())
            }
        }
        Recipient::new(FnTarget(f))
    }

    /// Sends one message; on failure the message comes back in the error
    /// (see the module docs for conversions).
    #[inline]
    pub fn send(&self, msg: M) -> Result<(), SendError<M>> {
        self.target.deliver(msg)
    }

    /// Whether every later send will fail.
    pub fn is_closed(&self) -> bool {
        self.target.is_closed()
    }

    /// Whether two recipients are the same target.
    pub fn same_as(&self, other: &Recipient<M>) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.target), Arc::as_ptr(&other.target))
    }

    /// A recipient of `N` that converts with `f` and sends here (see the
    /// module docs for a refusal after the conversion).
    pub fn map<N: 'static>(self, f: impl Fn(N) -> M + Send + Sync + 'static) -> Recipient<N>
    where
        M: Send,
    {
        struct Mapped<M, F> {
            inner: Recipient<M>,
            f: F,
        }
        impl<M: 'static, N, F: Fn(N) -> M + Send + Sync + 'static> Deliver<N> for Mapped<M, F> {
            fn deliver(&self, msg: N) -> Result<(), SendError<N>> {
                if self.inner.is_closed() {
                    return Err(SendError::Closed(msg));
                }
                if let Err(e) = self.inner.send((self.f)(msg)) {
                    // No way back to `N`: dropped (an ask inside fails at
                    // once) and reported (see the module docs).
                    tracing::warn!(error = %e, "a converted message was refused and dropped");
                    drop_undelivered(e.into_inner());
                }
                Ok(())
            }
            fn is_closed(&self) -> bool {
                self.inner.is_closed()
            }
        }
        Recipient::new(Mapped { inner: self, f })
    }
}

impl<A: Actor> Deliver<A::Msg> for ActorRef<A> {
    #[inline]
    fn deliver(&self, msg: A::Msg) -> Result<(), SendError<A::Msg>> {
        self.tell(msg)
    }

    fn is_closed(&self) -> bool {
        !self.is_alive()
    }
}

/// An actor reached through a conversion from `M` to its message type.
struct Converted<A: Actor, F> {
    actor: ActorRef<A>,
    convert: F,
}

impl<A, M, F> Deliver<M> for Converted<A, F>
where
    A: Actor,
    M: 'static,
    F: Fn(M) -> A::Msg + Send + Sync + 'static,
{
    #[inline]
    fn deliver(&self, msg: M) -> Result<(), SendError<M>> {
        // Checked before converting, so the common failure (a stopped actor)
        // still hands the message back.
        if !self.actor.is_alive() {
            return Err(SendError::Stopped(msg));
        }
        if let Err(e) = self.actor.tell((self.convert)(msg)) {
            // Raced the actor's stop (or a full mailbox): dropped and
            // counted as an undelivered message of that actor.
            self.actor.drop_undelivered(e.into_inner());
        }
        Ok(())
    }

    fn is_closed(&self) -> bool {
        !self.actor.is_alive()
    }
}

impl<A: Actor> ActorRef<A> {
    /// This actor as a [`Recipient`] of its own message type (exact: a
    /// failed send hands the message back).
    pub fn recipient(&self) -> Recipient<A::Msg> {
        Recipient::new(self.clone())
    }

    /// This actor as a [`Recipient`] of `M`, converted with `From`: how an
    /// actor "subscribes to a message type" (`enum Msg { Frame(Arc<Frame>), .. }`
    /// with `impl From<Arc<Frame>> for Msg`).
    pub fn recipient_for<M: 'static>(&self) -> Recipient<M>
    where
        A::Msg: From<M>,
    {
        self.recipient_map(<A::Msg as From<M>>::from)
    }

    /// This actor as a [`Recipient`] of `M`, converted with `convert`.
    pub fn recipient_map<M: 'static>(
        &self,
        convert: impl Fn(M) -> A::Msg + Send + Sync + 'static,
    ) -> Recipient<M> {
        Recipient::new(Converted {
            actor: self.clone(),
            convert,
        })
    }
}

impl<A: Actor> From<ActorRef<A>> for Recipient<A::Msg> {
    fn from(actor: ActorRef<A>) -> Self {
        Recipient::new(actor)
    }
}

impl<A: Actor> From<&ActorRef<A>> for Recipient<A::Msg> {
    fn from(actor: &ActorRef<A>) -> Self {
        actor.recipient()
    }
}

impl<M> From<&Recipient<M>> for Recipient<M> {
    fn from(r: &Recipient<M>) -> Self {
        r.clone()
    }
}
