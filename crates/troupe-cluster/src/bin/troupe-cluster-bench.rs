//! Figures for the cluster: time from SIGKILL to Down (p50/p99 over 20
//! kills), cached cluster `find` vs troupe's local registry `find`, and
//! `dispatch_group` per remote member. Starts its own nats-server; the
//! victims are this binary re-run as `victim URL NAME MS`.
//!
//! `troupe-cluster-bench [--kills N] [--heartbeat-ms MS]` prints a table and JSON lines.

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use troupe::{Actor, ActorSystem, Context, Down};
use troupe_cluster::Cluster;
use troupe_remote::remote;
use troupe_test_nats::NatsServer;

#[remote("cluster.bench.Job")]
#[derive(Serialize, Deserialize, Clone)]
struct Job(u64);

struct Sink;
impl Actor for Sink {
    type Msg = Job;
    fn handle(&mut self, _: Job, _: &mut Context<'_, Self>) {}
}

struct Watcher(mpsc::Sender<Instant>);
impl Actor for Watcher {
    type Msg = Down;
    fn handle(&mut self, _: Down, _: &mut Context<'_, Self>) {
        let _ = self.0.send(Instant::now());
    }
}

fn victim(url: &str, name: &str, ms: u64) {
    let system = ActorSystem::builder().threads(1).build();
    let c = Cluster::builder(url, name)
        .insecure()
        .heartbeat(Duration::from_millis(ms))
        .connect()
        .expect("connect");
    let s = system.spawn(Sink);
    c.expose("sink", &s).tell::<Job>().serve().expect("expose");
    println!("READY");
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// Cluster figures: SIGKILL to Down, cached find, dispatch_group.
#[derive(clap::Parser)]
struct Args {
    /// Victim processes to kill (p50/p99 over them).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    kills: u64,
    /// The nodes' heartbeat period, milliseconds.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    heartbeat_ms: u64,
    #[command(subcommand)]
    role: Option<Role>,
}

#[derive(clap::Subcommand)]
enum Role {
    /// A victim node (this binary re-run by itself; not for users).
    #[command(hide = true)]
    Victim {
        /// The nats-server.
        url: String,
        /// The node's name.
        name: String,
        /// Heartbeat period, milliseconds.
        #[arg(value_parser = clap::value_parser!(u64).range(1..))]
        ms: u64,
    },
}

fn main() {
    let args: Args = clap::Parser::parse();
    if let Some(Role::Victim { url, name, ms }) = &args.role {
        return victim(url, name, *ms);
    }
    let (kills, ms) = (args.kills, args.heartbeat_ms);
    let server = NatsServer::builder()
        .jetstream()
        .start()
        .expect("nats-server");
    let url = server.url();
    let system = ActorSystem::builder().threads(2).build();
    let hb = Duration::from_millis(ms);
    let watcher_node = Cluster::builder(&url, "watcher")
        .insecure()
        .heartbeat(hb)
        .connect()
        .expect("connect");
    let exe = std::env::current_exe().expect("exe");
    let mut down_ms = Vec::new();
    for k in 0..kills {
        let name = format!("v{k}");
        let mut child = Command::new(&exe)
            .args(["victim", &url, &name, &ms.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .expect("victim");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("READY");
        let (tx, rx) = mpsc::channel();
        let w = system.spawn(Watcher(tx));
        watcher_node
            .monitor(&w, &format!("sink@{name}"), |d| d)
            .expect("monitor");
        // Kill at a random phase of the victim's heartbeat.
        std::thread::sleep(hb * 2 + Duration::from_millis(k * 37 % ms.max(1)));
        let killed = Instant::now();
        let _ = child.kill();
        let _ = child.wait();
        let at = rx.recv_timeout(Duration::from_secs(10)).expect("Down");
        down_ms.push(at.duration_since(killed).as_secs_f64() * 1e3);
    }
    let (p50, p99, max) = (
        pct(&mut down_ms, 0.5),
        pct(&mut down_ms, 0.99),
        pct(&mut down_ms, 1.0),
    );

    // find: cluster cache vs troupe's local registry.
    let sink = system.spawn(Sink);
    watcher_node
        .expose("sink", &sink)
        .tell::<Job>()
        .serve()
        .expect("expose");
    watcher_node
        .register::<Job>("sink", "sink")
        .expect("register");
    while watcher_node.find::<Job>("sink").is_none() {
        std::thread::sleep(Duration::from_millis(5));
    }
    let local = troupe::registry::Registry::new();
    local.register("sink", &sink).expect("local register");
    let n = 1_000_000u32;
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(watcher_node.find::<Job>(std::hint::black_box("sink")));
    }
    let cluster_find = t.elapsed().as_nanos() as f64 / f64::from(n);
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(local.find(std::hint::black_box("sink")));
    }
    let local_find = t.elapsed().as_nanos() as f64 / f64::from(n);

    // dispatch_group to 4 members on 2 other nodes.
    let others: Vec<Cluster> = (0..2)
        .map(|i| {
            Cluster::builder(&url, &format!("m{i}"))
                .insecure()
                .heartbeat(hb)
                .connect()
                .expect("connect")
        })
        .collect();
    for (i, c) in others.iter().enumerate() {
        for j in 0..2 {
            let s = system.spawn(Sink);
            let a = format!("s{i}{j}");
            c.expose(&a, &s).tell::<Job>().serve().expect("expose");
            c.join_group::<Job>("g", &a).expect("join");
        }
    }
    while watcher_node.members("g").len() < 4 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let rounds = 50_000u64;
    let t = Instant::now();
    let mut sent = 0;
    for r in 0..rounds {
        sent += watcher_node.dispatch_group("g", Job(r));
    }
    watcher_node.node().flush(Duration::from_secs(5));
    let per_member = t.elapsed().as_nanos() as f64 / sent.max(1) as f64;

    println!("| figure | value |\n|---|---|");
    println!("| SIGKILL -> Down p50 (heartbeat {ms} ms, {kills} kills) | {p50:.1} ms |");
    println!("| SIGKILL -> Down p99 | {p99:.1} ms (max {max:.1}) |");
    println!("| cluster find (cached) | {cluster_find:.1} ns |");
    println!("| troupe local registry find | {local_find:.1} ns |");
    println!("| dispatch_group, per remote member (4 members, 2 nodes) | {per_member:.1} ns |");
    println!("{{\"figure\":\"kill_to_down_ms\",\"heartbeat_ms\":{ms},\"kills\":{kills},\"p50\":{p50:.2},\"p99\":{p99:.2},\"max\":{max:.2}}}");
    println!("{{\"figure\":\"find_ns\",\"cluster_cached\":{cluster_find:.1},\"local_registry\":{local_find:.1}}}");
    println!("{{\"figure\":\"dispatch_group_ns_per_member\",\"members\":4,\"nodes\":2,\"value\":{per_member:.1}}}");
}
