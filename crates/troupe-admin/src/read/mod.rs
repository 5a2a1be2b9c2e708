//! The reads under `/api/v1/`, one module per layer read (so that a change
//! of one layer's public API touches one file): `node.rs` (troupe-remote's
//! node), `cluster.rs` (membership), `sharding.rs` (shard map, entities), `owners.rs` (entity counts asked of
//! the other owners through the cluster),
//! `actors.rs` (the actor system's observability snapshots),
//! `persistence.rs` (troupe-persistence's process-wide counters),
//! `registry.rs` (the cluster registry's names and groups),
//! `workers.rs` (what each worker runs; stalls and ask cycles).
//!
//! Reads that call a blocking API (the ownership store, a region's list
//! of entities) run on the runtime's blocking pool ([`blocking`]): the
//! layers' blocking calls must not run on the I/O runtime's own threads.

pub mod actors;
pub mod cluster;
pub mod node;
pub mod owners;
pub mod persistence;
pub mod registry;
pub mod sharding;
pub mod workers;

use axum::http::StatusCode;
use serde_json::{Map, Value};

use crate::error::ApiError;

/// Runs `f` on the blocking pool; a panic in it is a 500, not a crash.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the read failed: {e}"),
        )
    })
}

/// A stats struct's counters as a JSON object, named as its fields: read
/// from its `Debug` form (`Name { a: 1, b: 2 }`), so that a counter a
/// layer adds appears here with no change to this crate. Fields whose
/// value is not an unsigned integer are left out.
pub fn counters(debug: &str) -> Map<String, Value> {
    let mut out = Map::new();
    let inner = match (debug.find('{'), debug.rfind('}')) {
        (Some(a), Some(b)) if a < b => &debug[a + 1..b],
        _ => return out,
    };
    for field in inner.split(',') {
        if let Some((k, v)) = field.split_once(':') {
            if let Ok(n) = v.trim().parse::<u64>() {
                out.insert(k.trim().to_string(), Value::from(n));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::counters;

    #[test]
    fn counters_read_every_integer_field() {
        let m = counters("S { a: 1, bad_b: 22, name: \"x\" }");
        assert_eq!(m.len(), 2);
        assert_eq!(m["a"], 1);
        assert_eq!(m["bad_b"], 22);
        assert!(counters("nothing").is_empty());
    }
}
