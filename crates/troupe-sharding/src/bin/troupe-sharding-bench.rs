//! Sharded entities measured, and a node process for the kill tests.
//!
//! `troupe-sharding-bench bench [N]`: starts a JetStream nats-server and
//! three nodes in this process; from node 1 it sends `N` tells (default
//! 200,000) to entities owned by node 3, then the same to a plain actor
//! exposed on node 3 through a `RemoteRef` (the baseline), alternating
//! twice, and 2,000 sequential asks each way. Prints rates and the ratio.
//!
//! `troupe-sharding-bench node <url> <name> <heartbeat-ms>`: a node that
//! hosts the `tally` sharding type (64 shards) and prints `READY`; the
//! kill tests start it as a child and SIGKILL it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use troupe::{Actor, ActorSystem, Context, ReplyTo};
use troupe_cluster::Cluster;
use troupe_remote::remote;
use troupe_sharding::{ClusterSharding, Sharding};

#[remote("sharding.bench.Bump")]
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Bump(u64);

#[remote("sharding.bench.Read", reply = u64)]
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Read;

enum Msg {
    Bump(Bump),
    Read(ReplyTo<u64>),
}
impl From<Bump> for Msg {
    fn from(b: Bump) -> Self {
        Msg::Bump(b)
    }
}

/// Counts bumps, into its own count and a process-wide one.
struct Tally {
    n: u64,
    all: Arc<AtomicU64>,
}
impl Actor for Tally {
    type Msg = Msg;
    fn handle(&mut self, m: Msg, _: &mut Context<'_, Self>) {
        match m {
            Msg::Bump(Bump(_seq)) => {
                self.n += 1;
                self.all.fetch_add(1, Ordering::Relaxed);
            }
            Msg::Read(r) => {
                r.reply(self.n);
            }
        }
    }
}

fn node(
    url: &str,
    name: &str,
    hb: Duration,
    all: &Arc<AtomicU64>,
) -> (Arc<Cluster>, Sharding<Tally>) {
    let c = Arc::new(
        Cluster::builder(url, name)
            .heartbeat(hb)
            .connect()
            .expect("connect"),
    );
    let all = all.clone();
    let s = c
        .sharding("tally", move |_| Tally {
            n: 0,
            all: all.clone(),
        })
        .tell::<Bump>()
        .ask::<Read>(|_, r| Msg::Read(r))
        .idle_timeout(None)
        .tick(Duration::from_millis(100))
        .start()
        .expect("sharding");
    (c, s)
}

fn wait_count(all: &AtomicU64, want: u64) {
    let end = Instant::now() + Duration::from_secs(120);
    while all.load(Ordering::Relaxed) < want {
        assert!(
            Instant::now() < end,
            "only {} of {want} arrived",
            all.load(Ordering::Relaxed)
        );
        std::thread::sleep(Duration::from_micros(200));
    }
}

fn bench(n: u64) {
    let server = troupe_test_nats::NatsServer::builder()
        .jetstream()
        .start()
        .expect("nats-server (on PATH or TROUPE_NATS_SERVER)");
    let url = server.url();
    let hb = Duration::from_millis(250);
    let all = Arc::new(AtomicU64::new(0));
    let nodes: Vec<_> = (1..=3)
        .map(|i| node(&url, &format!("b{i}"), hb, &all))
        .collect();
    let end = Instant::now() + Duration::from_secs(30);
    while !nodes
        .iter()
        .all(|(c, s)| c.peers().len() == 2 && s.settled())
    {
        assert!(Instant::now() < end, "the cluster did not settle");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    // Entities owned by node 3.
    for i in 0..300 {
        let _ = nodes[0]
            .1
            .entity(&format!("e{i}"))
            .ask(Read, Duration::from_secs(5));
    }
    let on3: Vec<String> = nodes[2].1.local_entities().into_iter().take(64).collect();
    assert!(!on3.is_empty());
    let refs: Vec<_> = on3.iter().map(|id| nodes[0].1.entity(id)).collect();
    // The baseline: a plain actor on node 3, told through a RemoteRef.
    let system = ActorSystem::new();
    let sink = system.spawn(Tally {
        n: 0,
        all: all.clone(),
    });
    nodes[2]
        .0
        .expose("sink", &sink)
        .tell::<Bump>()
        .ask::<Read>(|_, r| Msg::Read(r))
        .serve()
        .expect("expose");
    let direct = nodes[0].0.node().lookup::<Bump>("sink@b3").expect("lookup");
    let direct_ask = direct.retype::<Read>().expect("retype");
    println!("tells: {n} per run, {} entities on node 3", refs.len());
    let mut ratios = Vec::new();
    for round in 0..2 {
        let start = all.load(Ordering::Relaxed);
        let t = Instant::now();
        for i in 0..n {
            let mut m = Bump(i);
            while let Err(e) = direct.tell(m) {
                m = e.into_inner();
                std::thread::yield_now();
            }
        }
        wait_count(&all, start + n);
        let base = n as f64 / t.elapsed().as_secs_f64();
        let start = all.load(Ordering::Relaxed);
        let t = Instant::now();
        for i in 0..n {
            let mut m = Bump(i);
            let r = &refs[i as usize % refs.len()];
            while let Err(e) = r.tell(m) {
                m = e.into_inner();
                std::thread::yield_now();
            }
        }
        wait_count(&all, start + n);
        let ent = n as f64 / t.elapsed().as_secs_f64();
        ratios.push(ent / base);
        println!(
            "round {round}: remote tell {base:.0}/s, entity tell {ent:.0}/s, ratio {:.2}",
            ent / base
        );
    }
    let st = nodes[0].1.stats();
    println!(
        "node 1: tells {} forwarded {} buffered {}",
        st.tells, st.forwarded, st.buffered
    );
    let asks = 2000;
    let t = Instant::now();
    for _ in 0..asks {
        direct_ask.ask(Read, Duration::from_secs(5)).expect("ask");
    }
    let base = t.elapsed() / asks;
    let t = Instant::now();
    for i in 0..asks {
        refs[i as usize % refs.len()]
            .ask(Read, Duration::from_secs(5))
            .expect("ask");
    }
    let ent = t.elapsed() / asks;
    println!("ask round trip: remote {base:?}, entity {ent:?}");
    println!(
        "entity tell / remote tell: {:.2} (mean of {} rounds)",
        ratios.iter().sum::<f64>() / ratios.len() as f64,
        ratios.len()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("node") if args.len() == 5 => {
            let hb = Duration::from_millis(args[4].parse().expect("heartbeat ms"));
            let all = Arc::new(AtomicU64::new(0));
            let (_c, _s) = node(&args[2], &args[3], hb, &all);
            println!("READY");
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        Some("bench") => bench(args.get(2).map_or(200_000, |n| n.parse().expect("N"))),
        _ => {
            eprintln!("usage: troupe-sharding-bench bench [N] | node <url> <name> <heartbeat-ms>");
            std::process::exit(2);
        }
    }
}
