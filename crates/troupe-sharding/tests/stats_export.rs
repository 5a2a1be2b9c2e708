//! The distributed layers' counters exported: `NodeStats`, `ClusterStats`
//! and `ShardingStats` of two nodes in one process (memory transport), as
//! Prometheus text through a `prometheus-client` registry and as
//! OpenTelemetry instruments read by the SDK's in-memory exporter. Both
//! give the numbers the public snapshots give, exactly; a dropped
//! sharding's series leave the export.
//!
//! Run: `cargo test -p troupe-sharding --features otel --test stats_export`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData, ResourceMetrics};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use serde::{Deserialize, Serialize};
use troupe::observability::prometheus_client::encoding::prometheus_text::encode;
use troupe::observability::prometheus_client::registry::Registry;
use troupe::{Actor, ActorSystem, Context};
use troupe_cluster::metrics::{cluster_metrics, cluster_node_metrics, CLUSTER_STATS};
use troupe_cluster::Cluster;
use troupe_remote::node_metrics::NODE_STATS;
use troupe_remote::remote;
use troupe_remote::telemetry::{register_stats, SNAPSHOT_REUSE};
use troupe_remote::transport::memory::MemoryNetwork;
use troupe_sharding::metrics::{sharding_metrics, SHARDING_STATS};
use troupe_sharding::ownership::MemoryOwnership;
use troupe_sharding::{ClusterSharding, Sharding};

const T: Duration = Duration::from_secs(20);
const TELLS: u64 = 200;
const ENTITIES: u64 = 20;

#[remote("sharding.stats_export.Add")]
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Add(u64);

struct Entity;
impl Actor for Entity {
    type Msg = Add;
    fn handle(&mut self, _: Add, _: &mut Context<'_, Self>) {}
}

fn cluster(net: &MemoryNetwork, name: &str) -> Arc<Cluster> {
    Arc::new(
        Cluster::builder_on(net.connect(), name)
            .insecure()
            .heartbeat(Duration::from_millis(100))
            .connect()
            .expect("connect"),
    )
}

fn sharding(
    c: &Arc<Cluster>,
    sys: &ActorSystem,
    store: &Arc<MemoryOwnership>,
) -> Arc<Sharding<Entity>> {
    Arc::new(
        c.sharding("counted", |_| Entity)
            .tell::<Add>()
            .shards(8)
            .tick(Duration::from_millis(100))
            .store(store.clone())
            .system(sys)
            .start()
            .expect("start"),
    )
}

fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    f()
}

/// The value of the sample `name{labels}` in a Prometheus text.
fn sample(text: &str, name: &str, labels: &str) -> Option<u64> {
    let head = format!("{name}{{{labels}}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&head))
        .and_then(|v| v.trim().parse().ok())
}

/// The value of instrument `name` at the point whose attributes include `want`.
fn otel_value(ms: &ResourceMetrics, name: &str, want: &[(&str, &str)]) -> Option<u64> {
    let m = ms
        .scope_metrics()
        .flat_map(|s| s.metrics())
        .find(|m| m.name() == name)?;
    let has = |attrs: Vec<&KeyValue>| {
        want.iter().all(|(k, v)| {
            attrs
                .iter()
                .any(|kv| kv.key.as_str() == *k && kv.value == Value::from(v.to_string()))
        })
    };
    match m.data() {
        AggregatedMetrics::U64(MetricData::Sum(s)) => s
            .data_points()
            .find(|p| has(p.attributes().collect()))
            .map(|p| p.value()),
        AggregatedMetrics::U64(MetricData::Gauge(g)) => g
            .data_points()
            .find(|p| has(p.attributes().collect()))
            .map(|p| p.value()),
        _ => None,
    }
}

#[test]
fn the_distributed_counters_reach_prometheus_and_opentelemetry() {
    let net = MemoryNetwork::new();
    let store = Arc::new(MemoryOwnership::new());
    let (a, b) = (cluster(&net, "a"), cluster(&net, "b"));
    let (sys_a, sys_b) = (
        ActorSystem::builder().threads(1).build(),
        ActorSystem::builder().threads(1).build(),
    );
    let (s_a, s_b) = (sharding(&a, &sys_a, &store), sharding(&b, &sys_b, &store));
    assert!(
        wait_until(T, || a.peers().len() == 1
            && b.peers().len() == 1
            && s_a.settled()
            && s_b.settled()),
        "the cluster did not settle"
    );
    for i in 0..TELLS {
        s_a.entity(&format!("e-{}", i % ENTITIES))
            .tell(Add(i))
            .expect("accepted");
    }
    assert!(
        wait_until(T, || s_a.stats().delivered + s_b.stats().delivered == TELLS),
        "every tell delivered"
    );
    // Quiet now: the links' confirmations are in, nothing moves.
    assert!(wait_until(T, || a.node().stats().tells_unconfirmed == 0));

    let nodes = cluster_node_metrics(&a).merge(cluster_node_metrics(&b));
    let clusters = cluster_metrics(&a).merge(cluster_metrics(&b));
    let shardings =
        sharding_metrics(&s_a, "a", "counted").merge(sharding_metrics(&s_b, "b", "counted"));

    // Prometheus: one registry, one scrape.
    let mut registry = Registry::default();
    registry.register_collector(Box::new(nodes.clone()));
    registry.register_collector(Box::new(clusters.clone()));
    registry.register_collector(Box::new(shardings.clone()));
    let mut text = String::new();
    encode(&mut text, &registry).expect("encodes");
    if let Ok(path) = std::env::var("TROUPE_STATS_EXPOSITION") {
        std::fs::write(path, &text).expect("write the exposition");
    }
    let (sa, sb) = (s_a.stats(), s_b.stats());
    let (ca, na) = (a.stats(), a.node().stats());
    let l_a = "node=\"a\",sharding=\"counted\"";
    let l_b = "node=\"b\",sharding=\"counted\"";
    assert_eq!(
        sample(&text, "troupe_sharding_tells_total", l_a),
        Some(TELLS)
    );
    assert_eq!(sa.tells, TELLS);
    assert_eq!(
        sample(&text, "troupe_sharding_delivered_total", l_a).unwrap()
            + sample(&text, "troupe_sharding_delivered_total", l_b).unwrap(),
        TELLS
    );
    assert_eq!(
        sample(&text, "troupe_sharding_entities_active", l_a).unwrap()
            + sample(&text, "troupe_sharding_entities_active", l_b).unwrap(),
        ENTITIES
    );
    assert_eq!(
        sample(&text, "troupe_sharding_shards_owned", l_a),
        Some(sa.shards_owned)
    );
    assert_eq!(
        sample(&text, "troupe_cluster_resyncs_total", "node=\"a\""),
        Some(ca.resyncs)
    );
    assert!(ca.resyncs >= 1);
    assert_eq!(
        sample(&text, "troupe_remote_frames_sent_total", "node=\"a\""),
        Some(na.frames_sent)
    );
    assert_eq!(
        sample(&text, "troupe_remote_tells_unconfirmed", "node=\"a\""),
        Some(0)
    );
    // Every family once, with its help, for both nodes.
    for (prefix, names, kinds) in [
        (
            "troupe_remote",
            NODE_STATS.iter().map(|f| f.name).collect::<Vec<_>>(),
            2,
        ),
        (
            "troupe_cluster",
            CLUSTER_STATS.iter().map(|f| f.name).collect(),
            2,
        ),
        (
            "troupe_sharding",
            SHARDING_STATS.iter().map(|f| f.name).collect(),
            2,
        ),
    ] {
        for n in names {
            let family = format!("{prefix}_{n}");
            let helps = text.matches(&format!("# HELP {family} ")).count()
                + text.matches(&format!("# HELP {family}_total ")).count();
            assert_eq!(helps, 1, "{family}");
            let rows = text
                .lines()
                .filter(|l| {
                    l.starts_with(&format!("{family}{{"))
                        || l.starts_with(&format!("{family}_total{{"))
                })
                .count();
            assert_eq!(rows, kinds, "{family}: a row per node");
        }
    }

    // OpenTelemetry: the same exports as observable instruments.
    let exporter = InMemoryMetricExporter::default();
    let reader = PeriodicReader::builder(exporter.clone())
        .with_interval(Duration::from_secs(3600))
        .build();
    let provider = SdkMeterProvider::builder().with_reader(reader).build();
    let meter = provider.meter("troupe");
    assert_eq!(register_stats(&nodes, &meter), NODE_STATS.len());
    assert_eq!(register_stats(&clusters, &meter), CLUSTER_STATS.len());
    assert_eq!(register_stats(&shardings, &meter), SHARDING_STATS.len());
    provider.force_flush().expect("flush");
    let ms = exporter
        .get_finished_metrics()
        .expect("metrics")
        .pop()
        .expect("one export");
    let (wa, wb) = (
        [("node", "a"), ("sharding", "counted")],
        [("node", "b"), ("sharding", "counted")],
    );
    assert_eq!(otel_value(&ms, "troupe.sharding.tells", &wa), Some(TELLS));
    assert_eq!(
        otel_value(&ms, "troupe.sharding.delivered", &wa).unwrap()
            + otel_value(&ms, "troupe.sharding.delivered", &wb).unwrap(),
        TELLS
    );
    assert_eq!(
        otel_value(&ms, "troupe.sharding.entities_active", &wa).unwrap()
            + otel_value(&ms, "troupe.sharding.entities_active", &wb).unwrap(),
        ENTITIES
    );
    assert_eq!(
        otel_value(&ms, "troupe.cluster.resyncs", &[("node", "a")]),
        Some(ca.resyncs)
    );
    assert_eq!(
        otel_value(&ms, "troupe.remote.frames_sent", &[("node", "a")]),
        Some(na.frames_sent)
    );
    assert_eq!(
        otel_value(&ms, "troupe.remote.tells_unconfirmed", &[("node", "a")]),
        Some(0)
    );
    assert_eq!(sb.tells, 0, "b sent nothing");
    assert_eq!(otel_value(&ms, "troupe.sharding.tells", &wb), Some(0));

    // A sharding dropped (it leaves): its series leave both exports.
    let s_b = Arc::try_unwrap(s_b)
        .ok()
        .expect("the exports hold it weakly");
    s_b.leave();
    let mut text = String::new();
    encode(&mut text, &registry).expect("encodes");
    assert_eq!(sample(&text, "troupe_sharding_tells_total", l_b), None);
    assert!(sample(&text, "troupe_sharding_tells_total", l_a).is_some());
    std::thread::sleep(SNAPSHOT_REUSE + Duration::from_millis(100));
    exporter.reset();
    provider.force_flush().expect("flush");
    let ms = exporter
        .get_finished_metrics()
        .expect("metrics")
        .pop()
        .expect("one export");
    assert_eq!(otel_value(&ms, "troupe.sharding.tells", &wb), None);
    assert_eq!(otel_value(&ms, "troupe.sharding.tells", &wa), Some(TELLS));

    Arc::try_unwrap(s_a).ok().expect("held weakly").leave();
    sys_a.shutdown();
    sys_b.shutdown();
}
