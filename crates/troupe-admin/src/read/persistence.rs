//! Persistence, as troupe-persistence's process-wide
//! [`stats`](fn@troupe_persistence::stats) tells it: failed writes, and those
//! no one was told of.

use serde_json::Value;

use super::counters;

/// The process's persistence counters (`PersistenceStats`, by field name).
pub fn stats() -> Value {
    Value::Object(counters(&format!("{:?}", troupe_persistence::stats())))
}
