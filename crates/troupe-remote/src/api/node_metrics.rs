//! [`NodeStats`] to Prometheus and OpenTelemetry: the list of its
//! families ([`NODE_STATS`], one row per field) and [`node_metrics`], an
//! export reading a node's public snapshot ([`Node::stats`]) at every
//! scrape or collection. The mechanism is [`stats_export`](crate::stats_export).
//!
//! Families are named `troupe_remote_<field>`, labelled `node="<name>"`;
//! counters are served with `_total`, the three gauges
//! (`troupe_remote_tells_unconfirmed`, `troupe_remote_links`,
//! `troupe_remote_receipts_waiting`) without.
//! **A new field of `NodeStats` is exported by adding its row to
//! [`NODE_STATS`]**; the test `every_field_is_exported` fails until it is.
//!
//! ```
//! # fn f(node: std::sync::Arc<troupe_remote::Node>) {
//! use troupe::observability::prometheus_client::registry::Registry;
//!
//! let mut registry = Registry::default();
//! registry.register_collector(Box::new(troupe_remote::node_metrics::node_metrics(&node)));
//! # }
//! ```

use crate::stats_export::{Family, Kind, StatsExport};
use crate::{Node, NodeStats};
use std::sync::Arc;

/// The Prometheus prefix of the node's families.
pub const PREFIX: &str = "troupe_remote";

/// Every field of [`NodeStats`], in its order: one family each.
pub const NODE_STATS: &[Family<NodeStats>] = &[
    Family {
        name: "frames_sent",
        help: "Frames handed to the transport (tells, in batches).",
        kind: Kind::Counter,
        unit: "{frame}",
        value: |s| s.frames_sent,
    },
    Family {
        name: "batches_sent",
        help: "Transport messages those frames travelled in.",
        kind: Kind::Counter,
        unit: "{batch}",
        value: |s| s.batches_sent,
    },
    Family {
        name: "frames_lost",
        help: "Tells accepted and known not delivered: publish failed or the peer's acks show they never arrived.",
        kind: Kind::Counter,
        unit: "{frame}",
        value: |s| s.frames_lost,
    },
    Family {
        name: "tells_confirmed",
        help: "Tells the peer's acks confirm its actor took.",
        kind: Kind::Counter,
        unit: "{tell}",
        value: |s| s.tells_confirmed,
    },
    Family {
        name: "tells_refused_by_peer",
        help: "Tells the peer received and did not deliver.",
        kind: Kind::Counter,
        unit: "{tell}",
        value: |s| s.tells_refused_by_peer,
    },
    Family {
        name: "tells_unconfirmed",
        help: "Tells accepted and not yet confirmed, refused or lost.",
        kind: Kind::Gauge,
        unit: "{tell}",
        value: |s| s.tells_unconfirmed,
    },
    Family {
        name: "probes_sent",
        help: "Probes sent on quiet links with unconfirmed tells.",
        kind: Kind::Counter,
        unit: "{probe}",
        value: |s| s.probes_sent,
    },
    Family {
        name: "acks_sent",
        help: "Acks this node sent to its senders.",
        kind: Kind::Counter,
        unit: "{ack}",
        value: |s| s.acks_sent,
    },
    Family {
        name: "frames_received",
        help: "Frames received that could be framed.",
        kind: Kind::Counter,
        unit: "{frame}",
        value: |s| s.frames_received,
    },
    Family {
        name: "link_frames",
        help: "Link and ack frames received.",
        kind: Kind::Counter,
        unit: "{frame}",
        value: |s| s.link_frames,
    },
    Family {
        name: "frames_missed",
        help: "Sequence numbers of senders' tells that never arrived here (gaps).",
        kind: Kind::Counter,
        unit: "{frame}",
        value: |s| s.frames_missed,
    },
    Family {
        name: "unlinked",
        help: "Tells received without a link frame (delivered, outside any sender's accounting).",
        kind: Kind::Counter,
        unit: "{tell}",
        value: |s| s.unlinked,
    },
    Family {
        name: "delivered",
        help: "Tells handed to a local actor.",
        kind: Kind::Counter,
        unit: "{tell}",
        value: |s| s.delivered,
    },
    Family {
        name: "asks_served",
        help: "Asks handed to a local actor.",
        kind: Kind::Counter,
        unit: "{ask}",
        value: |s| s.asks_served,
    },
    Family {
        name: "refused",
        help: "Frames the local actor refused (full mailbox or stopped).",
        kind: Kind::Counter,
        unit: "{frame}",
        value: |s| s.refused,
    },
    Family {
        name: "unknown_target",
        help: "Frames for a target not exposed here.",
        kind: Kind::Counter,
        unit: "{frame}",
        value: |s| s.unknown_target,
    },
    Family {
        name: "unknown_type",
        help: "Frames whose type the target does not take.",
        kind: Kind::Counter,
        unit: "{frame}",
        value: |s| s.unknown_type,
    },
    Family {
        name: "undecodable",
        help: "Frames whose body did not decode to their type.",
        kind: Kind::Counter,
        unit: "{frame}",
        value: |s| s.undecodable,
    },
    Family {
        name: "bad_frames",
        help: "Transport messages that held garbage: bad version, kind or length.",
        kind: Kind::Counter,
        unit: "{message}",
        value: |s| s.bad_frames,
    },
    Family {
        name: "bad_replies",
        help: "Replies to this node's asks that did not decode.",
        kind: Kind::Counter,
        unit: "{reply}",
        value: |s| s.bad_replies,
    },
    Family {
        name: "panics",
        help: "Inbox messages whose handling panicked (dropped, logged).",
        kind: Kind::Counter,
        unit: "{panic}",
        value: |s| s.panics,
    },
    Family {
        name: "links_refused",
        help: "Batches from a new sender while the link table was full (delivered, not acknowledged).",
        kind: Kind::Counter,
        unit: "{batch}",
        value: |s| s.links_refused,
    },
    Family {
        name: "links",
        help: "Senders whose link state this node holds now.",
        kind: Kind::Gauge,
        unit: "{link}",
        value: |s| s.links,
    },
    Family {
        name: "unauthenticated",
        help: "Messages refused for want of a good seal.",
        kind: Kind::Counter,
        unit: "{message}",
        value: |s| s.unauthenticated,
    },
    Family {
        name: "schema_mismatches",
        help: "Tells and asks refused because the sender's shape of the type differs from this node's.",
        kind: Kind::Counter,
        unit: "{message}",
        value: |s| s.schema_mismatches,
    },
    Family {
        name: "tells_lost_to_down",
        help: "Of frames_lost: tells not yet accounted when their peer was declared down.",
        kind: Kind::Counter,
        unit: "{message}",
        value: |s| s.tells_lost_to_down,
    },
    Family {
        name: "receipts_delivered",
        help: "Receipts of confirmed tells resolved Delivered.",
        kind: Kind::Counter,
        unit: "{receipt}",
        value: |s| s.receipts_delivered,
    },
    Family {
        name: "receipts_refused",
        help: "Receipts of confirmed tells resolved Refused (the peer gave its reason).",
        kind: Kind::Counter,
        unit: "{receipt}",
        value: |s| s.receipts_refused,
    },
    Family {
        name: "receipts_lost",
        help: "Receipts of confirmed tells resolved Lost.",
        kind: Kind::Counter,
        unit: "{receipt}",
        value: |s| s.receipts_lost,
    },
    Family {
        name: "receipts_unknown",
        help: "Receipts of confirmed tells resolved Unknown (their deadline passed).",
        kind: Kind::Counter,
        unit: "{receipt}",
        value: |s| s.receipts_unknown,
    },
    Family {
        name: "receipts_waiting",
        help: "Receipts waiting for an outcome now.",
        kind: Kind::Gauge,
        unit: "{receipt}",
        value: |s| s.receipts_waiting,
    },
    Family {
        name: "receipts_issued",
        help: "As a receiver: receipts this node issued for tells that asked.",
        kind: Kind::Counter,
        unit: "{receipt}",
        value: |s| s.receipts_issued,
    },
];

/// An export of [`NODE_STATS`] with no source yet (add one with
/// [`StatsExport::source`], e.g. a node a cluster owns:
/// `.source(&[("node", name)], move || Some(cluster.node().stats()))`).
pub fn node_export() -> StatsExport<NodeStats> {
    StatsExport::new(PREFIX, NODE_STATS)
}

/// An export of `node`'s stats, labelled `node="<its name>"`. It holds the
/// node weakly: once the node is dropped, its series leave the scrape.
/// Several nodes: [`StatsExport::merge`].
pub fn node_metrics(node: &Arc<Node>) -> StatsExport<NodeStats> {
    let weak = Arc::downgrade(node);
    node_export().source(&[("node", node.name())], move || {
        weak.upgrade().map(|n| n.stats())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats_export::debug_fields;

    #[test]
    fn every_field_is_exported() {
        let names: Vec<&str> = NODE_STATS.iter().map(|f| f.name).collect();
        let fields: Vec<String> = debug_fields(&format!("{:?}", NodeStats::default()))
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(names, fields, "add the new field's row to NODE_STATS");
    }

    #[test]
    #[allow(clippy::needless_update)] // still compiles when a field is added
    fn each_family_reads_its_own_field() {
        // Every field a different number: a family reading another field
        // reads another number.
        let s = NodeStats {
            frames_sent: 1,
            batches_sent: 2,
            frames_lost: 3,
            tells_confirmed: 4,
            tells_refused_by_peer: 5,
            tells_unconfirmed: 6,
            probes_sent: 7,
            acks_sent: 8,
            frames_received: 9,
            link_frames: 10,
            frames_missed: 11,
            unlinked: 12,
            delivered: 13,
            asks_served: 14,
            refused: 15,
            unknown_target: 16,
            unknown_type: 17,
            undecodable: 18,
            bad_frames: 19,
            bad_replies: 20,
            panics: 21,
            links_refused: 22,
            links: 23,
            unauthenticated: 24,
            schema_mismatches: 25,
            tells_lost_to_down: 26,
            receipts_delivered: 27,
            receipts_refused: 28,
            receipts_lost: 29,
            receipts_unknown: 30,
            receipts_waiting: 31,
            receipts_issued: 32,
            ..NodeStats::default()
        };
        for (field, v) in debug_fields(&format!("{s:?}")) {
            let fam = NODE_STATS
                .iter()
                .find(|f| f.name == field)
                .expect("exported");
            assert_eq!((fam.value)(&s), v, "{field}");
        }
    }
}
