//! The actions (`POST /api/v1/actions/...`), each through the layers'
//! public APIs:
//!
//! - `leave`: runs the application's leave hook once
//!   ([`AdminBuilder::on_leave`](crate::AdminBuilder::on_leave)); a graceful
//!   leave consumes the application's `Sharding` (`Sharding::leave(self)`)
//!   and `Cluster` (its drop says goodbye), which this crate does not own.
//! - `passivate`: `Sharding::passivate` on this node (404 if the kind is
//!   unknown or the entity does not run here).
//! - `down`: a cluster verdict first
//!   ([`Cluster::mark_down`](troupe_cluster::Cluster::mark_down): every
//!   node declares the node down, not only this one), then the sharding
//!   control below; refused for this node itself.
//! - `drain`, `undrain`, `down`, `rebalancing/pause`,
//!   `rebalancing/resume`: troupe-sharding's operator controls
//!   ([`troupe_sharding::controls`]), written to the ownership store that
//!   every node's coordinator reads at each tick, for every sharded kind
//!   the server reports (or the one named by `kind`). So an action on any
//!   node acts on the whole cluster: a node drained hands its shards over;
//!   a node marked down is taken over by the others while it may still
//!   run (after the lease wait that keeps one owner at a time); `undrain`
//!   lifts both; a pause keeps owned shards where they are and gives a
//!   node that joins none until the resume. Marking down
//!   is the sharding layer's: troupe-cluster's own view of its peers comes
//!   from heartbeats only, and no remote call can overrule it.
//!
//! Every action is behind the bearer token, the Origin check and the
//! CSRF token (`security.rs`); bad input is a 400 before anything is
//! written.

use serde::Deserialize;
use serde_json::{json, Value};

use axum::http::StatusCode;
use troupe_sharding::controls;
use troupe_sharding::ownership::StoreError;

use crate::error::ApiError;
use crate::target::{Kind, Target};

/// The body of an action that names a node.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeBody {
    /// The node's name.
    pub node: String,
    /// The sharded kind to act on (default: every kind served).
    #[serde(default)]
    pub kind: Option<String>,
}

/// The body of `rebalancing/{pause,resume}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KindBody {
    /// The sharded kind to act on (default: every kind served).
    #[serde(default)]
    pub kind: Option<String>,
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
            StatusCode::CONFLICT,
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

/// The kinds an action applies to: the one named, or every kind served.
fn kinds<'a>(t: &'a Target, kind: &Option<String>) -> Result<Vec<&'a Kind>, ApiError> {
    let chosen: Vec<&Kind> = match kind {
        Some(k) => t.kinds.iter().filter(|x| &x.name == k).collect(),
        None => t.kinds.iter().collect(),
    };
    if chosen.is_empty() {
        return Err(match kind {
            Some(k) => ApiError::not_found(format!("no sharded kind {k:?}")),
            None => ApiError::not_found("this server reports no sharded kind"),
        });
    }
    Ok(chosen)
}

fn store_failed(kind: &str, e: StoreError) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("kind {kind:?}: the ownership store refused the write: {e}"),
    )
}

/// Applies `f` to each kind; the names of those done.
fn each(
    t: &Target,
    kind: &Option<String>,
    f: impl Fn(&Kind) -> Result<(), StoreError>,
) -> Result<Vec<String>, ApiError> {
    let mut done = Vec::new();
    for k in kinds(t, kind)? {
        f(k).map_err(|e| store_failed(&k.name, e))?;
        done.push(k.name.clone());
    }
    Ok(done)
}

/// Marks a node down for the whole cluster (blocking): a cluster
/// verdict ([`Cluster::mark_down`](troupe_cluster::Cluster::mark_down):
/// every node declares the incarnation it holds alive down at once), and
/// in every sharded kind served (or `kind`) the sharding control that
/// keeps it from owning shards until it is undrained or restarts. A node
/// no longer held alive (killed, gone) is only marked in the kinds. This
/// node itself is refused (409): a node leaves, it is not marked down.
pub fn down(t: &Target, b: &NodeBody) -> Result<Value, ApiError> {
    node_name(b)?;
    if let Some(c) = t.cluster.as_deref() {
        if c.name() == b.node {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                format!(
                    "{:?} is this node: a node does not mark itself down; \
                     POST /api/v1/actions/leave here, or mark it down from another node",
                    b.node
                ),
            ));
        }
    }
    let cluster = match t.cluster.as_deref() {
        None => Value::Null,
        Some(c) => match c.mark_down(&b.node) {
            Ok(inc) => json!({
                "declared_down": true,
                "incarnation": inc,
                "incarnation_hex": format!("{inc:016x}"),
            }),
            Err(troupe_cluster::ClusterError::NotAPeer(_)) => {
                if t.kinds.is_empty() {
                    return Err(ApiError::not_found(format!(
                        "{:?} is not a peer this node holds alive, and no sharded kind is served",
                        b.node
                    )));
                }
                json!({ "declared_down": false, "reason": "not a peer this node holds alive" })
            }
            Err(e) => {
                return Err(ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("the cluster did not send the mark-down: {e}"),
                ))
            }
        },
    };
    let done = if t.kinds.is_empty() && !cluster.is_null() {
        Vec::new()
    } else {
        each(t, &b.kind, |k| {
            controls::mark_down(&*k.store, &k.name, &b.node)
        })?
    };
    tracing::warn!(node = %b.node, kinds = ?done, "management API: node marked down");
    Ok(json!({ "down": b.node, "cluster": cluster, "kinds": done }))
}

/// Drains (`on`) or undrains a node's shards (blocking: writes the store).
pub fn drain(t: &Target, b: &NodeBody, on: bool) -> Result<Value, ApiError> {
    node_name(b)?;
    let done = each(t, &b.kind, |k| {
        controls::set_drained(&*k.store, &k.name, &b.node, on)
    })?;
    tracing::info!(node = %b.node, drained = on, kinds = ?done, "management API: drain");
    Ok(json!({ "node": b.node, "drained": on, "kinds": done }))
}

/// Pauses (`on`) or resumes rebalancing (blocking: writes the store).
pub fn rebalancing(t: &Target, b: &KindBody, on: bool) -> Result<Value, ApiError> {
    let done = each(t, &b.kind, |k| controls::set_paused(&*k.store, &k.name, on))?;
    tracing::info!(paused = on, kinds = ?done, "management API: rebalancing");
    Ok(json!({ "paused": on, "kinds": done }))
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
