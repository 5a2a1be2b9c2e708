//! The schema export: a node's exposed actors and the remote types each
//! takes, as one JSON document, for processes in other languages (and
//! their code generators) to read.
//!
//! It is written from the handlers `expose` installed and from the same
//! serde trace the fingerprints digest ([`schema::describe`]), so what it
//! says is what the node checks. The document's layout is specified in
//! `docs/protocol.md`, "Schema export"; ids and fingerprints are
//! `0x`-prefixed 16-digit hex strings (a JSON number cannot hold a u64 in
//! JavaScript).
//!
//! Invariants:
//! - Deterministic: actors sorted by name, types by stable name, so two
//!   exports of one node compare equal.
//! - Read under the target table's read lock, which the inbox also takes
//!   for reading; each type is traced afresh (rare: an operator's call).

use serde_json::{json, Value};

use crate::protocol::core::Core;
use crate::protocol::message::type_id;
use crate::protocol::schema::TypeShape;

/// The format tag of the document this file writes.
pub const SCHEMA_FORMAT: &str = "troupe.schema.v1";

fn hex(v: u64) -> String {
    format!("{v:#018x}")
}

fn shape_json(s: &TypeShape) -> Value {
    json!({ "shape": s.shape, "fingerprint": hex(s.fingerprint), "tree": s.tree })
}

/// The schema document of `core`'s exposed actors.
pub(crate) fn export(core: &Core) -> Value {
    let targets = core.targets.read();
    let mut actors: Vec<Value> = targets
        .values()
        .map(|target| {
            let mut types: Vec<Value> = target
                .by_type
                .iter()
                .map(|(id, h)| {
                    let entry = h.entry;
                    let body = h.describe.map(|d| d());
                    let mut t = json!({
                        "name": entry.map_or("?", |e| e.name),
                        "type_id": hex(*id),
                        "rust_type": entry.map_or("?", |e| e.rust_type),
                        "shape": body.as_ref().map_or(Value::Null, shape_json),
                        "tell": Value::Null,
                        "ask": Value::Null,
                    });
                    if h.tell.is_some() {
                        t["tell"] = json!({
                            "fingerprint": hex(h.tell_schema),
                            "portable": h.tell_portable.is_some(),
                        });
                    }
                    if h.ask.is_some() {
                        let reply = h.describe_reply.map(|d| d());
                        t["ask"] = json!({
                            "fingerprint": hex(h.ask_schema),
                            "portable": h.ask_portable.is_some(),
                            "reply": reply.as_ref().map_or(Value::Null, shape_json),
                        });
                    }
                    t
                })
                .collect();
            types.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
            json!({
                "name": target.name,
                "target_id": hex(type_id(&target.name)),
                "types": types,
            })
        })
        .collect();
    drop(targets);
    actors.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    json!({
        "format": SCHEMA_FORMAT,
        "cluster": core.cluster,
        "node": &*core.name,
        "subject": crate::protocol::core::node_subject(&core.cluster, &core.name),
        "actors": actors,
    })
}
