//! Crash/restart cycles with real processes on a real `nats-server -js`
//! (started by troupe-test-nats; skipped with one line where nats-server
//! is missing, a failure with TROUPE_REQUIRE_NATS=1).
//!
//! The test binary re-executes itself as the child (`crash_child`, which
//! does nothing unless `TROUPE_CRASH_URL` is set): the child spawns
//! event-sourced accounts (half of them snapshotting every 7 events) and
//! durable lists on a `JetStreamStore`, sends each a stream of deposits
//! numbered uniquely across cycles, several in flight per entity, and
//! prints `ack <entity> <n>` on stdout once a reply says it is stored. The
//! parent reads those lines, SIGKILLs the child after a random number of
//! them (and a random few milliseconds more), counts the complete lines
//! the child wrote before it died, and starts the next child, which
//! recovers every entity before going on. At the end the parent recovers
//! every entity itself and checks, exactly: every acknowledged deposit is
//! in the entity's history, none is there twice, and nothing is there that
//! was never sent.
//!
//! `TROUPE_CRASH_SEED` replays a run (the seed is printed).

mod common;

use common::*;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe::{ActorSystem, Async};
use troupe_persistence::{
    spawn_durable, Change, DurableActor, JetStreamStore, PersistenceConfig, PersistenceId,
    Persistent,
};
use troupe_test_nats::NatsServer;

/// Event-sourced accounts per child (entities `0..ACCOUNTS`).
const ACCOUNTS: u64 = 4;
/// Durable lists per child (entities `ACCOUNTS..ACCOUNTS + LISTS`).
const LISTS: u64 = 2;
/// Deposits in flight per entity.
const WINDOW: usize = 4;
/// Deposits numbers of cycle `c` start at `(c + 1) * STRIDE`.
const STRIDE: u64 = 1_000_000;

/// A durable state holding every number it was given, in order.
struct List {
    id: PersistenceId,
}

enum ListCmd {
    Push(u64, Reply<usize>),
    Get(Reply<Vec<u64>>),
}

#[derive(Default, Clone, Serialize, Deserialize)]
struct Numbers(Vec<u64>);

impl DurableActor for List {
    type Command = ListCmd;
    type State = Numbers;
    fn persistence_id(&self) -> PersistenceId {
        self.id.clone()
    }
    fn handle_command(&mut self, state: &Numbers, cmd: ListCmd) -> Change<Self> {
        match cmd {
            ListCmd::Push(n, r) => {
                let mut next = state.clone();
                next.0.push(n);
                Change::<Self>::set(next).reply(r, |s| s.0.len())
            }
            ListCmd::Get(r) => Change::<Self>::none().reply(r, |s| s.0.clone()),
        }
    }
}

fn list(i: u64) -> List {
    List {
        id: PersistenceId::new("list", format!("l{i}")).unwrap(),
    }
}

fn store(url: &str, ns: &str) -> Arc<JetStreamStore> {
    Arc::new(
        JetStreamStore::builder(url)
            .namespace(ns)
            .connect()
            .expect("connect"),
    )
}

fn spawn_account(system: &ActorSystem, store: &Arc<JetStreamStore>, i: u64) -> PersistentRefA {
    let config = PersistenceConfig {
        snapshot_every: (i % 2 == 1).then_some(7),
        ..Default::default()
    };
    system.spawn(Async::new(
        Persistent::new(account(&format!("a{i}")), store.clone()).config(config),
    ))
}

type PersistentRefA = troupe_persistence::PersistentRef<Account>;

/// The child: runs until killed (or for 60 s, should the parent vanish).
#[test]
fn crash_child() {
    let (Ok(url), Ok(ns), Ok(cycle)) = (
        std::env::var("TROUPE_CRASH_URL"),
        std::env::var("TROUPE_CRASH_NS"),
        std::env::var("TROUPE_CRASH_CYCLE"),
    ) else {
        return; // Not a child: nothing to do.
    };
    let base = (cycle.parse::<u64>().unwrap() + 1) * STRIDE;
    let store = store(&url, &ns);
    let system = ActorSystem::new();
    let out = Arc::new(std::sync::Mutex::new(std::io::stdout()));
    let ack = move |e: u64, n: u64| {
        let mut out = out.lock().unwrap();
        writeln!(out, "ack {e} {n}").unwrap();
        out.flush().unwrap();
    };
    let mut threads = Vec::new();
    for e in 0..ACCOUNTS + LISTS {
        let ack = ack.clone();
        // Keeps `WINDOW` commands in flight; `ack` once each is stored.
        macro_rules! drive {
            ($actor:expr, $cmd:path) => {{
                let a = $actor;
                threads.push(std::thread::spawn(move || {
                    let deadline = Instant::now() + Duration::from_secs(60);
                    let mut pending = std::collections::VecDeque::new();
                    let mut next = base;
                    while Instant::now() < deadline {
                        while pending.len() < WINDOW {
                            let n = next;
                            next += 1;
                            pending.push_back((n, a.ask_async(move |r| $cmd(n, r))));
                        }
                        let (n, p) = pending.pop_front().unwrap();
                        if let Ok(Ok(_)) = p.wait_timeout(T) {
                            ack(e, n);
                        }
                    }
                }));
            }};
        }
        if e < ACCOUNTS {
            drive!(spawn_account(&system, &store, e), Cmd::Deposit);
        } else {
            drive!(
                spawn_durable(&system, list(e), store.clone()),
                ListCmd::Push
            );
        }
    }
    for t in threads {
        let _ = t.join();
    }
}

/// A small xorshift generator: reproducible from its printed seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Runs `cycles` kill/restart cycles and checks every entity at the end.
fn crash_cycles(cycles: u64, ns: &str) {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let seed = std::env::var("TROUPE_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    eprintln!("crash cycles: {cycles}, seed {seed} (TROUPE_CRASH_SEED replays it)");
    let mut rng = Rng(seed);
    let exe = std::env::current_exe().unwrap();
    // entity -> numbers acknowledged to the caller.
    let mut acked: HashMap<u64, Vec<u64>> = HashMap::new();
    let t0 = Instant::now();
    for cycle in 0..cycles {
        let mut child = Command::new(&exe)
            .args(["crash_child", "--exact", "--nocapture", "--test-threads=1"])
            .env("TROUPE_CRASH_URL", server.url())
            .env("TROUPE_CRASH_NS", ns)
            .env("TROUPE_CRASH_CYCLE", cycle.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the child");
        let mut lines = BufReader::new(child.stdout.take().unwrap());
        let kill_after = 1 + rng.below(60);
        let extra_ms = rng.below(10);
        let mut seen = 0;
        let mut line = String::new();
        let record = |line: &str, acked: &mut HashMap<u64, Vec<u64>>| -> bool {
            // Only whole lines: a line cut by the kill was never complete.
            let Some(rest) = line.strip_suffix('\n') else {
                return false;
            };
            let mut parts = rest.split(' ');
            if parts.next() != Some("ack") {
                return false;
            }
            let e: u64 = parts.next().unwrap().parse().unwrap();
            let n: u64 = parts.next().unwrap().parse().unwrap();
            acked.entry(e).or_default().push(n);
            true
        };
        while seen < kill_after {
            line.clear();
            if lines.read_line(&mut line).unwrap() == 0 {
                panic!("cycle {cycle}: the child ended before it was killed");
            }
            if record(&line, &mut acked) {
                seen += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(extra_ms));
        child.kill().expect("SIGKILL the child");
        // What the child wrote before it died was acknowledged too.
        loop {
            line.clear();
            if lines.read_line(&mut line).unwrap() == 0 {
                break;
            }
            record(&line, &mut acked);
        }
        child.wait().unwrap();
    }
    let cycling = t0.elapsed();

    // Recover every entity here and compare.
    let store = store(&server.url(), ns);
    let system = ActorSystem::new();
    let mut total = 0;
    for e in 0..ACCOUNTS + LISTS {
        let history: Vec<u64> = if e < ACCOUNTS {
            let a = spawn_account(&system, &store, e);
            let b = a.ask(Cmd::Get, Duration::from_secs(30)).unwrap().unwrap();
            b.history.into_iter().map(|n| n as u64).collect()
        } else {
            let l = spawn_durable(&system, list(e), store.clone());
            l.ask(ListCmd::Get, Duration::from_secs(30))
                .unwrap()
                .unwrap()
        };
        let stored: HashSet<u64> = history.iter().copied().collect();
        assert_eq!(
            stored.len(),
            history.len(),
            "entity {e}: a number stored twice"
        );
        let sent = |n: &u64| *n >= STRIDE && *n < (cycles + 1) * STRIDE;
        assert!(history.iter().all(sent), "entity {e}: a number never sent");
        let acked = acked.remove(&e).unwrap_or_default();
        let lost: Vec<u64> = acked
            .iter()
            .copied()
            .filter(|n| !stored.contains(n))
            .collect();
        assert!(
            lost.is_empty(),
            "entity {e}: acknowledged but lost: {lost:?}"
        );
        total += acked.len();
    }
    assert!(total as u64 >= cycles, "fewer acknowledgements than cycles");
    eprintln!(
        "crash cycles: {cycles} kills in {cycling:?}, {total} acknowledged commands, 0 lost, 0 duplicated"
    );
    system.shutdown();
}

#[test]
fn acknowledged_events_survive_sigkill_cycles() {
    crash_cycles(20, "crash");
}

/// `cargo test -p troupe-persistence --test crash -- --ignored`; measured
/// figures in bench/results/2026-11-26-persistence/README.md.
#[test]
#[ignore = "100 cycles, about a minute or more on 2 cores"]
fn acknowledged_events_survive_a_hundred_sigkill_cycles() {
    crash_cycles(100, "crash100");
}
