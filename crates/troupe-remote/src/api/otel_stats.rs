//! A [`StatsExport`]'s families as OpenTelemetry observable instruments
//! (feature `otel`): [`register_stats`], the same shape as the runtime
//! metrics' [`register_metrics`](crate::telemetry::register_metrics).
//!
//! Invariants:
//! * one instrument per family, named as the module docs of
//!   [`stats_export`](crate::stats_export) say, a counter or a gauge as the
//!   family's [`Kind`] says, with the family's help and unit;
//! * one read of the sources serves every instrument of one collection: the
//!   first callback takes it, the others reuse it while it is younger than
//!   [`SNAPSHOT_REUSE`] (so the figures of one collection are of one
//!   moment, and the sources are read once per collection);
//! * the callbacks hold a clone of the export (its sources, not what the
//!   sources read: a node dropped since is left out).

use super::otel_metrics::SNAPSHOT_REUSE;
use crate::stats_export::{Kind, StatsExport};
use opentelemetry::metrics::Meter;
use opentelemetry::KeyValue;
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::Instant;

/// One read of every source, laid out for the callbacks.
struct Read<S> {
    taken: Instant,
    rows: Vec<(Vec<KeyValue>, S)>,
}

struct Cached<S: 'static> {
    export: StatsExport<S>,
    last: Mutex<Option<Arc<Read<S>>>>,
}

impl<S: 'static> Cached<S> {
    fn read(&self) -> Arc<Read<S>> {
        let mut last = self.last.lock();
        if let Some(r) = last.as_ref() {
            if r.taken.elapsed() < SNAPSHOT_REUSE {
                return r.clone();
            }
        }
        let rows = self
            .export
            .read()
            .into_iter()
            .map(|(labels, s)| {
                let attrs = labels
                    .into_iter()
                    .map(|(k, v)| KeyValue::new(k, v))
                    .collect();
                (attrs, s)
            })
            .collect();
        let r = Arc::new(Read {
            taken: Instant::now(),
            rows,
        });
        *last = Some(r.clone());
        r
    }
}

/// Registers `export`'s families on `meter` as observable instruments;
/// returns how many (one per family). The names are the Prometheus
/// export's in OpenTelemetry's form: `troupe_remote_frames_sent` (served as
/// `troupe_remote_frames_sent_total`) is `troupe.remote.frames_sent` with
/// unit `{frame}`; the attributes are the export's labels (`node`, ...).
///
/// ```
/// # fn f(node: std::sync::Arc<troupe_remote::Node>) {
/// use troupe_remote::telemetry::{opentelemetry::metrics::MeterProvider as _, opentelemetry_sdk};
///
/// let provider = opentelemetry_sdk::metrics::SdkMeterProvider::builder().build();
/// let export = troupe_remote::node_metrics::node_metrics(&node);
/// let n = troupe_remote::telemetry::register_stats(&export, &provider.meter("troupe"));
/// assert_eq!(n, troupe_remote::node_metrics::NODE_STATS.len());
/// # }
/// ```
pub fn register_stats<S: Send + Sync + 'static>(export: &StatsExport<S>, meter: &Meter) -> usize {
    let cached = Arc::new(Cached {
        export: export.clone(),
        last: Mutex::new(None),
    });
    let dotted = export.prefix().replace('_', ".");
    for fam in export.families() {
        let name = format!("{dotted}.{}", fam.name);
        let (src, value) = (cached.clone(), fam.value);
        match fam.kind {
            Kind::Counter => {
                meter
                    .u64_observable_counter(name)
                    .with_description(fam.help)
                    .with_unit(fam.unit)
                    .with_callback(move |o| {
                        for (attrs, s) in &src.read().rows {
                            o.observe(value(s), attrs);
                        }
                    })
                    .build();
            }
            Kind::Gauge => {
                meter
                    .u64_observable_gauge(name)
                    .with_description(fam.help)
                    .with_unit(fam.unit)
                    .with_callback(move |o| {
                        for (attrs, s) in &src.read().rows {
                            o.observe(value(s), attrs);
                        }
                    })
                    .build();
            }
        }
    }
    export.families().len()
}
