//! [`ClusterStats`] to Prometheus and OpenTelemetry: the list of its
//! families ([`CLUSTER_STATS`], one row per field) and [`cluster_metrics`],
//! an export reading a cluster's public snapshot ([`Cluster::stats`]) at
//! every scrape or collection; [`cluster_node_metrics`] does the same for
//! the node the cluster owns ([`NodeStats`], troupe-remote's families). The
//! mechanism is troupe-remote's
//! [`stats_export`](troupe_remote::stats_export): register an export in a
//! `prometheus-client` registry as a collector, or (troupe-remote's feature
//! `otel`) on a meter with
//! `troupe_remote::telemetry::register_stats`.
//!
//! Families are named `troupe_cluster_<field>` (counters, served with
//! `_total`), labelled `node="<name>"`. **A new field of `ClusterStats` is
//! exported by adding its row to [`CLUSTER_STATS`]**; the test
//! `every_field_is_exported` fails until it is.
//!
//! ```
//! # fn f(cluster: std::sync::Arc<troupe_cluster::Cluster>) {
//! use troupe::observability::prometheus_client::registry::Registry;
//! use troupe_cluster::metrics::{cluster_metrics, cluster_node_metrics};
//!
//! let mut registry = Registry::default();
//! registry.register_collector(Box::new(cluster_metrics(&cluster)));
//! registry.register_collector(Box::new(cluster_node_metrics(&cluster)));
//! # }
//! ```

use crate::{Cluster, ClusterStats};
use std::sync::Arc;
use troupe_remote::stats_export::{Family, Kind, StatsExport};
use troupe_remote::NodeStats;

/// The Prometheus prefix of the cluster's families.
pub const PREFIX: &str = "troupe_cluster";

/// Every field of [`ClusterStats`], in its order: one family each.
pub const CLUSTER_STATS: &[Family<ClusterStats>] = &[
    Family {
        name: "nodes_down",
        help: "Peers this node declared down.",
        kind: Kind::Counter,
        unit: "{node}",
        value: |s| s.nodes_down,
    },
    Family {
        name: "resyncs",
        help: "Registry re-syncs (one at start, one per reconnect or lost watch).",
        kind: Kind::Counter,
        unit: "{resync}",
        value: |s| s.resyncs,
    },
    Family {
        name: "registry_deletes",
        help: "Registry entries of dead nodes this node deleted from the bucket.",
        kind: Kind::Counter,
        unit: "{entry}",
        value: |s| s.registry_deletes,
    },
    Family {
        name: "bad_heartbeats",
        help: "Heartbeats that did not decode, named another node than their subject, or this node with another incarnation.",
        kind: Kind::Counter,
        unit: "{message}",
        value: |s| s.bad_heartbeats,
    },
    Family {
        name: "bad_byes",
        help: "Goodbyes that did not decode or did not match their sender.",
        kind: Kind::Counter,
        unit: "{message}",
        value: |s| s.bad_byes,
    },
    Family {
        name: "bad_stop_events",
        help: "Stop events that did not decode.",
        kind: Kind::Counter,
        unit: "{message}",
        value: |s| s.bad_stop_events,
    },
    Family {
        name: "bad_control",
        help: "Control requests that did not decode (answered BadRequest).",
        kind: Kind::Counter,
        unit: "{message}",
        value: |s| s.bad_control,
    },
    Family {
        name: "bad_control_replies",
        help: "Answers to this node's control requests that did not decode.",
        kind: Kind::Counter,
        unit: "{message}",
        value: |s| s.bad_control_replies,
    },
    Family {
        name: "bad_registry_values",
        help: "Registry values that did not decode or do not match their key.",
        kind: Kind::Counter,
        unit: "{entry}",
        value: |s| s.bad_registry_values,
    },
    Family {
        name: "bad_group_messages",
        help: "Always 0: bad load-balanced tells are counted in troupe_remote's families.",
        kind: Kind::Counter,
        unit: "{message}",
        value: |s| s.bad_group_messages,
    },
    Family {
        name: "peers_refused",
        help: "Heartbeats of new nodes refused because the peer table was full.",
        kind: Kind::Counter,
        unit: "{node}",
        value: |s| s.peers_refused,
    },
    Family {
        name: "unauthenticated",
        help: "Messages and registry values refused for want of a good seal.",
        kind: Kind::Counter,
        unit: "{message}",
        value: |s| s.unauthenticated,
    },
    Family {
        name: "verdicts_spared",
        help: "Peers silent by this node's clock that were not declared down.",
        kind: Kind::Counter,
        unit: "{node}",
        value: |s| s.verdicts_spared,
    },
    Family {
        name: "downed_heartbeats",
        help: "Heartbeats and goodbyes of incarnations this node declared down, ignored.",
        kind: Kind::Counter,
        unit: "{message}",
        value: |s| s.downed_heartbeats,
    },
    Family {
        name: "rejoins",
        help: "Times this node learned it was declared down and rejoined as a new incarnation.",
        kind: Kind::Counter,
        unit: "{event}",
        value: |s| s.rejoins,
    },
    Family {
        name: "bad_downed_notices",
        help: "Downed notices that did not decode or named an incarnation this node never had.",
        kind: Kind::Counter,
        unit: "{message}",
        value: |s| s.bad_downed_notices,
    },
    Family {
        name: "quorum_left",
        help: "Times this node found itself on the losing side of a partition and left the quorum.",
        kind: Kind::Counter,
        unit: "{event}",
        value: |s| s.quorum_left,
    },
    Family {
        name: "marked_down",
        help: "Peers declared down because an operator marked them down.",
        kind: Kind::Counter,
        unit: "{node}",
        value: |s| s.marked_down,
    },
    Family {
        name: "bad_mark_downs",
        help: "Mark-downs that did not decode or named a node or incarnation this node does not hold.",
        kind: Kind::Counter,
        unit: "{message}",
        value: |s| s.bad_mark_downs,
    },
];

/// An export of [`CLUSTER_STATS`] with no source yet.
pub fn cluster_export() -> StatsExport<ClusterStats> {
    StatsExport::new(PREFIX, CLUSTER_STATS)
}

/// An export of `cluster`'s stats, labelled `node="<its name>"`. It holds
/// the cluster weakly: once the cluster is dropped, its series leave the
/// scrape. Several clusters: [`StatsExport::merge`].
pub fn cluster_metrics(cluster: &Arc<Cluster>) -> StatsExport<ClusterStats> {
    let weak = Arc::downgrade(cluster);
    cluster_export().source(&[("node", cluster.name())], move || {
        weak.upgrade().map(|c| c.stats())
    })
}

/// An export of the stats of the node `cluster` owns
/// (troupe-remote's `troupe_remote_*` families), labelled
/// `node="<its name>"`, holding the cluster weakly.
pub fn cluster_node_metrics(cluster: &Arc<Cluster>) -> StatsExport<NodeStats> {
    let weak = Arc::downgrade(cluster);
    troupe_remote::node_metrics::node_export().source(&[("node", cluster.name())], move || {
        weak.upgrade().map(|c| c.node().stats())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_remote::stats_export::debug_fields;

    #[test]
    fn every_field_is_exported() {
        let names: Vec<&str> = CLUSTER_STATS.iter().map(|f| f.name).collect();
        let fields: Vec<String> = debug_fields(&format!("{:?}", ClusterStats::default()))
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(names, fields, "add the new field's row to CLUSTER_STATS");
    }

    #[test]
    #[allow(clippy::field_reassign_with_default)] // still compiles when a field is added
    fn each_family_reads_its_own_field() {
        // Every field a different number: a family reading another field
        // reads another number.
        let mut s = ClusterStats::default();
        s.nodes_down = 1;
        s.resyncs = 2;
        s.registry_deletes = 3;
        s.bad_heartbeats = 4;
        s.bad_byes = 5;
        s.bad_stop_events = 6;
        s.bad_control = 7;
        s.bad_control_replies = 8;
        s.bad_registry_values = 9;
        s.bad_group_messages = 10;
        s.peers_refused = 11;
        s.unauthenticated = 12;
        s.verdicts_spared = 13;
        s.downed_heartbeats = 14;
        s.rejoins = 15;
        s.bad_downed_notices = 16;
        s.quorum_left = 17;
        s.marked_down = 18;
        s.bad_mark_downs = 19;
        for (field, v) in debug_fields(&format!("{s:?}")) {
            let fam = CLUSTER_STATS
                .iter()
                .find(|f| f.name == field)
                .expect("exported");
            assert_eq!((fam.value)(&s), v, "{field}");
        }
    }
}
