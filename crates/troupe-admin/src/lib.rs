//! A management API over HTTP for a Troupe node: health probes for
//! orchestrators, reads of the node, its cluster's members, the shard
//! maps, its entities, its busiest actors and every layer's counters, and
//! the actions the layers' public APIs allow. It reads only the public
//! stats and calls only the public actions of `troupe`, `troupe-remote`,
//! `troupe-cluster` and `troupe-sharding`; the runtime knows nothing of
//! HTTP. It serves (axum) on the process's one tokio runtime, troupe-remote's.
//!
//! ```no_run
//! use std::sync::Arc;
//! use troupe_admin::AdminServer;
//! use troupe_cluster::Cluster;
//!
//! let cluster = Arc::new(Cluster::builder("nats://127.0.0.1:4222", "n1")
//!     .secret(std::env::var("TROUPE_CLUSTER_SECRET")?)
//!     .connect()?);
//! let admin = AdminServer::builder("a-long-secret-token")
//!     .bind("127.0.0.1:9470")
//!     .cluster(&cluster)
//!     .start()?;
//! println!("management API on http://{}", admin.addr());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Security (see `security.rs`): loopback unless asked by name; a bearer
//! token compared in constant time on every route but `/health/*`; a
//! token bucket per server (429); bodies limited (413); no CORS headers;
//! actions check the Origin and a CSRF token header; bad input is a 4xx
//! with `{"error": "..."}`.
//!
//! Routes: `openapi.yaml` beside `Cargo.toml`, served at
//! `GET /api/v1/openapi.yaml`. The web dashboard (`dashboard.rs`) is
//! served at `/` by the same server.
//!
//! ## Layers
//! Lowest first; a file imports only from its own layer or below
//! (`.ci/layers.py`):
//! - guards and assets: `error.rs`, `security.rs`, `target.rs` (what is
//!   served), `dashboard.rs` (the web dashboard's assets, compiled in)
//! - reads and acts: `read/` (one file per layer read), `health.rs`,
//!   `act.rs`, `openapi.rs`
//! - server: `router.rs`, `server.rs`
#![warn(missing_docs)]

pub mod act;
pub mod dashboard;
pub mod error;
pub mod health;
pub mod openapi;
pub mod read;
pub mod router;
pub mod security;
pub mod server;
pub mod target;

pub use error::ApiError;
pub use security::CSRF_HEADER;
pub use server::{AdminBuilder, AdminServer, StartError};
pub use target::ShardingView;
