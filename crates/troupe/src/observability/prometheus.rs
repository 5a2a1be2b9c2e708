//! The Prometheus text exposition format (version 0.0.4) of [`Metrics`].
//!
//! Names follow Prometheus conventions: a `troupe_` prefix, base units
//! (`_seconds`), `_total` on counters. Families:
//!
//! | family | type | labels |
//! |---|---|---|
//! | `troupe_actor_messages_received_total` (arrivals) | counter | `actor`, `type` |
//! | `troupe_actor_messages_handled_total` | counter | `actor`, `type` |
//! | `troupe_actor_arrival_rate_per_second`, `troupe_actor_throughput_per_second` (over [`RATE_WINDOW`](super::RATE_WINDOW)) | gauge | `actor`, `type` |
//! | `troupe_actor_mailbox_depth`, `troupe_actor_mailbox_depth_max` | gauge | `actor`, `type` |
//! | `troupe_actor_mailbox_time_seconds` (waiting), `troupe_actor_processing_time_seconds` (service) | histogram (sampled, see [`SAMPLE_EVERY`](super::SAMPLE_EVERY)) | `actor`, `type` |
//! | `troupe_actor_waiting_time_seconds`, `troupe_actor_service_time_seconds`, `troupe_actor_latency_seconds` (waiting + service) | summary, `quantile` `0.5`, `0.99`, `1` (max) | `actor`, `type` |
//! | `troupe_actor_panics_total`, `troupe_actor_restarts_total` | counter | `actor`, `type` |
//! | `troupe_actor_dropped_messages_total` | counter | `actor`, `type`, `reason` (`overflow`, `stopped`) |
//! | `troupe_worker_tasks_total`, `troupe_worker_steals_total`, `troupe_worker_parks_total`, `troupe_worker_busy_seconds_total`, `troupe_worker_idle_seconds_total` | counter | `pool`, `worker` |
//! | `troupe_pool_injector_depth` | gauge | `pool` |
//! | `troupe_channel_published_total`, `troupe_channel_delivered_total`, `troupe_channel_failed_deliveries_total` | counter | `channel` |
//! | `troupe_channel_subscribers` | gauge | `channel` |
//! | `troupe_live_actors` | gauge | |
//! | `troupe_dropped_messages_total` | counter | |
//!
//! **Bounded labels.** The first `cap` metered actors (in spawn order) get
//! series of their own (`actor` = name, else `Type#id`); every later one is
//! summed into one series per actor type with `actor="_other"` (counters,
//! depths and histograms add up; quantiles are those of the merged
//! histogram). [`DEFAULT_ACTOR_SERIES_CAP`] is 1,000, so a scrape holds at
//! most about 1,000 × 80 actor lines plus the per-type rest.

use super::{LatencySummary, Metrics};
use crate::actor::metrics::{HistogramData, BOUNDS_NS, BUCKETS};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Actors exported one by one before the rest are aggregated per type.
pub const DEFAULT_ACTOR_SERIES_CAP: usize = 1000;

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

/// Renders `m` in the Prometheus text format, labelling at most `cap`
/// actors one by one (see the module docs).
///
/// ```
/// let system = troupe::ActorSystem::builder().threads(1).metrics(true).build();
/// let text = troupe::observability::render_prometheus(&system.metrics(), 1000);
/// assert!(text.contains("# TYPE troupe_worker_tasks_total counter"));
/// ```
pub fn render_prometheus(m: &Metrics, cap: usize) -> String {
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
    let labels: Vec<String> = series
        .iter()
        .map(|((a, t), _)| format!("actor=\"{}\",type=\"{}\"", esc(a), esc(t)))
        .collect();

    let mut out = String::with_capacity(4096 + series.len() * 4096);
    let counter = |out: &mut String, name: &str, help: &str, f: &dyn Fn(&Series) -> u64| {
        head(out, name, "counter", help);
        for (l, (_, s)) in labels.iter().zip(&series) {
            let _ = writeln!(out, "{name}{{{l}}} {}", f(s));
        }
    };
    counter(
        &mut out,
        "troupe_actor_messages_received_total",
        "Messages accepted into the actor's mailbox (arrivals).",
        &|s| s.received,
    );
    counter(
        &mut out,
        "troupe_actor_messages_handled_total",
        "Messages the actor's handler was given.",
        &|s| s.handled,
    );
    counter(
        &mut out,
        "troupe_actor_panics_total",
        "Handler panics.",
        &|s| s.panics,
    );
    counter(
        &mut out,
        "troupe_actor_restarts_total",
        "Children restarted by this actor (supervisors).",
        &|s| s.restarts,
    );
    head(
        &mut out,
        "troupe_actor_dropped_messages_total",
        "counter",
        "Messages dropped undelivered: mailbox full (overflow) or actor stopped (stopped).",
    );
    for (l, (_, s)) in labels.iter().zip(&series) {
        let _ = writeln!(
            out,
            "troupe_actor_dropped_messages_total{{{l},reason=\"overflow\"}} {}",
            s.dropped_overflow
        );
        let _ = writeln!(
            out,
            "troupe_actor_dropped_messages_total{{{l},reason=\"stopped\"}} {}",
            s.dropped_stopped
        );
    }
    let gauge = |out: &mut String, name: &str, help: &str, f: &dyn Fn(&Series) -> f64| {
        head(out, name, "gauge", help);
        for (l, (_, s)) in labels.iter().zip(&series) {
            let _ = writeln!(out, "{name}{{{l}}} {}", num(f(s)));
        }
    };
    gauge(
        &mut out,
        "troupe_actor_arrival_rate_per_second",
        "Messages arriving per second over the rate window.",
        &|s| s.arrival,
    );
    gauge(
        &mut out,
        "troupe_actor_throughput_per_second",
        "Messages handled per second over the rate window.",
        &|s| s.throughput,
    );
    gauge(
        &mut out,
        "troupe_actor_mailbox_depth",
        "Messages waiting in the mailbox.",
        &|s| s.depth as f64,
    );
    gauge(
        &mut out,
        "troupe_actor_mailbox_depth_max",
        "Most messages seen waiting in the mailbox (at sampled dequeues).",
        &|s| s.depth_max as f64,
    );
    histogram(
        &mut out,
        "troupe_actor_mailbox_time_seconds",
        "Time from send to dequeue (waiting time), sampled: one message per sampling period (default 1024).",
        &labels,
        series.iter().map(|(_, s)| &s.waiting),
    );
    histogram(
        &mut out,
        "troupe_actor_processing_time_seconds",
        "Time in the handler (service time), sampled: one message per sampling period (default 1024).",
        &labels,
        series.iter().map(|(_, s)| &s.service),
    );
    for (name, phase, help) in [
        (
            "troupe_actor_waiting_time_seconds",
            0,
            "Quantiles of the sampled waiting time (send to dequeue).",
        ),
        (
            "troupe_actor_service_time_seconds",
            1,
            "Quantiles of the sampled service time (in the handler).",
        ),
        (
            "troupe_actor_latency_seconds",
            2,
            "Quantiles of waiting plus service time, summed quantile by quantile.",
        ),
    ] {
        head(&mut out, name, "summary", help);
        for (l, (_, s)) in labels.iter().zip(&series) {
            let w = LatencySummary::of(&s.waiting);
            let v = LatencySummary::of(&s.service);
            let (q, sum_ns) = match phase {
                0 => (w, s.waiting.sum_ns),
                1 => (v, s.service.sum_ns),
                _ => {
                    // Mean latency times the paired sample count.
                    let l = LatencySummary::plus(&w, &v);
                    (l, l.mean.as_nanos() as u64 * l.samples)
                }
            };
            for (qs, d) in [("0.5", q.p50), ("0.99", q.p99), ("1", q.max)] {
                let _ = writeln!(
                    out,
                    "{name}{{{l},quantile=\"{qs}\"}} {}",
                    num(d.as_secs_f64())
                );
            }
            let _ = writeln!(out, "{name}_sum{{{l}}} {}", num(sum_ns as f64 / 1e9));
            let _ = writeln!(out, "{name}_count{{{l}}} {}", q.samples);
        }
    }

    let worker_counter =
        |out: &mut String, name: &str, help: &str, f: &dyn Fn(&super::WorkerSnapshot) -> f64| {
            head(out, name, "counter", help);
            for w in &m.workers {
                let _ = writeln!(
                    out,
                    "{name}{{pool=\"{}\",worker=\"{}\"}} {}",
                    esc(&w.pool),
                    w.index,
                    num(f(w))
                );
            }
        };
    worker_counter(
        &mut out,
        "troupe_worker_tasks_total",
        "Actor turns run.",
        &|w| w.tasks as f64,
    );
    worker_counter(
        &mut out,
        "troupe_worker_steals_total",
        "Tasks stolen from other workers.",
        &|w| w.steals as f64,
    );
    worker_counter(
        &mut out,
        "troupe_worker_parks_total",
        "Times parked.",
        &|w| w.parks as f64,
    );
    worker_counter(
        &mut out,
        "troupe_worker_busy_seconds_total",
        "Time not parked: running actors or searching for work.",
        &|w| w.busy.as_secs_f64(),
    );
    worker_counter(
        &mut out,
        "troupe_worker_idle_seconds_total",
        "Time spent parked (waiting for work).",
        &|w| w.idle.as_secs_f64(),
    );
    head(
        &mut out,
        "troupe_pool_injector_depth",
        "gauge",
        "Tasks waiting in the pool's shared queue.",
    );
    let mut pools_seen = Vec::new();
    for w in &m.workers {
        if w.index == 0 && !pools_seen.contains(&w.pool) {
            pools_seen.push(w.pool.clone());
            let _ = writeln!(
                out,
                "troupe_pool_injector_depth{{pool=\"{}\"}} {}",
                esc(&w.pool),
                w.injector_depth
            );
        }
    }

    let chan = |out: &mut String,
                name: &str,
                kind: &str,
                help: &str,
                f: &dyn Fn(&super::ChannelSnapshot) -> u64| {
        head(out, name, kind, help);
        for c in &m.channels {
            let _ = writeln!(out, "{name}{{channel=\"{}\"}} {}", esc(&c.name), f(c));
        }
    };
    chan(
        &mut out,
        "troupe_channel_published_total",
        "counter",
        "Messages published.",
        &|c| c.published,
    );
    chan(
        &mut out,
        "troupe_channel_delivered_total",
        "counter",
        "Deliveries made (one per subscriber reached).",
        &|c| c.delivered,
    );
    chan(
        &mut out,
        "troupe_channel_failed_deliveries_total",
        "counter",
        "Deliveries that failed (subscriber full or stopped).",
        &|c| c.failed,
    );
    chan(
        &mut out,
        "troupe_channel_subscribers",
        "gauge",
        "Subscribers now.",
        &|c| c.subscribers as u64,
    );
    head(&mut out, "troupe_live_actors", "gauge", "Actors alive.");
    let _ = writeln!(out, "troupe_live_actors {}", m.live_actors);
    head(
        &mut out,
        "troupe_dropped_messages_total",
        "counter",
        "Messages dropped undelivered, all actors.",
    );
    let _ = writeln!(out, "troupe_dropped_messages_total {}", m.dropped_messages);
    out
}

/// Exported bucket bounds: 1, 2.5 and 5 per decade from 1 µs to 50 s (a
/// subset of the recorded ones, so each is exact).
fn exported_buckets() -> impl Iterator<Item = usize> {
    (0..8).flat_map(|k| [0, 4, 7].map(|j| 10 + 10 * k + j))
}

fn histogram<'a>(
    out: &mut String,
    name: &str,
    help: &str,
    labels: &[String],
    hists: impl Iterator<Item = &'a HistogramData>,
) {
    head(out, name, "histogram", help);
    for (l, h) in labels.iter().zip(hists) {
        let mut cum = 0u64;
        let mut upto = 0usize;
        for i in exported_buckets() {
            while upto <= i {
                cum += h.buckets.get(upto).copied().unwrap_or(0);
                upto += 1;
            }
            let le = BOUNDS_NS[i] as f64 / 1e9;
            let _ = writeln!(out, "{name}_bucket{{{l},le=\"{}\"}} {cum}", num(le));
        }
        let _ = writeln!(out, "{name}_bucket{{{l},le=\"+Inf\"}} {}", h.count);
        let _ = writeln!(out, "{name}_sum{{{l}}} {}", num(h.sum_ns as f64 / 1e9));
        let _ = writeln!(out, "{name}_count{{{l}}} {}", h.count);
    }
}

fn head(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// A float as Prometheus writes it (no exponent for ordinary values).
fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else if v.is_nan() {
        "NaN".into()
    } else if v > 0.0 {
        "+Inf".into()
    } else {
        "-Inf".into()
    }
}

/// Escapes a label value: backslash, double quote, newline.
fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
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
        assert_eq!(esc("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn exported_buckets_are_one_two_and_a_half_five() {
        let le: Vec<u64> = exported_buckets().map(|i| BOUNDS_NS[i]).collect();
        assert_eq!(&le[..4], &[1_000, 2_500, 5_000, 10_000]);
        assert_eq!(*le.last().unwrap(), 50_000_000_000);
    }
}
