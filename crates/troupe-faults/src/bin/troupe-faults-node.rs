//! One Troupe node of a fault run: hosts the `register`, `ledger` and
//! `tally` entity kinds (sharding on 3 JetStream replicas, state on
//! JetStream), runs the workload's clients and an at-least-once producer
//! to the tallies, which record their history.
//!
//! Started by the driver (`troupe-faults`), one process per node; it may be
//! SIGKILLed, SIGSTOPped and SIGCONTed at any time. It prints `READY` on
//! stdout once its shardings have started. The cluster key is read from
//! `$TROUPE_FAULTS_KEY_FILE` (a file holding the secret) or
//! `$TROUPE_FAULTS_KEY`; without one it refuses to start, so a run is
//! always sealed (HMAC) as a production cluster would be.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use serde::Serialize;
use troupe_cluster::Cluster;
use troupe_faults::clock;
use troupe_faults::entities::{ledgers, registers, Deposit, ReadBalance, ReadRegister, Write};
use troupe_faults::history::History;
use troupe_faults::producing;
use troupe_faults::tally::tallies;
use troupe_faults::workload::{Client, Op};
use troupe_persistence::JetStreamStore;
use troupe_sharding::delivery::Producer;

/// One node of a fault run.
#[derive(Parser, Debug)]
struct Args {
    /// The node's name (unique per incarnation: `n1-3`).
    #[arg(long)]
    name: String,
    /// Its index among the run's nodes (1..=3): the clients' value prefix.
    #[arg(long)]
    index: u64,
    /// Its incarnation (restarts of this index so far).
    #[arg(long)]
    incarnation: u64,
    /// NATS URLs, comma-separated (the fault proxies in front of the
    /// servers): the cluster connects to the first (troupe-remote takes one
    /// URL), the journal to all.
    #[arg(long)]
    urls: String,
    /// The run's directory: the history is written to `history-<name>.jsonl`.
    #[arg(long)]
    dir: PathBuf,
    /// Client threads on this node.
    #[arg(long, default_value_t = 3)]
    clients: usize,
    /// Registers and ledgers: ids `r0..` and `l0..`.
    #[arg(long, default_value_t = 6)]
    keys: u64,
    /// Each client's pause between operations, milliseconds.
    #[arg(long, default_value_t = 20)]
    pause_ms: u64,
    /// An ask's timeout, milliseconds.
    #[arg(long, default_value_t = 2000)]
    ask_ms: u64,
    /// Heartbeat, milliseconds.
    #[arg(long, default_value_t = 250)]
    heartbeat_ms: u64,
    /// Tallies the node's producer sends to (`t0..`); 0: no producer.
    #[arg(long, default_value_t = 6)]
    tallies: u64,
    /// The producer's pause between rounds, milliseconds.
    #[arg(long, default_value_t = 50)]
    producer_pause_ms: u64,
}

#[derive(Serialize)]
struct NodeEvent<'a> {
    k: &'static str,
    name: &'a str,
    event: &'a str,
    t: u64,
}

fn key() -> Result<Vec<u8>, String> {
    if let Some(path) = std::env::var_os("TROUPE_FAULTS_KEY_FILE") {
        return std::fs::read(&path)
            .map_err(|e| format!("cluster key file {}: {e}", PathBuf::from(path).display()));
    }
    match std::env::var("TROUPE_FAULTS_KEY") {
        Ok(k) if !k.is_empty() => Ok(k.into_bytes()),
        _ => Err("no cluster key: set TROUPE_FAULTS_KEY_FILE or TROUPE_FAULTS_KEY".into()),
    }
}

/// Retries `f` every 250 ms until it succeeds or 60 s have passed
/// (JetStream elects its leaders after the servers listen, and a server
/// may be down when a node restarts).
fn retry<T, E: std::fmt::Display>(what: &str, mut f: impl FnMut() -> Result<T, E>) -> T {
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        match f() {
            Ok(v) => return v,
            Err(e) if Instant::now() < end => {
                eprintln!("{what}: {e}; retrying");
                std::thread::sleep(Duration::from_millis(250));
            }
            Err(e) => {
                eprintln!("{what}: still failing after 60 s: {e}");
                std::process::exit(2);
            }
        }
    }
}

fn main() {
    let args = Args::parse();
    // Warnings and errors of every layer to stderr (the node's log), as
    // the findings of a run are read there.
    tracing_subscriber::fmt()
        .with_max_level(tracing_subscriber::filter::LevelFilter::INFO)
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .init();
    let secret = match key() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let history = match History::open(&args.dir.join(format!("history-{}.jsonl", args.name))) {
        Ok(h) => Arc::new(h),
        Err(e) => {
            eprintln!("history file: {e}");
            std::process::exit(2);
        }
    };
    let event = |what: &str| {
        history.record(&NodeEvent {
            k: "node",
            name: &args.name,
            event: what,
            t: clock::now(),
        })
    };
    event("started");
    let hb = Duration::from_millis(args.heartbeat_ms);
    let cluster = retry("connect", || {
        let first = args.urls.split(',').next().unwrap_or_default();
        Cluster::builder(first, &args.name)
            .heartbeat(hb)
            .registry_replicas(3)
            .secret(&secret)
            .connect()
            .map(Arc::new)
    });
    let store = retry("the journal", || {
        JetStreamStore::builder(&args.urls)
            .namespace("faults")
            .replicas(3)
            .timeout(Duration::from_millis(1000))
            .connect()
            .map(Arc::new)
    });
    let node: Arc<str> = args.name.as_str().into();
    let regs = retry("register sharding", || {
        registers(&cluster, &store, &node, &history).start()
    });
    let leds = retry("ledger sharding", || {
        ledgers(&cluster, &store, &node, &history).start()
    });
    let tals = retry("tally sharding", || tallies(&cluster, &store).start());
    // The producer's id is the node's name: each incarnation is a new
    // producer (not durable: what it has not had confirmed dies with it).
    let producer = retry("producer", || {
        Producer::builder(&tals, &args.name)
            .window(20)
            .retry_after(Duration::from_millis(1000))
            .start()
    });
    event("ready");
    println!("READY");
    let _ = std::io::stdout().flush();

    let ask = Duration::from_millis(args.ask_ms);
    let pause = Duration::from_millis(args.pause_ms);
    std::thread::scope(|s| {
        if args.tallies > 0 {
            let (producer, tals, history) = (&producer, &tals, &history);
            let settings = producing::Settings {
                keys: args.tallies,
                pause: Duration::from_millis(args.producer_pause_ms),
                ask,
                flush: Duration::from_secs(5),
            };
            s.spawn(move || producing::run(producer, tals, history, &settings));
        }
        for c in 0..args.clients {
            let (regs, leds, history) = (&regs, &leds, &history);
            let name = format!("{}.c{c}", args.name);
            let seed = clock::now() ^ (args.index << 56) ^ ((c as u64) << 48);
            let prefix =
                (args.index << 56) | ((args.incarnation & 0xff) << 48) | ((c as u64) << 40);
            s.spawn(move || {
                let mut client = Client::new(name, seed, prefix, args.keys, history.clone());
                loop {
                    let op = client.next_op();
                    match &op {
                        Op::Write { key, value } => {
                            client.run(&op, || regs.entity(key).ask(Write(*value), ask))
                        }
                        Op::ReadRegister { key } => {
                            client.run(&op, || regs.entity(key).ask(ReadRegister, ask))
                        }
                        Op::Deposit { key, amount } => {
                            client.run(&op, || leds.entity(key).ask(Deposit(*amount), ask))
                        }
                        Op::ReadBalance { key } => {
                            client.run(&op, || leds.entity(key).ask(ReadBalance, ask))
                        }
                    }
                    std::thread::sleep(pause);
                }
            });
        }
    });
}
