//! What metrics cost: the ring and pingpong workloads with metrics off and
//! on for every actor, run side by side (alternating, same process), median
//! of several samples each.
//!
//! Run: `cargo run --release -p troupe --example metrics_overhead -- [samples] [threads]`
//! (defaults: 7 samples, 2 threads). `--scrape-actors N` also times a
//! scrape (`metrics_text`) of a system with N metered actors (0: skipped).
//!
//! Built with `RUSTFLAGS="--cfg troupe_baseline"` the "on" rows are skipped,
//! so the same file measures a commit that has no metrics at all (the A/B
//! against the commit before, see the observability report).

#![allow(unexpected_cfgs)]

use clap::Parser;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use troupe::{Actor, ActorRef, ActorSystem, Context};

const RINGS: u64 = 4;
const RING_ACTORS: u64 = 500;
const LAPS: u64 = 100;
const PAIRS: u64 = 4;
const ROUND_TRIPS: u64 = 100_000;

fn system(threads: usize, metrics: bool) -> ActorSystem {
    let b = ActorSystem::builder().threads(threads);
    #[cfg(not(troupe_baseline))]
    let b = b.metrics(metrics);
    #[cfg(troupe_baseline)]
    assert!(!metrics, "a baseline build has no metrics");
    b.build()
}

enum RingMsg {
    Link(ActorRef<Node>),
    Token(u64),
}

struct Node {
    next: Option<ActorRef<Node>>,
    done: mpsc::Sender<()>,
}

impl Actor for Node {
    type Msg = RingMsg;
    fn handle(&mut self, msg: RingMsg, _: &mut Context<'_, Self>) {
        match msg {
            RingMsg::Link(n) => self.next = Some(n),
            RingMsg::Token(0) => {
                let _ = self.done.send(());
            }
            RingMsg::Token(t) => {
                if let Some(n) = &self.next {
                    let _ = n.tell(RingMsg::Token(t - 1));
                }
            }
        }
    }
}

/// Nanoseconds per hop.
fn ring(threads: usize, metrics: bool) -> f64 {
    let system = system(threads, metrics);
    let (tx, rx) = mpsc::channel();
    let firsts: Vec<ActorRef<Node>> = (0..RINGS)
        .map(|_| {
            let nodes: Vec<_> = (0..RING_ACTORS)
                .map(|_| {
                    system.spawn(Node {
                        next: None,
                        done: tx.clone(),
                    })
                })
                .collect();
            for (i, n) in nodes.iter().enumerate() {
                n.tell(RingMsg::Link(nodes[(i + 1) % nodes.len()].clone()))
                    .unwrap();
            }
            nodes[0].clone()
        })
        .collect();
    let t0 = Instant::now();
    for f in &firsts {
        f.tell(RingMsg::Token(RING_ACTORS * LAPS)).unwrap();
    }
    for _ in 0..RINGS {
        rx.recv().unwrap();
    }
    let ns = t0.elapsed().as_nanos() as f64 / (RINGS * RING_ACTORS * LAPS) as f64;
    system.shutdown();
    ns
}

enum PingMsg {
    Peer(ActorRef<Player>),
    Ball(u64),
}

struct Player {
    peer: Option<ActorRef<Player>>,
    done: mpsc::Sender<()>,
}

impl Actor for Player {
    type Msg = PingMsg;
    fn handle(&mut self, msg: PingMsg, _: &mut Context<'_, Self>) {
        match msg {
            PingMsg::Peer(p) => self.peer = Some(p),
            PingMsg::Ball(0) => {
                let _ = self.done.send(());
            }
            PingMsg::Ball(n) => {
                if let Some(p) = &self.peer {
                    let _ = p.tell(PingMsg::Ball(n - 1));
                }
            }
        }
    }
}

/// Nanoseconds per message (two per round trip).
fn pingpong(threads: usize, metrics: bool) -> f64 {
    let system = system(threads, metrics);
    let (tx, rx) = mpsc::channel();
    let pings: Vec<ActorRef<Player>> = (0..PAIRS)
        .map(|_| {
            let a = system.spawn(Player {
                peer: None,
                done: tx.clone(),
            });
            let b = system.spawn(Player {
                peer: None,
                done: tx.clone(),
            });
            a.tell(PingMsg::Peer(b.clone())).unwrap();
            b.tell(PingMsg::Peer(a.clone())).unwrap();
            a
        })
        .collect();
    std::thread::sleep(Duration::from_millis(5));
    let t0 = Instant::now();
    for p in &pings {
        p.tell(PingMsg::Ball(2 * ROUND_TRIPS)).unwrap();
    }
    for _ in 0..PAIRS {
        rx.recv().unwrap();
    }
    let ns = t0.elapsed().as_nanos() as f64 / (PAIRS * 2 * ROUND_TRIPS) as f64;
    system.shutdown();
    ns
}

/// Fastest and median sample. On a shared machine the fastest is the
/// better estimate of the cost itself (interference only ever adds time).
fn min_median(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (v[0], v[v.len() / 2])
}

/// Ring and pingpong with metrics off and on, alternating; optionally the
/// cost of a scrape.
#[derive(Parser)]
struct Args {
    /// Samples per workload and setting.
    #[arg(default_value_t = 7, value_parser = clap::value_parser!(u64).range(1..))]
    samples: u64,
    /// Worker threads.
    #[arg(default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..))]
    threads: u64,
    /// Also time a scrape (`metrics_text`) of this many metered actors.
    #[arg(long, default_value_t = 0)]
    scrape_actors: usize,
    /// Time the scrape only (no ring or pingpong).
    #[arg(long, requires = "scrape_actors")]
    scrape_only: bool,
}

struct Quiet;
impl Actor for Quiet {
    type Msg = u64;
    fn handle(&mut self, _: u64, _: &mut Context<'_, Self>) {}
}

/// Microseconds per scrape of `actors` metered actors, each with a few
/// sampled messages (so every histogram has buckets to write).
#[cfg(not(troupe_baseline))]
fn scrape(actors: usize, samples: u64) -> Vec<f64> {
    let system = ActorSystem::builder()
        .threads(1)
        .metrics(true)
        .metrics_sample_every(1)
        .build();
    let refs: Vec<_> = (0..actors).map(|_| system.spawn(Quiet)).collect();
    for r in &refs {
        for i in 0..4 {
            r.tell(i).unwrap();
        }
    }
    while system
        .metrics()
        .actors
        .iter()
        .map(|a| a.handled)
        .sum::<u64>()
        < 4 * actors as u64
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut bytes = 0;
    let out = (0..samples.max(3) * 3)
        .map(|_| {
            let t0 = Instant::now();
            bytes = std::hint::black_box(system.metrics_text()).len();
            t0.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    println!("scrape: {actors} actors, {bytes} bytes of text");
    system.shutdown();
    out
}

fn main() {
    let args = Args::parse();
    let samples = args.samples;
    let threads = args.threads as usize;
    #[cfg(not(troupe_baseline))]
    if args.scrape_actors > 0 {
        let (min, med) = min_median(scrape(args.scrape_actors, samples));
        println!("scrape    min: {min:>8.1} us   median: {med:>8.1} us per metrics_text()");
    }
    if args.scrape_only {
        return;
    }
    let on_too = cfg!(not(troupe_baseline));
    println!(
        "metrics_overhead: {samples} samples, {threads} threads; ring {RINGS}x{RING_ACTORS} actors x {LAPS} laps, pingpong {PAIRS} pairs x {ROUND_TRIPS} round trips{}",
        if on_too { "" } else { " (baseline build: off only)" }
    );
    type Workload = fn(usize, bool) -> f64;
    let workloads: [(&str, Workload); 2] = [("ring", ring), ("pingpong", pingpong)];
    for (name, f) in workloads {
        let _ = f(threads, false); // warm-up
        let (mut off, mut on) = (Vec::new(), Vec::new());
        for _ in 0..samples {
            off.push(f(threads, false));
            if on_too {
                on.push(f(threads, true));
            }
        }
        let (off_min, off_med) = min_median(off);
        if on_too {
            let (on_min, on_med) = min_median(on);
            println!(
                "{name:<9} min: off {off_min:>6.1} on {on_min:>6.1} ns/msg ({:+.1}%)   median: off {off_med:>6.1} on {on_med:>6.1} ns/msg ({:+.1}%)",
                (on_min / off_min - 1.0) * 100.0,
                (on_med / off_med - 1.0) * 100.0
            );
        } else {
            println!(
                "{name:<9} min: off {off_min:>6.1} ns/msg   median: off {off_med:>6.1} ns/msg"
            );
        }
    }
}
