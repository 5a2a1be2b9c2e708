//! Sharded kinds, as troupe-sharding's public API tells them: the shard
//! map (each shard's owner and fencing revision, read from the ownership
//! store), this node's entities and their count per shard, whether the
//! kind is settled, and its counters
//! ([`ShardingStats`](troupe_sharding::ShardingStats)).
//!
//! The operators' controls (drained, down, paused) are read from the
//! same store.
//!
//! Entity counts: this node counts its own shards' entities; those of
//! shards other nodes own are asked of the owners through the cluster
//! (`owners.rs`) and merged in by [`merge_owners`]; each row says where
//! its count comes from (`entities_from`: `this_node`, `owner`, or
//! `unknown` when the owner did not answer in time, `none` for a shard
//! no one owns). Hand-overs in progress: each node's own (troupe-sharding's
//! [`Sharding::handovers`](troupe_sharding::Sharding::handovers)), this
//! node's and, merged in the same way, the other owners'; a row carries
//! `moving` (its phases) and the kind a `handovers` list.

use std::collections::BTreeSet;

use serde_json::{json, Value};
use troupe_sharding::controls;

use super::counters;
use super::owners::{local_counts, local_moving, Answers, Moving};
use crate::target::Kind;

fn moving_json(node: &str, m: &Moving) -> Value {
    json!({
        "shard": m.shard,
        "node": node,
        "phase": m.phase,
        "to": m.to,
        "moving_ms": m.moving_ms,
        "wait_left_ms": m.wait_left_ms,
    })
}

/// The kind's shard map: one row per shard, with this node's entity
/// counts and hand-overs; and the other owners (to ask, `owners.rs`).
pub fn shard_map(kind: &Kind, node: &str) -> (Value, BTreeSet<String>) {
    let local = local_counts(&*kind.view);
    let (owners, error) = match kind.store.owners(&kind.name, kind.shards) {
        Ok(o) => (o, Value::Null),
        Err(e) => (Vec::new(), Value::from(e.to_string())),
    };
    let moving = local_moving(&*kind.view);
    let mut others = BTreeSet::new();
    let shards: Vec<Value> = owners
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let shard = u32::try_from(i).unwrap_or(u32::MAX);
            let here = o.node.as_deref() == Some(node);
            let (entities, from) = match o.node.as_deref() {
                None => (Value::Null, "none"),
                Some(_) if here => (
                    Value::from(local.get(&shard).copied().unwrap_or(0)),
                    "this_node",
                ),
                Some(other) => {
                    others.insert(other.to_string());
                    (Value::Null, "unknown")
                }
            };
            let phases: Vec<Value> = moving
                .iter()
                .filter(|m| m.shard == shard)
                .map(|m| moving_json(node, m))
                .collect();
            json!({
                "shard": shard,
                "owner": o.node,
                "revision": o.revision,
                "entities": entities,
                "entities_from": from,
                "moving": phases,
            })
        })
        .collect();
    let members = match kind.store.members(&kind.name) {
        Ok((m, _)) => Value::from(m),
        Err(_) => Value::Null,
    };
    let v = json!({
        "kind": kind.name,
        "shards": kind.shards,
        "settled": kind.view.settled(),
        "members": members,
        "controls": controls(kind),
        "map": shards,
        "handovers": moving.iter().map(|m| moving_json(node, m)).collect::<Vec<_>>(),
        "owners_asked": 0,
        "owners_answered": 0,
        "store_error": error,
    });
    (v, others)
}

/// Merges the other owners' answers (`owners.rs`) into a kind's shard
/// map: each of their shards' count (`entities_from: owner`) and their
/// hand-overs.
pub fn merge_owners(map: &mut Value, asked: usize, answers: &Answers) {
    let Some(kind) = map["kind"].as_str().map(str::to_string) else {
        return;
    };
    let mut answered = 0u64;
    let mut extra = Vec::new();
    if let Some(rows) = map["map"].as_array_mut() {
        for (node, kinds) in answers {
            let Some((counts, moving)) = kinds.get(&kind) else {
                continue;
            };
            answered += 1;
            for row in rows.iter_mut() {
                let Some(shard) = row["shard"].as_u64().and_then(|s| u32::try_from(s).ok()) else {
                    continue;
                };
                if row["owner"].as_str() == Some(node.as_str()) {
                    row["entities"] = Value::from(counts.get(&shard).copied().unwrap_or(0));
                    row["entities_from"] = Value::from("owner");
                }
                for m in moving.iter().filter(|m| m.shard == shard) {
                    let j = moving_json(node, m);
                    if let Some(p) = row["moving"].as_array_mut() {
                        p.push(j.clone());
                    }
                    extra.push(j);
                }
            }
        }
    }
    if let Some(h) = map["handovers"].as_array_mut() {
        h.extend(extra);
    }
    map["owners_asked"] = Value::from(asked);
    map["owners_answered"] = Value::from(answered);
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
