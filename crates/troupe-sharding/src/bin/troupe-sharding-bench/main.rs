//! Sharded entities measured, and a node process for the kill tests.
//!
//! `troupe-sharding-bench bench [N] [ROUNDS]`: starts a JetStream nats-server and
//! three nodes in this process; from node 1 it sends `N` tells (default
//! 200,000) in each of four shapes, two by two the same work:
//! - to one plain actor exposed on node 3, through a `RemoteRef` (the
//!   baseline), and to one entity owned by node 3;
//! - round-robin to 64 plain actors exposed on node 3 (64 `RemoteRef`s),
//!   and to 64 entities owned by node 3.
//!
//! `ROUNDS` rounds (default 2; in each pair the remote side goes first
//! in even rounds, the entity side in odd ones), and 2,000 sequential
//! asks each way. Prints rates and the
//! ratios (entity / remote, shape by shape), and for each round the
//! account `delivered + refused == sent` (refused: the tells node 1's
//! links report refused by the peer or lost).
//!
//! `troupe-sharding-bench producer [N] [ROUNDS]`: the at-least-once
//! producer (window 100) against plain entity tells, and `tell_confirmed`
//! against asks of the same size (see `producer.rs`).
//!
//! `troupe-sharding-bench rebalance [N] [RUNS]`: starts a JetStream
//! nats-server and three nodes in this process, activates `N` entities
//! (default 10,000) from node 1, then starts a fourth node and measures
//! the time until placement settles on all four (`Sharding::settled`)
//! and until all `N` entities answer an ask again (8 asking threads),
//! beside the same ask sweep timed before the join (nothing moving).
//! Repeats `RUNS` times (default 3), each on a fresh server, and prints a
//! table and one JSON line per run.
//!
//! `--json` (after `bench` or `rebalance`): also prints *sample lines*, one
//! JSON object per measured quantity and round (or run), for the suite
//! (`troupe-bench cluster`), which turns them into its figures:
//! `{"framework","workload","label","params":{..,"op"},"round","seconds",
//! "ops","unit",..extras}`. `round` is absent where a quantity is measured
//! once (the asks); `params.op` names what a figure is compared on (Troupe's
//! side and its baseline share it); `window_s` and `other_cpu_s` are the
//! sample's wall time and the CPU time other processes used in it (the
//! machine's less this process's and its nats-server's). The text output stays as it is; the
//! sample lines are the stdout lines that open with `{"framework"`.
//!
//! Without a nats-server the program says how to install one and exits 2.
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
use troupe_sharding::delivery::{Consumer, Deliveries, Delivery};
use troupe_sharding::placement::desired_owner;
use troupe_sharding::{ClusterSharding, Sharding};

mod producer;
mod rebalance;
mod sample;

use producer::producer_bench;
use rebalance::rebalance;
use sample::{sample_line, Window};

#[remote("sharding.bench.Bump")]
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Bump(u64);

#[remote("sharding.bench.Read", reply = u64)]
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Read;

/// An ask of a bump's size (the baseline of `tell_confirmed`).
#[remote("sharding.bench.Peek", reply = u64)]
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Peek(u64);

enum Msg {
    Bump(Bump),
    Read(ReplyTo<u64>),
    /// A producer's bumps (`producer`).
    Delivery(Delivery<Bump>),
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
    consumer: Consumer,
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
            Msg::Delivery(d) => {
                let (n, all) = (&mut self.n, &self.all);
                d.handle(&mut self.consumer, |_| {
                    *n += 1;
                    all.fetch_add(1, Ordering::Relaxed);
                });
            }
        }
    }
}

/// The coordinator's tick on every node.
const TICK: Duration = Duration::from_millis(100);
/// Shards of the `tally` type.
const SHARDS: u32 = 64;

fn node(
    url: &str,
    name: &str,
    hb: Duration,
    all: &Arc<AtomicU64>,
) -> (Arc<Cluster>, Sharding<Tally>) {
    let c = Arc::new(
        Cluster::builder(url, name)
            .insecure()
            .heartbeat(hb)
            .connect()
            .expect("connect"),
    );
    let all = all.clone();
    let s = c
        .sharding("tally", move |_| Tally {
            n: 0,
            all: all.clone(),
            consumer: Consumer::new(),
        })
        .tell::<Bump>()
        .ask::<Read>(|_, r| Msg::Read(r))
        .ask::<Peek>(|_, r| Msg::Read(r))
        .deliveries::<Bump>(Msg::Delivery)
        .idle_timeout(None)
        .shards(SHARDS)
        .tick(TICK)
        .start()
        .expect("sharding");
    (c, s)
}

/// What became of the tells a round sent: handled by an actor, or
/// reported to the sender as not delivered.
struct Fate {
    delivered: u64,
    /// Refused by the peer or lost, as node 1's links report them.
    refused: u64,
}

/// Node 1's tells that its links report as refused by the peer or lost.
fn not_delivered(c: &Cluster) -> u64 {
    let st = c.node().stats();
    st.tells_refused_by_peer + st.frames_lost
}

/// Waits until each of the `sent` tells since `start` was handled or
/// reported refused to node 1 (`from`); a run that stalls calls `report`
/// (every node's transport and sharding counters, where the missing tells
/// can be looked for) before it gives up.
fn wait_count(all: &AtomicU64, from: &Cluster, start: Fate, sent: u64, report: &dyn Fn()) -> Fate {
    let end = Instant::now() + Duration::from_secs(120);
    loop {
        let fate = Fate {
            delivered: all.load(Ordering::Relaxed) - start.delivered,
            refused: not_delivered(from) - start.refused,
        };
        if fate.delivered + fate.refused >= sent {
            return fate;
        }
        if Instant::now() >= end {
            report();
            panic!(
                "only {} of {sent} arrived, {} refused",
                fate.delivered, fate.refused
            );
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// A JetStream nats-server on loopback, or the reason and exit status 2.
fn server() -> troupe_test_nats::NatsServer {
    match troupe_test_nats::NatsServer::builder().jetstream().start() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("troupe-sharding-bench: nats-server -js did not start: {e}");
            std::process::exit(2);
        }
    }
}

/// The sample line of one tell shape's round.
fn tell_line(
    framework: &str,
    label: &str,
    actors: usize,
    round: usize,
    n: u64,
    r: &Rates,
) -> String {
    sample_line(
        framework,
        "entity_tell",
        label,
        &format!("\"tells\":{n},\"actors\":{actors},\"op\":\"tell {actors}\""),
        Some(round),
        (r.seconds, r.delivered, "tells/s"),
        &format!(
            ",\"cpu_ns_per_tell\":{:.1},\"sent\":{n},\"delivered\":{},\"refused\":{}{}",
            r.cpu_ns, r.delivered, r.refused, r.window
        ),
    )
}

fn bench(n: u64, rounds: usize, json: bool) {
    let server = server();
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
        consumer: Consumer::new(),
    });
    nodes[2]
        .0
        .expose("sink", &sink)
        .tell::<Bump>()
        .ask::<Read>(|_, r| Msg::Read(r))
        .serve()
        .expect("expose");
    let direct = nodes[0].0.node().lookup::<Bump>("sink@b3").expect("lookup");
    // The baseline of the 64 entities: 64 plain actors on node 3.
    let sinks: Vec<_> = (0..refs.len())
        .map(|i| {
            let a = system.spawn(Tally {
                n: 0,
                all: all.clone(),
                consumer: Consumer::new(),
            });
            nodes[2]
                .0
                .expose(&format!("sink{i}"), &a)
                .tell::<Bump>()
                .serve()
                .expect("expose");
            a
        })
        .collect();
    let directs: Vec<_> = (0..sinks.len())
        .map(|i| {
            nodes[0]
                .0
                .node()
                .lookup::<Bump>(&format!("sink{i}@b3"))
                .expect("lookup")
        })
        .collect();
    let report = || {
        for (c, s) in &nodes {
            eprintln!("{}: {:?}", c.node().name(), c.node().stats());
            eprintln!("{}: {:?}", c.node().name(), s.stats());
        }
    };
    let direct_ask = direct.retype::<Read>().expect("retype");
    println!("tells: {n} per run, {} entities on node 3", refs.len());
    // One entity: the same single-actor shape as the baseline.
    let one = &refs[..1];
    let pid = server.pid();
    let run = |tell: &dyn Fn(u64)| rate(&all, &nodes[0].0, pid, n, tell, &report);
    // `TROUPE_BENCH_PHASE=remote|remote64|entity|one|local`: only that
    // shape, 6 rounds (for a profile of one path); `local`: 64 entities
    // node 1 owns, told from node 1 (the region's path, no network).
    if let Ok(phase) = std::env::var("TROUPE_BENCH_PHASE") {
        let local: Vec<_> = nodes[0]
            .1
            .local_entities()
            .iter()
            .take(64)
            .map(|id| nodes[0].1.entity(id))
            .collect();
        for round in 0..6 {
            let r = match phase.as_str() {
                "local" => run(&|i| tell_to(&local, i)),
                "remote" => run(&|i| tell_remote(&direct, i)),
                "remote64" => run(&|i| tell_remotes(&directs, i)),
                "entity" => run(&|i| tell_to(&refs, i)),
                _ => run(&|i| tell_to(one, i)),
            };
            println!(
                "phase {phase} round {round}: {:.0}/s, {:.0} ns of CPU per tell",
                r.arrived, r.cpu_ns
            );
        }
        return;
    }
    // Per round and shape pair: (rate ratio, CPU ratio), entity / remote.
    let mut ratios = Vec::new();
    let mut ratios_one = Vec::new();
    for round in 0..rounds {
        // The two sides of a pair take turns at going first (a side that
        // runs right after a pause, or after the other pair, runs
        // differently; taking turns keeps that out of the mean ratio).
        let pair = |remote: &dyn Fn(u64), entity: &dyn Fn(u64)| {
            if round % 2 == 0 {
                let r = run(remote);
                (r, run(entity))
            } else {
                let e = run(entity);
                (run(remote), e)
            }
        };
        let (base, ent_one) = pair(&|i| tell_remote(&direct, i), &|i| tell_to(one, i));
        let (base64, ent) = pair(&|i| tell_remotes(&directs, i), &|i| tell_to(&refs, i));
        ratios_one.push((ent_one.arrived / base.arrived, base.cpu_ns / ent_one.cpu_ns));
        ratios.push((ent.arrived / base64.arrived, base64.cpu_ns / ent.cpu_ns));
        println!(
            "round {round}: 1 actor: remote tell {:.0}/s, entity tell {:.0}/s, ratio {:.2}; {} actors: remote tell {:.0}/s, entity tell {:.0}/s, ratio {:.2}",
            base.arrived,
            ent_one.arrived,
            ent_one.arrived / base.arrived,
            refs.len(),
            base64.arrived,
            ent.arrived,
            ent.arrived / base64.arrived
        );
        if json {
            let many = refs.len();
            println!(
                "{}",
                tell_line("troupe-remote", "remote tell, 1 actor", 1, round, n, &base)
            );
            println!(
                "{}",
                tell_line("troupe", "entity tell, 1 entity", 1, round, n, &ent_one)
            );
            println!(
                "{}",
                tell_line(
                    "troupe-remote",
                    &format!("remote tell, {many} actors"),
                    many,
                    round,
                    n,
                    &base64
                )
            );
            println!(
                "{}",
                tell_line(
                    "troupe",
                    &format!("entity tell, {many} entities"),
                    many,
                    round,
                    n,
                    &ent
                )
            );
        }
        println!(
            "round {round}: CPU per tell (process and nats-server): 1 actor: remote {:.0} ns, entity {:.0} ns, remote / entity {:.2}; {} actors: remote {:.0} ns, entity {:.0} ns, remote / entity {:.2}",
            base.cpu_ns,
            ent_one.cpu_ns,
            base.cpu_ns / ent_one.cpu_ns,
            refs.len(),
            base64.cpu_ns,
            ent.cpu_ns,
            base64.cpu_ns / ent.cpu_ns
        );
    }
    let st = nodes[0].1.stats();
    println!(
        "node 1: tells {} forwarded {} buffered {}",
        st.tells, st.forwarded, st.buffered
    );
    let st3 = nodes[2].1.stats();
    println!(
        "node 3: delivered {} directly {}",
        st3.delivered, st3.delivered_direct
    );
    let asks = 2000;
    let t = Instant::now();
    for _ in 0..asks {
        direct_ask.ask(Read, Duration::from_secs(5)).expect("ask");
    }
    let base_all = t.elapsed();
    let base = base_all / asks;
    let t = Instant::now();
    for i in 0..asks {
        refs[i as usize % refs.len()]
            .ask(Read, Duration::from_secs(5))
            .expect("ask");
    }
    let ent_all = t.elapsed();
    let ent = ent_all / asks;
    println!("ask round trip: remote {base:?}, entity {ent:?}");
    if json {
        let params = format!("\"asks\":{asks},\"op\":\"ask\"");
        for (framework, label, took) in [
            ("troupe-remote", "remote ask, 1 actor", base_all),
            ("troupe", "entity ask, round-robin", ent_all),
        ] {
            let timing = (took.as_secs_f64(), u64::from(asks), "asks/s");
            println!(
                "{}",
                sample_line(framework, "entity_tell", label, &params, None, timing, "")
            );
        }
    }
    let mean =
        |r: &[(f64, f64)], f: fn(&(f64, f64)) -> f64| r.iter().map(f).sum::<f64>() / r.len() as f64;
    let median = |r: &[(f64, f64)], f: fn(&(f64, f64)) -> f64| {
        let mut v: Vec<f64> = r.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        match v.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        }
    };
    println!(
        "entity tell / remote tell: {:.2} with 1 actor, {:.2} with {} (rates, mean of {} rounds; median {:.2} and {:.2}); CPU per tell, remote / entity: {:.2} with 1, {:.2} with {} (median {:.2} and {:.2})",
        mean(&ratios_one, |r| r.0),
        mean(&ratios, |r| r.0),
        refs.len(),
        ratios.len(),
        median(&ratios_one, |r| r.0),
        median(&ratios, |r| r.0),
        mean(&ratios_one, |r| r.1),
        mean(&ratios, |r| r.1),
        refs.len(),
        median(&ratios_one, |r| r.1),
        median(&ratios, |r| r.1),
    );
}

/// What one shape measured.
struct Rates {
    /// Tells handled per second, from the first send to the last arrival.
    arrived: f64,
    /// Seconds from the first send to the last arrival.
    seconds: f64,
    /// Tells handled by an actor.
    delivered: u64,
    /// Tells node 1's links report refused by the peer or lost.
    refused: u64,
    /// The interference fields of the sample line ([`Window::close`]).
    window: String,
    /// CPU time of this process and of the nats-server, per tell sent (ns).
    cpu_ns: f64,
}

/// CPU time used so far: this process's (every thread, those gone
/// included) and the nats-server's (`pid`, its threads' run time), in ns.
fn cpu_now(pid: Option<u32>) -> u64 {
    // SAFETY: `usage` is a valid, writable rusage owned by this frame;
    // getrusage writes only it.
    let own = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut usage) == 0 {
            let us = |t: libc::timeval| {
                u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000
                    + u64::try_from(t.tv_usec).unwrap_or(0)
            };
            (us(usage.ru_utime) + us(usage.ru_stime)) * 1000
        } else {
            0
        }
    };
    own + pid.map_or(0, server_cpu)
}

/// The summed run time of process `pid`'s threads, in ns (`schedstat`).
fn server_cpu(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// Tells `n` bumps from node 1 (`from`) with `tell(i)` and gives the
/// rate at which they arrived and the CPU time each took (this process
/// and the nats-server, `pid`); prints the rate at which the sending
/// loop ran (when it is close to the arrival rate, the sender is the
/// bottleneck) and the account: delivered + refused == sent.
fn rate(
    all: &AtomicU64,
    from: &Cluster,
    pid: Option<u32>,
    n: u64,
    tell: &dyn Fn(u64),
    report: &dyn Fn(),
) -> Rates {
    let start = Fate {
        delivered: all.load(Ordering::Relaxed),
        refused: not_delivered(from),
    };
    let window = Window::open(pid);
    let cpu = cpu_now(pid);
    let t = Instant::now();
    for i in 0..n {
        tell(i);
    }
    let sent = t.elapsed();
    let fate = wait_count(all, from, start, n, report);
    let seconds = t.elapsed().as_secs_f64();
    let arrived = fate.delivered as f64 / seconds;
    let cpu_ns = cpu_now(pid).saturating_sub(cpu) as f64 / n as f64;
    let window = window.close(pid);
    println!(
        "  sent at {:.0}/s, arrived at {arrived:.0}/s, {cpu_ns:.0} ns of CPU per tell; delivered {} + refused {} {} sent {n}",
        n as f64 / sent.as_secs_f64(),
        fate.delivered,
        fate.refused,
        if fate.delivered + fate.refused == n {
            "=="
        } else {
            "!="
        }
    );
    Rates {
        arrived,
        seconds,
        delivered: fate.delivered,
        refused: fate.refused,
        cpu_ns,
        window,
    }
}

/// How long a sender waits when the outbox is full before it tries again
/// (as `troupe-remote-bench` does). Both sides of every pair wait alike.
/// A `yield_now` loop instead kept the sending thread busy while the
/// receiving side, on the same 2 cores, was the bottleneck: it took CPU
/// from whichever side filled its outbox more often, and so widened the
/// gap it was measuring (2026-11-27, bench/results/2026-11-26-sharding).
const FULL_WAIT: Duration = Duration::from_micros(50);

fn wait_for_room() {
    std::thread::sleep(FULL_WAIT);
}

/// Tells bump `i` to the plain actor behind `r` (the baseline), retrying
/// while full.
fn tell_remote(r: &troupe_remote::RemoteRef<Bump>, i: u64) {
    let mut m = Bump(i);
    while let Err(e) = r.tell(m) {
        m = e.into_inner();
        wait_for_room();
    }
}

/// Tells bump `i` to the `i`-th of the plain actors behind `rs`,
/// round-robin (the baseline of the 64 entities), retrying while full.
fn tell_remotes(rs: &[troupe_remote::RemoteRef<Bump>], i: u64) {
    tell_remote(&rs[i as usize % rs.len()], i);
}

/// Tells bump `i` to the `i`-th of `refs`, round-robin, retrying while full.
fn tell_to(refs: &[troupe_sharding::EntityRef<Tally>], i: u64) {
    let mut m = Bump(i);
    let r = &refs[i as usize % refs.len()];
    while let Err(e) = r.tell(m) {
        m = e.into_inner();
        wait_for_room();
    }
}

fn main() {
    let mut args: Vec<String> = std::env::args().collect();
    let json = args.iter().skip(2).any(|a| a == "--json");
    args.retain(|a| a != "--json");
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
        Some("rebalance") => rebalance(
            count(args.get(2), 10_000, "N") as usize,
            count(args.get(3), 3, "RUNS") as usize,
            json,
        ),
        Some("producer") => producer_bench(
            count(args.get(2), 200_000, "N"),
            count(args.get(3), 2, "ROUNDS") as usize,
            json,
        ),
        Some("bench") => bench(
            count(args.get(2), 200_000, "N"),
            count(args.get(3), 2, "ROUNDS") as usize,
            json,
        ),
        _ => {
            eprintln!("usage: troupe-sharding-bench bench [N] [ROUNDS] [--json] | producer [N] [ROUNDS] [--json] | rebalance [N] [RUNS] [--json] | node <url> <name> <heartbeat-ms>");
            std::process::exit(2);
        }
    }
}

/// A positive count argument, `default` when absent; exits 2 on a bad one.
fn count(arg: Option<&String>, default: u64, what: &str) -> u64 {
    match arg.map(|a| a.replace('_', "").parse::<u64>()) {
        None => default,
        Some(Ok(n)) if n > 0 => n,
        _ => {
            eprintln!("troupe-sharding-bench: {what} wants a positive integer");
            std::process::exit(2);
        }
    }
}
