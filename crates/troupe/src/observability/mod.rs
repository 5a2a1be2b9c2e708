//! Observability: a performance model per actor (arrival rate,
//! throughput, waiting time, service time), per worker and per channel, as
//! plain structs ([`SystemHandle::metrics`]), as a `prometheus-client`
//! collector for a user's own registry ([`MetricsCollector`]), as
//! Prometheus text ([`render_prometheus`]), over HTTP
//! (`SystemHandle::serve_metrics`, feature `metrics-http`), plus the seed's estimators ([`ThroughputEstimator`],
//! [`FrequencyCalculator`]) for actors that measure a stream themselves.
//!
//! This is the top layer: it reads what the layers below record (the
//! actor core's per-actor counters, `actor/metrics.rs`; the scheduler's
//! per-worker counters, `engine/scheduler/stats.rs`) and records nothing
//! itself on the message path.
//!
//! Turning it on: [`SystemBuilder::metrics`](crate::SystemBuilder::metrics)
//! for every actor and worker, or
//! [`SpawnOptions::metrics`](crate::SpawnOptions::metrics) per actor. Off,
//! an actor's hot path pays one predictable branch on a null pointer.
//!
//! How the figures are made (see `actor/metrics.rs` for the protocol):
//! * counts (`handled`, drops, panics, restarts) are exact; `received`
//!   (arrivals) is derived as handled + waiting + dropped by the mailbox,
//!   exact when the actor is quiet, within the messages in flight otherwise;
//! * waiting and service times are sampled, one message per sampling
//!   period (default [`SAMPLE_EVERY`], 1,024;
//!   [`SystemBuilder::metrics_sample_every`](crate::SystemBuilder::metrics_sample_every)),
//!   into fixed log-spaced buckets (ten per decade, 100 ns to 80 s); p50/p99 interpolate within a bucket (error under 25%), `max`
//!   is exact among the sampled messages;
//! * `latency` is waiting plus service, per quantile (an upper estimate of
//!   the latency quantile, as the two are summed, not convolved);
//! * rates are counted over a sliding window of [`RATE_WINDOW`]: each read
//!   of the metrics stores a sample of the counters, and the rate is the
//!   change since the oldest sample still in the window (since the actor's
//!   spawn when there is none yet).
//!
//! For Prometheus the waiting and service times are histograms, and their
//! p50, p99 and max (and the latency's) are gauges of their own
//! (`troupe_actor_service_time_p99_seconds`): `prometheus-client` has no
//! summary type and a gauge may not carry a `quantile` label; the families
//! and the reasons are on [`MetricsCollector`].
//!
//! Stall and deadlock detection report here too: handlers running past a
//! threshold ([`Stalls`], [`SystemHandle::stalls`], turned on with
//! [`SystemBuilder::stall_threshold`](crate::SystemBuilder::stall_threshold)),
//! what each worker runs ([`WorkerView`], [`SystemHandle::workers`]), and
//! actors waiting on each other's replies ([`AskCycle`],
//! [`SystemHandle::ask_cycles`], turned on with
//! [`SystemBuilder::detect_ask_cycles`](crate::SystemBuilder::detect_ask_cycles));
//! their counts are in [`Metrics`] and the Prometheus text. The detectors
//! themselves live below: the workers' turn slots in the engine
//! (`engine/scheduler/watch.rs`), the wait graph in the actor core
//! (`actor/ask_cycle.rs`), the watchdog in the system (`system/watchdog.rs`).
//!
//! Invariants: reading metrics never blocks a worker (it takes only the
//! metrics set's own locks, which no message path takes); a stopped actor
//! is reported by the next read, then forgotten.
//!
//! ```
//! use troupe::{Actor, ActorSystem, Context};
//! struct Echo;
//! impl Actor for Echo {
//!     type Msg = u64;
//!     fn handle(&mut self, _: u64, _: &mut Context<'_, Self>) {}
//! }
//! let system = ActorSystem::builder().threads(1).metrics(true).build();
//! let echo = system.spawn(Echo);
//! for i in 0..100 { echo.tell(i).unwrap(); }
//! system.shutdown();
//! let m = system.metrics();
//! assert_eq!(m.actors[0].received, 100);
//! assert_eq!(m.actors[0].handled, 100);
//! let text = troupe::observability::render_prometheus(&m, 1000);
//! assert!(text.contains("troupe_actor_messages_handled_total"));
//! ```

mod estimator;
#[cfg(feature = "metrics-http")]
mod http;
mod prometheus;

pub use crate::actor::metrics::SAMPLE_EVERY;
pub use crate::actor::{AskCycle, CycleMember, RECENT_CYCLES};
pub use crate::system::{RunningHandler, Stall, Stalls, WorkerView, RECENT_STALLS};
pub use estimator::{Estimate, FrequencyCalculator, ThroughputEstimator};
#[cfg(feature = "metrics-http")]
pub use http::MetricsServer;
pub use prometheus::{render_prometheus, MetricsCollector, DEFAULT_ACTOR_SERIES_CAP};
/// The `prometheus-client` crate Troupe encodes with, re-exported so that a
/// user's [`Registry`](prometheus_client::registry::Registry) is of the
/// same version as [`MetricsCollector`].
pub use prometheus_client;

use crate::actor::metrics::{short_type_name, HistogramData, MeteredActor, BOUNDS_NS};
use crate::messaging::channel::Channel;
use crate::system::SystemHandle;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The window over which arrival rate and throughput are counted.
pub const RATE_WINDOW: Duration = Duration::from_secs(5);

/// Everything a system measures, copied out at one moment.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    /// Metered actors, in spawn order.
    pub actors: Vec<ActorSnapshot>,
    /// Every worker of every pool of the system (counting only if the system
    /// was built with metrics on).
    pub workers: Vec<WorkerSnapshot>,
    /// Channels registered with [`SystemHandle::watch_channel`].
    pub channels: Vec<ChannelSnapshot>,
    /// Messages the system dropped undelivered so far (all actors).
    pub dropped_messages: u64,
    /// Actors alive now (metered or not).
    pub live_actors: usize,
    /// Handlers reported as stalled so far ([`Stalls::detected`]; 0 with
    /// stall detection off).
    pub stalled_handlers: u64,
    /// Ask cycles detected so far ([`SystemHandle::ask_cycles_detected`]).
    pub ask_cycles: u64,
}

/// One actor's figures.
#[derive(Clone, Debug, Default)]
pub struct ActorSnapshot {
    /// Its label: the name given at spawn, else `Type#id`.
    pub name: String,
    /// The actor's type, paths dropped (`Greeter`, `Stage<Frame>`).
    pub type_name: String,
    /// Its [`ActorId`](crate::ActorId) as a number.
    pub id: u64,
    /// Messages accepted into its mailbox (arrivals).
    pub received: u64,
    /// Messages handed to its handler.
    pub handled: u64,
    /// Arrivals per second over the window ([`RATE_WINDOW`]).
    pub arrival_rate: f64,
    /// Messages handled per second over the window.
    pub throughput: f64,
    /// Messages waiting in the mailbox now.
    pub mailbox_depth: u64,
    /// Most messages seen waiting (at sampled dequeues).
    pub mailbox_depth_max: u64,
    /// Time from send to dequeue (sampled).
    pub waiting: LatencySummary,
    /// Time in the handler (sampled).
    pub service: LatencySummary,
    /// Waiting plus service, quantile by quantile.
    pub latency: LatencySummary,
    /// Handler panics (0 or 1: a panic stops the actor).
    pub panics: u64,
    /// Restarts this actor made of its children (supervisors).
    pub restarts: u64,
    /// Messages dropped because the mailbox was full (refused or evicted).
    pub dropped_overflow: u64,
    /// Messages dropped because the actor had stopped (refused or left in
    /// the mailbox).
    pub dropped_stopped: u64,
    /// Whether the actor has stopped.
    pub stopped: bool,
    /// The raw histograms, for export.
    pub(crate) waiting_hist: HistogramData,
    pub(crate) service_hist: HistogramData,
}

impl ActorSnapshot {
    /// Whether the actor is buffering: messages pile up (arrivals outpace
    /// handling by more than 10% over the window and the mailbox is not
    /// empty).
    pub fn is_buffering(&self) -> bool {
        self.mailbox_depth > 0 && self.arrival_rate > self.throughput * 1.1 + 1.0
    }
}

/// Quantiles of a sampled duration.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LatencySummary {
    /// Messages sampled.
    pub samples: u64,
    /// Mean of the samples.
    pub mean: Duration,
    /// Median.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Longest sample.
    pub max: Duration,
}

impl LatencySummary {
    fn of(h: &HistogramData) -> Self {
        if h.count == 0 {
            return Self::default();
        }
        let max = Duration::from_nanos(h.max_ns);
        LatencySummary {
            samples: h.count,
            mean: Duration::from_nanos(h.sum_ns / h.count),
            p50: quantile(h, 0.50).min(max),
            p99: quantile(h, 0.99).min(max),
            max,
        }
    }

    fn plus(a: &Self, b: &Self) -> Self {
        LatencySummary {
            samples: a.samples.min(b.samples),
            mean: a.mean + b.mean,
            p50: a.p50 + b.p50,
            p99: a.p99 + b.p99,
            max: a.max + b.max,
        }
    }
}

/// The `q` quantile, interpolated linearly within its bucket.
fn quantile(h: &HistogramData, q: f64) -> Duration {
    let rank = q * h.count as f64;
    let mut seen = 0u64;
    for (i, &n) in h.buckets.iter().enumerate() {
        if n == 0 {
            continue;
        }
        if (seen + n) as f64 >= rank {
            let lo = if i == 0 { 0 } else { BOUNDS_NS[i - 1] };
            let hi = if i + 1 == BOUNDS_NS.len() {
                h.max_ns.max(lo)
            } else {
                BOUNDS_NS[i]
            };
            let frac = ((rank - seen as f64) / n as f64).clamp(0.0, 1.0);
            return Duration::from_nanos(lo + ((hi - lo) as f64 * frac) as u64);
        }
        seen += n;
    }
    Duration::from_nanos(h.max_ns)
}

/// One worker's figures.
#[derive(Clone, Debug, Default)]
pub struct WorkerSnapshot {
    /// The pool's thread name prefix (`troupe-worker` for the default pool).
    pub pool: String,
    /// The worker's index in its pool.
    pub index: usize,
    /// Tasks (actor turns) run.
    pub tasks: u64,
    /// Tasks stolen from other workers.
    pub steals: u64,
    /// Times parked.
    pub parks: u64,
    /// Time not parked: running tasks or searching for them.
    pub busy: Duration,
    /// Time spent parked (waiting for work).
    pub idle: Duration,
    /// Tasks waiting in the pool's shared injector queue now.
    pub injector_depth: usize,
}

impl WorkerSnapshot {
    /// Busy time over busy plus idle, 0 to 1.
    pub fn utilisation(&self) -> f64 {
        let total = (self.busy + self.idle).as_secs_f64();
        if total > 0.0 {
            self.busy.as_secs_f64() / total
        } else {
            0.0
        }
    }
}

/// One channel's figures.
#[derive(Clone, Debug, Default)]
pub struct ChannelSnapshot {
    /// Its name (`#id` for an anonymous channel).
    pub name: String,
    /// Subscribers now.
    pub subscribers: usize,
    /// Messages published.
    pub published: u64,
    /// Deliveries made (one per subscriber reached).
    pub delivered: u64,
    /// Deliveries that failed.
    pub failed: u64,
}

impl SystemHandle {
    /// The system's metrics now: every metered actor, every worker, every
    /// watched channel. Reading is cheap for the actors (no lock they take)
    /// and stores a sample for the windowed rates.
    ///
    /// ```
    /// let system = troupe::ActorSystem::builder().threads(2).metrics(true).build();
    /// let m = system.metrics();
    /// assert_eq!(m.workers.len(), 2);
    /// assert!(m.actors.is_empty());
    /// ```
    pub fn metrics(&self) -> Metrics {
        let now = Instant::now();
        let set = &self.rt.metrics;
        let actors: Vec<MeteredActor> = {
            let mut all = set.actors.lock();
            let out = all.clone();
            // Report stopped actors this once, then forget them.
            all.retain(|(m, _)| !m.stopped.load(Ordering::Acquire));
            out
        };
        let mut windows = set.windows.lock();
        let mut snaps = Vec::with_capacity(actors.len());
        for (m, mailbox) in &actors {
            let stopped = m.stopped.load(Ordering::Acquire);
            let r = m.read(mailbox.upgrade().as_deref());
            let w = windows.entry(m.id).or_default();
            // Arrivals are derived from racing loads: never let them go back.
            let received = r.received.max(w.back().map_or(0, |&(_, rec, _)| rec));
            let handled = r.handled;
            while w.len() > 1 && now.duration_since(w[1].0) >= RATE_WINDOW {
                w.pop_front();
            }
            let (t0, r0, h0) = match w.front() {
                Some(&(t, r, h)) if now.duration_since(t) < RATE_WINDOW * 2 => (t, r, h),
                _ => (m.spawned_at, 0, 0),
            };
            let dt = now.duration_since(t0).as_secs_f64().max(1e-9);
            w.push_back((now, received, handled));
            let waiting = LatencySummary::of(&r.waiting);
            let service = LatencySummary::of(&r.service);
            snaps.push(ActorSnapshot {
                name: m.label(),
                type_name: short_type_name(m.type_name),
                id: m.id,
                received,
                handled,
                arrival_rate: received.saturating_sub(r0) as f64 / dt,
                throughput: handled.saturating_sub(h0) as f64 / dt,
                mailbox_depth: r.depth,
                mailbox_depth_max: r.depth_max,
                latency: LatencySummary::plus(&waiting, &service),
                waiting,
                service,
                panics: m.panics.load(Ordering::Relaxed),
                restarts: m.restarts.load(Ordering::Relaxed),
                dropped_overflow: r.dropped_overflow,
                dropped_stopped: r.dropped_stopped,
                stopped,
                waiting_hist: r.waiting,
                service_hist: r.service,
            });
            if stopped {
                windows.remove(&m.id);
            }
        }
        drop(windows);

        let mut workers = Vec::new();
        for pool in self.pools() {
            let elapsed = pool.stats.started.elapsed();
            let injector_depth = pool.injector.len();
            for (index, w) in pool.stats.workers.iter().enumerate() {
                let idle = Duration::from_nanos(w.idle_ns.get()).min(elapsed);
                workers.push(WorkerSnapshot {
                    pool: pool.name.clone(),
                    index,
                    tasks: w.tasks.get(),
                    steals: w.steals.get(),
                    parks: w.parks.get(),
                    busy: if pool.stats.on {
                        elapsed - idle
                    } else {
                        Duration::ZERO
                    },
                    idle,
                    injector_depth,
                });
            }
        }

        let channels = {
            let mut probes = set.channels.lock();
            let mut out = Vec::new();
            probes.retain(|probe| match probe() {
                Some((name, subscribers, published, delivered, failed)) => {
                    out.push(ChannelSnapshot {
                        name,
                        subscribers,
                        published,
                        delivered,
                        failed,
                    });
                    true
                }
                None => false,
            });
            out
        };

        Metrics {
            actors: snaps,
            workers,
            channels,
            dropped_messages: self.dropped_messages(),
            live_actors: self.live_actors(),
            stalled_handlers: self.stalls().detected,
            ask_cycles: self.ask_cycles_detected(),
        }
    }

    /// Exports `channel`'s counters (publishes, deliveries, failures) with
    /// this system's metrics, for as long as the channel lives.
    ///
    /// ```
    /// let system = troupe::ActorSystem::builder().threads(1).build();
    /// let frames = troupe::channel::Channel::<u32>::new();
    /// system.watch_channel(&frames);
    /// frames.publish(1);
    /// assert_eq!(system.metrics().channels[0].published, 1);
    /// ```
    pub fn watch_channel<M: Send + Sync + 'static>(&self, channel: &Channel<M>) {
        let weak = channel.downgrade();
        self.rt.metrics.channels.lock().push(Box::new(move || {
            let c = Channel::upgrade(&weak)?;
            Some((
                c.name(),
                c.subscribers(),
                c.published(),
                c.delivered(),
                c.failed_deliveries(),
            ))
        }));
    }

    /// The metrics in Prometheus text format (what `serve_metrics` serves),
    /// with at most [`DEFAULT_ACTOR_SERIES_CAP`] actors labelled one by one.
    pub fn metrics_text(&self) -> String {
        prometheus::render_owned(self.metrics(), DEFAULT_ACTOR_SERIES_CAP)
    }
}
