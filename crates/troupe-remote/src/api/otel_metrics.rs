//! Troupe's per-actor, per-worker and per-channel metrics as OpenTelemetry
//! observable instruments (feature `otel`), on a
//! [`Meter`](opentelemetry::metrics::Meter) the user passes:
//! [`register_metrics`].
//!
//! Nothing here runs on the message path. Every instrument is observable:
//! its callback runs when the user's meter provider collects (a periodic
//! reader, a pull exporter), and reads a snapshot of
//! [`SystemHandle::metrics`], the same copy the Prometheus export reads.
//!
//! Invariants:
//! * one snapshot serves every instrument of one collection: the first
//!   callback of a collection takes it, and the others reuse it while it is
//!   younger than [`SNAPSHOT_REUSE`] (so one collection reads the system
//!   once, and two collections further apart than that each read it anew);
//! * the cache (one mutex, taken by collection callbacks only) is the only
//!   state; the callbacks hold a clone of the [`SystemHandle`], so the
//!   system's metrics stay readable as long as the meter provider lives;
//! * at most `cap` actors are labelled one by one (spawn order), the rest
//!   summed per type under `actor="_other"`, as the Prometheus export does.

use opentelemetry::metrics::{AsyncInstrument, Meter};
use opentelemetry::KeyValue;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe::observability::{LatencySummary, Metrics, DEFAULT_ACTOR_SERIES_CAP};
use troupe::SystemHandle;

/// How long one snapshot serves the instruments' callbacks: longer than
/// one collection takes, far shorter than any collection interval.
pub const SNAPSHOT_REUSE: Duration = Duration::from_millis(500);

/// One exported actor series: a single actor, or the per-type sum of the
/// actors past the cap (its quantiles are the largest of its actors').
#[derive(Default)]
struct Series {
    attrs: Vec<KeyValue>,
    received: u64,
    handled: u64,
    panics: u64,
    restarts: u64,
    dropped: [(u64, Vec<KeyValue>); 2],
    arrival: f64,
    throughput: f64,
    depth: u64,
    depth_max: u64,
    /// Waiting, service, latency.
    phases: [LatencySummary; 3],
}

/// A snapshot, laid out for the callbacks.
struct View {
    taken: Instant,
    actors: Vec<Series>,
    metrics: Metrics,
}

fn max_summary(a: &mut LatencySummary, b: &LatencySummary) {
    a.samples += b.samples;
    a.mean = a.mean.max(b.mean);
    a.p50 = a.p50.max(b.p50);
    a.p99 = a.p99.max(b.p99);
    a.max = a.max.max(b.max);
}

impl View {
    fn of(metrics: Metrics, cap: usize) -> View {
        let mut actors: Vec<Series> = Vec::with_capacity(metrics.actors.len().min(cap));
        let mut other: BTreeMap<&str, Series> = BTreeMap::new();
        for (i, a) in metrics.actors.iter().enumerate() {
            let s = if i < cap {
                actors.push(Series {
                    attrs: vec![
                        KeyValue::new("actor", a.name.clone()),
                        KeyValue::new("type", a.type_name.clone()),
                    ],
                    ..Series::default()
                });
                actors.last_mut().expect("just pushed")
            } else {
                other.entry(&a.type_name).or_insert_with(|| Series {
                    attrs: vec![
                        KeyValue::new("actor", "_other"),
                        KeyValue::new("type", a.type_name.clone()),
                    ],
                    ..Series::default()
                })
            };
            s.received += a.received;
            s.handled += a.handled;
            s.panics += a.panics;
            s.restarts += a.restarts;
            s.dropped[0].0 += a.dropped_overflow;
            s.dropped[1].0 += a.dropped_stopped;
            s.arrival += a.arrival_rate;
            s.throughput += a.throughput;
            s.depth += a.mailbox_depth;
            s.depth_max = s.depth_max.max(a.mailbox_depth_max);
            for (into, from) in s
                .phases
                .iter_mut()
                .zip([&a.waiting, &a.service, &a.latency])
            {
                max_summary(into, from);
            }
        }
        actors.extend(other.into_values());
        for s in &mut actors {
            for (slot, reason) in s.dropped.iter_mut().zip(["overflow", "stopped"]) {
                slot.1 = s.attrs.clone();
                slot.1.push(KeyValue::new("reason", reason));
            }
        }
        View {
            taken: Instant::now(),
            actors,
            metrics,
        }
    }
}

/// The snapshot the callbacks share.
struct Source {
    system: SystemHandle,
    cap: usize,
    cache: Mutex<Option<Arc<View>>>,
}

impl Source {
    fn view(&self) -> Arc<View> {
        let mut cache = self.cache.lock();
        if let Some(v) = cache.as_ref() {
            if v.taken.elapsed() < SNAPSHOT_REUSE {
                return v.clone();
            }
        }
        let v = Arc::new(View::of(self.system.metrics(), self.cap));
        *cache = Some(v.clone());
        v
    }
}

/// What [`register_metrics`] registered: how many instruments. The
/// instruments stay registered with the meter's provider (OpenTelemetry
/// unregisters nothing on drop); dropping this changes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetricsRegistration {
    /// Observable instruments registered on the meter.
    pub instruments: usize,
}

/// Registers Troupe's metrics of `system` as observable instruments on
/// `meter`, labelling at most
/// [`DEFAULT_ACTOR_SERIES_CAP`] actors one by one (see
/// [`register_metrics_capped`]).
///
/// The names are the Prometheus export's
/// ([`MetricsCollector`](troupe::observability::MetricsCollector)) in
/// OpenTelemetry's form: dots for underscores, the unit in the instrument's
/// unit (UCUM: `s`, `{message}`, `{message}/s`) instead of the name, no
/// `_total`. An OpenTelemetry-to-Prometheus exporter translates them back
/// to the same family names (`troupe.actor.messages.handled`, unit
/// `{message}`, becomes `troupe_actor_messages_handled_total`;
/// `troupe.actor.service_time.p99`, unit `s`, becomes
/// `troupe_actor_service_time_p99_seconds`), and the attributes are the
/// Prometheus labels (`actor`, `type`, `reason`, `pool`, `worker`,
/// `channel`), so one dashboard reads either path.
///
/// | instrument | kind | unit | attributes |
/// |---|---|---|---|
/// | `troupe.actor.messages.received`, `troupe.actor.messages.handled` | counter | `{message}` | `actor`, `type` |
/// | `troupe.actor.messages.dropped` | counter | `{message}` | `actor`, `type`, `reason` |
/// | `troupe.actor.panics`, `troupe.actor.restarts` | counter | `{panic}`, `{restart}` | `actor`, `type` |
/// | `troupe.actor.arrival_rate`, `troupe.actor.throughput` | gauge | `{message}/s` | `actor`, `type` |
/// | `troupe.actor.mailbox.depth`, `troupe.actor.mailbox.depth_max` | gauge | `{message}` | `actor`, `type` |
/// | `troupe.actor.{waiting_time,service_time,latency}.{p50,p99,max}` | gauge | `s` | `actor`, `type` |
/// | `troupe.worker.tasks`, `troupe.worker.steals`, `troupe.worker.parks` | counter | `{task}`, `{task}`, `{park}` | `pool`, `worker` |
/// | `troupe.worker.busy`, `troupe.worker.idle` | counter | `s` | `pool`, `worker` |
/// | `troupe.pool.injector.depth` | gauge | `{task}` | `pool` |
/// | `troupe.channel.published`, `troupe.channel.delivered`, `troupe.channel.failed_deliveries` | counter | `{message}` | `channel` |
/// | `troupe.channel.subscribers` | gauge | `{subscriber}` | `channel` |
/// | `troupe.live_actors` | gauge | `{actor}` | |
/// | `troupe.messages.dropped` | counter | `{message}` | |
///
/// OpenTelemetry has no observable histogram, so the sampled waiting and
/// service times come as their quantile gauges only (for the histograms,
/// use the Prometheus export). The counts are exact, as in
/// [`SystemHandle::metrics`].
///
/// ```
/// use troupe_remote::telemetry::{opentelemetry::metrics::MeterProvider as _, opentelemetry_sdk};
///
/// let system = troupe::ActorSystem::builder().threads(1).metrics(true).build();
/// let provider = opentelemetry_sdk::metrics::SdkMeterProvider::builder().build();
/// let registered = troupe_remote::telemetry::register_metrics(&system, &provider.meter("troupe"));
/// assert!(registered.instruments > 20);
/// # system.shutdown();
/// ```
pub fn register_metrics(system: &SystemHandle, meter: &Meter) -> MetricsRegistration {
    register_metrics_capped(system, meter, DEFAULT_ACTOR_SERIES_CAP)
}

/// [`register_metrics`], labelling at most `cap` actors one by one; later
/// ones are summed per type under `actor="_other"` (counters, depths and
/// rates add up; the quantile gauges are the largest among those actors).
pub fn register_metrics_capped(
    system: &SystemHandle,
    meter: &Meter,
    cap: usize,
) -> MetricsRegistration {
    let src = Arc::new(Source {
        system: system.clone(),
        cap,
        cache: Mutex::new(None),
    });
    let mut n = 0;

    type ActorU64 = fn(&Series) -> u64;
    let actor_counters: [(&'static str, &'static str, &'static str, ActorU64); 4] = [
        (
            "troupe.actor.messages.received",
            "Messages accepted into the actor's mailbox (arrivals).",
            "{message}",
            |s| s.received,
        ),
        (
            "troupe.actor.messages.handled",
            "Messages the actor's handler was given.",
            "{message}",
            |s| s.handled,
        ),
        ("troupe.actor.panics", "Handler panics.", "{panic}", |s| {
            s.panics
        }),
        (
            "troupe.actor.restarts",
            "Children restarted by this actor (supervisors).",
            "{restart}",
            |s| s.restarts,
        ),
    ];
    for (name, help, unit, f) in actor_counters {
        let src = src.clone();
        meter
            .u64_observable_counter(name)
            .with_description(help)
            .with_unit(unit)
            .with_callback(move |o| {
                for s in &src.view().actors {
                    o.observe(f(s), &s.attrs);
                }
            })
            .build();
        n += 1;
    }
    {
        let src = src.clone();
        meter
            .u64_observable_counter("troupe.actor.messages.dropped")
            .with_description(
                "Messages dropped undelivered: mailbox full (overflow) or actor stopped (stopped).",
            )
            .with_unit("{message}")
            .with_callback(move |o| {
                for s in &src.view().actors {
                    for (v, attrs) in &s.dropped {
                        o.observe(*v, attrs);
                    }
                }
            })
            .build();
        n += 1;
    }

    type ActorF64 = fn(&Series) -> f64;
    let actor_gauges: [(&'static str, &'static str, &'static str, ActorF64); 4] = [
        (
            "troupe.actor.arrival_rate",
            "Messages arriving per second over the rate window.",
            "{message}/s",
            |s| s.arrival,
        ),
        (
            "troupe.actor.throughput",
            "Messages handled per second over the rate window.",
            "{message}/s",
            |s| s.throughput,
        ),
        (
            "troupe.actor.mailbox.depth",
            "Messages waiting in the mailbox.",
            "{message}",
            |s| s.depth as f64,
        ),
        (
            "troupe.actor.mailbox.depth_max",
            "Most messages seen waiting in the mailbox (at sampled dequeues).",
            "{message}",
            |s| s.depth_max as f64,
        ),
    ];
    for (name, help, unit, f) in actor_gauges {
        let src = src.clone();
        meter
            .f64_observable_gauge(name)
            .with_description(help)
            .with_unit(unit)
            .with_callback(move |o| {
                for s in &src.view().actors {
                    o.observe(f(s), &s.attrs);
                }
            })
            .build();
        n += 1;
    }

    type Stat = fn(&LatencySummary) -> Duration;
    for (phase, (prefix, what)) in [
        (
            "troupe.actor.waiting_time",
            "the sampled waiting time (send to dequeue)",
        ),
        (
            "troupe.actor.service_time",
            "the sampled service time (in the handler)",
        ),
        (
            "troupe.actor.latency",
            "waiting plus service time (summed quantile by quantile)",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let stats: [(&str, &str, Stat); 3] = [
            ("p50", "Median of", |q| q.p50),
            ("p99", "99th percentile of", |q| q.p99),
            ("max", "Longest of", |q| q.max),
        ];
        for (stat, title, f) in stats {
            let src = src.clone();
            meter
                .f64_observable_gauge(format!("{prefix}.{stat}"))
                .with_description(format!("{title} {what}, from the recorded buckets."))
                .with_unit("s")
                .with_callback(move |o| {
                    for s in &src.view().actors {
                        o.observe(f(&s.phases[phase]).as_secs_f64(), &s.attrs);
                    }
                })
                .build();
            n += 1;
        }
    }

    n += register_system(&src, meter);
    MetricsRegistration { instruments: n }
}

/// The worker, pool, channel and system-wide instruments; returns how many.
fn register_system(src: &Arc<Source>, meter: &Meter) -> usize {
    let mut n = 0;
    fn worker_attrs(w: &troupe::observability::WorkerSnapshot) -> [KeyValue; 2] {
        [
            KeyValue::new("pool", w.pool.clone()),
            KeyValue::new("worker", w.index as i64),
        ]
    }
    type WorkerU64 = fn(&troupe::observability::WorkerSnapshot) -> u64;
    let worker_counts: [(&str, &str, &str, WorkerU64); 3] = [
        ("troupe.worker.tasks", "Actor turns run.", "{task}", |w| {
            w.tasks
        }),
        (
            "troupe.worker.steals",
            "Tasks stolen from other workers.",
            "{task}",
            |w| w.steals,
        ),
        ("troupe.worker.parks", "Times parked.", "{park}", |w| {
            w.parks
        }),
    ];
    for (name, help, unit, f) in worker_counts {
        let src = src.clone();
        meter
            .u64_observable_counter(name)
            .with_description(help)
            .with_unit(unit)
            .with_callback(move |o| {
                for w in &src.view().metrics.workers {
                    o.observe(f(w), &worker_attrs(w));
                }
            })
            .build();
        n += 1;
    }
    type WorkerTime = fn(&troupe::observability::WorkerSnapshot) -> Duration;
    let worker_times: [(&str, &str, WorkerTime); 2] = [
        (
            "troupe.worker.busy",
            "Time not parked: running actors or searching for work.",
            |w| w.busy,
        ),
        (
            "troupe.worker.idle",
            "Time spent parked (waiting for work).",
            |w| w.idle,
        ),
    ];
    for (name, help, f) in worker_times {
        let src = src.clone();
        meter
            .f64_observable_counter(name)
            .with_description(help)
            .with_unit("s")
            .with_callback(move |o| {
                for w in &src.view().metrics.workers {
                    o.observe(f(w).as_secs_f64(), &worker_attrs(w));
                }
            })
            .build();
        n += 1;
    }
    {
        let src = src.clone();
        meter
            .u64_observable_gauge("troupe.pool.injector.depth")
            .with_description("Tasks waiting in the pool's shared queue.")
            .with_unit("{task}")
            .with_callback(move |o| {
                for w in src.view().metrics.workers.iter().filter(|w| w.index == 0) {
                    o.observe(
                        w.injector_depth as u64,
                        &[KeyValue::new("pool", w.pool.clone())],
                    );
                }
            })
            .build();
        n += 1;
    }

    type Chan = fn(&troupe::observability::ChannelSnapshot) -> u64;
    let chans: [(&str, &str, Chan); 3] = [
        ("troupe.channel.published", "Messages published.", |c| {
            c.published
        }),
        (
            "troupe.channel.delivered",
            "Deliveries made (one per subscriber reached).",
            |c| c.delivered,
        ),
        (
            "troupe.channel.failed_deliveries",
            "Deliveries that failed (subscriber full or stopped).",
            |c| c.failed,
        ),
    ];
    let chan_observe = |src: Arc<Source>, f: Chan| {
        move |o: &dyn AsyncInstrument<u64>| {
            for c in &src.view().metrics.channels {
                o.observe(f(c), &[KeyValue::new("channel", c.name.clone())]);
            }
        }
    };
    for (name, help, f) in chans {
        meter
            .u64_observable_counter(name)
            .with_description(help)
            .with_unit("{message}")
            .with_callback(chan_observe(src.clone(), f))
            .build();
        n += 1;
    }
    meter
        .u64_observable_gauge("troupe.channel.subscribers")
        .with_description("Subscribers now.")
        .with_unit("{subscriber}")
        .with_callback(chan_observe(src.clone(), |c| c.subscribers as u64))
        .build();
    n += 1;

    {
        let src = src.clone();
        meter
            .u64_observable_gauge("troupe.live_actors")
            .with_description("Actors alive now (metered or not).")
            .with_unit("{actor}")
            .with_callback(move |o| o.observe(src.view().metrics.live_actors as u64, &[]))
            .build();
        n += 1;
    }
    {
        let src = src.clone();
        meter
            .u64_observable_counter("troupe.messages.dropped")
            .with_description("Messages the system dropped undelivered (all actors).")
            .with_unit("{message}")
            .with_callback(move |o| o.observe(src.view().metrics.dropped_messages, &[]))
            .build();
        n += 1;
    }
    n
}
