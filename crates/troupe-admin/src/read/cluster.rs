//! Membership, as troupe-cluster's [`Cluster`] tells it: this node and
//! the peers it holds alive ([`Cluster::peer_states`]), and its counters
//! ([`ClusterStats`](troupe_cluster::ClusterStats)).
//!
//! Each member carries its incarnation (the process behind the name: a
//! restart or a rejoin after a false down is a new one) and, for a peer,
//! how many milliseconds ago this node last heard its heartbeat and the
//! interval it announced: a peer whose age nears `down_after_ms` is about
//! to be declared down. An incarnation is a full `u64`, beyond the 2^53
//! a JavaScript number holds exactly: `incarnation_hex` is the same
//! number as 16 hex digits, for the dashboard and such clients. A peer
//! this node declared down ([`Cluster::down_peers`]) is listed after the
//! live ones with state `down`, why and how long ago, until it is heard
//! again in a new incarnation or ten minutes have passed (at most 64).
//! `last_heartbeat` stays `null` (the field `/api/v1` had first;
//! `/api/v1` changes only by adding).

use serde_json::{json, Value};
use troupe_cluster::Cluster;

use super::counters;

/// Milliseconds of `d`, saturating (JSON numbers, never a panic).
fn ms(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Every member this node sees: itself first, then its live peers.
pub fn members(cluster: &Cluster) -> Value {
    let down_after = ms(cluster.down_detection());
    let mut out = vec![json!({
        "name": cluster.name(),
        "state": "alive",
        "self": true,
        "incarnation": cluster.incarnation(),
        "incarnation_hex": format!("{:016x}", cluster.incarnation()),
        "last_heartbeat": Value::Null,
        "last_heartbeat_ms_ago": Value::Null,
        "heartbeat_ms": ms(cluster.heartbeat()),
        "down_after_ms": down_after,
    })];
    let alive = cluster.peer_states();
    for p in &alive {
        out.push(json!({
            "name": p.name,
            "state": "alive",
            "self": false,
            "incarnation": p.incarnation,
            "incarnation_hex": format!("{:016x}", p.incarnation),
            "last_heartbeat": Value::Null,
            "last_heartbeat_ms_ago": ms(p.since_heard),
            "heartbeat_ms": ms(p.heartbeat),
            "down_after_ms": down_after,
        }));
    }
    for d in cluster.down_peers() {
        // A row of a node alive again (a new incarnation heard) is gone
        // already; this guards the instant between the two tables.
        if alive.iter().any(|p| p.name == d.name) {
            continue;
        }
        out.push(json!({
            "name": d.name,
            "state": "down",
            "self": false,
            "incarnation": d.incarnation,
            "incarnation_hex": format!("{:016x}", d.incarnation),
            "last_heartbeat": Value::Null,
            "last_heartbeat_ms_ago": Value::Null,
            "heartbeat_ms": Value::Null,
            "down_after_ms": down_after,
            "down_why": d.why,
            "down_ms_ago": ms(d.since),
        }));
    }
    Value::Array(out)
}

/// The cluster's counters (`ClusterStats`, by field name).
pub fn stats(cluster: &Cluster) -> Value {
    Value::Object(counters(&format!("{:?}", cluster.stats())))
}
