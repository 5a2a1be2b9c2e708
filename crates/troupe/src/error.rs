//! Errors a user can act on. A failed send always hands the message back.

use std::fmt;

/// Why a message was not delivered; holds the message so nothing is lost.
///
/// ```
/// # use troupe::SendError;
/// let err = SendError::Stopped(42);
/// assert_eq!(err.into_inner(), 42);
/// ```
#[derive(PartialEq, Eq)]
pub enum SendError<M> {
    /// The actor has stopped (or is stopping) and takes no more messages.
    Stopped(M),
    /// The actor's bounded mailbox is full (policy `Reject`, or `Block` with
    /// the sender on a worker thread, where blocking is not allowed).
    Full(M),
}

impl<M> SendError<M> {
    /// The message that was not delivered.
    pub fn into_inner(self) -> M {
        match self {
            SendError::Stopped(m) | SendError::Full(m) => m,
        }
    }
}

impl<M> fmt::Debug for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::Stopped(_) => f.write_str("SendError::Stopped(..)"),
            SendError::Full(_) => f.write_str("SendError::Full(..)"),
        }
    }
}

impl<M> fmt::Display for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendError::Stopped(_) => f.write_str("the actor has stopped; the message is returned"),
            SendError::Full(_) => {
                f.write_str("the actor's bounded mailbox is full; the message is returned")
            }
        }
    }
}

impl<M> std::error::Error for SendError<M> {}

/// Why an ask got no answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AskError {
    /// No reply arrived within the timeout.
    Timeout,
    /// The actor had stopped, or stopped before replying.
    ActorStopped,
    /// The actor's bounded mailbox was full, so the request was not sent.
    MailboxFull,
    /// The actor dropped the reply handle without replying.
    NoReply,
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
        })
    }
}

impl std::error::Error for AskError {}

/// Why an actor stopped; what watchers and joiners are told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// It stopped itself (`Context::stop`) or was asked to (`ActorRef::stop`).
    Normal,
    /// A handler or hook panicked; the payload's message.
    Panicked(String),
    /// It was killed: stopped without handling what was left in its mailbox.
    Killed,
    /// The system shut down.
    Shutdown,
}

impl StopReason {
    /// Whether the stop was a failure (a panic).
    pub fn is_failure(&self) -> bool {
        matches!(self, StopReason::Panicked(_))
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopReason::Normal => f.write_str("stopped normally"),
            StopReason::Panicked(m) => write!(f, "panicked: {m}"),
            StopReason::Killed => f.write_str("killed"),
            StopReason::Shutdown => f.write_str("stopped by system shutdown"),
        }
    }
}
