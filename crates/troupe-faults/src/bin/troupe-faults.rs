//! The fault run's driver: starts the NATS cluster, toxiproxy and three
//! node processes, runs the nemesis, then stops everything. The history is
//! left in `--dir` for `faults/checker` (see `faults/run.sh`).
//!
//! The nemesis, one fault at a time, each followed by a quiet interval:
//!
//! | kind        | fault                                         | healed by            |
//! |-------------|-----------------------------------------------|----------------------|
//! | `node-kill` | SIGKILL of a node process                     | a new incarnation    |
//! | `node-stop` | SIGSTOP of a node process                     | SIGCONT              |
//! | `server-kill` | SIGKILL of a NATS server (its node's proxy fails over to the next server meanwhile) | restart, same store; proxy back |
//! | `partition` | a node's links to its servers blackholed, 10 s | toxics removed      |
//! | `latency`   | 300 ms ± 100 ms each way on a node's links    | toxics removed       |
//! | `bandwidth` | 16 KB/s each way on a node's links            | toxics removed       |
//! | `reset`     | a node's connections reset (RST), new ones too, 1 s | toxics removed |
//!
//! `--short` runs each kind once in that order (for CI); `--long` runs
//! `--cycles` faults of random kinds and targets, bounded by `--minutes`.
//! Each start and end is a line of `<dir>/nemesis.jsonl` on the nodes'
//! clock ([`troupe_faults::clock`]).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Parser;
use serde::Serialize;
use troupe_faults::clock;
use troupe_faults::history::History;
use troupe_faults::servers::{free_port, nats_cluster, NatsServer, Process};
use troupe_faults::toxiproxy::Toxiproxy;

const NODES: usize = 3;
const KINDS: [&str; 7] = [
    "node-kill",
    "server-kill",
    "partition",
    "node-stop",
    "latency",
    "bandwidth",
    "reset",
];

/// Runs 3 nodes on a 3-server NATS cluster under a nemesis.
#[derive(Parser, Debug)]
struct Args {
    /// The run's directory (history, logs, stores); created.
    #[arg(long)]
    dir: PathBuf,
    /// Each fault kind once (for CI).
    #[arg(long, conflicts_with = "long")]
    short: bool,
    /// `--cycles` random faults, at most `--minutes`.
    #[arg(long)]
    long: bool,
    /// Faults in a long run.
    #[arg(long, default_value_t = 100)]
    cycles: usize,
    /// A long run's bound, minutes (faults stop being started after it).
    #[arg(long, default_value_t = 30.0)]
    minutes: f64,
    /// The random seed of a long run's schedule.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The node binary (default: `troupe-faults-node` beside this one).
    #[arg(long)]
    node_bin: Option<PathBuf>,
    /// The toxiproxy server binary.
    #[arg(long, default_value = "toxiproxy-server")]
    toxiproxy: PathBuf,
    /// The nats-server binary.
    #[arg(long, default_value = "nats-server")]
    nats: PathBuf,
    /// Client threads per node.
    #[arg(long, default_value_t = 3)]
    clients: usize,
    /// Registers and ledgers (each).
    #[arg(long, default_value_t = 6)]
    keys: u64,
}

#[derive(Serialize)]
struct Event<'a> {
    k: &'static str,
    what: &'a str,
    target: &'a str,
    phase: &'static str,
    t: u64,
}

struct Node {
    index: usize,
    incarnation: u64,
    proxies: [String; 2],
    urls: String,
    process: Option<Process>,
}

struct Run {
    args: Args,
    node_bin: PathBuf,
    servers: Vec<NatsServer>,
    _toxiproxy: Process,
    api: Toxiproxy,
    nodes: Vec<Node>,
    log: History,
    rng: u64,
    counts: std::collections::BTreeMap<String, u64>,
}

impl Run {
    fn event(&self, what: &str, target: &str, phase: &'static str) {
        self.log.record(&Event {
            k: "nemesis",
            what,
            target,
            phase,
            t: clock::now(),
        });
        eprintln!("nemesis: {what} {target} {phase}");
    }

    fn random(&mut self, n: u64) -> u64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }

    fn start_node(&mut self, i: usize) -> std::io::Result<()> {
        let dir = self.args.dir.clone();
        let node = &mut self.nodes[i];
        node.incarnation += 1;
        let name = format!("n{}-{}", node.index, node.incarnation);
        let mut p = Process::new(
            &name,
            &self.node_bin,
            vec![
                "--name".into(),
                name.clone(),
                "--index".into(),
                node.index.to_string(),
                "--incarnation".into(),
                node.incarnation.to_string(),
                "--urls".into(),
                node.urls.clone(),
                "--dir".into(),
                dir.display().to_string(),
                "--clients".into(),
                self.args.clients.to_string(),
                "--keys".into(),
                self.args.keys.to_string(),
            ],
            &dir,
        );
        p.start()?;
        node.process = Some(p);
        Ok(())
    }

    fn node_pid(&self, i: usize) -> Option<i32> {
        self.nodes[i].process.as_ref().and_then(|p| p.pid())
    }

    fn toxics(&self, i: usize, kind: &str, attributes: &str) {
        for proxy in &self.nodes[i].proxies {
            for stream in ["upstream", "downstream"] {
                if let Err(e) =
                    self.api
                        .add(proxy, &format!("{kind}-{stream}"), kind, stream, attributes)
                {
                    eprintln!("toxiproxy: {e}");
                }
            }
        }
    }

    fn heal(&self, i: usize, kind: &str) {
        for proxy in &self.nodes[i].proxies {
            for stream in ["upstream", "downstream"] {
                if let Err(e) = self.api.remove(proxy, &format!("{kind}-{stream}")) {
                    eprintln!("toxiproxy: {e}");
                }
            }
        }
    }

    /// Injects one fault of `kind` on target `t` for `hold`, then heals it.
    fn fault(&mut self, kind: &str, t: usize, hold: Duration) {
        *self.counts.entry(kind.to_string()).or_default() += 1;
        let target = match kind {
            "server-kill" => format!("s{t}"),
            _ => format!("n{}", t + 1),
        };
        self.event(kind, &target, "start");
        match kind {
            "node-kill" => {
                if let Some(p) = self.nodes[t].process.as_mut() {
                    p.kill();
                }
                std::thread::sleep(hold);
                if let Err(e) = self.start_node(t) {
                    eprintln!("restart {target}: {e}");
                }
            }
            "node-stop" => {
                let pid = self.node_pid(t);
                signal(pid, libc::SIGSTOP);
                std::thread::sleep(hold);
                signal(pid, libc::SIGCONT);
            }
            "server-kill" => {
                // Node t's cluster link goes through its own proxy to
                // server t: while the server is down, the proxy points at
                // the next server, as a load balancer in front of a NATS
                // cluster would fail over (troupe-remote takes one URL).
                self.servers[t].kill();
                let (own, next) = (
                    &self.nodes[t].proxies[0],
                    self.servers[(t + 1) % NODES].port,
                );
                if let Err(e) = self.api.set_upstream(own, next) {
                    eprintln!("toxiproxy: {e}");
                }
                std::thread::sleep(hold);
                if let Err(e) = self.servers[t].restart() {
                    eprintln!("restart {target}: {e}");
                }
                let (own, back) = (&self.nodes[t].proxies[0], self.servers[t].port);
                if let Err(e) = self.api.set_upstream(own, back) {
                    eprintln!("toxiproxy: {e}");
                }
            }
            "partition" => {
                self.toxics(t, "timeout", r#"{"timeout":0}"#);
                std::thread::sleep(Duration::from_secs(10));
                self.heal(t, "timeout");
            }
            "latency" => {
                self.toxics(t, "latency", r#"{"latency":300,"jitter":100}"#);
                std::thread::sleep(hold);
                self.heal(t, "latency");
            }
            "bandwidth" => {
                self.toxics(t, "bandwidth", r#"{"rate":16}"#);
                std::thread::sleep(hold);
                self.heal(t, "bandwidth");
            }
            "reset" => {
                self.toxics(t, "reset_peer", r#"{"timeout":0}"#);
                std::thread::sleep(Duration::from_secs(1));
                self.heal(t, "reset_peer");
            }
            _ => unreachable!("a kind of KINDS"),
        }
        self.event(kind, &target, "end");
    }
}

fn signal(pid: Option<i32>, sig: i32) {
    if let Some(pid) = pid {
        // SAFETY: kill(2) with a pid of our own child and a valid signal
        // number; it touches no memory of ours.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

fn wait_ready(dir: &Path, names: &[String], limit: Duration) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        let ready = names.iter().all(|n| {
            std::fs::read_to_string(dir.join(format!("{n}.log")))
                .is_ok_and(|log| log.lines().any(|l| l == "READY"))
        });
        if ready {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

fn setup(args: Args) -> std::io::Result<Run> {
    std::fs::create_dir_all(&args.dir)?;
    let node_bin = match &args.node_bin {
        Some(p) => p.clone(),
        None => std::env::current_exe()?.with_file_name("troupe-faults-node"),
    };
    // The cluster key: fresh per run, in a file only we read.
    let key = format!(
        "{:016x}{:016x}",
        clock::now(),
        u64::from(std::process::id()) ^ clock::now().rotate_left(17)
    );
    let key_file = args.dir.join("cluster.key");
    std::fs::write(&key_file, key)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600))?;
    }
    std::env::set_var("TROUPE_FAULTS_KEY_FILE", &key_file);

    let servers = nats_cluster(&args.nats, NODES, &args.dir)?;
    let api_port = free_port()?;
    let mut toxiproxy = Process::new(
        "toxiproxy",
        &args.toxiproxy,
        vec![
            "-host".into(),
            "127.0.0.1".into(),
            "-port".into(),
            api_port.to_string(),
        ],
        &args.dir,
    );
    toxiproxy.start()?;
    if !troupe_faults::servers::wait_listening(api_port, Duration::from_secs(10)) {
        return Err(std::io::Error::other("toxiproxy did not listen"));
    }
    let api = Toxiproxy::new(api_port);
    let mut nodes = Vec::new();
    for i in 0..NODES {
        let mut proxies = Vec::new();
        let mut urls = Vec::new();
        for s in [i, (i + 1) % NODES] {
            let name = format!("n{}s{s}", i + 1);
            let port = free_port()?;
            api.create(&name, port, servers[s].port)
                .map_err(std::io::Error::other)?;
            proxies.push(name);
            urls.push(format!("nats://127.0.0.1:{port}"));
        }
        nodes.push(Node {
            index: i + 1,
            incarnation: 0,
            proxies: [proxies[0].clone(), proxies[1].clone()],
            urls: urls.join(","),
            process: None,
        });
    }
    let log = History::open(&args.dir.join("nemesis.jsonl"))?;
    let rng = args.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    Ok(Run {
        args,
        node_bin,
        servers,
        _toxiproxy: toxiproxy,
        api,
        nodes,
        log,
        rng,
        counts: Default::default(),
    })
}

fn main() {
    let args = Args::parse();
    if !args.short && !args.long {
        eprintln!("say --short or --long");
        std::process::exit(2);
    }
    let t0 = Instant::now();
    let mut run = match setup(args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("set-up: {e}");
            std::process::exit(2);
        }
    };
    for i in 0..NODES {
        if let Err(e) = run.start_node(i) {
            eprintln!("start n{}: {e}", i + 1);
            std::process::exit(2);
        }
    }
    let names: Vec<String> = (1..=NODES).map(|i| format!("n{i}-1")).collect();
    if !wait_ready(&run.args.dir, &names, Duration::from_secs(90)) {
        eprintln!(
            "the nodes did not start (see their logs in {})",
            run.args.dir.display()
        );
        std::process::exit(2);
    }
    run.event("ready", "all", "start");
    eprintln!("nodes ready after {:?}", t0.elapsed());
    // Let the cluster settle and the clients warm up.
    std::thread::sleep(Duration::from_secs(8));

    if run.args.short {
        for (n, kind) in KINDS.iter().enumerate() {
            run.fault(kind, n % NODES, Duration::from_secs(4));
            std::thread::sleep(Duration::from_secs(6));
        }
    } else {
        let bound = Duration::from_secs_f64(run.args.minutes * 60.0);
        let mut done = 0;
        while done < run.args.cycles && t0.elapsed() < bound {
            let kind = KINDS[run.random(KINDS.len() as u64) as usize];
            let target = run.random(NODES as u64) as usize;
            let hold = Duration::from_millis(2000 + run.random(6000));
            run.fault(kind, target, hold);
            let quiet = Duration::from_millis(5000 + run.random(5000));
            std::thread::sleep(quiet);
            done += 1;
        }
    }
    // Quiet: every fault healed; the clients' last operations show the
    // state each entity holds.
    let _ = run.api.reset_all();
    run.event("final-quiet", "all", "start");
    std::thread::sleep(Duration::from_secs(12));
    run.event("final-quiet", "all", "end");
    for node in &mut run.nodes {
        if let Some(p) = node.process.as_mut() {
            p.kill();
        }
    }
    let summary: Vec<String> = run.counts.iter().map(|(k, v)| format!("{k} {v}")).collect();
    println!(
        "nemesis events: {} in {:.0} s ({})",
        run.counts.values().sum::<u64>(),
        t0.elapsed().as_secs_f64(),
        summary.join(", ")
    );
}
