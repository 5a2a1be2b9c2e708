//! Errors a user can act on, and why actors stop.
//!
//! One family for every send in the crate ([`SendError`]): an actor's
//! mailbox, a [`Recipient`](crate::Recipient), a channel, an mchain, a
//! registry name, a remote reference. Every variant hands the message back,
//! so a failed send never loses it.

use std::fmt;

/// Why a message was not taken; holds the message so nothing is lost.
///
/// ```
/// # use troupe::SendError;
/// let err = SendError::Stopped(42);
/// assert!(err.is_closed());
/// assert_eq!(err.into_inner(), 42);
/// ```
#[derive(PartialEq, Eq)]
pub enum SendError<M> {
    /// The target is full for now: a bounded mailbox or chain (`Reject`, or a
    /// `Block` policy where waiting is not allowed or timed out), a message
    /// limit. A later send may succeed.
    Full(M),
    /// The target is closed for good: a closed mchain, a name with no actor
    /// behind it, a remote link that is gone.
    Closed(M),
    /// The actor has stopped (or is stopping) and takes no more messages.
    Stopped(M),
}

impl<M> SendError<M> {
    /// The message that was not delivered.
    pub fn into_inner(self) -> M {
        match self {
            SendError::Full(m) | SendError::Closed(m) | SendError::Stopped(m) => m,
        }
    }

    /// A reference to the message that was not delivered.
    pub fn message(&self) -> &M {
        match self {
            SendError::Full(m) | SendError::Closed(m) | SendError::Stopped(m) => m,
        }
    }

    /// Whether every later send to the same target will fail too
    /// (`Closed` or `Stopped`).
    pub fn is_closed(&self) -> bool {
        !matches!(self, SendError::Full(_))
    }

    /// The same error with the message transformed (e.g. unwrapped).
    pub fn map<N>(self, f: impl FnOnce(M) -> N) -> SendError<N> {
        match self {
            SendError::Full(m) => SendError::Full(f(m)),
            SendError::Closed(m) => SendError::Closed(f(m)),
            SendError::Stopped(m) => SendError::Stopped(f(m)),
        }
    }
}

impl<M> fmt::Debug for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SendError::Full(_) => "SendError::Full(..)",
            SendError::Closed(_) => "SendError::Closed(..)",
            SendError::Stopped(_) => "SendError::Stopped(..)",
        })
    }
}

impl<M> fmt::Display for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SendError::Full(_) => "the target is full; the message is returned",
            SendError::Closed(_) => "the target is closed; the message is returned",
            SendError::Stopped(_) => "the actor has stopped; the message is returned",
        })
    }
}

impl<M> std::error::Error for SendError<M> {}

/// Why an ask got no answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AskError {
    /// No reply arrived within the timeout.
    Timeout,
    /// The actor had stopped, or stopped before replying.
    ActorStopped,
    /// The actor's bounded mailbox was full, so the request was not sent.
    MailboxFull,
    /// The actor dropped the reply handle without replying.
    NoReply,
    /// Nobody serves the target (a remote name with no actor behind it).
    NoResponders,
    /// The connection to the target was lost before the reply came.
    Disconnected,
    /// A blocking [`ActorRef::ask`](crate::ActorRef::ask) was called on a
    /// worker thread that runs actors: waiting there would stall every actor
    /// behind it (on a one-thread system, all of them, perhaps the one that
    /// should reply). The request was not sent. From a handler use
    /// [`Context::ask`](crate::Context::ask), which delivers the reply as a
    /// message; blocking pools and dedicated threads may block.
    WouldBlockWorker,
}

impl fmt::Display for AskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AskError::Timeout => "no reply within the timeout",
            AskError::ActorStopped => "the actor stopped before replying",
            AskError::MailboxFull => {
                "the actor's bounded mailbox is full; the request was not sent"
            }
            AskError::NoReply => "the actor dropped the request without replying",
            AskError::NoResponders => "nobody serves the target; the request was not handled",
            AskError::Disconnected => "the connection to the target was lost before the reply",
            AskError::WouldBlockWorker => {
                "a blocking ask on an actor worker thread would stall its actors; \
                 the request was not sent (use Context::ask from a handler)"
            }
        })
    }
}

impl std::error::Error for AskError {}

/// Why an actor stopped; what watchers and joiners are told.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// It stopped itself (`Context::stop`) or was asked to (`ActorRef::stop`).
    Normal,
    /// A handler or hook panicked; the payload's message.
    Panicked(String),
    /// It was killed: stopped without handling what was left in its mailbox.
    Killed,
    /// The system shut down.
    Shutdown,
    /// It was stopped with this reason (`Context::stop_with`,
    /// `ActorRef::stop_with`): a failure, as a panic is, for links and
    /// supervisors.
    Failed(String),
}

impl StopReason {
    /// Whether the stop was a failure (a panic, or a stop with
    /// [`Failed`](Self::Failed)).
    pub fn is_failure(&self) -> bool {
        matches!(self, StopReason::Panicked(_) | StopReason::Failed(_))
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopReason::Normal => f.write_str("stopped normally"),
            StopReason::Panicked(m) => write!(f, "panicked: {m}"),
            StopReason::Killed => f.write_str("killed"),
            StopReason::Shutdown => f.write_str("stopped by system shutdown"),
            StopReason::Failed(m) => write!(f, "failed: {m}"),
        }
    }
}
