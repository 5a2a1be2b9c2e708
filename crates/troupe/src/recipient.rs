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
//! - A failed delivery hands the message back ([`DeliveryError::Closed`],
//!   [`DeliveryError::Full`]) whenever the message is still in the sender's
//!   type. The one exception is an actor reached through a conversion
//!   (`M -> A::Msg`): if the actor refuses the *converted* message (it stopped
//!   in the instant after the liveness check, or its bounded mailbox is full)
//!   there is no way back to `M`, and the error is
//!   [`DeliveryError::Dropped`].
//! - [`Recipient::is_closed`] turning `true` is final: channels prune such
//!   subscribers and periodic timers stop.

use crate::actor::{Actor, ActorRef};
use crate::error::SendError;
use std::fmt;
use std::sync::Arc;

/// Why a delivery through a [`Recipient`] failed.
#[derive(PartialEq, Eq)]
pub enum DeliveryError<M> {
    /// The target is closed (a stopped actor, a closed mchain); here is the
    /// message.
    Closed(M),
    /// The target is full (a bounded mailbox or mchain, a message limit with
    /// the `Reject` policy); here is the message.
    Full(M),
    /// The target refused the message after converting it to its own type;
    /// the converted message was dropped. `closed` says whether the target
    /// had stopped (otherwise it was full).
    Dropped {
        /// Whether the target was closed (rather than full).
        closed: bool,
    },
}

impl<M> DeliveryError<M> {
    /// The undelivered message, if it could be handed back.
    pub fn into_inner(self) -> Option<M> {
        match self {
            DeliveryError::Closed(m) | DeliveryError::Full(m) => Some(m),
            DeliveryError::Dropped { .. } => None,
        }
    }

    /// Whether the target is closed for good (a later send will fail too).
    pub fn is_closed(&self) -> bool {
        matches!(
            self,
            DeliveryError::Closed(_) | DeliveryError::Dropped { closed: true }
        )
    }

    /// The same error with the message transformed (e.g. unwrapped).
    pub fn map<N>(self, f: impl FnOnce(M) -> N) -> DeliveryError<N> {
        match self {
            DeliveryError::Closed(m) => DeliveryError::Closed(f(m)),
            DeliveryError::Full(m) => DeliveryError::Full(f(m)),
            DeliveryError::Dropped { closed } => DeliveryError::Dropped { closed },
        }
    }
}

impl<M> From<SendError<M>> for DeliveryError<M> {
    fn from(e: SendError<M>) -> Self {
        match e {
            SendError::Stopped(m) => DeliveryError::Closed(m),
            SendError::Full(m) => DeliveryError::Full(m),
        }
    }
}

impl<M> fmt::Debug for DeliveryError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeliveryError::Closed(_) => f.write_str("DeliveryError::Closed(..)"),
            DeliveryError::Full(_) => f.write_str("DeliveryError::Full(..)"),
            DeliveryError::Dropped { closed } => {
                write!(f, "DeliveryError::Dropped {{ closed: {closed} }}")
            }
        }
    }
}

impl<M> fmt::Display for DeliveryError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeliveryError::Closed(_) => "the recipient is closed; the message is returned",
            DeliveryError::Full(_) => "the recipient is full; the message is returned",
            DeliveryError::Dropped { closed: true } => {
                "the actor stopped after the message was converted to its type; it was dropped"
            }
            DeliveryError::Dropped { closed: false } => {
                "the actor's mailbox was full for the converted message; it was dropped"
            }
        })
    }
}

impl<M> std::error::Error for DeliveryError<M> {}

/// The one operation every send target implements. Implement it to make your
/// own targets (a log, a metrics sink) usable by channels and timers.
pub trait Deliver<M>: Send + Sync + 'static {
    /// Delivers one message, or hands it back.
    fn deliver(&self, msg: M) -> Result<(), DeliveryError<M>>;

    /// Whether every later delivery will fail (the target stopped or closed).
    fn is_closed(&self) -> bool {
        false
    }
}

/// A cloneable, type-erased target for messages of type `M`: an actor (with
/// or without a conversion to its message type), a [`Channel`](crate::Channel),
/// an [`MChain`](crate::MChain), a [`MessageLimit`](crate::MessageLimit) in
/// front of any of these, or a closure.
///
/// ```
/// use troupe::{Actor, ActorSystem, Context, MChain, Recipient};
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
            fn deliver(&self, msg: M) -> Result<(), DeliveryError<M>> {
                (self.0)(msg);
                Ok(())
            }
        }
        Recipient::new(FnTarget(f))
    }

    /// Sends one message; on failure the message comes back when it can (see
    /// [`DeliveryError`]).
    #[inline]
    pub fn send(&self, msg: M) -> Result<(), DeliveryError<M>> {
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

    /// A recipient of `N` that converts with `f` and sends here. Failures
    /// after the conversion are reported as [`DeliveryError::Dropped`].
    pub fn map<N: 'static>(self, f: impl Fn(N) -> M + Send + Sync + 'static) -> Recipient<N>
    where
        M: Send,
    {
        struct Mapped<M, F> {
            inner: Recipient<M>,
            f: F,
        }
        impl<M: 'static, N, F: Fn(N) -> M + Send + Sync + 'static> Deliver<N> for Mapped<M, F> {
            fn deliver(&self, msg: N) -> Result<(), DeliveryError<N>> {
                if self.inner.is_closed() {
                    return Err(DeliveryError::Closed(msg));
                }
                self.inner
                    .send((self.f)(msg))
                    .map_err(|e| DeliveryError::Dropped {
                        closed: e.is_closed(),
                    })
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
    fn deliver(&self, msg: A::Msg) -> Result<(), DeliveryError<A::Msg>> {
        self.tell(msg).map_err(DeliveryError::from)
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
    fn deliver(&self, msg: M) -> Result<(), DeliveryError<M>> {
        // Checked before converting, so the common failure (a stopped actor)
        // still hands the message back.
        if !self.actor.is_alive() {
            return Err(DeliveryError::Closed(msg));
        }
        self.actor
            .tell((self.convert)(msg))
            .map_err(|e| DeliveryError::Dropped {
                closed: matches!(e, SendError::Stopped(_)),
            })
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
