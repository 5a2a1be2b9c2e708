//! An entity tell sent from inside a sampled OpenTelemetry span continues
//! that trace on the node that owns the entity: two clusters in one
//! process on the memory transport, the spans in the OpenTelemetry SDK's
//! in-memory exporter. Covers the direct path (the sender's node knows
//! the owner) and the buffered one (the tell waits in a region until its
//! shard has an owner).

use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use opentelemetry::trace::{TraceContextExt, TraceId, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use serde::{Deserialize, Serialize};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;
use troupe::{Actor, ActorSystem, Context};
use troupe_cluster::Cluster;
use troupe_remote::remote;
use troupe_remote::transport::memory::MemoryNetwork;
use troupe_sharding::ownership::{MemoryOwnership, OwnershipStore};
use troupe_sharding::{ClusterSharding, Sharding};

const T: Duration = Duration::from_secs(20);
const SHARDS: u32 = 16;

#[remote("sharding.trace.Ping")]
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Ping(u64);

/// What an entity saw: its node, the ping, and the trace it ran in.
type Seen = (String, u64, TraceId);

/// Reports the trace of the span it handles each ping in.
struct Entity {
    node: String,
    seen: mpsc::Sender<Seen>,
}
impl Actor for Entity {
    type Msg = Ping;
    fn handle(&mut self, Ping(n): Ping, _: &mut Context<'_, Self>) {
        let work = tracing::info_span!("entity_work");
        let trace = work.context().span().span_context().trace_id();
        let _ = self.seen.send((self.node.clone(), n, trace));
    }
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
    system: &ActorSystem,
    store: &Arc<MemoryOwnership>,
    seen: &mpsc::Sender<Seen>,
    grace: Duration,
) -> Sharding<Entity> {
    let (node, seen) = (c.name().to_string(), seen.clone());
    c.sharding("traced", move |_| Entity {
        node: node.clone(),
        seen: seen.clone(),
    })
    .tell::<Ping>()
    .shards(SHARDS)
    .tick(Duration::from_millis(100))
    .store(store.clone())
    .takeover_grace(grace)
    .system(system)
    .start()
    .expect("start")
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

/// Tells `ping` to `id` from node a inside a new span; that span's trace.
fn tell_in_span(s: &Sharding<Entity>, id: &str, ping: u64) -> TraceId {
    let request = tracing::info_span!("request");
    let _in = request.enter();
    s.entity(id).tell(Ping(ping)).expect("accepted");
    request.context().span().span_context().trace_id()
}

#[test]
fn an_entity_tell_continues_the_senders_trace_on_the_owning_node() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let otel = tracing_opentelemetry::layer().with_tracer(provider.tracer("troupe-test"));
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(otel))
        .expect("the only subscriber in this test binary");

    let net = MemoryNetwork::new();
    let store = Arc::new(MemoryOwnership::new());
    let (a, b) = (cluster(&net, "a"), cluster(&net, "b"));
    let (sys_a, sys_b) = (
        ActorSystem::builder().threads(2).build(),
        ActorSystem::builder().threads(2).build(),
    );
    let (seen_tx, seen) = mpsc::channel();
    // Buffered: every shard's record names "ghost", a node never seen
    // live, so a's coordinator takes them over only after its takeover
    // grace; a tell made before that waits in a's region, then goes to
    // its entity once a owns the shard.
    for shard in 0..SHARDS {
        store.claim("traced", shard, "ghost", 0).expect("claim");
    }
    let s_a = sharding(&a, &sys_a, &store, &seen_tx, Duration::from_secs(1));
    let buffered_trace = tell_in_span(&s_a, "early", 1);
    let (node, n, trace) = seen.recv_timeout(T).expect("the buffered ping arrives");
    assert_eq!((node.as_str(), n), ("a", 1));
    assert!(s_a.stats().buffered >= 1, "the tell waited in a's buffer");
    assert_ne!(buffered_trace, TraceId::INVALID);
    assert_eq!(trace, buffered_trace, "the buffered tell");

    let s_b = sharding(&b, &sys_b, &store, &seen_tx, Duration::from_secs(5));
    assert!(
        wait_until(T, || a.peers().len() == 1
            && b.peers().len() == 1
            && s_a.settled()
            && s_b.settled()),
        "the cluster did not settle"
    );
    std::thread::sleep(Duration::from_millis(300));

    // Direct: an entity owned by b, told from a.
    let on_b = (0..1000)
        .map(|i| format!("user-{i}"))
        .find(|id| {
            let owner = store.owner("traced", s_a.shard_of(id)).expect("owner");
            owner.node.as_deref() == Some("b")
        })
        .expect("b owns some shard");
    let direct_trace = tell_in_span(&s_a, &on_b, 2);
    let (node, n, trace) = seen.recv_timeout(T).expect("the direct ping arrives");
    assert_eq!((node.as_str(), n), ("b", 2));
    assert_ne!(direct_trace, TraceId::INVALID);
    assert_ne!(direct_trace, buffered_trace);
    assert_eq!(trace, direct_trace, "the direct tell");

    s_a.leave();
    s_b.leave();
    sys_a.shutdown();
    sys_b.shutdown();
    provider.force_flush().unwrap();
    // b's receive span of the direct tell belongs to the request's trace.
    let spans = exporter.get_finished_spans().unwrap();
    assert!(
        spans
            .iter()
            .any(|s| s.name == "receive" && s.span_context.trace_id() == direct_trace),
        "a receive span on b in the request's trace"
    );
}
