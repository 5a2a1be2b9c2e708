//! The routes, their handlers and the guards around them (see
//! `security.rs` for the guards' order). [`ROUTES`] lists every route
//! served; the OpenAPI document names each (a test checks both ways).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::act;
use crate::dashboard;
use crate::error::ApiError;
use crate::health;
use crate::openapi::OPENAPI_YAML;
use crate::read::{self, actors, cluster, node, owners, persistence, registry, sharding, workers};
use crate::security::{self, json_body, Security};
use crate::target::Target;

/// Every route served: (method, path).
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/health/alive"),
    ("GET", "/health/ready"),
    ("GET", "/api/v1/openapi.yaml"),
    ("GET", "/api/v1/csrf"),
    ("GET", "/api/v1/node"),
    ("GET", "/api/v1/members"),
    ("GET", "/api/v1/shards"),
    ("GET", "/api/v1/entities"),
    ("GET", "/api/v1/actors"),
    ("GET", "/api/v1/stats"),
    ("GET", "/api/v1/workers"),
    ("GET", "/api/v1/controls"),
    ("GET", "/api/v1/registry"),
    ("GET", "/"),
    ("GET", "/dashboard/app.js"),
    ("GET", "/dashboard/style.css"),
    ("POST", "/api/v1/actions/leave"),
    ("POST", "/api/v1/actions/down"),
    ("POST", "/api/v1/actions/drain"),
    ("POST", "/api/v1/actions/undrain"),
    ("POST", "/api/v1/actions/rebalancing/pause"),
    ("POST", "/api/v1/actions/rebalancing/resume"),
    ("POST", "/api/v1/actions/passivate"),
];

/// What the handlers share.
pub struct App {
    /// What is read and acted on.
    pub target: Target,
    /// The guards.
    pub security: Arc<Security>,
}

type AppState = State<Arc<App>>;
type Reply = Result<Json<Value>, ApiError>;

/// The router: health and the dashboard's static assets (which hold no
/// data: the page asks for the token and reads the API with it) outside
/// the bearer guard, everything else inside;
/// the rate guard around all; bodies limited to `body_limit` bytes.
pub fn router(app: Arc<App>, body_limit: usize) -> Router {
    let sec = app.security.clone();
    let api = Router::new()
        .route("/api/v1/openapi.yaml", get(openapi))
        .route("/api/v1/csrf", get(csrf))
        .route("/api/v1/node", get(node_info))
        .route("/api/v1/members", get(members))
        .route("/api/v1/shards", get(shards))
        .route("/api/v1/entities", get(entities))
        .route("/api/v1/actors", get(busiest))
        .route("/api/v1/stats", get(stats))
        .route("/api/v1/workers", get(workers_view))
        .route("/api/v1/controls", get(controls_view))
        .route("/api/v1/registry", get(registry_view))
        .route("/api/v1/actions/leave", post(leave))
        .route("/api/v1/actions/down", post(down))
        .route("/api/v1/actions/drain", post(drain))
        .route("/api/v1/actions/undrain", post(undrain))
        .route("/api/v1/actions/rebalancing/pause", post(pause))
        .route("/api/v1/actions/rebalancing/resume", post(resume))
        .route("/api/v1/actions/passivate", post(passivate))
        .layer(from_fn_with_state(sec.clone(), security::action))
        .layer(from_fn_with_state(sec.clone(), security::bearer));
    Router::new()
        .route("/health/alive", get(alive))
        .route("/health/ready", get(ready))
        .route("/", get(dashboard::index))
        .route("/dashboard/app.js", get(dashboard::script))
        .route("/dashboard/style.css", get(dashboard::style))
        .merge(api)
        .fallback(not_found)
        .method_not_allowed_fallback(not_allowed)
        .layer(axum::extract::DefaultBodyLimit::max(body_limit))
        .layer(from_fn_with_state(sec, security::rate))
        .with_state(app)
}

async fn not_found() -> ApiError {
    ApiError::not_found("no such route (see GET /api/v1/openapi.yaml)")
}

async fn not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method not allowed on this route",
    )
}

async fn alive() -> Json<Value> {
    Json(json!({ "alive": true }))
}

async fn ready(State(app): AppState) -> Response {
    let a = app.clone();
    match read::blocking(move || health::ready(&a.target)).await {
        Ok(Ok(())) => Json(json!({ "ready": true })).into_response(),
        Ok(Err(why)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "ready": false, "reason": why })),
        )
            .into_response(),
        Err(e) => e.into_response(),
    }
}

async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/yaml")], OPENAPI_YAML).into_response()
}

async fn csrf(State(app): AppState) -> Json<Value> {
    Json(json!({ "header": security::CSRF_HEADER, "token": app.security.csrf() }))
}

fn need_cluster(t: &Target) -> Result<&troupe_cluster::Cluster, ApiError> {
    t.cluster
        .as_deref()
        .ok_or_else(|| ApiError::not_found("this node has no cluster"))
}

async fn node_info(State(app): AppState) -> Reply {
    let a = app.clone();
    let health = read::blocking(move || health::ready(&a.target)).await?;
    let t = &app.target;
    Ok(Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "uptime_s": t.started.elapsed().as_secs_f64(),
        "node": t.cluster.as_deref().map(node::identity),
        "ready": health.is_ok(),
        "not_ready_reason": health.err(),
    })))
}

async fn members(State(app): AppState) -> Reply {
    Ok(Json(
        json!({ "members": cluster::members(need_cluster(&app.target)?) }),
    ))
}

async fn registry_view(State(app): AppState) -> Reply {
    Ok(Json(registry::registry(need_cluster(&app.target)?)))
}

async fn shards(State(app): AppState) -> Reply {
    let name = need_cluster(&app.target)?.name().to_string();
    let a = app.clone();
    let read = read::blocking(move || {
        a.target
            .kinds
            .iter()
            .map(|k| sharding::shard_map(k, &name))
            .collect::<Vec<_>>()
    })
    .await?;
    // The other owners' counts and hand-overs, asked through the cluster
    // (`read/owners.rs`), all at once, bounded by its timeout.
    let others: std::collections::BTreeSet<String> =
        read.iter().flat_map(|(_, o)| o.iter().cloned()).collect();
    let kinds: Vec<(String, u32)> = app
        .target
        .kinds
        .iter()
        .map(|k| (k.name.clone(), k.shards))
        .collect();
    let asked = others.len();
    let answers = match (&app.target.cluster, asked) {
        (Some(c), n) if n > 0 => owners::ask_owners(c, others.into_iter().collect(), kinds).await,
        _ => Default::default(),
    };
    let kinds: Vec<Value> = read
        .into_iter()
        .map(|(mut v, _)| {
            sharding::merge_owners(&mut v, asked, &answers);
            v
        })
        .collect();
    Ok(Json(json!({ "kinds": kinds })))
}

async fn entities(State(app): AppState) -> Reply {
    let a = app.clone();
    let kinds = read::blocking(move || {
        a.target
            .kinds
            .iter()
            .map(sharding::entities)
            .collect::<Vec<_>>()
    })
    .await?;
    Ok(Json(json!({ "kinds": kinds })))
}

/// `?top=N` (default 20, at most `actors::MAX_TOP`).
#[derive(Deserialize)]
struct Top {
    top: Option<usize>,
}

async fn busiest(
    State(app): AppState,
    q: Result<Query<Top>, axum::extract::rejection::QueryRejection>,
) -> Reply {
    let Query(q) = q.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let system = app
        .target
        .system
        .clone()
        .ok_or_else(|| ApiError::not_found("no actor system was given to the server"))?;
    let top = q.top.unwrap_or(20);
    Ok(Json(
        read::blocking(move || actors::busiest(&system, top)).await?,
    ))
}

async fn stats(State(app): AppState) -> Reply {
    let t = &app.target;
    let kinds: serde_json::Map<String, Value> = t
        .kinds
        .iter()
        .map(|k| (k.name.clone(), sharding::stats(k)))
        .collect();
    Ok(Json(json!({
        "node": t.cluster.as_deref().map(node::stats),
        "cluster": t.cluster.as_deref().map(cluster::stats),
        "sharding": kinds,
        "system": t.system.as_ref().map(actors::stats),
        "persistence": persistence::stats(),
    })))
}

type Body = Result<Bytes, BytesRejection>;

async fn leave(State(app): AppState, body: Body) -> Reply {
    json_body::<act::Empty>(body)?;
    let a = app.clone();
    Ok(Json(read::blocking(move || act::leave(&a.target)).await??))
}

async fn workers_view(State(app): AppState) -> Reply {
    let system = app
        .target
        .system
        .clone()
        .ok_or_else(|| ApiError::not_found("no actor system was given to the server"))?;
    Ok(Json(
        read::blocking(move || workers::workers(&system)).await?,
    ))
}

async fn controls_view(State(app): AppState) -> Reply {
    let a = app.clone();
    let kinds = read::blocking(move || {
        a.target
            .kinds
            .iter()
            .map(sharding::controls)
            .collect::<Vec<_>>()
    })
    .await?;
    Ok(Json(json!({ "kinds": kinds })))
}

async fn down(State(app): AppState, body: Body) -> Reply {
    let b: act::NodeBody = json_body(body)?;
    let a = app.clone();
    Ok(Json(
        read::blocking(move || act::down(&a.target, &b)).await??,
    ))
}

async fn drain(State(app): AppState, body: Body) -> Reply {
    let b: act::NodeBody = json_body(body)?;
    let a = app.clone();
    Ok(Json(
        read::blocking(move || act::drain(&a.target, &b, true)).await??,
    ))
}

async fn undrain(State(app): AppState, body: Body) -> Reply {
    let b: act::NodeBody = json_body(body)?;
    let a = app.clone();
    Ok(Json(
        read::blocking(move || act::drain(&a.target, &b, false)).await??,
    ))
}

async fn pause(State(app): AppState, body: Body) -> Reply {
    let b: act::KindBody = json_body(body)?;
    let a = app.clone();
    Ok(Json(
        read::blocking(move || act::rebalancing(&a.target, &b, true)).await??,
    ))
}

async fn resume(State(app): AppState, body: Body) -> Reply {
    let b: act::KindBody = json_body(body)?;
    let a = app.clone();
    Ok(Json(
        read::blocking(move || act::rebalancing(&a.target, &b, false)).await??,
    ))
}

async fn passivate(State(app): AppState, body: Body) -> Reply {
    let b: act::EntityBody = json_body(body)?;
    let a = app.clone();
    Ok(Json(
        read::blocking(move || act::passivate(&a.target, &b)).await??,
    ))
}
