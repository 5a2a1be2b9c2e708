//! The actions (`POST /api/v1/actions/...`), each as far as the layers'
//! public APIs allow:
//!
//! - `leave`: runs the application's leave hook once
//!   ([`AdminBuilder::on_leave`](crate::AdminBuilder::on_leave)); a graceful
//!   leave consumes the application's `Sharding` (`Sharding::leave(self)`)
//!   and `Cluster` (its drop says goodbye), which this crate does not own.
//! - `passivate`: `Sharding::passivate` on this node (404 if the kind is
//!   unknown or the entity does not run here).
//! - `down`, `drain`, `rebalancing/pause`, `rebalancing/resume`: no
//!   public API exists in troupe-cluster or
//!   troupe-sharding yet; each answers 501 naming what is missing, after
//!   checking its input (bad input is still a 400).

use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::target::Target;

/// The body of an action that names a node.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeBody {
    /// The node's name.
    pub node: String,
}

/// The body of `passivate`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EntityBody {
    /// The sharded kind.
    pub kind: String,
    /// The entity's id.
    pub id: String,
}

/// An empty body (`{}`) for actions that take nothing.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

/// Runs the leave hook, once.
pub fn leave(t: &Target) -> Result<Value, ApiError> {
    match t.on_leave.lock().take() {
        Some(hook) => {
            hook();
            Ok(json!({ "leaving": true }))
        }
        None => Err(ApiError::new(
            axum::http::StatusCode::CONFLICT,
            "no leave hook was given, or the node is leaving already",
        )),
    }
}

fn node_name(b: &NodeBody) -> Result<(), ApiError> {
    if troupe_remote::is_token(&b.node) {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "node {:?} must be letters, digits, '_' and '-'",
            b.node
        )))
    }
}

/// Marking a node down: troupe-cluster has no public call for it.
pub fn down(b: &NodeBody) -> Result<Value, ApiError> {
    node_name(b)?;
    Err(ApiError::not_implemented(
        "marking a node down has no public API in troupe-cluster yet",
    ))
}

/// Draining a node's shards: troupe-sharding has no public call for it.
pub fn drain(b: &NodeBody) -> Result<Value, ApiError> {
    node_name(b)?;
    Err(ApiError::not_implemented(
        "draining a node's shards has no public API in troupe-sharding yet (a node drains its own by leaving)",
    ))
}

/// Pausing or resuming rebalancing: no public call for it.
pub fn rebalancing(_: &Empty) -> Result<Value, ApiError> {
    Err(ApiError::not_implemented(
        "pausing and resuming rebalancing have no public API in troupe-sharding yet",
    ))
}

/// Passivates an entity of this node (blocking: asks the region).
pub fn passivate(t: &Target, b: &EntityBody) -> Result<Value, ApiError> {
    let Some(kind) = t.kinds.iter().find(|k| k.name == b.kind) else {
        return Err(ApiError::not_found(format!("no sharded kind {:?}", b.kind)));
    };
    if b.id.is_empty() || b.id.len() > 256 {
        return Err(ApiError::bad_request("an entity id is 1 to 256 bytes"));
    }
    if kind.view.passivate(&b.id) {
        Ok(json!({ "passivated": b.id }))
    } else {
        Err(ApiError::not_found(format!(
            "entity {:?} of {:?} does not run on this node (or messages wait for it)",
            b.id, b.kind
        )))
    }
}
