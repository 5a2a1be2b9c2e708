//! Issue 25's flood test: random and mutated frames from a plain NATS
//! client (not a node) on every subject a cluster node listens to, while
//! the node keeps answering asks.
//!
//! The node under fire (`b`) is a keyed cluster node (the chosen
//! authentication design, see `troupe_remote::auth`), so each of its
//! subjects has an exact account: a message that is not sealed by the
//! cluster's key, or does not frame, is counted once, in
//! `NodeStats::{unauthenticated, bad_frames}` for the node's inbox and in
//! `ClusterStats::{unauthenticated, bad_*}` for the cluster's subjects.
//! The decoders behind the seal meet random input in `decoder_props.rs`
//! and troupe-remote's `decoder_fuzz.rs`.
//!
//! `a`, the asking node, listens on `hb.*`, `bye.*`, `down.*` and the
//! registry too; the publisher waits for both nodes' counts, so neither
//! holds a backlog (memory the counts would not show).
//!
//! The subjects, one after the other (so each has its own count):
//! the node's inbox `troupe.<ns>.node.b`, `hb.*`, `bye.*`, `down.*`,
//! `ctl.b`, and the registry's KV
//! bucket (`$KV.troupe-<ns>-registry.<key>`, watched by every node).
//!
//! No frame is lost to a slow consumer: the publisher keeps at most
//! [`WINDOW`] messages ahead of the node's counters (a NATS client drops
//! messages past a subscription's capacity, 65,536 by default, and the
//! server cuts a client that falls 64 MiB behind), so the counts are equal
//! to the frames sent, not merely bounded by them. KV values go in rounds
//! of [`KV_KEYS`] keys, each round counted before the next rewrites them
//! (the bucket keeps one value per key; a value replaced before the watch
//! reads it would never be seen).
//!
//! Liveness under the flood: the nodes beat every 200 ms, and none may be
//! declared down, during the flood or in
//! `a_backlog_of_junk_heartbeats_declares_no_live_peer_down`, which queues
//! seconds of junk on `hb.*` at once (both failed with the clock-only
//! detector; see the liveness module's "Late intake is not a silent peer").
//!
//! Frames per subject: 20,000, or `TROUPE_FLOOD_FRAMES`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use troupe::{Actor, ActorSystem, Context, ReplyTo};
use troupe_cluster::wire::{self, Ctl, Heartbeat, StopEvent, WireReason};
use troupe_cluster::{Cluster, ClusterStats};
use troupe_remote::auth::ClusterKey;
use troupe_remote::envelope::{append_seal, encode_frame, encode_link, Header, Kind};
use troupe_remote::{NodeStats, RemoteMessage};
use troupe_test_nats::NatsServer;

const SECRET: &str = "the flood test's cluster secret";
/// One test at a time: each measures RSS and timing of the whole process.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
/// A short heartbeat: no node may be declared down while the flood holds
/// its real heartbeats back (see the liveness module's docs).
const HB: Duration = Duration::from_millis(200);
const T: Duration = Duration::from_secs(10);
/// Messages the publisher may be ahead of the node's counters.
const WINDOW: u64 = 4_000;
/// Keys per round of registry values.
const KV_KEYS: u64 = 256;
/// The RSS growth allowed over a flood, after a warm-up flood.
const RSS_SLACK_KIB: i64 = 5 * 1024;

#[troupe_remote::remote("flood.Add")]
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Add(u64);

#[troupe_remote::remote("flood.Sum", reply = u64)]
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Sum;

enum Msg {
    Add(Add),
    Sum(Sum, ReplyTo<u64>),
}

impl From<Add> for Msg {
    fn from(a: Add) -> Self {
        Msg::Add(a)
    }
}

struct Counter(u64);
impl Actor for Counter {
    type Msg = Msg;
    fn handle(&mut self, msg: Msg, _: &mut Context<'_, Self>) {
        match msg {
            Msg::Add(Add(n)) => self.0 += n,
            Msg::Sum(_, r) => {
                r.reply(self.0);
            }
        }
    }
}

fn frames_per_subject() -> u64 {
    std::env::var("TROUPE_FLOOD_FRAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

fn rss_kib() -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    f()
}

/// What a subject's bad messages are counted in.
#[derive(Clone, Copy, Debug)]
enum Counted {
    Node,
    Cluster,
}

fn node_bad(s: &NodeStats) -> u64 {
    s.unauthenticated + s.bad_frames
}

fn cluster_bad(s: &ClusterStats) -> u64 {
    s.unauthenticated
        + s.bad_heartbeats
        + s.bad_byes
        + s.bad_stop_events
        + s.bad_control
        + s.bad_control_replies
        + s.bad_registry_values
        + s.bad_group_messages
}

/// One subject to flood: where it is published, a well-formed sealed
/// payload to mutate, and where its bad messages are counted.
struct Target {
    label: &'static str,
    /// `None`: the registry bucket, one subject per key.
    subject: Option<String>,
    valid: Vec<u8>,
    counted: Counted,
    /// Whether `a`, the other node, listens on it too (`hb.*`, `bye.*`,
    /// `down.*` and the registry's watch).
    a_listens: bool,
}

/// A small deterministic generator (splitmix64): fast enough in debug
/// for 10^6 frames a subject.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Random bytes, or a valid sealed payload with at least one byte changed
/// (flipped, cut, or grown): never a good seal.
fn garble(rng: &mut Rng, valid: &[u8]) -> Vec<u8> {
    match rng.below(4) {
        0 => {
            let n = rng.below(128);
            rng.bytes(n)
        }
        1 => {
            let mut v = valid.to_vec();
            // One flip: two could cancel out into the valid payload.
            let at = rng.below(v.len());
            v[at] ^= 1 + rng.below(255) as u8;
            v
        }
        2 => valid[..rng.below(valid.len())].to_vec(),
        _ => {
            let mut v = valid.to_vec();
            let n = 1 + rng.below(16);
            v.extend(rng.bytes(n));
            v
        }
    }
}

struct Raw {
    rt: tokio::runtime::Runtime,
    client: async_nats::Client,
}

impl Raw {
    fn connect(url: &str) -> Raw {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = rt.block_on(async_nats::connect(url)).unwrap();
        Raw { rt, client }
    }

    fn publish(&self, msgs: Vec<(String, Vec<u8>)>) {
        self.rt.block_on(async {
            for (subject, p) in msgs {
                self.client.publish(subject, p.into()).await.unwrap();
            }
            self.client.flush().await.unwrap();
        });
    }
}

/// Floods one target with `n` frames; returns how many `b`'s counters and,
/// where `a` listens too, `a`'s took.
fn flood(raw: &Raw, [a, b]: [&Cluster; 2], t: &Target, n: u64, rng: &mut Rng) -> (u64, u64) {
    let bad = |x: &Cluster| match t.counted {
        Counted::Node => node_bad(&x.node().stats()),
        Counted::Cluster => cluster_bad(&x.stats()),
    };
    let (before_a, before_b) = (bad(a), bad(b));
    let counted = || {
        let got_b = bad(b) - before_b;
        let got_a = if t.a_listens { bad(a) - before_a } else { 0 };
        (got_b, got_a)
    };
    // Both listeners keep up: a backlog in either would be memory (and,
    // past its subscription's capacity, drops) the counts do not show.
    let slowest = || match counted() {
        (b, a) if t.a_listens => b.min(a),
        (b, _) => b,
    };
    let (chunk, ahead) = match t.subject {
        Some(_) => (1_000, WINDOW),
        None => (KV_KEYS, 0),
    };
    let mut sent = 0;
    while sent < n {
        let m = chunk.min(n - sent);
        let msgs = (0..m)
            .map(|i| {
                let subject = match &t.subject {
                    Some(s) => s.clone(),
                    None => format!("$KV.{}.n.flood{i}", wire::bucket("default")),
                };
                (subject, garble(rng, &t.valid))
            })
            .collect();
        raw.publish(msgs);
        sent += m;
        let floor = sent.saturating_sub(ahead);
        assert!(
            wait_until(T, || slowest() >= floor),
            "{}: {:?} counted of {sent} sent",
            t.label,
            counted()
        );
    }
    assert!(
        wait_until(T, || slowest() >= n),
        "{}: {:?} counted of {n} sent",
        t.label,
        counted()
    );
    // Nothing counted twice: settle a moment and count again.
    std::thread::sleep(Duration::from_millis(20));
    counted()
}

#[test]
fn a_flood_on_every_subject_is_counted_and_silences_nothing() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let n = frames_per_subject();
    let system = ActorSystem::builder().threads(1).build();
    let keyed = |name: &str| {
        Cluster::builder(&server.url(), name)
            .heartbeat(HB)
            .secret(SECRET)
            .connect()
            .unwrap()
    };
    let b = keyed("b");
    let counter = system.spawn(Counter(0));
    b.expose("counter", &counter)
        .tell::<Add>()
        .ask::<Sum>(Msg::Sum)
        .serve()
        .unwrap();
    let worker = system.spawn(Counter(0));
    b.join_balanced::<Add, Counter>("g", &worker).unwrap();
    let a = keyed("a");
    assert!(wait_until(T, || a.peers() == ["b"] && b.peers() == ["a"]));
    let sum = a.node().lookup::<Sum>("counter@b").unwrap();
    assert_eq!(sum.ask(Sum, T), Ok(0));

    // A well-formed sealed payload per subject, to mutate.
    let key = ClusterKey::new(SECRET);
    let inbox = b.node().subject();
    let mut batch = Vec::new();
    encode_link(&mut batch, 7, 1, "mallory");
    let h = Header::new(
        Kind::Tell,
        Add::TYPE_ID,
        troupe_remote::type_id("counter"),
        0,
    );
    encode_frame(&mut batch, h, &Add(1), 1 << 20).unwrap();
    append_seal(&mut batch, &key, &inbox);
    let sealed = |subject: &str, v: Vec<u8>| key.seal(subject, &v);
    let hb = Heartbeat {
        node: "b".into(),
        incarnation: 99,
        interval_ms: 200,
    };
    let hb_subject = wire::heartbeat_subject("default", "b");
    let bye_subject = wire::bye_subject("default", "a");
    let down_subject = wire::down_subject("default", "a");
    let ctl_subject = wire::ctl_subject("default", "b");
    let stop = StopEvent {
        actor: "counter".into(),
        reason: WireReason::Killed,
    };
    let kill = Ctl::Kill {
        actor: "counter".into(),
        reason: WireReason::Killed,
    };
    let targets = vec![
        Target {
            label: "node inbox",
            valid: batch,
            subject: Some(inbox),
            counted: Counted::Node,
            a_listens: false,
        },
        Target {
            label: "heartbeat",
            valid: sealed(&hb_subject, enc(&hb)),
            subject: Some(hb_subject),
            counted: Counted::Cluster,
            a_listens: true,
        },
        Target {
            label: "goodbye",
            valid: sealed(&bye_subject, enc(&hb)),
            subject: Some(bye_subject),
            counted: Counted::Cluster,
            a_listens: true,
        },
        Target {
            label: "stop event",
            valid: sealed(&down_subject, enc(&stop)),
            subject: Some(down_subject),
            counted: Counted::Cluster,
            a_listens: true,
        },
        Target {
            label: "control",
            valid: sealed(&ctl_subject, enc(&kill)),
            subject: Some(ctl_subject),
            counted: Counted::Cluster,
            a_listens: false,
        },
        Target {
            label: "registry value",
            valid: sealed(&wire::kv_seal_subject("n.flood0"), vec![0; 40]),
            subject: None,
            counted: Counted::Cluster,
            a_listens: true,
        },
    ];

    let raw = Raw::connect(&server.url());
    let mut rng = Rng(25);
    // Warm-up: every path, every buffer, at the flood's pace.
    for t in &targets {
        flood(&raw, [&a, &b], t, 2 * WINDOW, &mut rng);
    }
    let rss_before = rss_kib();

    // Asks throughout the flood, from another thread.
    let stop_asking = Arc::new(AtomicBool::new(false));
    let asks_ok = Arc::new(AtomicU64::new(0));
    let asker = {
        let (stop_asking, asks_ok) = (stop_asking.clone(), asks_ok.clone());
        let sum = sum.clone();
        std::thread::spawn(move || {
            while !stop_asking.load(Ordering::Relaxed) {
                assert_eq!(sum.ask(Sum, T), Ok(0), "an ask during the flood");
                asks_ok.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let start = Instant::now();
    let mut counts = Vec::new();
    for t in &targets {
        let (got_b, got_a) = flood(&raw, [&a, &b], t, n, &mut rng);
        let downs = (
            a.stats().nodes_down,
            b.stats().nodes_down,
            a.stats().verdicts_spared,
            b.stats().verdicts_spared,
        );
        counts.push((t.label, t.a_listens, got_b, got_a, rss_kib(), downs));
    }
    let took = start.elapsed();
    stop_asking.store(true, Ordering::Relaxed);
    asker.join().expect("every ask during the flood answered");
    let rss_after = rss_kib();

    eprintln!(
        "flood: {n} frames per subject, {} subjects, {took:.1?}; asks answered during it: {}",
        targets.len(),
        asks_ok.load(Ordering::Relaxed)
    );
    for (label, a_listens, got_b, got_a, rss, downs) in &counts {
        let a = if *a_listens {
            format!(", by a {got_a}")
        } else {
            String::new()
        };
        eprintln!(
            "  {label:>15}: counted by b {got_b}{a}; RSS after it {rss} KiB; \
             so far nodes declared down (by a, by b) and verdicts spared (by a, by b): {downs:?}"
        );
    }
    eprintln!(
        "  RSS: {rss_before} KiB before, {rss_after} KiB after ({:+} KiB)",
        rss_after - rss_before
    );
    for (label, a_listens, got_b, got_a, _, _) in &counts {
        assert_eq!(*got_b, n, "{label}: every bad frame counted, once");
        if *a_listens {
            assert_eq!(*got_a, n, "{label}: every bad frame counted by a too");
        }
    }
    assert!(asks_ok.load(Ordering::Relaxed) > 0);
    assert!(
        rss_after - rss_before <= RSS_SLACK_KIB,
        "RSS grew by {} KiB",
        rss_after - rss_before
    );

    // After: the node answers, obeyed nothing, and nobody is down.
    assert_eq!(sum.ask(Sum, T), Ok(0));
    assert!(a.node().ping("b", T).is_ok());
    assert!(counter.is_alive() && worker.is_alive());
    let (sa, sb) = (a.stats(), b.stats());
    assert_eq!((sa.nodes_down, sb.nodes_down), (0, 0));
    assert_eq!(b.peers(), ["a"]);
    assert_eq!(b.node().stats().delivered, 0, "no forged tell delivered");
    assert_eq!(b.node().stats().panics, 0);
}

fn enc<T: Serialize>(v: &T) -> Vec<u8> {
    postcard::to_allocvec(v).unwrap()
}

/// Junk heartbeats published at once, with no window: both nodes' `hb.*`
/// intakes fall behind by the time it takes to refuse them all (seconds in
/// a debug build), far past the 350 ms after which a peer's silence
/// counts by the clock. The real heartbeats wait in that queue; no node
/// may be declared down for it (see the liveness module's docs, "Late
/// intake is not a silent peer").
#[test]
fn a_backlog_of_junk_heartbeats_declares_no_live_peer_down() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let keyed = |name: &str| {
        Cluster::builder(&server.url(), name)
            .heartbeat(HB)
            .secret(SECRET)
            .connect()
            .unwrap()
    };
    let (a, b) = (keyed("a"), keyed("b"));
    assert!(wait_until(T, || a.peers() == ["b"] && b.peers() == ["a"]));
    let subject = wire::heartbeat_subject("default", "b");
    let hb = Heartbeat {
        node: "b".into(),
        incarnation: 99,
        interval_ms: 200,
    };
    let valid = ClusterKey::new(SECRET).seal(&subject, &enc(&hb));
    let raw = Raw::connect(&server.url());
    let mut rng = Rng(7);
    // Within a subscription's default capacity (65,536), so none is
    // dropped as a slow consumer's; 1 KiB longer than a heartbeat, so each
    // costs its seal check that much more.
    const BACKLOG: u64 = 40_000;
    let tail = rng.bytes(1024);
    let (a0, b0) = (cluster_bad(&a.stats()), cluster_bad(&b.stats()));
    raw.publish(
        (0..BACKLOG)
            .map(|_| {
                let mut junk = garble(&mut rng, &valid);
                junk.extend_from_slice(&tail);
                (subject.clone(), junk)
            })
            .collect(),
    );
    let counted = || (cluster_bad(&a.stats()) - a0, cluster_bad(&b.stats()) - b0);
    assert!(
        wait_until(Duration::from_secs(60), || counted() == (BACKLOG, BACKLOG)),
        "{:?} of {BACKLOG} counted",
        counted()
    );
    // A few heartbeats more: anything the backlog left overdue is judged.
    std::thread::sleep(HB * 3);
    let (sa, sb) = (a.stats(), b.stats());
    eprintln!(
        "backlog of {BACKLOG} junk heartbeats: nodes declared down (by a, by b) {:?}, \
         verdicts spared {:?}",
        (sa.nodes_down, sb.nodes_down),
        (sa.verdicts_spared, sb.verdicts_spared)
    );
    assert_eq!((sa.nodes_down, sb.nodes_down), (0, 0));
    assert!(a.peers() == ["b"] && b.peers() == ["a"]);
}
