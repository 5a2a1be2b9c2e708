//! Troupe's metrics through OpenTelemetry's metrics API (feature `otel`):
//! `telemetry::register_metrics` on an SDK meter provider whose reader
//! exports to the SDK's in-memory exporter. The values exported match the
//! system's own snapshot (`SystemHandle::metrics`), counts exactly.
//!
//! Run: `cargo test -p troupe-remote --features otel --test otel_metrics`.

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, Metric, MetricData, ResourceMetrics};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use std::sync::mpsc;
use std::time::Duration;
use troupe::{Actor, ActorSystem, Context, MailboxConfig, Overflow, SpawnOptions};
use troupe_remote::telemetry::{register_metrics, register_metrics_capped, SNAPSHOT_REUSE};

/// Counts what it is told.
struct Echo;
impl Actor for Echo {
    type Msg = u64;
    fn handle(&mut self, _: u64, _: &mut Context<'_, Self>) {}
}

/// Holds its first message until released, then reports the last one.
struct Gate {
    started: mpsc::Sender<()>,
    release: mpsc::Receiver<()>,
    done: mpsc::Sender<u64>,
}
impl Actor for Gate {
    type Msg = u64;
    fn handle(&mut self, n: u64, _: &mut Context<'_, Self>) {
        if n == 0 {
            self.started.send(()).unwrap();
            self.release.recv().unwrap();
        }
        self.done.send(n).unwrap();
    }
}

fn provider() -> (SdkMeterProvider, InMemoryMetricExporter) {
    let exporter = InMemoryMetricExporter::default();
    let reader = PeriodicReader::builder(exporter.clone())
        .with_interval(Duration::from_secs(3600))
        .build();
    (
        SdkMeterProvider::builder().with_reader(reader).build(),
        exporter,
    )
}

/// One collection: flush, then the metrics of the last export.
fn collect(p: &SdkMeterProvider, e: &InMemoryMetricExporter) -> ResourceMetrics {
    // Two collections closer than SNAPSHOT_REUSE share one snapshot.
    std::thread::sleep(SNAPSHOT_REUSE + Duration::from_millis(100));
    e.reset();
    p.force_flush().unwrap();
    let mut all: Vec<ResourceMetrics> = e.get_finished_metrics().unwrap();
    all.pop().expect("one export")
}

/// The instrument `name` of an export.
fn find<'a>(ms: &'a ResourceMetrics, name: &str) -> &'a Metric {
    ms.scope_metrics()
        .flat_map(|s| s.metrics())
        .find(|m| m.name() == name)
        .unwrap_or_else(|| panic!("no instrument {name}"))
}

fn has(attrs: &mut dyn Iterator<Item = &KeyValue>, want: &[(&str, &str)]) -> bool {
    let attrs: Vec<&KeyValue> = attrs.collect();
    want.iter().all(|(k, v)| {
        attrs
            .iter()
            .any(|kv| kv.key.as_str() == *k && kv.value == Value::from(v.to_string()))
    })
}

/// The value of `name` at the point with `want` among its attributes.
fn value(ms: &ResourceMetrics, name: &str, want: &[(&str, &str)]) -> f64 {
    let m = find(ms, name);
    let found: Vec<f64> = match m.data() {
        AggregatedMetrics::U64(MetricData::Sum(s)) => s
            .data_points()
            .filter(|p| has(&mut p.attributes(), want))
            .map(|p| p.value() as f64)
            .collect(),
        AggregatedMetrics::F64(MetricData::Sum(s)) => s
            .data_points()
            .filter(|p| has(&mut p.attributes(), want))
            .map(|p| p.value())
            .collect(),
        AggregatedMetrics::U64(MetricData::Gauge(g)) => g
            .data_points()
            .filter(|p| has(&mut p.attributes(), want))
            .map(|p| p.value() as f64)
            .collect(),
        AggregatedMetrics::F64(MetricData::Gauge(g)) => g
            .data_points()
            .filter(|p| has(&mut p.attributes(), want))
            .map(|p| p.value())
            .collect(),
        _ => panic!("{name}: unexpected kind"),
    };
    assert_eq!(found.len(), 1, "{name} {want:?}: {found:?}");
    found[0]
}

fn unit(ms: &ResourceMetrics, name: &str) -> String {
    find(ms, name).unit().to_string()
}

#[test]
fn exported_values_match_the_systems_snapshot() {
    let system = ActorSystem::builder().threads(2).metrics(true).build();
    let echo = system.spawn_with(Echo, SpawnOptions::new().name("echo"));
    let (started_tx, started) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    let (done_tx, done) = mpsc::channel();
    let gate = system.spawn_with(
        Gate {
            started: started_tx,
            release: release_rx,
            done: done_tx,
        },
        SpawnOptions::new()
            .name("gate")
            .mailbox(MailboxConfig::bounded(4, Overflow::Reject)),
    );
    let (p, e) = provider();
    let n = register_metrics(&system, &p.meter("troupe")).instruments;
    assert_eq!(n, 30);

    for i in 0..100 {
        echo.tell(i).unwrap();
    }
    // The gate holds message 0; 1..=4 fill its mailbox; 5, 6, 7 are refused.
    gate.tell(0).unwrap();
    started.recv_timeout(Duration::from_secs(30)).unwrap();
    for i in 1..=7u64 {
        assert_eq!(gate.tell(i).is_ok(), i <= 4, "tell {i}");
    }
    // Wait until the echo is quiet.
    while system.metrics().actors[0].handled < 100 {
        std::thread::sleep(Duration::from_millis(5));
    }

    let ms = collect(&p, &e);
    let snap = system.metrics();
    let gate_l = [("actor", "gate"), ("type", "Gate")];
    let echo_l = [("actor", "echo"), ("type", "Echo")];
    assert_eq!(value(&ms, "troupe.actor.messages.handled", &echo_l), 100.0);
    assert_eq!(value(&ms, "troupe.actor.messages.received", &echo_l), 100.0);
    assert_eq!(value(&ms, "troupe.actor.mailbox.depth", &gate_l), 4.0);
    let dropped = |reason| {
        let mut l = gate_l.to_vec();
        l.push(("reason", reason));
        value(&ms, "troupe.actor.messages.dropped", &l)
    };
    assert_eq!(dropped("overflow"), 3.0);
    assert_eq!(dropped("stopped"), 0.0);
    for a in &snap.actors {
        let l = [("actor", a.name.as_str()), ("type", a.type_name.as_str())];
        for (name, want) in [
            ("troupe.actor.messages.received", a.received as f64),
            ("troupe.actor.messages.handled", a.handled as f64),
            ("troupe.actor.panics", a.panics as f64),
            ("troupe.actor.restarts", a.restarts as f64),
            ("troupe.actor.mailbox.depth", a.mailbox_depth as f64),
            ("troupe.actor.mailbox.depth_max", a.mailbox_depth_max as f64),
            ("troupe.actor.service_time.p99", a.service.p99.as_secs_f64()),
            ("troupe.actor.waiting_time.max", a.waiting.max.as_secs_f64()),
            ("troupe.actor.latency.p50", a.latency.p50.as_secs_f64()),
        ] {
            assert_eq!(value(&ms, name, &l), want, "{name} of {}", a.name);
        }
    }
    assert_eq!(
        value(&ms, "troupe.live_actors", &[]),
        snap.live_actors as f64
    );
    assert_eq!(
        value(&ms, "troupe.messages.dropped", &[]),
        snap.dropped_messages as f64
    );
    let tasks = find(&ms, "troupe.worker.tasks");
    let AggregatedMetrics::U64(MetricData::Sum(t)) = tasks.data() else {
        panic!("worker tasks is a u64 sum");
    };
    assert_eq!(t.data_points().count(), snap.workers.len());
    assert_eq!(snap.workers.len(), 2);
    assert_eq!(unit(&ms, "troupe.actor.messages.handled"), "{message}");
    assert_eq!(unit(&ms, "troupe.actor.throughput"), "{message}/s");
    assert_eq!(unit(&ms, "troupe.actor.service_time.p99"), "s");
    assert_eq!(unit(&ms, "troupe.worker.busy"), "s");

    // Released, the gate handles its five: a later collection reads anew.
    release.send(()).unwrap();
    for _ in 0..5 {
        done.recv_timeout(Duration::from_secs(30)).unwrap();
    }
    let ms = collect(&p, &e);
    assert_eq!(value(&ms, "troupe.actor.messages.handled", &gate_l), 5.0);
    assert_eq!(value(&ms, "troupe.actor.mailbox.depth", &gate_l), 0.0);
    assert_eq!(
        value(&ms, "troupe.actor.messages.handled", &gate_l),
        system.metrics().actors[1].handled as f64
    );
    system.shutdown();
}

#[test]
fn actors_past_the_cap_are_summed_per_type() {
    let system = ActorSystem::builder().threads(1).metrics(true).build();
    let first = system.spawn_with(Echo, SpawnOptions::new().name("first"));
    let rest: Vec<_> = (0..3).map(|_| system.spawn(Echo)).collect();
    for i in 0..10 {
        first.tell(i).unwrap();
    }
    for (k, r) in rest.iter().enumerate() {
        for i in 0..=k as u64 {
            r.tell(i).unwrap();
        }
    }
    while system
        .metrics()
        .actors
        .iter()
        .map(|a| a.handled)
        .sum::<u64>()
        < 16
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    let (p, e) = provider();
    register_metrics_capped(&system, &p.meter("troupe"), 1);
    let ms = collect(&p, &e);
    let first_l = [("actor", "first"), ("type", "Echo")];
    let other_l = [("actor", "_other"), ("type", "Echo")];
    assert_eq!(value(&ms, "troupe.actor.messages.handled", &first_l), 10.0);
    assert_eq!(value(&ms, "troupe.actor.messages.handled", &other_l), 6.0);
    let handled = find(&ms, "troupe.actor.messages.handled");
    let AggregatedMetrics::U64(MetricData::Sum(s)) = handled.data() else {
        panic!("handled is a u64 sum");
    };
    assert_eq!(s.data_points().count(), 2, "one series each: first, _other");
    assert!(s.is_monotonic());
    system.shutdown();
}
