//! `troupe-remote-bench`: remote tell and ask between two OS processes,
//! beside raw async-nats publish→subscribe and request→reply on the same
//! server in the same run, Erlang distribution (with `--erlang`), and the
//! serialization cost per message size.
//!
//! ```text
//! troupe-remote-bench [--quick] [--messages N] [--asks K] [--samples S]
//!                     [--erlang] [--caf] [--url nats://...] [--json FILE|-]
//!                     [--only serialize,tell,ask] [--sizes 64,1024] [--batch-bytes N]
//!                     [--ask-spin-us N]
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

fn arg(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1).cloned())
}

fn num(args: &[String], flag: &str, default: u64) -> u64 {
    arg(args, flag)
        .map(|v| v.parse().expect("a number"))
        .unwrap_or(default)
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

/// Child roles: print "ready" once serving, run until stdin closes.
fn child(role: &str, args: &[String]) {
    let url = arg(args, "--url").expect("--url");
    let system = ActorSystem::builder().threads(1).build();
    let node_opts = |o: async_nats::ConnectOptions| o.subscription_capacity(SUB_CAPACITY);
    let wait_stdin = || {
        let mut s = String::new();
        let _ = std::io::stdin().read_line(&mut s);
    };
    match role {
        "tell-sink" => {
            let sink = system.spawn(Sink {
                count: 0,
                bytes: 0,
                waiting: None,
            });
            let node = Node::builder(&url, "sink")
                .nats(|o| o.connect_options(node_opts))
                .connect()
                .expect("node");
            node.expose("sink", &sink)
                .tell::<Blob>()
                .ask::<WaitFor>(SinkMsg::WaitFor)
                .serve()
                .expect("serve");
            println!("ready");
            wait_stdin();
            let s = node.stats();
            if s.bad_frames + s.refused + s.undecodable > 0 {
                eprintln!("sink: {s:?}");
            }
        }
        "echo" => {
            let echo = system.spawn(EchoActor);
            let mut builder = Node::builder(&url, "echo");
            if let Some(us) = arg(args, "--ask-spin-us") {
                builder = builder.ask_spin(Duration::from_micros(us.parse().expect("µs")));
            }
            let node = builder
                .nats(|o| o.connect_options(node_opts))
                .connect()
                .expect("node");
            node.expose("echo", &echo)
                .ask::<Echo>(|q, r| (q, r))
                .serve()
                .expect("serve");
            println!("ready");
            wait_stdin();
        }
        "raw-sink" => {
            let per = num(args, "--expect", 1);
            let rt = rt();
            let client = raw_client(&rt, &url);
            rt.block_on(async {
                let mut sub = client.subscribe("bench.raw.tell").await.expect("subscribe");
                client.flush().await.expect("flush");
                println!("ready");
                let _ = std::io::stdout().flush();
                let mut n = 0u64;
                let mut bytes = 0u64;
                while let Some(m) = sub.next().await {
                    n += 1;
                    bytes += m.payload.len() as u64;
                    if n % per == 0 {
                        client
                            .publish("bench.raw.done", n.to_string().into())
                            .await
                            .expect("publish");
                        client.flush().await.expect("flush");
                    }
                }
                let _ = bytes;
            });
        }
        "raw-echo" => {
            let rt = rt();
            let client = raw_client(&rt, &url);
            rt.block_on(async {
                let mut sub = client.subscribe("bench.raw.ask").await.expect("subscribe");
                client.flush().await.expect("flush");
                println!("ready");
                let _ = std::io::stdout().flush();
                while let Some(m) = sub.next().await {
                    if let Some(reply) = m.reply {
                        client.publish(reply, m.payload).await.expect("publish");
                    }
                }
            });
        }
        "raw-echo-hop" => {
            // The raw responder, but each request is answered by another OS
            // thread, as an actor on a worker thread answers a node's ask:
            // the floor for any runtime whose actors do not run on its I/O
            // thread. The worker blocks between requests (as an idle worker
            // parks); the I/O thread spins for the answer (as `ask_spin`).
            let (to_worker, requests) = std::sync::mpsc::channel::<bytes::Bytes>();
            let (to_io, answers) = std::sync::mpsc::channel::<bytes::Bytes>();
            std::thread::spawn(move || {
                while let Ok(b) = requests.recv() {
                    if to_io.send(b).is_err() {
                        break;
                    }
                }
            });
            let rt = rt();
            let client = raw_client(&rt, &url);
            rt.block_on(async {
                let mut sub = client
                    .subscribe("bench.raw.ask-hop")
                    .await
                    .expect("subscribe");
                client.flush().await.expect("flush");
                println!("ready");
                let _ = std::io::stdout().flush();
                while let Some(m) = sub.next().await {
                    if let Some(reply) = m.reply {
                        to_worker.send(m.payload).expect("worker");
                        let answer = loop {
                            match answers.try_recv() {
                                Ok(b) => break b,
                                Err(std::sync::mpsc::TryRecvError::Empty) => std::hint::spin_loop(),
                                Err(e) => panic!("worker: {e}"),
                            }
                        };
                        client.publish(reply, answer).await.expect("publish");
                    }
                }
            });
        }
        other => panic!("unknown role {other}"),
    }
    system.shutdown();
}

/// A child process of this binary in `role`; killed when dropped.
struct ChildRole(Child);

impl ChildRole {
    fn start(role: &str, url: &str, extra: &[&str]) -> ChildRole {
        let mut child = Command::new(std::env::current_exe().expect("own path"))
            .args(["--role", role, "--url", url])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn a child role");
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().expect("piped"))
            .read_line(&mut line)
            .expect("read");
        assert_eq!(line.trim(), "ready", "{role} did not start");
        ChildRole(child)
    }
}

impl Drop for ChildRole {
    fn drop(&mut self) {
        drop(self.0.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

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

fn remote_tell(
    url: &str,
    size: usize,
    n: u64,
    samples: u64,
    batch_bytes: Option<usize>,
) -> (f64, f64, f64) {
    let _sink = ChildRole::start("tell-sink", url, &[]);
    let mut builder = Node::builder(url, "source");
    if let Some(b) = batch_bytes {
        builder = builder.batch_bytes(b);
    }
    let node = builder.connect().expect("node");
    let blob = node.lookup::<Blob>("sink@sink").expect("lookup");
    let wait = blob.retype::<WaitFor>().expect("retype");
    let payload = vec![0xa5u8; size];
    let mut total = 0u64;
    let mut rates = Vec::new();
    let mut secs = Vec::new();
    let before = node.stats();
    let mut fulls = 0u64;
    for sample in 0..=samples {
        let count = if sample == 0 { n / 10 } else { n };
        let start = Instant::now();
        for _ in 0..count {
            let mut msg = Blob(payload.clone());
            loop {
                match blob.tell(msg) {
                    Ok(()) => break,
                    Err(SendError::Full(m)) => {
                        msg = m;
                        fulls += 1;
                        std::thread::sleep(Duration::from_micros(50));
                    }
                    Err(e) => panic!("tell failed: {e}"),
                }
            }
        }
        total += count;
        let got = wait
            .ask(WaitFor(total), Duration::from_secs(120))
            .expect("the sink confirms");
        assert_eq!(got, total, "the sink counted a different number");
        let s = start.elapsed().as_secs_f64();
        if sample > 0 {
            rates.push(count as f64 / s);
            secs.push(s);
        }
    }
    let after = node.stats();
    if fulls > 0 {
        eprintln!("  the sender waited {fulls} times on a full outbox");
    }
    let coalescing = (after.frames_sent - before.frames_sent) as f64
        / (after.batches_sent - before.batches_sent).max(1) as f64;
    (median(rates), median(secs), coalescing)
}

fn raw_tell(url: &str, size: usize, n: u64, samples: u64) -> (f64, f64) {
    // The sink confirms every n messages; the warm-up is n too.
    let _sink = ChildRole::start("raw-sink", url, &["--expect", &n.to_string()]);
    let rt = rt();
    let client = raw_client(&rt, url);
    rt.block_on(async {
        let mut done = client.subscribe("bench.raw.done").await.expect("subscribe");
        client.flush().await.expect("flush");
        let payload = bytes::Bytes::from(vec![0xa5u8; size]);
        let mut rates = Vec::new();
        let mut secs = Vec::new();
        let mut total = 0u64;
        for sample in 0..=samples {
            let start = Instant::now();
            for _ in 0..n {
                client
                    .publish("bench.raw.tell", payload.clone())
                    .await
                    .expect("publish");
            }
            client.flush().await.expect("flush");
            total += n;
            let m = tokio::time::timeout(Duration::from_secs(120), done.next())
                .await
                .expect("the raw sink confirms (a slow consumer would drop and never confirm)")
                .expect("done");
            let got: u64 = std::str::from_utf8(&m.payload)
                .expect("utf8")
                .parse()
                .expect("count");
            assert_eq!(got, total);
            let s = start.elapsed().as_secs_f64();
            if sample > 0 {
                rates.push(n as f64 / s);
                secs.push(s);
            }
        }
        (median(rates), median(secs))
    })
}

fn percentiles(mut v: Vec<Duration>) -> (f64, f64, f64) {
    v.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let mean = v.iter().map(|d| us(*d)).sum::<f64>() / v.len() as f64;
    (us(v[v.len() / 2]), us(v[v.len() * 99 / 100]), mean)
}

/// Latencies of remote asks (blocking, async), node pings and raw NATS
/// requests, taken interleaved: `rounds` rounds of k/rounds of each, so a
/// change in the machine's load during the run touches all four alike.
struct AskRun {
    blocking: Vec<Duration>,
    asynchronous: Vec<Duration>,
    /// `ask_async` on the runtime the asking node runs on (`connect_async`).
    same_runtime: Vec<Duration>,
    ping: Vec<Duration>,
    raw: Vec<Duration>,
    /// Raw requests to a responder that hands each to another thread.
    raw_hop: Vec<Duration>,
    /// The same, asked from a plain thread through a runtime driven by its
    /// own thread (as a blocking `ask` goes through the node's I/O thread).
    raw_hop_thread: Vec<Duration>,
}

fn ask_run(url: &str, k: u64, rounds: u64, spin_us: Option<String>) -> AskRun {
    let extra: Vec<&str> = match &spin_us {
        Some(us) => vec!["--ask-spin-us", us.as_str()],
        None => Vec::new(),
    };
    let _echo = ChildRole::start("echo", url, &extra);
    let _raw_echo = ChildRole::start("raw-echo", url, &[]);
    let _raw_echo_hop = ChildRole::start("raw-echo-hop", url, &[]);
    // A raw client on a runtime driven by its own thread, like a node's I/O.
    let io_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let io_client = io_rt.block_on(async {
        async_nats::ConnectOptions::new()
            .connect(url)
            .await
            .expect("connect")
    });
    let node = Node::builder(url, "asker").connect().expect("node");
    let echo = node.lookup::<Echo>("echo@echo").expect("lookup");
    let rt = rt();
    let client = raw_client(&rt, url);
    let node2 = rt
        .block_on(Node::builder(url, "asker2").connect_async())
        .expect("node on this runtime");
    let echo2 = node2.lookup::<Echo>("echo@echo").expect("lookup");
    let mut run = AskRun {
        blocking: Vec::new(),
        asynchronous: Vec::new(),
        same_runtime: Vec::new(),
        ping: Vec::new(),
        raw: Vec::new(),
        raw_hop: Vec::new(),
        raw_hop_thread: Vec::new(),
    };
    let per = (k / rounds).max(1);
    // Round 0 is the warm-up.
    for round in 0..=rounds {
        let keep = round > 0;
        for i in 0..per {
            let start = Instant::now();
            assert_eq!(echo.ask(Echo(i), Duration::from_secs(5)), Ok(i));
            if keep {
                run.blocking.push(start.elapsed());
            }
        }
        for i in 0..per {
            let start = Instant::now();
            assert_eq!(
                futures::executor::block_on(echo.ask_async(Echo(i), Duration::from_secs(5))),
                Ok(i)
            );
            if keep {
                run.asynchronous.push(start.elapsed());
            }
        }
        rt.block_on(async {
            for i in 0..per {
                let start = Instant::now();
                assert_eq!(
                    echo2.ask_async(Echo(i), Duration::from_secs(5)).await,
                    Ok(i)
                );
                if keep {
                    run.same_runtime.push(start.elapsed());
                }
            }
        });
        for _ in 0..per {
            let start = Instant::now();
            node.ping("echo", Duration::from_secs(5)).expect("ping");
            if keep {
                run.ping.push(start.elapsed());
            }
        }
        rt.block_on(async {
            for (subject, into) in [
                ("bench.raw.ask", &mut run.raw),
                ("bench.raw.ask-hop", &mut run.raw_hop),
            ] {
                for i in 0..per {
                    let start = Instant::now();
                    let m = client
                        .request(subject, i.to_le_bytes().to_vec().into())
                        .await
                        .expect("reply");
                    assert_eq!(m.payload.as_ref(), i.to_le_bytes());
                    if keep {
                        into.push(start.elapsed());
                    }
                }
            }
        });
        for i in 0..per {
            let start = Instant::now();
            let (tx, rx) = std::sync::mpsc::channel();
            let c = io_client.clone();
            io_rt.spawn(async move {
                let m = c
                    .request("bench.raw.ask-hop", i.to_le_bytes().to_vec().into())
                    .await
                    .expect("reply");
                let _ = tx.send(m.payload);
            });
            let payload = rx.recv().expect("reply");
            assert_eq!(payload.as_ref(), i.to_le_bytes());
            if keep {
                run.raw_hop_thread.push(start.elapsed());
            }
        }
    }
    run
}

/// The in-process floor: a plain thread asks a local actor (no network).
fn local_ask(k: u64) -> (f64, f64, f64) {
    let system = ActorSystem::builder().threads(1).build();
    let echo = system.spawn(EchoActor);
    let mut lat = Vec::with_capacity(k as usize);
    for i in 0..(k + k / 10) {
        let start = Instant::now();
        assert_eq!(echo.ask(|r| (Echo(i), r), Duration::from_secs(5)), Ok(i));
        if i >= k / 10 {
            lat.push(start.elapsed());
        }
    }
    system.shutdown();
    percentiles(lat)
}

/// ns per encode and per decode of one frame holding `value`.
fn serialize_cost<M: RemoteMessage + PartialEq + std::fmt::Debug>(value: &M) -> (f64, f64, usize) {
    let h = Header::new(Kind::Tell, M::TYPE_ID, 1, 0);
    let mut buf = Vec::with_capacity(1 << 17);
    let frame_len = encode_frame(&mut buf, h, value, usize::MAX).expect("encode");
    let time = |f: &mut dyn FnMut()| {
        // Calibrate to ~100 ms.
        let mut iters = 1u64;
        loop {
            let start = Instant::now();
            for _ in 0..iters {
                f();
            }
            let e = start.elapsed();
            if e > Duration::from_millis(100) {
                return e.as_secs_f64() * 1e9 / iters as f64;
            }
            iters *= 4;
        }
    };
    let enc = time(&mut || {
        buf.clear();
        std::hint::black_box(
            encode_frame(&mut buf, h, std::hint::black_box(value), usize::MAX).expect("encode"),
        );
    });
    let frame = buf.clone();
    let dec = time(&mut || {
        let (f, _) = decode_frame(std::hint::black_box(&frame), usize::MAX).expect("frame");
        std::hint::black_box(decode_body::<M>(f.body).expect("body"));
    });
    let (f, _) = decode_frame(&frame, usize::MAX).expect("frame");
    assert_eq!(&decode_body::<M>(f.body).expect("body"), value);
    (enc, dec, frame_len)
}

impl PartialEq for Blob {
    fn eq(&self, o: &Self) -> bool {
        self.0 == o.0
    }
}
impl std::fmt::Debug for Blob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Blob({} bytes)", self.0.len())
    }
}

/// The number after `"name":` in a flat JSON line.
fn json_field(line: &str, name: &str) -> Option<f64> {
    let at = line.find(&format!("\"{name}\":"))? + name.len() + 3;
    let rest = &line[at..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    rest[..end].trim().parse().ok()
}

/// Runs CAF's binary serializer on the same shapes (`peers/caf`, built
/// with `make -f Makefile.serialize`); its lines become figures.
fn caf_serialize() -> Vec<Figure> {
    let caf = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../peers/caf");
    let built = Command::new("make")
        .args(["-s", "-C"])
        .arg(&caf)
        .args(["-f", "Makefile.serialize"])
        .status();
    if !matches!(built, Ok(s) if s.success()) {
        eprintln!("CAF serializer peer not built (needs libcaf-dev); skipped");
        return Vec::new();
    }
    let out = match Command::new(caf.join("build/serialize-caf")).output() {
        Ok(o) if o.status.success() => o,
        _ => {
            eprintln!("CAF serializer peer failed; skipped");
            return Vec::new();
        }
    };
    let mut figs = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let label = line
            .split("\"label\":\"")
            .nth(1)
            .and_then(|r| r.split('"').next());
        let shape = line
            .split("\"shape\":\"")
            .nth(1)
            .and_then(|r| r.split('"').next());
        if let (Some(label), Some(shape), Some(ns), Some(bytes)) = (
            label,
            shape,
            json_field(line, "ns_per_op"),
            json_field(line, "frame_bytes"),
        ) {
            figs.push(ser_figure("caf", label.to_string(), shape, bytes, ns));
        }
    }
    figs
}

/// Runs the Erlang distribution peer; its JSON lines become figures.
fn erlang(n: u64, k: u64) -> Vec<Figure> {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../peers/erlang/peer_erlang_dist.sh");
    let out = match Command::new("bash")
        .arg(&script)
        .arg(n.to_string())
        .arg(k.to_string())
        .output()
    {
        Ok(o) if o.status.success() => o,
        Ok(o) => {
            eprintln!("erlang peer failed: {}", String::from_utf8_lossy(&o.stderr));
            return Vec::new();
        }
        Err(e) => {
            eprintln!("erlang peer not run: {e}");
            return Vec::new();
        }
    };
    let mut figs = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        // {"workload":"remote_tell","payload":64,"messages":N,"seconds":S,"rate":R}
        // {"workload":"remote_ask","asks":K,"p50_us":A,"p99_us":B,"mean_us":C}
        let field = |name: &str| json_field(line, name);
        if line.contains("\"remote_tell\"") {
            let (p, m, s, r) = (
                field("payload"),
                field("messages"),
                field("seconds"),
                field("rate"),
            );
            if let (Some(p), Some(m), Some(s), Some(r)) = (p, m, s, r) {
                figs.push(tell_figure(
                    "erlang",
                    format!("erlang dist tell {p} B"),
                    (p as usize, m as u64),
                    (s, r),
                    String::new(),
                ));
            }
        } else if line.contains("\"remote_ask\"") {
            if let (Some(a), Some(p50), Some(p99), Some(mean)) = (
                field("asks"),
                field("p50_us"),
                field("p99_us"),
                field("mean_us"),
            ) {
                figs.push(ask_figure(
                    "erlang",
                    "erlang dist call",
                    a as u64,
                    (p50, p99, mean),
                ));
            }
        }
    }
    figs
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
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(role) = arg(&args, "--role") {
        return child(&role, &args);
    }
    let quick = args.iter().any(|a| a == "--quick");
    let n = num(&args, "--messages", if quick { 100_000 } else { 1_000_000 });
    let k = num(&args, "--asks", if quick { 2_000 } else { 20_000 });
    let samples = num(&args, "--samples", if quick { 1 } else { 3 });
    let batch_bytes = arg(&args, "--batch-bytes").map(|b| b.parse().expect("a byte count"));
    let _server;
    let url = match arg(&args, "--url") {
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
    let only = arg(&args, "--only").unwrap_or_else(|| "serialize,tell,ask".into());
    let sizes: Vec<usize> = arg(&args, "--sizes")
        .map(|s| s.split(',').map(|x| x.parse().expect("a size")).collect())
        .unwrap_or_else(|| vec![64, 1024]);

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
        let run = ask_run(&url, k, 10, arg(&args, "--ask-spin-us"));
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

    if only.contains("serialize") && args.iter().any(|a| a == "--caf") {
        eprintln!("CAF 0.17 binary serializer on the same shapes...");
        figs.extend(caf_serialize());
    }

    if args.iter().any(|a| a == "--erlang") {
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

    if let Some(path) = arg(&args, "--json") {
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
            std::fs::write(&path, out).expect("write the JSON lines");
        }
    }
}
