//! Errors of node setup. Message-level errors are troupe's own family:
//! [`troupe::SendError`] for tells (the message handed back) and
//! [`troupe::AskError`] for asks; [`ask_error_of`] and friends keep the
//! mapping from the wire in one place.

use std::fmt;

use troupe::AskError;

use crate::protocol::envelope::Status;
use crate::protocol::message::TypeEntry;
use crate::transport::permissions::Forbidden;

/// Why a node could not start, expose or look up.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NodeError {
    /// The NATS server could not be reached or refused the connection.
    Connect(String),
    /// Two different types claim one type id.
    TypeClash {
        /// The id both hash to.
        id: u64,
        /// The one registered first.
        first: TypeEntry,
        /// The one refused.
        second: TypeEntry,
    },
    /// A cluster, node or actor name is not usable.
    BadName(String),
    /// Another node of this name already serves in this cluster.
    NameTaken(String),
    /// An actor is already exposed under this name (or one hashing alike).
    AlreadyExposed(String),
    /// The NATS subscription for this node's inbox failed.
    Subscribe(String),
    /// The server's permissions forbid this user a subject the node needs
    /// (found at connect; see [`crate::permissions`]).
    Forbidden(Forbidden),
    /// No cluster key was set and the builder did not say `.insecure()`:
    /// without a key a node obeys unsealed control messages from any
    /// client of the server.
    Insecure,
}

impl fmt::Display for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeError::Connect(e) => write!(f, "cannot connect to the NATS server: {e}"),
            NodeError::TypeClash { id, first, second } => write!(
                f,
                "remote type id {id:#018x} is claimed twice: by \"{}\" ({}) and by \"{}\" ({}); give one of them another stable name",
                first.name, first.rust_type, second.name, second.rust_type
            ),
            NodeError::BadName(why) => write!(f, "bad name: {why}"),
            NodeError::NameTaken(n) => write!(f, "a node named {n} already serves in this cluster"),
            NodeError::AlreadyExposed(n) => write!(f, "an actor is already exposed as {n}"),
            NodeError::Subscribe(e) => write!(f, "cannot subscribe to the node's inbox: {e}"),
            NodeError::Forbidden(forbidden) => write!(f, "{forbidden}"),
            NodeError::Insecure => f.write_str(
                "no cluster key: without one this node would obey an unsealed Kill or \
                 membership message from any client of the server; set the same secret on \
                 every node (NodeBuilder::secret, ClusterBuilder::secret), or say \
                 .insecure() on the builder to run without one",
            ),
        }
    }
}

impl std::error::Error for NodeError {}

/// The ask error a reply's status stands for.
pub(crate) fn ask_error_of(status: Status) -> AskError {
    match status {
        Status::UnknownTarget | Status::UnknownType | Status::SchemaMismatch => {
            AskError::NoResponders
        }
        Status::Stopped => AskError::ActorStopped,
        Status::MailboxFull => AskError::MailboxFull,
        Status::Timeout => AskError::Timeout,
        Status::NoReply | Status::BadFrame | Status::Ok => AskError::NoReply,
    }
}

/// The reply status an ask error stands for (serving side).
pub(crate) fn status_of(e: AskError) -> Status {
    match e {
        AskError::Timeout => Status::Timeout,
        AskError::ActorStopped => Status::Stopped,
        AskError::MailboxFull => Status::MailboxFull,
        _ => Status::NoReply,
    }
}
