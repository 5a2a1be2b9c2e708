//! Errors of the cluster layer.

/// Why a cluster operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// The node could not connect (wrong credentials, no server, timeout)
    /// or could not take its name.
    #[error("{0}")]
    Node(troupe_remote::NodeError),
    /// JetStream (the registry bucket) is unavailable or refused a request.
    #[error("cluster registry (JetStream KV): {0}")]
    Registry(String),
    /// A name, group, actor or `actor@node` is not usable.
    #[error("bad name: {0}")]
    BadName(String),
    /// The name is registered already (by a live entry).
    #[error("the name {0} is registered already")]
    NameTaken(String),
    /// NATS refused a subscription or a publish.
    #[error("NATS: {0}")]
    Nats(String),
    /// The load-balanced group has no member this node knows of.
    #[error("the load-balanced group {0} has no member")]
    NoMember(String),
    /// The node named is not a peer this node holds alive (unknown, gone,
    /// or declared down already).
    #[error("{0} is not a peer this node holds alive")]
    NotAPeer(String),
    /// The node refused to send a message (its outbox is full or closed).
    #[error("not sent: {0}")]
    Refused(String),
}

impl From<troupe_remote::NodeError> for ClusterError {
    fn from(e: troupe_remote::NodeError) -> Self {
        ClusterError::Node(e)
    }
}
