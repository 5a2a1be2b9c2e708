//! [`Metrics`] for Prometheus, through the `prometheus-client` crate: a
//! [`MetricsCollector`] that a user registers in their own
//! [`Registry`](prometheus_client::registry::Registry), read at every
//! scrape, and [`render_prometheus`] (what Troupe's own endpoint serves),
//! both written by `prometheus-client`'s text encoder.
//!
//! Nothing here runs on the message path: a scrape calls
//! [`SystemHandle::metrics`] (which reads what the actor core and the
//! scheduler record) and encodes the copy.
//!
//! The families, the choice of gauges for quantiles and the label cap
//! are documented on [`MetricsCollector`], the public face of this module.

use super::{LatencySummary, Metrics};
use crate::actor::metrics::{HistogramData, BOUNDS_NS, BUCKETS};
use crate::system::SystemHandle;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use std::collections::BTreeMap;
use std::fmt;

/// Actors exported one by one before the rest are aggregated per type.
pub const DEFAULT_ACTOR_SERIES_CAP: usize = 1000;

/// Troupe's figures as a `prometheus-client`
/// [`Collector`]: each scrape of the registry it is in reads the system's
/// metrics ([`SystemHandle::metrics`]) and encodes them.
///
/// Names follow Prometheus conventions: a `troupe_` prefix, base units
/// (`_seconds`), `_total` on counters (the encoder appends it: the family is
/// registered as `troupe_actor_messages_handled`, served as
/// `troupe_actor_messages_handled_total`). Families:
///
/// | family | type | labels |
/// |---|---|---|
/// | `troupe_actor_messages_received_total` (arrivals) | counter | `actor`, `type` |
/// | `troupe_actor_messages_handled_total` | counter | `actor`, `type` |
/// | `troupe_actor_arrival_rate_per_second`, `troupe_actor_throughput_per_second` (over [`RATE_WINDOW`](super::RATE_WINDOW)) | gauge | `actor`, `type` |
/// | `troupe_actor_mailbox_depth`, `troupe_actor_mailbox_depth_max` | gauge | `actor`, `type` |
/// | `troupe_actor_mailbox_time_seconds` (waiting), `troupe_actor_processing_time_seconds` (service) | histogram (sampled, see [`SAMPLE_EVERY`](super::SAMPLE_EVERY)) | `actor`, `type` |
/// | `troupe_actor_{waiting_time,service_time,latency}_{p50,p99,max}_seconds` | gauge | `actor`, `type` |
/// | `troupe_actor_panics_total`, `troupe_actor_restarts_total` | counter | `actor`, `type` |
/// | `troupe_actor_dropped_messages_total` | counter | `actor`, `type`, `reason` (`overflow`, `stopped`) |
/// | `troupe_worker_tasks_total`, `troupe_worker_steals_total`, `troupe_worker_parks_total`, `troupe_worker_busy_seconds_total`, `troupe_worker_idle_seconds_total` | counter | `pool`, `worker` |
/// | `troupe_pool_injector_depth` | gauge | `pool` |
/// | `troupe_channel_published_total`, `troupe_channel_delivered_total`, `troupe_channel_failed_deliveries_total` | counter | `channel` |
/// | `troupe_channel_subscribers` | gauge | `channel` |
/// | `troupe_live_actors` | gauge | |
/// | `troupe_dropped_messages_total` | counter | |
/// | `troupe_stalled_handlers_total`, `troupe_ask_cycles_total` (stall and deadlock detection) | counter | |
///
/// **Quantiles are gauges, one family per statistic.** `prometheus-client`
/// has no summary type, and a gauge may not carry a `quantile` label
/// (`promtool check metrics` rejects it), so each quantile Troupe computes
/// is a gauge of its own: `troupe_actor_waiting_time_p99_seconds` and so
/// on, for p50, p99 and `max`, of the waiting time, the service time and
/// the latency (waiting plus service, summed quantile by quantile). They
/// are read off the recorded buckets (ten per decade, interpolated), finer
/// than the exported histograms, and `max` is exact among the sampled
/// messages. They cannot be aggregated across actors or instances: for
/// that, use `histogram_quantile` on the two histograms, whose buckets are
/// the recorded bounds 1, 2.5 and 5 per decade from 1 µs to 50 s (each
/// exact, so a bucket count is a count, not an estimate).
///
/// **Bounded labels.** The first `cap` metered actors (in spawn order) get
/// series of their own (`actor` = name, else `Type#id`); every later one is
/// summed into one series per actor type with `actor="_other"` (counters,
/// depths and histograms add up; quantiles are those of the merged
/// histogram). [`DEFAULT_ACTOR_SERIES_CAP`] is 1,000, so a scrape holds at
/// most about 1,000 × 75 actor lines plus the per-type rest.
///
/// [`render_prometheus`] and the `metrics-http` endpoint write the same.
///
/// ```
/// use troupe::observability::prometheus_client::{encoding::text::encode, registry::Registry};
///
/// let system = troupe::ActorSystem::builder().threads(1).metrics(true).build();
/// let mut registry = Registry::default(); // yours, with your own metrics in it
/// registry.register_collector(Box::new(system.metrics_collector()));
/// let mut text = String::new();
/// encode(&mut text, &registry).unwrap();
/// assert!(text.contains("troupe_worker_tasks_total{pool=\"troupe-worker\",worker=\"0\"}"));
/// # system.shutdown();
/// ```
#[derive(Clone)]
pub struct MetricsCollector {
    system: SystemHandle,
    cap: usize,
}

impl MetricsCollector {
    /// A collector of `system`'s metrics, labelling at most
    /// [`DEFAULT_ACTOR_SERIES_CAP`] actors one by one.
    pub fn new(system: &SystemHandle) -> Self {
        MetricsCollector {
            system: system.clone(),
            cap: DEFAULT_ACTOR_SERIES_CAP,
        }
    }

    /// Labels at most `cap` actors one by one; later ones are summed per
    /// type under `actor="_other"`.
    pub fn actor_series_cap(mut self, cap: usize) -> Self {
        self.cap = cap;
        self
    }
}

impl fmt::Debug for MetricsCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsCollector")
            .field("cap", &self.cap)
            .finish_non_exhaustive()
    }
}

impl Collector for MetricsCollector {
    fn encode(&self, encoder: DescriptorEncoder) -> fmt::Result {
        encode(&self.system.metrics(), self.cap, encoder)
    }
}

/// A snapshot already taken, as a collector (for [`render_prometheus`]).
#[derive(Debug)]
struct Snapshot {
    metrics: Metrics,
    cap: usize,
}

impl Collector for Snapshot {
    fn encode(&self, encoder: DescriptorEncoder) -> fmt::Result {
        encode(&self.metrics, self.cap, encoder)
    }
}

impl SystemHandle {
    /// This system's figures as a `prometheus-client` collector, to
    /// register in a [`Registry`](prometheus_client::registry::Registry)
    /// (see [`MetricsCollector`]).
    pub fn metrics_collector(&self) -> MetricsCollector {
        MetricsCollector::new(self)
    }
}

/// Renders `m` in the Prometheus text format (version 0.0.4), labelling at
/// most `cap` actors one by one (the families: [`MetricsCollector`]).
///
/// ```
/// let system = troupe::ActorSystem::builder().threads(1).metrics(true).build();
/// let text = troupe::observability::render_prometheus(&system.metrics(), 1000);
/// assert!(text.contains("# TYPE troupe_worker_tasks_total counter"));
/// ```
pub fn render_prometheus(m: &Metrics, cap: usize) -> String {
    render_owned(m.clone(), cap)
}

/// [`render_prometheus`] without the copy.
pub(super) fn render_owned(metrics: Metrics, cap: usize) -> String {
    // About 6 KB of text per actor series: sized once, not regrown.
    let capacity = 8 * 1024 + metrics.actors.len().min(cap.saturating_add(64)) * 6 * 1024;
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Snapshot { metrics, cap }));
    encode_registry(&registry, capacity)
}

/// `registry` in the Prometheus text format, into a string of `capacity`.
pub(super) fn encode_registry(registry: &Registry, capacity: usize) -> String {
    let mut out = String::with_capacity(capacity);
    // Writing to a String cannot fail, and no collector here fails.
    if let Err(e) = prometheus_client::encoding::prometheus_text::encode(&mut out, registry) {
        tracing::warn!(%e, "metrics: the Prometheus encoder failed; the scrape is cut short");
    }
    out
}

/// One exported actor series: a single actor or a per-type aggregate.
#[derive(Default)]
struct Series {
    received: u64,
    handled: u64,
    arrival: f64,
    throughput: f64,
    depth: u64,
    depth_max: u64,
    panics: u64,
    restarts: u64,
    dropped_overflow: u64,
    dropped_stopped: u64,
    waiting: HistogramData,
    service: HistogramData,
}

fn merge(into: &mut HistogramData, h: &HistogramData) {
    if into.buckets.is_empty() {
        into.buckets = vec![0; BUCKETS];
    }
    for (a, b) in into.buckets.iter_mut().zip(&h.buckets) {
        *a += b;
    }
    into.count += h.count;
    into.sum_ns += h.sum_ns;
    into.max_ns = into.max_ns.max(h.max_ns);
}

/// The actor series of `m`: the first `cap` actors one by one, the rest
/// summed per type under `_other`.
fn actor_series(m: &Metrics, cap: usize) -> Vec<((String, String), Series)> {
    let mut series: Vec<((String, String), Series)> = Vec::new();
    let mut other: BTreeMap<String, Series> = BTreeMap::new();
    for (i, a) in m.actors.iter().enumerate() {
        let s = if i < cap {
            series.push(((a.name.clone(), a.type_name.clone()), Series::default()));
            &mut series.last_mut().expect("just pushed").1
        } else {
            other.entry(a.type_name.clone()).or_default()
        };
        s.received += a.received;
        s.handled += a.handled;
        s.arrival += a.arrival_rate;
        s.throughput += a.throughput;
        s.depth += a.mailbox_depth;
        s.depth_max = s.depth_max.max(a.mailbox_depth_max);
        s.panics += a.panics;
        s.restarts += a.restarts;
        s.dropped_overflow += a.dropped_overflow;
        s.dropped_stopped += a.dropped_stopped;
        merge(&mut s.waiting, &a.waiting_hist);
        merge(&mut s.service, &a.service_hist);
    }
    series.extend(
        other
            .into_iter()
            .map(|(ty, s)| (("_other".to_string(), ty), s)),
    );
    series
}

/// A family's name, help and value of one row.
type Figure<T, V> = (&'static str, &'static str, fn(&T) -> V);

/// One family: its descriptor, then a sample per `(labels, value)` row.
fn family<L: EncodeLabelSet, M: EncodeMetric>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    rows: impl IntoIterator<Item = (L, M)>,
) -> fmt::Result {
    let mut family = enc.encode_descriptor(name, help, None, kind)?;
    for (labels, metric) in rows {
        metric.encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

/// Encodes `m` (the families: [`MetricsCollector`]).
fn encode(m: &Metrics, cap: usize, mut enc: DescriptorEncoder) -> fmt::Result {
    let series = actor_series(m, cap);
    fn labels((a, t): &(String, String)) -> [(&'static str, &str); 2] {
        [("actor", a), ("type", t)]
    }
    let enc = &mut enc;

    let counters: [Figure<Series, u64>; 4] = [
        (
            "troupe_actor_messages_received",
            "Messages accepted into the actor's mailbox (arrivals).",
            |s| s.received,
        ),
        (
            "troupe_actor_messages_handled",
            "Messages the actor's handler was given.",
            |s| s.handled,
        ),
        ("troupe_actor_panics", "Handler panics.", |s| s.panics),
        (
            "troupe_actor_restarts",
            "Children restarted by this actor (supervisors).",
            |s| s.restarts,
        ),
    ];
    for (name, help, f) in counters {
        family(
            enc,
            name,
            help,
            MetricType::Counter,
            series
                .iter()
                .map(|(k, s)| (labels(k), ConstCounter::new(f(s)))),
        )?;
    }
    family(
        enc,
        "troupe_actor_dropped_messages",
        "Messages dropped undelivered: mailbox full (overflow) or actor stopped (stopped).",
        MetricType::Counter,
        series.iter().flat_map(|(k, s)| {
            [
                ("overflow", s.dropped_overflow),
                ("stopped", s.dropped_stopped),
            ]
            .map(|(reason, n)| ((labels(k), [("reason", reason)]), ConstCounter::new(n)))
        }),
    )?;

    let gauges: [Figure<Series, f64>; 4] = [
        (
            "troupe_actor_arrival_rate_per_second",
            "Messages arriving per second over the rate window.",
            |s| s.arrival,
        ),
        (
            "troupe_actor_throughput_per_second",
            "Messages handled per second over the rate window.",
            |s| s.throughput,
        ),
        (
            "troupe_actor_mailbox_depth",
            "Messages waiting in the mailbox.",
            |s| s.depth as f64,
        ),
        (
            "troupe_actor_mailbox_depth_max",
            "Most messages seen waiting in the mailbox (at sampled dequeues).",
            |s| s.depth_max as f64,
        ),
    ];
    for (name, help, f) in gauges {
        family(
            enc,
            name,
            help,
            MetricType::Gauge,
            series
                .iter()
                .map(|(k, s)| (labels(k), ConstGauge::new(f(s)))),
        )?;
    }

    for (name, help, h) in [
        (
            "troupe_actor_mailbox_time_seconds",
            "Time from send to dequeue (waiting time), sampled: one message per sampling period (default 1024).",
            (|s| &s.waiting) as fn(&Series) -> &HistogramData,
        ),
        (
            "troupe_actor_processing_time_seconds",
            "Time in the handler (service time), sampled: one message per sampling period (default 1024).",
            |s| &s.service,
        ),
    ] {
        let mut family = enc.encode_descriptor(name, help, None, MetricType::Histogram)?;
        for (k, s) in &series {
            let h = h(s);
            let l = labels(k);
            family.encode_family(&l)?.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
                h.sum_ns as f64 / 1e9,
                h.count,
                &exported_buckets(h),
                None,
            )?;
        }
    }

    let summaries: Vec<[LatencySummary; 3]> = series
        .iter()
        .map(|(_, s)| {
            let w = LatencySummary::of(&s.waiting);
            let v = LatencySummary::of(&s.service);
            [w, v, LatencySummary::plus(&w, &v)]
        })
        .collect();
    for (phase, (prefix, what)) in [
        (
            "troupe_actor_waiting_time",
            "the sampled waiting time (send to dequeue)",
        ),
        (
            "troupe_actor_service_time",
            "the sampled service time (in the handler)",
        ),
        (
            "troupe_actor_latency",
            "waiting plus service time (summed quantile by quantile)",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        for (stat, title, f) in [
            (
                "p50",
                "Median of",
                (|q| q.p50) as fn(&LatencySummary) -> std::time::Duration,
            ),
            ("p99", "99th percentile of", |q| q.p99),
            ("max", "Longest of", |q| q.max),
        ] {
            family(
                enc,
                &format!("{prefix}_{stat}_seconds"),
                &format!("{title} {what}, from the recorded buckets."),
                MetricType::Gauge,
                series
                    .iter()
                    .zip(&summaries)
                    .map(|((k, _), q)| (labels(k), ConstGauge::new(f(&q[phase]).as_secs_f64()))),
            )?;
        }
    }

    let worker_index: Vec<String> = m.workers.iter().map(|w| w.index.to_string()).collect();
    let worker_counters: [Figure<super::WorkerSnapshot, f64>; 5] = [
        ("troupe_worker_tasks", "Actor turns run.", |w| {
            w.tasks as f64
        }),
        (
            "troupe_worker_steals",
            "Tasks stolen from other workers.",
            |w| w.steals as f64,
        ),
        ("troupe_worker_parks", "Times parked.", |w| w.parks as f64),
        (
            "troupe_worker_busy_seconds",
            "Time not parked: running actors or searching for work.",
            |w| w.busy.as_secs_f64(),
        ),
        (
            "troupe_worker_idle_seconds",
            "Time spent parked (waiting for work).",
            |w| w.idle.as_secs_f64(),
        ),
    ];
    for (name, help, f) in worker_counters {
        family(
            enc,
            name,
            help,
            MetricType::Counter,
            m.workers.iter().zip(&worker_index).map(|(w, i)| {
                (
                    [("pool", w.pool.as_str()), ("worker", i.as_str())],
                    ConstCounter::new(f(w)),
                )
            }),
        )?;
    }
    family(
        enc,
        "troupe_pool_injector_depth",
        "Tasks waiting in the pool's shared queue.",
        MetricType::Gauge,
        m.workers.iter().filter(|w| w.index == 0).map(|w| {
            (
                [("pool", w.pool.as_str())],
                ConstGauge::new(w.injector_depth as u64),
            )
        }),
    )?;

    let chans: [(MetricType, Figure<super::ChannelSnapshot, u64>); 4] = [
        (
            MetricType::Counter,
            ("troupe_channel_published", "Messages published.", |c| {
                c.published
            }),
        ),
        (
            MetricType::Counter,
            (
                "troupe_channel_delivered",
                "Deliveries made (one per subscriber reached).",
                |c| c.delivered,
            ),
        ),
        (
            MetricType::Counter,
            (
                "troupe_channel_failed_deliveries",
                "Deliveries that failed (subscriber full or stopped).",
                |c| c.failed,
            ),
        ),
        (
            MetricType::Gauge,
            ("troupe_channel_subscribers", "Subscribers now.", |c| {
                c.subscribers as u64
            }),
        ),
    ];
    for (kind, (name, help, f)) in chans {
        let rows = m
            .channels
            .iter()
            .map(|c| ([("channel", c.name.as_str())], f(c)));
        if kind == MetricType::Counter {
            family(
                enc,
                name,
                help,
                kind,
                rows.map(|(l, v)| (l, ConstCounter::new(v))),
            )?;
        } else {
            family(
                enc,
                name,
                help,
                kind,
                rows.map(|(l, v)| (l, ConstGauge::new(v))),
            )?;
        }
    }

    ConstGauge::new(m.live_actors as u64).encode(enc.encode_descriptor(
        "troupe_live_actors",
        "Actors alive.",
        None,
        MetricType::Gauge,
    )?)?;
    ConstCounter::new(m.dropped_messages).encode(enc.encode_descriptor(
        "troupe_dropped_messages",
        "Messages dropped undelivered, all actors.",
        None,
        MetricType::Counter,
    )?)?;
    ConstCounter::new(m.stalled_handlers).encode(enc.encode_descriptor(
        "troupe_stalled_handlers",
        "Handlers that ran longer than their stall threshold.",
        None,
        MetricType::Counter,
    )?)?;
    ConstCounter::new(m.ask_cycles).encode(enc.encode_descriptor(
        "troupe_ask_cycles",
        "Ask cycles detected: actors waiting on each other's replies.",
        None,
        MetricType::Counter,
    )?)
}

/// Exported bucket bounds, as indices into the recorded ones: 1, 2.5 and 5
/// per decade from 1 µs to 50 s (a subset of the recorded bounds, so each
/// is exact).
fn exported_bounds() -> impl Iterator<Item = usize> {
    (0..8).flat_map(|k| [0, 4, 7].map(|j| 10 + 10 * k + j))
}

/// `h`'s recorded buckets folded into the exported ones: `(upper bound in
/// seconds, count in that bucket alone)`; the encoder makes them cumulative
/// and adds `+Inf` (the histogram's count).
fn exported_buckets(h: &HistogramData) -> Vec<(f64, u64)> {
    let mut out = Vec::with_capacity(24);
    let mut upto = 0usize;
    for i in exported_bounds() {
        let mut n = 0;
        while upto <= i {
            n += h.buckets.get(upto).copied().unwrap_or(0);
            upto += 1;
        }
        out.push((BOUNDS_NS[i] as f64 / 1e9, n));
    }
    out
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::observability::ActorSnapshot;

    fn actor(name: &str, ty: &str, received: u64) -> ActorSnapshot {
        ActorSnapshot {
            name: name.into(),
            type_name: ty.into(),
            received,
            ..Default::default()
        }
    }

    #[test]
    fn caps_actor_series_and_aggregates_the_rest_per_type() {
        let m = Metrics {
            actors: vec![
                actor("a", "A", 1),
                actor("b", "B", 2),
                actor("c", "B", 3),
                actor("d", "A", 4),
            ],
            ..Default::default()
        };
        let text = render_prometheus(&m, 2);
        assert!(text.contains("troupe_actor_messages_received_total{actor=\"a\",type=\"A\"} 1\n"));
        assert!(text.contains("troupe_actor_messages_received_total{actor=\"b\",type=\"B\"} 2\n"));
        assert!(
            text.contains("troupe_actor_messages_received_total{actor=\"_other\",type=\"A\"} 4\n")
        );
        assert!(
            text.contains("troupe_actor_messages_received_total{actor=\"_other\",type=\"B\"} 3\n")
        );
        assert!(!text.contains("actor=\"c\""));
    }

    #[test]
    fn escapes_label_values() {
        let m = Metrics {
            actors: vec![actor("a\"b\\c\nd", "A", 1)],
            ..Default::default()
        };
        let text = render_prometheus(&m, 10);
        assert!(
            text.contains(
                "troupe_actor_messages_received_total{actor=\"a\\\"b\\\\c\\nd\",type=\"A\"} 1\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn exported_buckets_are_one_two_and_a_half_five() {
        let le: Vec<u64> = exported_bounds().map(|i| BOUNDS_NS[i]).collect();
        assert_eq!(&le[..4], &[1_000, 2_500, 5_000, 10_000]);
        assert_eq!(*le.last().unwrap(), 50_000_000_000);
    }

    #[test]
    fn histograms_are_cumulative_and_quantiles_are_gauges() {
        let mut waiting = HistogramData {
            buckets: vec![0; BUCKETS],
            ..Default::default()
        };
        // Two samples just under 1 µs, one at 3 µs (recorded bucket index
        // of the bound 5 µs is 17; of 1 µs, 10).
        waiting.buckets[10] = 2;
        waiting.buckets[15] = 1;
        waiting.count = 3;
        waiting.sum_ns = 5_000;
        waiting.max_ns = 3_000;
        let mut a = actor("h", "H", 3);
        a.waiting_hist = waiting;
        let text = render_prometheus(
            &Metrics {
                actors: vec![a],
                ..Default::default()
            },
            10,
        );
        let line = |prefix: &str| {
            text.lines()
                .find(|l| l.starts_with(prefix))
                .unwrap_or_else(|| panic!("no {prefix} in\n{text}"))
                .to_string()
        };
        assert!(line(
            "troupe_actor_mailbox_time_seconds_bucket{actor=\"h\",type=\"H\",le=\"1e-06\"}"
        )
        .ends_with(" 2"));
        assert!(line(
            "troupe_actor_mailbox_time_seconds_bucket{actor=\"h\",type=\"H\",le=\"5e-06\"}"
        )
        .ends_with(" 3"));
        assert!(line(
            "troupe_actor_mailbox_time_seconds_bucket{actor=\"h\",type=\"H\",le=\"+Inf\"}"
        )
        .ends_with(" 3"));
        assert!(text.contains("# TYPE troupe_actor_waiting_time_max_seconds gauge\n"));
        let max: f64 = line("troupe_actor_waiting_time_max_seconds{actor=\"h\"")
            .rsplit(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(max, 3e-6);
        assert!(
            !text.contains("quantile="),
            "no summary-style label on a gauge"
        );
    }
}
