//! Sharded kinds, as troupe-sharding's public API tells them: the shard
//! map (each shard's owner and fencing revision, read from the ownership
//! store), this node's entities and their count per shard, whether the
//! kind is settled, and its counters
//! ([`ShardingStats`](troupe_sharding::ShardingStats)).
//!
//! The operators' controls (drained, down, paused) are read from the
//! same store.
//!
//! Entity counts are known for this node's shards only (each node counts
//! its own); hand-overs in progress are not in the public API, so the
//! map gives `settled` and the hand-over counters instead.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use troupe_sharding::controls;

use super::counters;
use crate::target::Kind;

/// The kind's shard map: one row per shard, with this node's entity count.
pub fn shard_map(kind: &Kind, node: &str) -> Value {
    let mut local: BTreeMap<u32, u64> = BTreeMap::new();
    for id in kind.view.local_entities() {
        *local.entry(kind.view.shard_of(&id)).or_default() += 1;
    }
    let (owners, error) = match kind.store.owners(&kind.name, kind.shards) {
        Ok(o) => (o, Value::Null),
        Err(e) => (Vec::new(), Value::from(e.to_string())),
    };
    let shards: Vec<Value> = owners
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let shard = u32::try_from(i).unwrap_or(u32::MAX);
            let here = o.node.as_deref() == Some(node);
            json!({
                "shard": shard,
                "owner": o.node,
                "revision": o.revision,
                "entities": if here { Value::from(local.get(&shard).copied().unwrap_or(0)) } else { Value::Null },
            })
        })
        .collect();
    let members = match kind.store.members(&kind.name) {
        Ok((m, _)) => Value::from(m),
        Err(_) => Value::Null,
    };
    json!({
        "kind": kind.name,
        "shards": kind.shards,
        "settled": kind.view.settled(),
        "members": members,
        "controls": controls(kind),
        "map": shards,
        "store_error": error,
    })
}

/// The kind's entities on this node.
pub fn entities(kind: &Kind) -> Value {
    let ids = kind.view.local_entities();
    let rows: Vec<Value> = ids
        .iter()
        .map(|id| json!({ "id": id, "shard": kind.view.shard_of(id) }))
        .collect();
    json!({ "kind": kind.name, "count": rows.len(), "entities": rows })
}

/// The kind's counters (`ShardingStats`, by field name).
pub fn stats(kind: &Kind) -> Value {
    Value::Object(counters(&format!("{:?}", kind.view.stats())))
}

/// Whether this node is a member of the kind's placement and neither
/// drained nor marked down (so it owns or may own shards); `Err` with the
/// reason when it is not or the store is down.
pub fn member(kind: &Kind, node: &str) -> Result<(), String> {
    match kind.store.members(&kind.name) {
        Ok((m, _)) if m.iter().any(|n| n == node) => {}
        Ok(_) => return Err(format!("not a member of sharded kind {:?}", kind.name)),
        Err(e) => return Err(format!("kind {:?}: {e}", kind.name)),
    }
    match controls::read(&*kind.store, &kind.name) {
        Ok(c) if c.is_down(node) => Err(format!("marked down in sharded kind {:?}", kind.name)),
        Ok(c) if !c.serves(node) => Err(format!("drained in sharded kind {:?}", kind.name)),
        Ok(_) => Ok(()),
        Err(e) => Err(format!("kind {:?}: {e}", kind.name)),
    }
}

/// The kind's operator controls (troupe-sharding's `controls`): paused,
/// the nodes drained and those marked down.
pub fn controls(kind: &Kind) -> Value {
    match controls::read(&*kind.store, &kind.name) {
        Ok(c) => json!({
            "kind": kind.name,
            "paused": c.paused,
            "drained": c.drained,
            "down": c.down,
        }),
        Err(e) => json!({ "kind": kind.name, "error": e.to_string() }),
    }
}
