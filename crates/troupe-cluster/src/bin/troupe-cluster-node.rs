//! One cluster node as an OS process, for the fault tests and the bench.
//!
//! `troupe-cluster-node URL NAME INTERVAL_MS [--serve] [--watch actor@node]... [--track name]...`
//!
//! `--serve` exposes `worker` (takes `cluster.test.Job`), registers it as
//! `svc-<NAME>` and in group `pool`. Prints one line per event on stdout:
//! `READY`, `DOWN <target> <reason>`, `GONE <name>` (a tracked name left the
//! registry cache after being seen), `PEERDOWN <node>`.

use std::io::Write;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use troupe::{Actor, ActorSystem, Context, Down};
use troupe_cluster::Cluster;
use troupe_remote::remote;

#[remote("cluster.test.Job")]
#[derive(Serialize, Deserialize, Clone)]
struct Job(u64);

struct Worker;
impl Actor for Worker {
    type Msg = Job;
    fn handle(&mut self, _: Job, _: &mut Context<'_, Self>) {}
}

struct Watcher(String);
impl Actor for Watcher {
    type Msg = Down;
    fn handle(&mut self, d: Down, _: &mut Context<'_, Self>) {
        say(&format!("DOWN {} {}", self.0, d.reason));
    }
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// One cluster node as an OS process (the fault tests' and the bench's).
#[derive(clap::Parser)]
struct Args {
    /// The nats-server.
    url: String,
    /// This node's name.
    name: String,
    /// Heartbeat period, milliseconds.
    #[arg(value_parser = clap::value_parser!(u64).range(1..))]
    interval_ms: u64,
    /// Expose `worker`, register it as `svc-<NAME>` and in group `pool`.
    #[arg(long)]
    serve: bool,
    /// Monitor this remote actor (`actor@node`); repeatable.
    #[arg(long, value_name = "ACTOR@NODE")]
    watch: Vec<String>,
    /// Report when this registered name leaves the cache; repeatable.
    #[arg(long, value_name = "NAME")]
    track: Vec<String>,
}

fn main() {
    let Args {
        url,
        name,
        interval_ms: ms,
        serve,
        watch,
        track,
    } = clap::Parser::parse();
    let (url, name) = (&url, &name);
    let system = ActorSystem::builder().threads(1).build();
    let cluster = match Cluster::builder(url, name)
        .insecure()
        .heartbeat(Duration::from_millis(ms))
        .connect()
    {
        Ok(c) => c,
        Err(e) => {
            say(&format!("ERROR {e}"));
            std::process::exit(1);
        }
    };
    cluster.on_node_down(|n| say(&format!("PEERDOWN {n}")));
    let _worker = if serve {
        let w = system.spawn(Worker);
        cluster
            .expose("worker", &w)
            .tell::<Job>()
            .serve()
            .expect("expose");
        cluster
            .register::<Job>(&format!("svc-{name}"), "worker")
            .expect("register");
        cluster.join_group::<Job>("pool", "worker").expect("join");
        Some(w)
    } else {
        None
    };
    // Wait until the watched nodes' names are in the cache, then watch them.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while track.iter().any(|t| cluster.find::<Job>(t).is_none())
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    for t in &watch {
        let w = system.spawn(Watcher(t.clone()));
        cluster.monitor(&w, t, |d| d).expect("monitor");
    }
    say("READY");
    let mut seen: Vec<bool> = track
        .iter()
        .map(|t| cluster.find::<Job>(t).is_some())
        .collect();
    loop {
        for (k, t) in track.iter().enumerate() {
            let present = cluster.find::<Job>(t).is_some();
            if seen[k] && !present {
                say(&format!("GONE {t}"));
            }
            seen[k] = present;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}
