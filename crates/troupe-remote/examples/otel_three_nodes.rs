//! One checkout through three actors on three nodes, traced with
//! OpenTelemetry: `frontend@a` takes the request and tells `inventory@b`,
//! which tells `payments@c`, which tells `frontend@a` that it is paid; the
//! frontend then answers. The nodes share one process and the in-memory
//! transport, so nothing but a collector is needed.
//!
//! ```text
//! docker run --rm -p 16686:16686 -p 4318:4318 jaegertracing/jaeger:2.1.0   # a collector + UI
//! cargo run -p troupe-remote --features otlp --example otel_three_nodes
//! # open http://localhost:16686, service "troupe-example", trace "checkout"
//! ```
//!
//! The collector's address comes from `OTEL_EXPORTER_OTLP_ENDPOINT`
//! (default `http://localhost:4318`, OTLP over HTTP). With `--svg PATH`
//! the spans go to OpenTelemetry's in-memory exporter instead and are drawn
//! as a waterfall (the guide's picture: `book/src/img/trace.svg`).

use std::fmt::Write as _;
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{SpanId, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde::{Deserialize, Serialize};
use tracing_subscriber::layer::SubscriberExt;
use troupe::{Actor, ActorSystem, Context, ReplyTo, SpawnOptions};
use troupe_remote::transport::memory::MemoryNetwork;
use troupe_remote::{remote, Node, RemoteRef};

const T: Duration = Duration::from_secs(10);

#[remote("example.shop.Reserve")]
#[derive(Serialize, Deserialize, Debug)]
struct Reserve(u64);

#[remote("example.shop.Charge")]
#[derive(Serialize, Deserialize, Debug)]
struct Charge(u64);

#[remote("example.shop.Paid")]
#[derive(Serialize, Deserialize, Debug)]
struct Paid(u64);

enum FrontMsg {
    Checkout(u64, ReplyTo<u64>),
    Paid(Paid),
}
impl From<Paid> for FrontMsg {
    fn from(p: Paid) -> Self {
        FrontMsg::Paid(p)
    }
}

struct Frontend {
    inventory: RemoteRef<Reserve>,
    waiting: Option<ReplyTo<u64>>,
}
impl Actor for Frontend {
    type Msg = FrontMsg;
    fn handle(&mut self, m: FrontMsg, _: &mut Context<'_, Self>) {
        match m {
            FrontMsg::Checkout(order, reply) => {
                self.waiting = Some(reply);
                let _ = self.inventory.tell(Reserve(order));
            }
            FrontMsg::Paid(Paid(order)) => {
                if let Some(r) = self.waiting.take() {
                    r.reply(order);
                }
            }
        }
    }
}

struct Inventory(RemoteRef<Charge>);
impl Actor for Inventory {
    type Msg = Reserve;
    fn handle(&mut self, Reserve(order): Reserve, _: &mut Context<'_, Self>) {
        tracing::info!(order, "reserved");
        let _ = self.0.tell(Charge(order));
    }
}

struct Payments(RemoteRef<Paid>);
impl Actor for Payments {
    type Msg = Charge;
    fn handle(&mut self, Charge(order): Charge, _: &mut Context<'_, Self>) {
        let _ = self.0.tell(Paid(order));
    }
}

fn node(net: &MemoryNetwork, name: &str) -> Node {
    Node::builder_on(net.connect(), name)
        .insecure()
        .connect()
        .expect("a node")
}

/// The three nodes, one checkout.
fn run() {
    let net = MemoryNetwork::new();
    let (a, b, c) = (node(&net, "a"), node(&net, "b"), node(&net, "c"));
    let system = ActorSystem::builder().threads(2).build();
    let traced = |name: &str| SpawnOptions::new().name(name).trace_messages(true);

    let frontend = system.spawn_with(
        Frontend {
            inventory: a.lookup("inventory@b").expect("a ref"),
            waiting: None,
        },
        traced("frontend"),
    );
    a.expose("frontend", &frontend)
        .tell::<Paid>()
        .serve()
        .expect("exposed");
    let inventory = system.spawn_with(
        Inventory(b.lookup("payments@c").expect("a ref")),
        traced("inventory"),
    );
    b.expose("inventory", &inventory)
        .tell::<Reserve>()
        .serve()
        .expect("exposed");
    let payments = system.spawn_with(
        Payments(c.lookup("frontend@a").expect("a ref")),
        traced("payments"),
    );
    c.expose("payments", &payments)
        .tell::<Charge>()
        .serve()
        .expect("exposed");

    let span = tracing::info_span!("checkout", order = 7);
    let answer = span.in_scope(|| frontend.ask(|r| FrontMsg::Checkout(7, r), T));
    drop(span);
    println!("checkout answered {answer:?}");
    system.shutdown();
}

fn main() {
    let svg = std::env::args().skip_while(|a| a != "--svg").nth(1);
    let (provider, memory) = match &svg {
        None => (
            troupe_remote::telemetry::otlp_tracer_provider("troupe-example")
                .expect("an OTLP exporter"),
            None,
        ),
        Some(_) => {
            let exporter = InMemorySpanExporter::default();
            let p = SdkTracerProvider::builder()
                .with_simple_exporter(exporter.clone())
                .build();
            (p, Some(exporter))
        }
    };
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("troupe"));
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
        .expect("the only subscriber");
    run();
    provider.force_flush().ok();
    if let (Some(path), Some(exporter)) = (svg, memory) {
        let spans = exporter.get_finished_spans().expect("the spans");
        std::fs::write(&path, waterfall(&spans)).expect("the SVG written");
        println!("{} spans drawn in {path}", spans.len());
    }
    provider.shutdown().ok();
}

fn attr(s: &SpanData, key: &str) -> Option<String> {
    s.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.as_str().into_owned())
}

fn micros(t: SystemTime, from: SystemTime) -> f64 {
    t.duration_since(from).unwrap_or_default().as_secs_f64() * 1e6
}

/// The spans as a trace viewer draws them: one row per span in tree
/// order (children after their parent, by start time), a bar from its
/// start to its end on a shared time axis.
fn waterfall(spans: &[SpanData]) -> String {
    let by_parent = |p: SpanId| {
        let mut v: Vec<&SpanData> = spans.iter().filter(|s| s.parent_span_id == p).collect();
        v.sort_by_key(|s| s.start_time);
        v
    };
    let mut rows: Vec<(usize, &SpanData)> = Vec::new();
    let mut stack: Vec<(usize, &SpanData)> = by_parent(SpanId::INVALID)
        .into_iter()
        .rev()
        .map(|s| (0, s))
        .collect();
    while let Some((depth, s)) = stack.pop() {
        rows.push((depth, s));
        for c in by_parent(s.span_context.span_id()).into_iter().rev() {
            stack.push((depth + 1, c));
        }
    }
    let Some(t0) = spans.iter().map(|s| s.start_time).min() else {
        return String::new();
    };
    let t1 = spans.iter().map(|s| s.end_time).max().unwrap_or(t0);
    let total = micros(t1, t0).max(1.0);
    let (label_w, bar_w, row_h) = (330.0, 560.0, 24.0);
    let height = 50.0 + row_h * rows.len() as f64;
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="8" y="18" font-weight="bold">trace {id} ({n} spans, {total:.0} µs)</text>"##,
        w = label_w + bar_w + 20.0,
        id = rows
            .first()
            .map(|(_, s)| s.span_context.trace_id().to_string())
            .unwrap_or_default(),
        n = rows.len(),
    );
    for (i, (depth, s)) in rows.iter().enumerate() {
        let y = 30.0 + row_h * i as f64;
        let x = label_w + bar_w * micros(s.start_time, t0) / total;
        let w = (bar_w * micros(s.end_time, s.start_time) / total).max(2.0);
        let dest = attr(s, "messaging.destination.name").unwrap_or_default();
        let node = attr(s, "node")
            .map(|n| format!(" on {n}"))
            .unwrap_or_default();
        let colour = match &*s.name {
            "handle" => "#4e79a7",
            "receive" => "#f28e2b",
            _ => "#59a14f",
        };
        let _ = writeln!(
            svg,
            r##"<text x="{tx}" y="{ty}">{name} {dest}{node}</text>
<rect x="{x:.1}" y="{y}" width="{w:.1}" height="16" fill="{colour}"/>
<text x="{lx:.1}" y="{ty}" fill="#333">{d:.0} µs</text>"##,
            tx = 8 + depth * 14,
            ty = y + 12.0,
            name = s.name,
            lx = (x + w + 4.0).min(label_w + bar_w - 40.0),
            d = micros(s.end_time, s.start_time),
        );
    }
    svg.push_str("</svg>\n");
    svg
}
