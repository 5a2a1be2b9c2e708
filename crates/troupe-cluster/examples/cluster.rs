//! Three nodes on one machine, one killed, `Down` seen.
//!
//! With no arguments this is the whole walk-through in one command: it
//! starts a `nats-server` with JetStream on a free port, starts nodes `n2`
//! and `n3` as child processes (this same program, `node` mode), joins as
//! `n1`, finds the others' workers through the cluster registry, watches
//! them, sends to their group, then kills `n3` with SIGKILL and waits for
//! the `Down` (reason `node down: n3`) and for `n3`'s names to leave the
//! registry; finally `n2` leaves cleanly, which its peers see at once.
//! Where nats-server is not installed it says how to install it and exits
//! (with `TROUPE_REQUIRE_NATS=1`, as in CI, that is a failure).
//!
//! ```text
//! cargo run -p troupe-cluster --example cluster
//! ```
//!
//! The same by hand, one terminal each (stop a node with Ctrl-C to see a
//! crash, or Ctrl-D for a clean leave):
//!
//! ```text
//! nats-server -js -a 127.0.0.1 -p 4222
//! cargo run -p troupe-cluster --example cluster -- node nats://127.0.0.1:4222 n2
//! cargo run -p troupe-cluster --example cluster -- node nats://127.0.0.1:4222 n3
//! cargo run -p troupe-cluster --example cluster -- watch nats://127.0.0.1:4222 n1 n2 n3
//! ```

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use troupe::{Actor, ActorSystem, Context, Down};
use troupe_cluster::{is_node_down, Cluster};
use troupe_remote::remote;

/// Heartbeats every 200 ms: a killed node is declared down within about
/// 1.75 intervals of its last heartbeat.
const HEARTBEAT: Duration = Duration::from_millis(200);

/// A job for a worker; its stable name lets it cross processes.
#[remote("example.cluster.Job")]
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Job(u64);

/// Prints the jobs it gets.
struct Worker {
    node: String,
}

impl Actor for Worker {
    type Msg = Job;
    fn handle(&mut self, Job(n): Job, _ctx: &mut Context<'_, Self>) {
        println!("[{}] job {n}", self.node);
    }
}

/// Hands every `Down` it gets, with the watched name, to `out`.
struct Watcher {
    target: String,
    out: mpsc::Sender<(String, Down, Instant)>,
}

impl Actor for Watcher {
    type Msg = Down;
    fn handle(&mut self, down: Down, _ctx: &mut Context<'_, Self>) {
        let _ = self.out.send((self.target.clone(), down, Instant::now()));
    }
}

type Error = Box<dyn std::error::Error>;

fn connect(url: &str, name: &str) -> Result<Cluster, Error> {
    Ok(Cluster::builder(url, name)
        .insecure()
        .heartbeat(HEARTBEAT)
        .connect()?)
}

/// `node URL NAME`: serve a worker as `worker@NAME`, registered as
/// `svc-NAME` and in the group `workers`, until stdin closes.
fn node(url: &str, name: &str) -> Result<(), Error> {
    let system = ActorSystem::builder().threads(1).build();
    let cluster = connect(url, name)?;
    let worker = system.spawn(Worker { node: name.into() });
    cluster.expose("worker", &worker).tell::<Job>().serve()?;
    cluster.register::<Job>(&format!("svc-{name}"), "worker")?;
    cluster.join_group::<Job>("workers", "worker")?;
    println!("READY {name}: worker@{name}, registered as svc-{name}, in group workers");
    // Until our stdin closes (Ctrl-D, or the parent going away); a kill
    // ends us without a goodbye.
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    drop(cluster); // says goodbye: peers declare this node down at once
    system.shutdown();
    Ok(())
}

/// Waits until `f` holds, up to `limit`.
fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    f()
}

/// Watches `worker@NODE` for each of `nodes` from a node of its own.
fn watch_nodes(
    system: &ActorSystem,
    cluster: &Cluster,
    nodes: &[&str],
) -> Result<mpsc::Receiver<(String, Down, Instant)>, Error> {
    // The workers' names reach this node's registry mirror first.
    for n in nodes {
        let svc = format!("svc-{n}");
        if !wait_until(Duration::from_secs(10), || {
            cluster.find::<Job>(&svc).is_some()
        }) {
            return Err(format!("{svc} never appeared in the registry").into());
        }
    }
    let (tx, downs) = mpsc::channel();
    for n in nodes {
        let target = format!("worker@{n}");
        let w = system.spawn(Watcher {
            target: target.clone(),
            out: tx.clone(),
        });
        cluster.monitor(&w, &target, |down| down)?;
        println!("[{}] watching {target}", cluster.name());
    }
    Ok(downs)
}

/// `watch URL NAME NODE...`: join as NAME and print the `Down` of each
/// `worker@NODE`, until stdin closes.
fn watch(url: &str, name: &str, nodes: &[&str]) -> Result<(), Error> {
    let system = ActorSystem::builder().threads(1).build();
    let cluster = connect(url, name)?;
    let downs = watch_nodes(&system, &cluster, nodes)?;
    std::thread::spawn(move || {
        for (target, down, _) in downs {
            println!("[down] {target}: {}", down.reason);
        }
    });
    let sent = cluster.dispatch_group("workers", Job(1));
    println!("[{name}] job 1 sent to {sent} members of workers; Ctrl-D quits");
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    Ok(())
}

/// A node process: its stdin (closing it asks the node to leave) and its
/// stdout lines.
struct NodeProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl NodeProcess {
    fn start(url: &str, name: &str) -> Result<NodeProcess, Error> {
        let mut child = Command::new(std::env::current_exe()?)
            .args(["node", url, name])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let stdin = child.stdin.take();
        let out = child.stdout.take().ok_or("no stdout")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                println!("  {line}");
                let _ = tx.send(line);
            }
        });
        Ok(NodeProcess {
            child,
            stdin,
            lines,
        })
    }

    fn wait_for(&self, prefix: &str, limit: Duration) -> Result<(), Error> {
        let end = Instant::now() + limit;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if l.starts_with(prefix) => return Ok(()),
                Ok(_) => {}
                Err(_) => return Err(format!("no {prefix:?} line within {limit:?}").into()),
            }
        }
    }
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The walk-through: a server, three nodes, a kill, a clean leave.
fn demo() -> Result<(), Error> {
    let Some(server) = troupe_test_nats::NatsServer::builder()
        .jetstream()
        .start_or_skip()
    else {
        println!("cluster example skipped: nats-server is not installed");
        return Ok(());
    };
    let url = server.url();
    println!("nats-server with JetStream at {url}");

    let n2 = NodeProcess::start(&url, "n2")?;
    let mut n3 = NodeProcess::start(&url, "n3")?;
    n2.wait_for("READY", Duration::from_secs(20))?;
    n3.wait_for("READY", Duration::from_secs(20))?;

    let system = ActorSystem::builder().threads(2).build();
    let n1 = connect(&url, "n1")?;
    let downs = watch_nodes(&system, &n1, &["n2", "n3"])?;
    println!("[n1] group workers: {:?}", n1.members("workers"));
    let sent = n1.dispatch_group("workers", Job(1));
    println!("[n1] job 1 sent to {sent} members");
    if let Some(svc) = n1.find::<Job>("svc-n3") {
        svc.tell(Job(2)).map_err(|e| format!("tell: {e}"))?;
    }
    // Let both hear each other's heartbeats for a while.
    std::thread::sleep(HEARTBEAT * 3);
    println!("[n1] peers: {:?}", n1.peers());

    println!("[n1] killing n3 (SIGKILL: no goodbye)");
    let killed = Instant::now();
    n3.child.kill()?;
    let _ = n3.child.wait();
    let (target, down, at) = downs.recv_timeout(Duration::from_secs(10))?;
    println!(
        "[n1] Down for {target} after {:?}: {}",
        at.duration_since(killed),
        down.reason
    );
    if target != "worker@n3" || is_node_down(&down.reason) != Some("n3") {
        return Err(format!("expected n3's node-down, got {target}: {}", down.reason).into());
    }
    if !wait_until(Duration::from_secs(5), || {
        n1.find::<Job>("svc-n3").is_none()
    }) {
        return Err("svc-n3 stayed in the registry".into());
    }
    println!(
        "[n1] svc-n3 left the registry; group workers: {:?}",
        n1.members("workers")
    );

    println!("[n1] asking n2 to leave (its stdin closes)");
    let mut n2 = n2;
    let left = Instant::now();
    drop(n2.stdin.take());
    let (target, down, at) = downs.recv_timeout(Duration::from_secs(10))?;
    println!(
        "[n1] Down for {target} after {:?}: {}",
        at.duration_since(left),
        down.reason
    );
    let _ = n2.child.wait();
    drop(n1);
    system.shutdown();
    println!("ok: three nodes, one killed, Down seen");
    Ok(())
}

/// Three nodes on one machine, one killed, `Down` seen (with no command:
/// the whole walk-through, nats-server and the other nodes included).
#[derive(clap::Parser)]
struct Args {
    #[command(subcommand)]
    mode: Option<Mode>,
}

#[derive(clap::Subcommand)]
enum Mode {
    /// Run one node that serves a worker until standard input closes.
    Node {
        /// The nats-server (with JetStream).
        url: String,
        /// This node's name.
        name: String,
    },
    /// Join as NAME, watch the other nodes' workers, kill none.
    Watch {
        /// The nats-server (with JetStream).
        url: String,
        /// This node's name.
        name: String,
        /// The nodes to watch.
        #[arg(required = true)]
        nodes: Vec<String>,
    },
}

fn main() -> Result<(), Error> {
    let args: Args = clap::Parser::parse();
    match &args.mode {
        None => demo(),
        Some(Mode::Node { url, name }) => node(url, name),
        Some(Mode::Watch { url, name, nodes }) => {
            let nodes: Vec<&str> = nodes.iter().map(String::as_str).collect();
            watch(url, name, &nodes)
        }
    }
}
