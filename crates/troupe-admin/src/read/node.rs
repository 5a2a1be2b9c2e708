//! This node, as troupe-remote's [`Node`](troupe_remote::Node) tells it:
//! its name, namespace, connection and incarnation
//! ([`Cluster::incarnation`]), and its delivery and bad-input counters
//! ([`NodeStats`](troupe_remote::NodeStats)).

use serde_json::{json, Value};
use troupe_cluster::Cluster;

use super::counters;

/// `{name, namespace, connected, incarnation, incarnation_hex}` of the
/// cluster's node.
pub fn identity(cluster: &Cluster) -> Value {
    let node = cluster.node();
    json!({
        "name": node.name(),
        "namespace": node.cluster(),
        "connected": node.is_connected(),
        "incarnation": cluster.incarnation(),
        "incarnation_hex": format!("{:016x}", cluster.incarnation()),
    })
}

/// The node's counters (`NodeStats`, by field name).
pub fn stats(cluster: &Cluster) -> Value {
    Value::Object(counters(&format!("{:?}", cluster.node().stats())))
}
