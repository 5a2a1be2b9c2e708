//! Errors of the cluster layer.

use std::fmt;

/// Why a cluster operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClusterError {
    /// The node could not connect (wrong credentials, no server, timeout)
    /// or could not take its name.
    Node(troupe_remote::NodeError),
    /// JetStream (the registry bucket) is unavailable or refused a request.
    Registry(String),
    /// A name, group, actor or `actor@node` is not usable.
    BadName(String),
    /// The name is registered already (by a live entry).
    NameTaken(String),
    /// NATS refused a subscription or a publish.
    Nats(String),
    /// The load-balanced group has no member this node knows of.
    NoMember(String),
    /// The node refused to send a message (its outbox is full or closed).
    Refused(String),
}

impl fmt::Display for ClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClusterError::Node(e) => write!(f, "{e}"),
            ClusterError::Registry(e) => write!(f, "cluster registry (JetStream KV): {e}"),
            ClusterError::BadName(e) => write!(f, "bad name: {e}"),
            ClusterError::NameTaken(n) => write!(f, "the name {n} is registered already"),
            ClusterError::Nats(e) => write!(f, "NATS: {e}"),
            ClusterError::NoMember(g) => write!(f, "the load-balanced group {g} has no member"),
            ClusterError::Refused(e) => write!(f, "not sent: {e}"),
        }
    }
}

impl std::error::Error for ClusterError {}

impl From<troupe_remote::NodeError> for ClusterError {
    fn from(e: troupe_remote::NodeError) -> Self {
        ClusterError::Node(e)
    }
}
