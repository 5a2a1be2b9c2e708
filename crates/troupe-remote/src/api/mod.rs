//! The API: [`Node`](crate::Node), [`NodeBuilder`](crate::NodeBuilder),
//! [`RemoteRef`](crate::RemoteRef) and [`Exposure`](crate::Exposure). It
//! names no transport type but the [`Transport`](crate::transport::Transport)
//! trait, and reaches the protocol's state through methods only.
//!
//! - `builder.rs`: settings, and connecting over NATS or a given transport.
//! - `node.rs`: the node's methods and its shutdown.
//! - `remote_ref.rs`: tells and asks to a remote actor.
//! - `receipt.rs`: the future of a confirmed tell's outcome.
//! - `expose.rs`: making a local actor reachable.
//! - `runtime.rs`: the process's one I/O runtime, and blocking on it.
//! - `telemetry.rs` (feature `otel`): OpenTelemetry's crates and an OTLP
//!   tracer provider.
//! - `otel_metrics.rs` (feature `otel`): Troupe's metrics as OpenTelemetry
//!   observable instruments.
//! - `stats_export.rs`: a stats snapshot's families to Prometheus (a
//!   `prometheus-client` collector); `otel_stats.rs` (feature `otel`): the
//!   same families as OpenTelemetry instruments; `node_metrics.rs`:
//!   `NodeStats`'s families.

pub(crate) mod builder;
pub(crate) mod expose;
pub(crate) mod node;
pub mod node_metrics;
#[cfg(feature = "otel")]
pub(crate) mod otel_metrics;
#[cfg(feature = "otel")]
pub(crate) mod otel_stats;
pub(crate) mod receipt;
pub(crate) mod remote_ref;
pub mod runtime;
pub mod stats_export;
#[cfg(feature = "otel")]
pub mod telemetry;
