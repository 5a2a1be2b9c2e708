//! One request through 3 actors on 2 nodes is one OpenTelemetry trace
//! (feature `otel`): spans exported by the SDK's in-memory exporter, with
//! the right parent/child links and the messaging semantic conventions'
//! attributes. Two nodes in one process on the in-memory transport.
//!
//! `cargo test -p troupe-remote --features otel --test otel_trace`
//!
//! One test in its own binary: it installs a global subscriber.

use opentelemetry::trace::{SpanId, TraceId, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde::{Deserialize, Serialize};
use std::sync::mpsc;
use std::time::Duration;
use tracing_subscriber::layer::SubscriberExt;
use troupe::{Actor, ActorSystem, Context, ReplyTo, SpawnOptions};
use troupe_remote::transport::memory::MemoryNetwork;
use troupe_remote::{remote, Node, RemoteRef};

const T: Duration = Duration::from_secs(10);

#[remote("otel_test.Work")]
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Work(u64);

#[remote("otel_test.Audit")]
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Audit(u64);

#[remote("otel_test.Count", reply = u64)]
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Count;

/// On node a: takes the request, tells `worker@b`.
struct Gateway(RemoteRef<Work>);
impl Actor for Gateway {
    type Msg = u64;
    fn handle(&mut self, n: u64, _: &mut Context<'_, Self>) {
        self.0.tell(Work(n)).unwrap();
    }
}

enum WorkerMsg {
    Work(Work),
    Count(Count, ReplyTo<u64>),
}
impl From<Work> for WorkerMsg {
    fn from(w: Work) -> Self {
        WorkerMsg::Work(w)
    }
}

/// On node b: tells `audit@a` what it did; answers counts.
struct Worker {
    audit: RemoteRef<Audit>,
    done: u64,
}
impl Actor for Worker {
    type Msg = WorkerMsg;
    fn handle(&mut self, m: WorkerMsg, _: &mut Context<'_, Self>) {
        match m {
            WorkerMsg::Work(Work(n)) => {
                self.done += 1;
                self.audit.tell(Audit(n * 2)).unwrap();
            }
            WorkerMsg::Count(Count, r) => {
                r.reply(self.done);
            }
        }
    }
}

/// On node a: the end of the line.
struct Auditor(mpsc::Sender<u64>);
impl Actor for Auditor {
    type Msg = Audit;
    fn handle(&mut self, Audit(n): Audit, _: &mut Context<'_, Self>) {
        self.0.send(n).unwrap();
    }
}

fn attr(s: &SpanData, key: &str) -> Option<String> {
    s.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.as_str().into_owned())
}

/// `name` or `name:<destination>`.
fn label(s: &SpanData) -> String {
    match attr(s, "messaging.destination.name") {
        Some(d) => format!("{}:{d}", s.name),
        None => s.name.to_string(),
    }
}

fn node(net: &MemoryNetwork, name: &str) -> Node {
    Node::builder_on(net.connect(), name)
        .insecure()
        .connect()
        .unwrap()
}

#[test]
fn one_request_across_two_nodes_is_one_trace() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let otel = tracing_opentelemetry::layer().with_tracer(provider.tracer("troupe-test"));
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(otel))
        .expect("the only subscriber in this test binary");

    let net = MemoryNetwork::new();
    let (a, b) = (node(&net, "a"), node(&net, "b"));
    let sys_a = ActorSystem::builder().threads(2).build();
    let sys_b = ActorSystem::builder().threads(2).build();
    let traced = |name: &str| SpawnOptions::new().name(name).trace_messages(true);

    let (tx, rx) = mpsc::channel();
    let auditor = sys_a.spawn_with(Auditor(tx), traced("audit"));
    a.expose("audit", &auditor).tell::<Audit>().serve().unwrap();
    let worker = sys_b.spawn_with(
        Worker {
            audit: b.lookup::<Audit>("audit@a").unwrap(),
            done: 0,
        },
        traced("worker"),
    );
    b.expose("worker", &worker)
        .tell::<Work>()
        .ask::<Count>(WorkerMsg::Count)
        .serve()
        .unwrap();
    let gateway = sys_a.spawn_with(
        Gateway(a.lookup::<Work>("worker@b").unwrap()),
        traced("gateway"),
    );
    let count = a.lookup::<Count>("worker@b").unwrap();

    // The request: a tell that crosses to b and back, then an ask to b.
    let request = tracing::info_span!("request");
    let trace_id = {
        let _in = request.enter();
        gateway.tell(21).unwrap();
        assert_eq!(rx.recv_timeout(T), Ok(42));
        assert_eq!(count.ask(Count, T), Ok(1));
        use opentelemetry::trace::TraceContextExt;
        use tracing_opentelemetry::OpenTelemetrySpanExt;
        request.context().span().span_context().trace_id()
    };
    drop(request);
    sys_a.shutdown();
    sys_b.shutdown();
    provider.force_flush().unwrap();

    let spans = exporter.get_finished_spans().unwrap();
    // A tell made outside any span carries nothing: here every span
    // belongs to the request's trace.
    assert_ne!(trace_id, TraceId::INVALID);
    for s in &spans {
        assert_eq!(s.span_context.trace_id(), trace_id, "{}", label(s));
    }
    let by_id = |id: SpanId| spans.iter().find(|s| s.span_context.span_id() == id);
    let mut edges: Vec<String> = spans
        .iter()
        .map(|s| {
            let parent = by_id(s.parent_span_id).map_or("root".to_string(), label);
            format!("{parent} -> {}", label(s))
        })
        .collect();
    edges.sort();
    assert_eq!(
        edges,
        [
            "handle:gateway -> receive:worker",
            "handle:worker -> receive:audit",
            "receive:audit -> handle:audit",
            "receive:worker -> handle:worker",
            "receive:worker -> handle:worker",
            "request -> handle:gateway",
            "request -> receive:worker",
            "root -> request",
        ]
    );
    // The remote parents are marked remote.
    for s in spans.iter().filter(|s| s.name == "receive") {
        assert!(s.parent_span_is_remote, "{}", label(s));
    }
    // Messaging semantic conventions.
    for s in spans.iter().filter(|s| s.name != "request") {
        assert_eq!(attr(s, "messaging.system").as_deref(), Some("troupe"));
        let op = attr(s, "messaging.operation.type");
        let want = if s.name == "handle" {
            "process"
        } else {
            "receive"
        };
        assert_eq!(op.as_deref(), Some(want), "{}", label(s));
        assert_eq!(s.span_kind, opentelemetry::trace::SpanKind::Consumer);
    }
}
