//! Exporting a stats snapshot (`NodeStats`, and the cluster's and the
//! sharding's, which use this module too) to Prometheus and OpenTelemetry
//! from one list of families: a [`StatsExport`] is a `prometheus-client`
//! [`Collector`] (registered in the user's
//! [`Registry`](prometheus_client::registry::Registry), read at every
//! scrape, like the runtime's
//! [`MetricsCollector`](troupe::observability::MetricsCollector)), and, with
//! the feature `otel`, the same families as observable instruments
//! (`telemetry::register_stats`).
//!
//! Nothing here runs on a message path: a scrape or a collection calls each
//! source (a closure that returns the public snapshot, e.g.
//! [`Node::stats`](crate::Node::stats)) and encodes the copy.
//!
//! Invariants:
//! * a family is one [`Family`] row of its crate's list (name, help, kind,
//!   unit, and a function reading one field): a new counter in a stats
//!   struct is exported by adding one row there, and nothing else changes;
//! * the Prometheus name is `<prefix>_<name>` (`prometheus-client` adds
//!   `_total` to counters); the OpenTelemetry name is the prefix with dots
//!   for underscores, a dot, then `<name>` (`troupe.remote.frames_sent`,
//!   unit `{frame}`), which an OpenTelemetry-to-Prometheus exporter turns
//!   back into the same family name;
//! * one family is written once however many sources an export has (two
//!   nodes in one process are two label sets of one family, never two
//!   families of one name, which the text format forbids);
//! * a source that returns `None` (its node is gone) is left out of that
//!   scrape; the export never keeps what it reads alive.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::fmt;
use std::sync::Arc;
use troupe::observability::prometheus_client;

/// Whether a family counts up or reads a level now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Only grows (Prometheus `counter`, OpenTelemetry observable counter).
    Counter,
    /// A level that goes up and down (`gauge`).
    Gauge,
}

/// One exported figure of a stats snapshot `S`.
pub struct Family<S> {
    /// The name after the export's prefix, in Prometheus form without
    /// `_total` (`frames_sent`).
    pub name: &'static str,
    /// The help text.
    pub help: &'static str,
    /// Counter or gauge.
    pub kind: Kind,
    /// The OpenTelemetry unit (UCUM annotation, e.g. `{frame}`).
    pub unit: &'static str,
    /// Reads the figure from a snapshot.
    pub value: fn(&S) -> u64,
}

impl<S> fmt::Debug for Family<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Family")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .finish()
    }
}

/// A closure returning a snapshot, or `None` when its source is gone.
pub type Source<S> = Arc<dyn Fn() -> Option<S> + Send + Sync>;

/// A source's labels, `(name, value)` pairs.
pub type Labels = Vec<(String, String)>;

/// A stats snapshot's families and the sources that fill them: a
/// `prometheus-client` collector, and (feature `otel`) the source of
/// observable instruments. Cloning shares the sources.
///
/// ```
/// use troupe::observability::prometheus_client::registry::Registry;
/// use troupe_remote::stats_export::{Family, Kind, StatsExport};
///
/// #[derive(Clone, Default)]
/// struct Stats { sent: u64 }
/// const FAMILIES: &[Family<Stats>] = &[Family {
///     name: "sent", help: "Things sent.", kind: Kind::Counter, unit: "{thing}",
///     value: |s| s.sent,
/// }];
/// let export = StatsExport::new("my_app", FAMILIES).source(&[("node", "a")], || Some(Stats { sent: 3 }));
/// assert!(export.render().contains("my_app_sent_total{node=\"a\"} 3"));
/// let mut registry = Registry::default();
/// registry.register_collector(Box::new(export));
/// ```
pub struct StatsExport<S: 'static> {
    prefix: &'static str,
    families: &'static [Family<S>],
    sources: Vec<(Labels, Source<S>)>,
}

impl<S: 'static> Clone for StatsExport<S> {
    fn clone(&self) -> Self {
        StatsExport {
            prefix: self.prefix,
            families: self.families,
            sources: self.sources.clone(),
        }
    }
}

impl<S: 'static> fmt::Debug for StatsExport<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StatsExport")
            .field("prefix", &self.prefix)
            .field("families", &self.families.len())
            .field(
                "sources",
                &self.sources.iter().map(|(l, _)| l).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl<S: 'static> StatsExport<S> {
    /// An export of `families` named `<prefix>_<family>`, with no source yet.
    pub fn new(prefix: &'static str, families: &'static [Family<S>]) -> Self {
        StatsExport {
            prefix,
            families,
            sources: Vec::new(),
        }
    }

    /// Adds a source: its snapshot's figures carry `labels`.
    pub fn source(
        mut self,
        labels: &[(&str, &str)],
        f: impl Fn() -> Option<S> + Send + Sync + 'static,
    ) -> Self {
        let labels = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.sources.push((labels, Arc::new(f)));
        self
    }

    /// `other`'s sources added to this export's (the same families, e.g.
    /// two nodes of one process). Its prefix and families are dropped.
    pub fn merge(mut self, other: StatsExport<S>) -> Self {
        self.sources.extend(other.sources);
        self
    }

    /// The prefix of the Prometheus names.
    pub fn prefix(&self) -> &'static str {
        self.prefix
    }

    /// The families.
    pub fn families(&self) -> &'static [Family<S>] {
        self.families
    }

    /// One snapshot per live source, with its labels.
    pub fn read(&self) -> Vec<(Labels, S)> {
        self.sources
            .iter()
            .filter_map(|(labels, f)| f().map(|s| (labels.clone(), s)))
            .collect()
    }

    /// The export alone in the Prometheus text format (what a scrape of a
    /// registry holding only this collector returns).
    pub fn render(&self) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(self.clone()));
        let mut out = String::new();
        // Writing to a String cannot fail, and this collector does not.
        if let Err(e) = prometheus_client::encoding::prometheus_text::encode(&mut out, &registry) {
            tracing::warn!(%e, "stats export: the Prometheus encoder failed");
        }
        out
    }
}

impl<S: 'static> Collector for StatsExport<S> {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let snapshots = self.read();
        for fam in self.families {
            let name = format!("{}_{}", self.prefix, fam.name);
            let kind = match fam.kind {
                Kind::Counter => MetricType::Counter,
                Kind::Gauge => MetricType::Gauge,
            };
            let mut family = encoder.encode_descriptor(&name, fam.help, None, kind)?;
            for (labels, s) in &snapshots {
                let v = (fam.value)(s);
                let row = family.encode_family(labels)?;
                match fam.kind {
                    Kind::Counter => ConstCounter::new(v).encode(row)?,
                    // A gauge of u64 in prometheus-client is i64: saturate.
                    Kind::Gauge => {
                        ConstGauge::new(i64::try_from(v).unwrap_or(i64::MAX)).encode(row)?
                    }
                }
            }
        }
        Ok(())
    }
}

/// The `(field, value)` pairs of a stats struct's derived `Debug` form
/// (`Stats { a: 1, b: 2 }`), for the exports' tests that every field is
/// exported and each family reads its own.
#[doc(hidden)]
pub fn debug_fields(debug: &str) -> Vec<(String, u64)> {
    let (Some(open), Some(close)) = (debug.find('{'), debug.rfind('}')) else {
        return Vec::new();
    };
    debug[open + 1..close]
        .split(',')
        .filter_map(|kv| {
            let (k, v) = kv.split_once(':')?;
            Some((k.trim().to_string(), v.trim().parse().ok()?))
        })
        .collect()
}
