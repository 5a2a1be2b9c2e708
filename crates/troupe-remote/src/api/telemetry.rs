//! OpenTelemetry for Troupe (feature `otel`): the crates it is built on,
//! re-exported at the versions it uses, Troupe's metrics as observable
//! instruments on a meter ([`register_metrics`]), and (feature `otlp`) a
//! tracer provider that exports spans to an OTLP/HTTP collector.
//!
//! What a node does with trace context is described in
//! [`trace_context`](crate::trace_context) (the wire) and in the guide's
//! "Tracing" chapter. To see a trace, install `tracing-opentelemetry`'s
//! layer with a tracer from any OpenTelemetry tracer provider, and spawn
//! actors with `SpawnOptions::trace_messages(true)`:
//!
//! ```no_run
//! # #[cfg(feature = "otlp")] {
//! use troupe_remote::telemetry::{otlp_tracer_provider, opentelemetry::trace::TracerProvider as _};
//! use troupe_remote::telemetry::tracing_opentelemetry;
//! use tracing_subscriber::layer::SubscriberExt;
//!
//! // OTEL_EXPORTER_OTLP_ENDPOINT (default http://localhost:4318) says where.
//! let provider = otlp_tracer_provider("my-service").expect("an OTLP exporter");
//! let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("troupe"));
//! tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer)).unwrap();
//! // ... run the nodes; at the end:
//! provider.shutdown().ok();
//! # }
//! ```

pub use super::otel_metrics::{
    register_metrics, register_metrics_capped, MetricsRegistration, SNAPSHOT_REUSE,
};
pub use super::otel_stats::register_stats;
pub use opentelemetry;
pub use opentelemetry_sdk;
pub use tracing_opentelemetry;

/// A tracer provider exporting spans in batches to an OTLP/HTTP (protobuf)
/// collector: Jaeger (port 4318), Grafana Tempo, the OpenTelemetry
/// Collector. The endpoint and headers come from the standard variables
/// (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
/// `OTEL_EXPORTER_OTLP_HEADERS`; default `http://localhost:4318`); the
/// spans carry `service.name` = `service`. Call its `shutdown` before the
/// process exits, so the last batch is sent.
#[cfg(feature = "otlp")]
pub fn otlp_tracer_provider(
    service: &str,
) -> Result<opentelemetry_sdk::trace::SdkTracerProvider, opentelemetry_otlp::ExporterBuildError> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()?;
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(service.to_string())
        .build();
    Ok(opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build())
}
