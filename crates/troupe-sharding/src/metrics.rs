//! [`ShardingStats`] to Prometheus and OpenTelemetry: the list of its
//! families ([`SHARDING_STATS`], one row per field) and
//! [`sharding_metrics`], an export reading a sharding's public snapshot
//! ([`Sharding::stats`]) at every scrape or collection. The mechanism is
//! troupe-remote's [`stats_export`](troupe_remote::stats_export): register
//! an export in a `prometheus-client` registry as a collector, or (feature
//! `otel`) on a meter with `troupe_remote::telemetry::register_stats`.
//!
//! Families are named `troupe_sharding_<field>`, labelled
//! `node="<node>", sharding="<type name>"`; counters are served with
//! `_total`, the two gauges (`troupe_sharding_entities_active`,
//! `troupe_sharding_shards_owned`) without. **A new field of
//! `ShardingStats` is exported by adding its row to [`SHARDING_STATS`]**;
//! the test `every_field_is_exported` fails until it is.
//!
//! ```
//! # fn f<A: troupe::Actor>(cluster: std::sync::Arc<troupe_cluster::Cluster>, counters: std::sync::Arc<troupe_sharding::Sharding<A>>) {
//! use troupe::observability::prometheus_client::registry::Registry;
//!
//! let mut registry = Registry::default();
//! let export = troupe_sharding::metrics::sharding_metrics(&counters, cluster.name(), "counter");
//! registry.register_collector(Box::new(export));
//! # }
//! ```

use crate::{Sharding, ShardingStats};
use std::sync::Arc;
use troupe::Actor;
use troupe_remote::stats_export::{Family, Kind, StatsExport};

/// The Prometheus prefix of the sharding's families.
pub const PREFIX: &str = "troupe_sharding";

/// Every field of [`ShardingStats`], in its order: one family each.
pub const SHARDING_STATS: &[Family<ShardingStats>] = &[
    Family {
        name: "activations",
        help: "Entities started on this node.",
        kind: Kind::Counter,
        unit: "{entity}",
        value: |s| s.activations,
    },
    Family {
        name: "passivations",
        help: "Entities stopped here for idleness.",
        kind: Kind::Counter,
        unit: "{entity}",
        value: |s| s.passivations,
    },
    Family {
        name: "handover_stops",
        help: "Entities stopped here for a hand-over or a lost shard.",
        kind: Kind::Counter,
        unit: "{entity}",
        value: |s| s.handover_stops,
    },
    Family {
        name: "handover_kills",
        help: "Entities killed here because a leave's hand-over timed out.",
        kind: Kind::Counter,
        unit: "{entity}",
        value: |s| s.handover_kills,
    },
    Family {
        name: "entities_active",
        help: "Entities running here now.",
        kind: Kind::Gauge,
        unit: "{entity}",
        value: |s| s.entities_active,
    },
    Family {
        name: "shards_owned",
        help: "Shards this node owns now.",
        kind: Kind::Gauge,
        unit: "{shard}",
        value: |s| s.shards_owned,
    },
    Family {
        name: "claims",
        help: "Shards claimed (free or released ones).",
        kind: Kind::Counter,
        unit: "{shard}",
        value: |s| s.claims,
    },
    Family {
        name: "takeovers",
        help: "Shards claimed from a node that was down.",
        kind: Kind::Counter,
        unit: "{shard}",
        value: |s| s.takeovers,
    },
    Family {
        name: "handovers",
        help: "Shards released to another node after their entities stopped.",
        kind: Kind::Counter,
        unit: "{shard}",
        value: |s| s.handovers,
    },
    Family {
        name: "shards_lost",
        help: "Shards this node found owned by another (fenced out).",
        kind: Kind::Counter,
        unit: "{shard}",
        value: |s| s.shards_lost,
    },
    Family {
        name: "fencing_refusals",
        help: "Activations refused because the fencing token was no longer current.",
        kind: Kind::Counter,
        unit: "{activation}",
        value: |s| s.fencing_refusals,
    },
    Family {
        name: "conflicts",
        help: "Claims or releases that lost a revision race.",
        kind: Kind::Counter,
        unit: "{call}",
        value: |s| s.conflicts,
    },
    Family {
        name: "store_errors",
        help: "Ownership store calls that failed.",
        kind: Kind::Counter,
        unit: "{call}",
        value: |s| s.store_errors,
    },
    Family {
        name: "tells",
        help: "Tells sent by entity references on this node.",
        kind: Kind::Counter,
        unit: "{tell}",
        value: |s| s.tells,
    },
    Family {
        name: "asks",
        help: "Asks sent by entity references on this node.",
        kind: Kind::Counter,
        unit: "{ask}",
        value: |s| s.asks,
    },
    Family {
        name: "tells_confirmed_sent",
        help: "Of tells: those sent with a receipt (EntityRef::tell_confirmed).",
        kind: Kind::Counter,
        unit: "{tell}",
        value: |s| s.tells_confirmed_sent,
    },
    Family {
        name: "delivered",
        help: "Messages handed to a local entity.",
        kind: Kind::Counter,
        unit: "{message}",
        value: |s| s.delivered,
    },
    Family {
        name: "delivered_direct",
        help: "Of delivered, remote tells the node's inbox handed to their entity directly.",
        kind: Kind::Counter,
        unit: "{message}",
        value: |s| s.delivered_direct,
    },
    Family {
        name: "forwarded",
        help: "Envelopes forwarded to another node's region.",
        kind: Kind::Counter,
        unit: "{envelope}",
        value: |s| s.forwarded,
    },
    Family {
        name: "buffered",
        help: "Envelopes buffered while their shard had no owner here.",
        kind: Kind::Counter,
        unit: "{envelope}",
        value: |s| s.buffered,
    },
    Family {
        name: "buffer_full",
        help: "Envelopes refused because the buffer was full.",
        kind: Kind::Counter,
        unit: "{envelope}",
        value: |s| s.buffer_full,
    },
    Family {
        name: "expired",
        help: "Buffered envelopes that outlived the buffer timeout.",
        kind: Kind::Counter,
        unit: "{envelope}",
        value: |s| s.expired,
    },
    Family {
        name: "hops_exceeded",
        help: "Envelopes refused after MAX_HOPS forwards, reaching a region that does not own their shard.",
        kind: Kind::Counter,
        unit: "{envelope}",
        value: |s| s.hops_exceeded,
    },
    Family {
        name: "bad_envelopes",
        help: "Envelopes with a bad id or hop count.",
        kind: Kind::Counter,
        unit: "{envelope}",
        value: |s| s.bad_envelopes,
    },
    Family {
        name: "unknown_types",
        help: "Envelopes of a message type this sharding does not take.",
        kind: Kind::Counter,
        unit: "{envelope}",
        value: |s| s.unknown_types,
    },
    Family {
        name: "undecodable",
        help: "Payloads that did not decode.",
        kind: Kind::Counter,
        unit: "{message}",
        value: |s| s.undecodable,
    },
    Family {
        name: "entity_gone",
        help: "Tells lost because their entity stopped between the check and the send.",
        kind: Kind::Counter,
        unit: "{tell}",
        value: |s| s.entity_gone,
    },
    Family {
        name: "entities_refused",
        help: "Envelopes refused because the entity table was full (max_entities).",
        kind: Kind::Counter,
        unit: "{envelope}",
        value: |s| s.entities_refused,
    },
    Family {
        name: "redelivered",
        help: "Messages a stopped entity left in its mailbox, handed to its next instance.",
        kind: Kind::Counter,
        unit: "{message}",
        value: |s| s.redelivered,
    },
    Family {
        name: "mailbox_dropped",
        help: "Messages in an entity's mailbox that no instance will handle (lost shard, kill).",
        kind: Kind::Counter,
        unit: "{message}",
        value: |s| s.mailbox_dropped,
    },
    Family {
        name: "evictions",
        help: "Least recently used entities passivated to make room (max_entities).",
        kind: Kind::Counter,
        unit: "{entity}",
        value: |s| s.evictions,
    },
];

/// An export of [`SHARDING_STATS`] with no source yet.
pub fn sharding_export() -> StatsExport<ShardingStats> {
    StatsExport::new(PREFIX, SHARDING_STATS)
}

/// An export of `sharding`'s stats on this node, labelled
/// `node="<node>", sharding="<name>"` (the name it was started under, e.g.
/// `cluster.sharding("counter", ..)`). It holds the sharding weakly: once
/// it is dropped (and has left), its series leave the scrape. Several
/// shardings: [`StatsExport::merge`].
pub fn sharding_metrics<A: Actor>(
    sharding: &Arc<Sharding<A>>,
    node: &str,
    name: &str,
) -> StatsExport<ShardingStats> {
    let weak = Arc::downgrade(sharding);
    sharding_export().source(&[("node", node), ("sharding", name)], move || {
        weak.upgrade().map(|s| s.stats())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_remote::stats_export::debug_fields;

    #[test]
    fn every_field_is_exported() {
        let names: Vec<&str> = SHARDING_STATS.iter().map(|f| f.name).collect();
        let fields: Vec<String> = debug_fields(&format!("{:?}", ShardingStats::default()))
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(names, fields, "add the new field's row to SHARDING_STATS");
    }

    #[test]
    #[allow(clippy::field_reassign_with_default)] // still compiles when a field is added
    fn each_family_reads_its_own_field() {
        // Every field a different number: a family reading another field
        // reads another number.
        let mut s = ShardingStats::default();
        s.activations = 1;
        s.passivations = 2;
        s.handover_stops = 3;
        s.entities_active = 4;
        s.shards_owned = 5;
        s.claims = 6;
        s.takeovers = 7;
        s.handovers = 8;
        s.shards_lost = 9;
        s.fencing_refusals = 10;
        s.conflicts = 11;
        s.store_errors = 12;
        s.tells = 13;
        s.asks = 14;
        s.delivered = 15;
        s.delivered_direct = 16;
        s.forwarded = 17;
        s.buffered = 18;
        s.buffer_full = 19;
        s.expired = 20;
        s.bad_envelopes = 21;
        s.unknown_types = 22;
        s.undecodable = 23;
        s.entity_gone = 24;
        s.entities_refused = 25;
        s.handover_kills = 26;
        s.hops_exceeded = 27;
        s.tells_confirmed_sent = 28;
        s.redelivered = 29;
        s.mailbox_dropped = 30;
        s.evictions = 31;
        for (field, v) in debug_fields(&format!("{s:?}")) {
            let fam = SHARDING_STATS
                .iter()
                .find(|f| f.name == field)
                .expect("exported");
            assert_eq!((fam.value)(&s), v, "{field}");
        }
    }
}
