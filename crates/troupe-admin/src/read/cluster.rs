//! Membership, as troupe-cluster's [`Cluster`] tells it: this node and
//! the peers it holds alive, and its counters
//! ([`ClusterStats`](troupe_cluster::ClusterStats)).
//!
//! The public API gives the names of the live peers only: a member's
//! last heartbeat and a down peer are not in it, so `last_heartbeat` is
//! `null` and every listed member is `alive`.

use serde_json::{json, Value};
use troupe_cluster::Cluster;

use super::counters;

/// Every member this node sees: itself first, then its live peers.
pub fn members(cluster: &Cluster) -> Value {
    let mut out = vec![json!({
        "name": cluster.name(),
        "state": "alive",
        "self": true,
        "last_heartbeat": Value::Null,
    })];
    for p in cluster.peers() {
        out.push(json!({
            "name": p,
            "state": "alive",
            "self": false,
            "last_heartbeat": Value::Null,
        }));
    }
    Value::Array(out)
}

/// The cluster's counters (`ClusterStats`, by field name).
pub fn stats(cluster: &Cluster) -> Value {
    Value::Object(counters(&format!("{:?}", cluster.stats())))
}
