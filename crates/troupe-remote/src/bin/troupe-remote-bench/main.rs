//! `troupe-remote-bench`: remote tell and ask between two OS processes,
//! beside raw async-nats publish→subscribe and request→reply on the same
//! server in the same run, Erlang distribution (with `--erlang`), and the
//! serialization cost per message size.
//!
//! ```text
//! troupe-remote-bench [--quick] [--messages N] [--asks K] [--samples S]
//!                     [--erlang] [--caf] [--url nats://...] [--json FILE|-]
//!                     [--only serialize,tell,ask] [--sizes 64,1024] [--batch-bytes N]
//!                     [--ask-spin-us N] [--window W]
//! ```
//!
//! Workloads (BENCHMARKS.md's JSON line format, one line per figure):
//! - `remote_tell`: N tells of a 64-byte and a 1 KiB payload from this
//!   process to an actor in a child process; msgs/s from the first tell to
//!   the actor's confirmation that it counted all N. Beside it `nats-raw`:
//!   N plain publishes to a plain subscriber in a child process.
//! - `remote_ask`: K sequential asks of a `u64` to an echo actor in a child
//!   process; p50/p99 round trip. Beside it `nats-raw`: K plain requests
//!   to a plain responder, and the floors with Troupe's thread hops: the
//!   responder handing each request to another thread (as a node hands an
//!   ask to an actor's worker), and that asked from a plain thread through
//!   a runtime driven by its own thread (as a blocking `ask` goes through
//!   the node's I/O thread).
//! - `remote_serialize`: encode and decode of a frame (header + postcard
//!   body) per message shape and size, in-process, ns per op; with `--caf`,
//!   CAF 0.17's binary serializer on the same shapes (`peers/caf`).
//! - `confirmed` (only with `--only confirmed`): N tells, then N
//!   `tell_confirmed` with at most W receipts outstanding, alternating per
//!   sample, to the same sink; then K single `tell_confirmed` of an 8-byte
//!   body awaited one at a time, interleaved with K asks of the same size.
//!   Printed, not in the JSON lines.
//!
//! Each throughput figure is the median of S samples after one warm-up.
//! Child roles (`--role ...`) are this binary re-run; they are not for users.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use troupe::{Actor, ActorSystem, Context, ReplyTo, SendError};
use troupe_remote::envelope::{decode_body, decode_frame, encode_frame, Header, Kind};
use troupe_remote::{remote, Node, RemoteMessage};
use troupe_test_nats::NatsServer;

/// The tell payload: bytes as one postcard byte string.
#[remote("bench.Blob")]
#[derive(Serialize, Deserialize, Clone)]
struct Blob(#[serde(with = "as_bytes")] Vec<u8>);

/// `Vec<u8>` as one byte string both ways (what the `serde_bytes` crate
/// does): a length and a memcpy, not a sequence of single bytes.
mod as_bytes {
    use serde::de::{Deserializer, Error, SeqAccess, Visitor};
    use serde::Serializer;
    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }
    struct Bytes;
    impl<'de> Visitor<'de> for Bytes {
        type Value = Vec<u8>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("bytes")
        }
        fn visit_bytes<E: Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
            Ok(v.to_vec())
        }
        fn visit_byte_buf<E: Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
            Ok(v)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
            let mut v = Vec::new();
            while let Some(b) = seq.next_element()? {
                v.push(b);
            }
            Ok(v)
        }
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        d.deserialize_byte_buf(Bytes)
    }
}

/// Replies once the sink has counted this many blobs in all.
#[remote("bench.WaitFor", reply = u64)]
#[derive(Serialize, Deserialize)]
struct WaitFor(u64);

/// The ask payload.
#[remote("bench.Echo", reply = u64)]
#[derive(Serialize, Deserialize)]
struct Echo(u64);

// CAF's serialization micro-benchmark shapes (seed 004).
#[remote("bench.Foo")]
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
struct Foo {
    a: i32,
    b: i32,
}

#[remote("bench.Bar")]
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
struct Bar {
    a: Foo,
    b: String,
}

#[remote("bench.TwoInts")]
#[derive(Serialize, Deserialize, Clone, PartialEq, Debug)]
struct TwoInts(i32, i32);

enum SinkMsg {
    Blob(Blob),
    WaitFor(WaitFor, ReplyTo<u64>),
}
impl From<Blob> for SinkMsg {
    fn from(b: Blob) -> Self {
        SinkMsg::Blob(b)
    }
}

struct Sink {
    count: u64,
    bytes: u64,
    waiting: Option<(u64, ReplyTo<u64>)>,
}

impl Sink {
    fn check(&mut self) {
        if matches!(self.waiting, Some((n, _)) if self.count >= n) {
            let (_, reply) = self.waiting.take().expect("checked");
            reply.reply(self.count);
        }
    }
}

impl Actor for Sink {
    type Msg = SinkMsg;
    fn handle(&mut self, msg: SinkMsg, _: &mut Context<'_, Self>) {
        match msg {
            SinkMsg::Blob(b) => {
                self.count += 1;
                self.bytes += b.0.len() as u64;
            }
            SinkMsg::WaitFor(WaitFor(n), reply) => self.waiting = Some((n, reply)),
        }
        self.check();
    }
}

struct EchoActor;
impl Actor for EchoActor {
    type Msg = (Echo, ReplyTo<u64>);
    fn handle(&mut self, (Echo(n), reply): Self::Msg, _: &mut Context<'_, Self>) {
        reply.reply(n);
    }
}

/// Remote tell and ask between two processes, beside raw NATS, Erlang
/// and CAF (see the module docs for the workloads).
#[derive(clap::Parser)]
pub(crate) struct Args {
    /// Small parameters (defaults of --messages, --asks and --samples
    /// become 100,000, 2,000 and 1).
    #[arg(long)]
    quick: bool,
    /// Tells per throughput sample [default: 1,000,000].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    messages: Option<u64>,
    /// Sequential asks per latency run [default: 20,000].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    asks: Option<u64>,
    /// Samples per throughput figure (median reported) [default: 3].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    samples: Option<u64>,
    /// Also Erlang distribution (needs `erl`).
    #[arg(long)]
    erlang: bool,
    /// Also CAF's binary serializer (needs CAF 0.17 and `make`).
    #[arg(long)]
    caf: bool,
    /// The nats-server to use [default: one this starts on a free port].
    #[arg(long)]
    pub(crate) url: Option<String>,
    /// Append the figures as JSON lines to FILE (`-`: standard output).
    #[arg(long, value_name = "FILE")]
    json: Option<String>,
    /// Workloads to run, comma-separated.
    #[arg(long, default_value = "serialize,tell,ask")]
    only: String,
    /// Payload sizes in bytes, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [64usize, 1024])]
    sizes: Vec<usize>,
    /// `--only confirmed`: receipts outstanding at most.
    #[arg(long, default_value_t = 1000)]
    window: usize,
    /// The node's outbox batch size in bytes.
    #[arg(long)]
    batch_bytes: Option<usize>,
    /// The asked node's spin before parking, microseconds.
    #[arg(long)]
    pub(crate) ask_spin_us: Option<u64>,
    /// A child role (this binary re-run by itself; not for users).
    #[arg(long, hide = true)]
    role: Option<String>,
    /// Child `raw-sink`: messages per confirmation.
    #[arg(long, hide = true, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) expect: u64,
}

/// Subscriptions hold up to this many messages before the client drops
/// (slow consumer); the same for our nodes and the raw clients.
const SUB_CAPACITY: usize = 1 << 20;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// A plain client, living on `rt` (its connection task runs there).
fn raw_client(rt: &tokio::runtime::Runtime, url: &str) -> async_nats::Client {
    rt.block_on(async {
        async_nats::ConnectOptions::new()
            .subscription_capacity(SUB_CAPACITY)
            .connect(url)
            .await
            .expect("connect")
    })
}

mod confirmed;
mod peers;
mod roles;
mod runs;

use confirmed::*;
use peers::*;
use roles::*;
use runs::*;

struct Figure {
    framework: &'static str,
    workload: &'static str,
    label: String,
    params: String,
    seconds: f64,
    rate: f64,
    unit: &'static str,
    extra: String,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    v[v.len() / 2]
}

fn rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|k| k.parse::<f64>().ok())
            })
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

/// A serialization figure: `ns` per op on a frame of `bytes` bytes.
fn ser_figure(framework: &'static str, label: String, shape: &str, bytes: f64, ns: f64) -> Figure {
    Figure {
        framework,
        workload: "remote_serialize",
        label,
        params: format!("{{\"shape\":\"{shape}\",\"frame_bytes\":{bytes}}}"),
        seconds: ns / 1e9,
        rate: 1e9 / ns,
        unit: "ops/s",
        extra: format!(",\"ns_per_op\":{ns:.1}"),
    }
}

/// A remote_tell figure: `messages` of `payload` bytes at `rate` msgs/s.
fn tell_figure(
    framework: &'static str,
    label: String,
    (payload, messages): (usize, u64),
    (seconds, rate): (f64, f64),
    extra: String,
) -> Figure {
    Figure {
        framework,
        workload: "remote_tell",
        label,
        params: format!("{{\"payload\":{payload},\"messages\":{messages}}}"),
        seconds,
        rate,
        unit: "msgs/s",
        extra,
    }
}

fn ask_figure(
    framework: &'static str,
    label: &str,
    k: u64,
    (p50, p99, mean): (f64, f64, f64),
) -> Figure {
    Figure {
        framework,
        workload: "remote_ask",
        label: label.to_string(),
        params: format!("{{\"asks\":{k}}}"),
        seconds: mean * k as f64 / 1e6,
        rate: 1e6 / mean,
        unit: "asks/s",
        extra: format!(",\"p50_us\":{p50:.1},\"p99_us\":{p99:.1},\"mean_us\":{mean:.1}"),
    }
}

fn main() {
    let args: Args = clap::Parser::parse();
    if let Some(role) = &args.role {
        return child(role, &args);
    }
    let quick = args.quick;
    let n = args
        .messages
        .unwrap_or(if quick { 100_000 } else { 1_000_000 });
    let k = args.asks.unwrap_or(if quick { 2_000 } else { 20_000 });
    let samples = args.samples.unwrap_or(if quick { 1 } else { 3 });
    let batch_bytes = args.batch_bytes;
    let _server;
    let url = match args.url.clone() {
        Some(u) => u,
        None => {
            _server =
                NatsServer::start().expect("start nats-server (install the nats-server package)");
            _server.url()
        }
    };
    let loadavg = || {
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .unwrap_or("?")
        .trim()
        .to_string();
    let load_start = loadavg();
    let mut figs: Vec<Figure> = Vec::new();
    // `--only serialize,tell,ask` runs a subset (default: all).
    let only = args.only.clone();
    let sizes: Vec<usize> = args.sizes.clone();

    if only.contains("serialize") {
        eprintln!("serialization (frame = 32-byte header + postcard body)...");
        let mut ser = |shape: &str, (save, load, bytes): (f64, f64, usize)| {
            figs.push(ser_figure(
                "troupe",
                format!("save {shape}"),
                shape,
                bytes as f64,
                save,
            ));
            figs.push(ser_figure(
                "troupe",
                format!("load {shape}"),
                shape,
                bytes as f64,
                load,
            ));
        };
        ser("foo", serialize_cost(&Foo { a: 10, b: 20 }));
        ser(
            "bar",
            serialize_cost(&Bar {
                a: Foo { a: 1, b: 2 },
                b: "three".into(),
            }),
        );
        ser("msg_2int", serialize_cost(&TwoInts(1, 2)));
        for size in [64usize, 1024, 16 * 1024, 64 * 1024] {
            ser(
                &format!("bytes_{size}"),
                serialize_cost(&Blob(vec![7; size])),
            );
        }
    }

    let mut tell_rows = Vec::new();
    for &size in sizes.iter().filter(|_| only.contains("tell")) {
        eprintln!("remote_tell {size} B: troupe, then raw NATS...");
        let (rate, secs, coalescing) = remote_tell(&url, size, n, samples, batch_bytes);
        let (raw_rate, raw_secs) = raw_tell(&url, size, n, samples);
        figs.push(tell_figure(
            "troupe",
            format!("troupe remote tell {size} B"),
            (size, n),
            (secs, rate),
            format!(",\"frames_per_nats_msg\":{coalescing:.1}"),
        ));
        figs.push(tell_figure(
            "nats-raw",
            format!("raw nats pub/sub {size} B"),
            (size, n),
            (raw_secs, raw_rate),
            String::new(),
        ));
        tell_rows.push((size, rate, raw_rate, coalescing));
    }

    let mut ask_summary = None;
    if only.contains("ask") {
        eprintln!(
        "remote_ask: troupe (blocking, async), node ping and raw NATS, interleaved in 10 rounds..."
    );
        let run = ask_run(&url, k, 10, args.ask_spin_us);
        let ours = percentiles(run.blocking);
        let ours_async = percentiles(run.asynchronous);
        let same_rt = percentiles(run.same_runtime);
        let ping = percentiles(run.ping);
        let raw = percentiles(run.raw);
        let raw_hop = percentiles(run.raw_hop);
        let raw_hop_thread = percentiles(run.raw_hop_thread);
        let local = local_ask(k);
        figs.push(ask_figure(
            "troupe",
            "troupe remote ask (blocking)",
            k,
            ours,
        ));
        figs.push(ask_figure(
            "troupe",
            "troupe remote ask_async",
            k,
            ours_async,
        ));
        figs.push(ask_figure(
            "troupe",
            "troupe ask_async, caller's runtime",
            k,
            same_rt,
        ));
        figs.push(ask_figure("troupe", "troupe node ping (no actor)", k, ping));
        figs.push(ask_figure("nats-raw", "raw nats request/reply", k, raw));
        figs.push(ask_figure(
            "nats-raw",
            "raw nats req/reply, thread hop",
            k,
            raw_hop,
        ));
        figs.push(ask_figure(
            "nats-raw",
            "raw nats req/reply, 3 thread hops",
            k,
            raw_hop_thread,
        ));
        figs.push(ask_figure(
            "troupe",
            "troupe local ask (in-process)",
            k,
            local,
        ));

        ask_summary = Some(format!(
        "remote_ask p50: raw nats {:.1} us; troupe blocking {:.1} us ({:.2}x), async from another thread {:.1} us ({:.2}x), \
         async on the node's runtime {:.1} us ({:.2}x) (target <= 1.2x); node ping without an actor {:.1} us ({:.2}x)\n\
         floors with the same thread hops as Troupe: raw with the responder's hop to a worker thread {:.1} us ({:.2}x raw; \
         troupe async on the node's runtime is {:.2}x of it), and asked from a plain thread via an I/O thread too {:.1} us \
         ({:.2}x raw; troupe blocking is {:.2}x of it)",
        raw.0,
        ours.0,
        ours.0 / raw.0,
        ours_async.0,
        ours_async.0 / raw.0,
        same_rt.0,
        same_rt.0 / raw.0,
        ping.0,
        ping.0 / raw.0,
        raw_hop.0,
        raw_hop.0 / raw.0,
        same_rt.0 / raw_hop.0,
        raw_hop_thread.0,
        raw_hop_thread.0 / raw.0,
        ours.0 / raw_hop_thread.0
    ));
    }

    let mut confirmed_lines = Vec::new();
    for &size in sizes.iter().filter(|_| only.contains("confirmed")) {
        eprintln!(
            "confirmed {size} B: tell and tell_confirmed (window {}) alternating, then latency against ask...",
            args.window
        );
        let run = confirmed_run(&url, size, n, samples, args.window, k);
        let (tell, conf) = (
            median(run.tell_rates.clone()),
            median(run.confirmed_rates.clone()),
        );
        let lat = percentiles(run.confirmed_latency);
        let ask = percentiles(run.ask_latency);
        confirmed_lines.push(format!(
            "confirmed {size} B: tell {tell:.0}/s, tell_confirmed {conf:.0}/s ({:.2}x tell; samples tell {:?}, confirmed {:?}); \
             latency of one 8 B tell_confirmed p50 {:.1} us p99 {:.1} us, ask p50 {:.1} us p99 {:.1} us",
            conf / tell,
            run.tell_rates.iter().map(|r| *r as u64).collect::<Vec<_>>(),
            run.confirmed_rates.iter().map(|r| *r as u64).collect::<Vec<_>>(),
            lat.0, lat.1, ask.0, ask.1
        ));
    }

    if only.contains("serialize") && args.caf {
        eprintln!("CAF 0.17 binary serializer on the same shapes...");
        figs.extend(caf_serialize());
    }

    if args.erlang {
        eprintln!("Erlang distribution between two nodes on loopback...");
        figs.extend(erlang(n, k));
    }

    // Report.
    println!(
        "\nmachine: {cpu}, {} CPUs; load average at start {load_start}, at end {}; messages {n}, asks {k}, samples {samples}",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        loadavg()
    );
    println!("\n{:<34} {:>14} {:>10}  detail", "figure", "rate", "unit");
    for f in &figs {
        println!(
            "{:<34} {:>14.1} {:>10}  {}",
            f.label,
            f.rate,
            f.unit,
            f.extra.trim_start_matches(',')
        );
    }
    println!();
    let erl_tell = |size: usize| {
        figs.iter()
            .find(|f| {
                f.framework == "erlang"
                    && f.workload == "remote_tell"
                    && f.params.contains(&format!("\"payload\":{size},"))
            })
            .map(|f| f.rate)
    };
    for (size, rate, raw_rate, coalescing) in &tell_rows {
        let erl = erl_tell(*size)
            .map(|e| format!(", {:.2}x erlang dist (target >= 3x)", rate / e))
            .unwrap_or_default();
        println!(
            "remote_tell {size} B: troupe {:.2}x raw nats per-message pub/sub (target >= 1x){erl}; {coalescing:.1} frames per NATS message",
            rate / raw_rate
        );
    }
    let ours_ser: Vec<&Figure> = figs
        .iter()
        .filter(|f| f.framework == "troupe" && f.workload == "remote_serialize")
        .collect();
    for f in ours_ser {
        if let Some(c) = figs
            .iter()
            .find(|c| c.framework == "caf" && c.label == format!("caf {}", f.label))
        {
            println!(
                "remote_serialize {}: troupe frame {:.1} ns, CAF binary {:.1} ns: {:.2}x CAF's speed",
                f.label,
                f.seconds * 1e9,
                c.seconds * 1e9,
                c.seconds / f.seconds
            );
        }
    }
    for line in &confirmed_lines {
        println!("{line}");
    }
    if let Some(line) = &ask_summary {
        println!("{line}");
    }
    if let Some(e) = figs
        .iter()
        .find(|f| f.framework == "erlang" && f.workload == "remote_ask")
    {
        println!(
            "remote_ask erlang dist: {}",
            e.extra.trim_start_matches(',')
        );
    }

    if let Some(path) = &args.json {
        let rss = rss_mb();
        let mut out = String::new();
        for f in &figs {
            out.push_str(&format!(
                "{{\"framework\":\"{}\",\"workload\":\"{}\",\"label\":\"{}\",\"params\":{},\"seconds\":{:.9},\"rate\":{:.1},\"unit\":\"{}\",\"rss_mb\":{:.1},\"threads\":1{}}}\n",
                f.framework, f.workload, f.label, f.params, f.seconds, f.rate, f.unit, rss, f.extra
            ));
        }
        if path == "-" {
            print!("{out}");
        } else {
            std::fs::write(path, out).expect("write the JSON lines");
        }
    }
}
