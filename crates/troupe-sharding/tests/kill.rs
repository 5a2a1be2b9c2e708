//! SIGKILL a node process holding 1,000 active entities; every one is
//! reachable again on the survivors. `#[ignore]`d (a scale test):
//!
//! ```text
//! cargo test -p troupe-sharding --test kill -- --ignored --nocapture
//! ```
//!
//! Figures: `bench/results/2026-11-26-sharding/README.md`.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use troupe::{Actor, Context, ReplyTo};
use troupe_cluster::Cluster;
use troupe_remote::remote;
use troupe_sharding::ClusterSharding;
use troupe_test_nats::NatsServer;

const HB: Duration = Duration::from_millis(250);

// The node binary's entity, by the same stable names.
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

struct Tally(u64);
impl Actor for Tally {
    type Msg = Msg;
    fn handle(&mut self, m: Msg, _: &mut Context<'_, Self>) {
        match m {
            Msg::Bump(Bump(_)) => self.0 += 1,
            Msg::Read(r) => {
                r.reply(self.0);
            }
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

#[test]
#[ignore = "scale: 1,000 entities and a SIGKILLed node process"]
fn sigkill_a_node_holding_1000_entities() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let url = server.url();
    let mut victim = Command::new(env!("CARGO_BIN_EXE_troupe-sharding-bench"))
        .args(["node", &url, "k3", &HB.as_millis().to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the node");
    let mut out = BufReader::new(victim.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "READY");
    let survivors: Vec<_> = (1..=2)
        .map(|i| {
            let c = Arc::new(
                Cluster::builder(&url, &format!("k{i}"))
                    .insecure()
                    .heartbeat(HB)
                    .connect()
                    .unwrap(),
            );
            let s = c
                .sharding("tally", |_| Tally(0))
                .tell::<Bump>()
                .ask::<Read>(|_, r| Msg::Read(r))
                .idle_timeout(None)
                .tick(Duration::from_millis(100))
                .start()
                .unwrap();
            (c, s)
        })
        .collect();
    let end = Instant::now() + Duration::from_secs(30);
    while !survivors
        .iter()
        .all(|(c, s)| c.peers().len() == 2 && s.settled())
    {
        assert!(Instant::now() < end, "no settle");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    let s1 = &survivors[0].1;
    // Activate entities (an ask each), a hundred at a time, until 1,000
    // run on the victim: those the survivors do not run.
    let mut on_victim = Vec::new();
    let mut all_ids = Vec::new();
    while on_victim.len() < 1000 {
        let batch: Vec<String> = (all_ids.len()..all_ids.len() + 100)
            .map(|i| format!("e{i}"))
            .collect();
        for id in &batch {
            assert_eq!(s1.entity(id).ask(Read, Duration::from_secs(5)), Ok(0));
        }
        let here: HashSet<String> = survivors
            .iter()
            .flat_map(|(_, s)| s.local_entities())
            .collect();
        for id in &batch {
            if !here.contains(id) && on_victim.len() < 1000 {
                on_victim.push(id.clone());
            }
        }
        all_ids.extend(batch);
    }
    eprintln!(
        "{} entities on the victim, {} in all",
        on_victim.len(),
        all_ids.len()
    );
    let killed = Instant::now();
    victim.kill().expect("SIGKILL");
    let _ = victim.wait();
    let mut times = Vec::new();
    let mut left: Vec<&String> = on_victim.iter().collect();
    let end = Instant::now() + Duration::from_secs(60);
    while !left.is_empty() {
        assert!(
            Instant::now() < end,
            "{} unreachable after 60 s",
            left.len()
        );
        left.retain(|id| {
            if s1.entity(id).ask(Read, Duration::from_millis(200)).is_ok() {
                times.push(killed.elapsed());
                false
            } else {
                true
            }
        });
    }
    times.sort();
    eprintln!(
        "time to reachable after SIGKILL: p50 {:?}, p99 {:?}, max {:?} (heartbeat {HB:?}, {} entities)",
        percentile(&times, 0.5),
        percentile(&times, 0.99),
        times.last().unwrap(),
        times.len()
    );
    let takeovers: u64 = survivors.iter().map(|(_, s)| s.stats().takeovers).sum();
    assert!(takeovers > 0);
}
