//! A node paused by SIGSTOP (a partition, as seen by its peers) loses its
//! shards to the survivors; once resumed it must not let a stale
//! activation accept a message.
//!
//! Each entity keeps a fencing counter in the cluster's key-value bucket
//! (key per entity, through the ownership store's revision-checked
//! write): on activation it reads the record and writes itself over it,
//! keeping the new revision as its token; for every message it handles it
//! writes again, expecting its token. A write that finds another revision
//! means that another activation of the entity took over while this one
//! still accepted messages: a double activation, counted. The test runs
//! one node (`p3`) in a child process (this test binary, re-run with
//! `TROUPE_PARTITION_CHILD` set), asks every entity once, pauses the
//! child until the others have claimed its shards, keeps telling every
//! entity, resumes it, and counts.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use troupe::{Actor, Context, ReplyTo};
use troupe_cluster::Cluster;
use troupe_remote::remote;
use troupe_sharding::ownership::bucket::BucketOwnership;
use troupe_sharding::ownership::{OwnershipStore, StoreError};
use troupe_sharding::{ClusterSharding, Sharding};
use troupe_test_nats::NatsServer;

const HB: Duration = Duration::from_millis(200);
const TICK: Duration = Duration::from_millis(150);
const ENTITIES: u32 = 40;
const CHILD_ENV: &str = "TROUPE_PARTITION_CHILD";
/// The fencing counters' keys: `fence.owner.<entity number>`.
const FENCE: &str = "fence";

#[remote("sharding.partition.Hit")]
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Hit;

#[remote("sharding.partition.Seen", reply = u64)]
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Seen;

enum Msg {
    Hit,
    Seen(ReplyTo<u64>),
}
impl From<Hit> for Msg {
    fn from(_: Hit) -> Self {
        Msg::Hit
    }
}

/// Double activations seen by the entities of this process.
static VIOLATIONS: AtomicU64 = AtomicU64::new(0);
/// Messages handled by the entities of this process.
static HANDLED: AtomicU64 = AtomicU64::new(0);

struct Fenced {
    id: String,
    n: u32,
    node: String,
    store: Arc<BucketOwnership>,
    token: u64,
}

impl Fenced {
    fn violation(&self, what: &str) {
        VIOLATIONS.fetch_add(1, Ordering::Relaxed);
        // The child's count reaches the parent on stdout.
        println!("VIOLATION {} on {}: {what}", self.id, self.node);
    }

    /// The revision-checked write of this activation's counter.
    fn fence(&mut self) {
        match self.store.claim(FENCE, self.n, &self.node, self.token) {
            Ok(t) => self.token = t,
            Err(StoreError::Conflict) => self.violation("another activation took over"),
            Err(e) => panic!("fencing counter of {}: {e}", self.id),
        }
    }
}

impl Actor for Fenced {
    type Msg = Msg;
    fn started(&mut self, _: &mut Context<'_, Self>) {
        self.token = self
            .store
            .owner(FENCE, self.n)
            .unwrap_or_else(|e| panic!("fencing counter of {}: {e}", self.id))
            .revision;
        self.fence();
    }
    fn handle(&mut self, m: Msg, _: &mut Context<'_, Self>) {
        self.fence();
        HANDLED.fetch_add(1, Ordering::Relaxed);
        if let Msg::Seen(r) = m {
            r.reply(self.token);
        }
    }
}

fn node(url: &str, name: &str) -> (Arc<Cluster>, Sharding<Fenced>) {
    let cluster = Arc::new(
        Cluster::builder(url, name)
            .insecure()
            .heartbeat(HB)
            .connect()
            .expect("connect"),
    );
    let store = Arc::new(BucketOwnership::open(&cluster).expect("bucket"));
    let me = name.to_string();
    let sharding = cluster
        .sharding("fenced", move |id| Fenced {
            id: id.to_string(),
            n: id[2..].parse().expect("f-<n>"),
            node: me.clone(),
            store: store.clone(),
            token: 0,
        })
        .tell::<Hit>()
        .ask::<Seen>(|_, r| Msg::Seen(r))
        .shards(16)
        .tick(TICK)
        .idle_timeout(None)
        .start()
        .expect("start");
    (cluster, sharding)
}

fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + limit;
    while std::time::Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f()
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(ok.success(), "kill {sig} {pid}");
}

/// Whether every thread of process `pid` is stopped (Linux `/proc`).
fn all_stopped(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.filter_map(Result::ok).all(|t| {
        std::fs::read_to_string(t.path().join("stat")).is_ok_and(|st| {
            // The state follows the parenthesised command name.
            st.rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('T') || rest.starts_with('t'))
        })
    })
}

/// The child: node `p3`, until it is killed.
#[test]
#[ignore = "the child process of paused_node_never_accepts_a_message_for_a_moved_entity"]
fn partition_child_node() {
    let Ok(url) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (_cluster, _sharding) = node(&url, "p3");
    println!("READY");
    loop {
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[test]
fn paused_node_never_accepts_a_message_for_a_moved_entity() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let url = server.url();
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "partition_child_node",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &url)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the child node");
    let pid = child.id();
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    // The harness prints `test partition_child_node ... ` before it.
    while !line.trim_end().ends_with("READY") {
        line.clear();
        assert!(
            out.read_line(&mut line).expect("child stdout") > 0,
            "the child node ended before READY"
        );
    }
    // The child's lines, read on: double activations it reports.
    let child_violations = Arc::new(AtomicU64::new(0));
    let reader = {
        let v = child_violations.clone();
        std::thread::spawn(move || {
            for l in out.lines().map_while(Result::ok) {
                if l.starts_with("VIOLATION") {
                    eprintln!("child: {l}");
                    v.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };
    let nodes = [node(&url, "p1"), node(&url, "p2")];
    assert!(
        wait_until(Duration::from_secs(30), || nodes.iter().all(|(c, s)| c
            .peers()
            .len()
            == 2
            && s.settled())),
        "the cluster did not settle"
    );
    let s1 = &nodes[0].1;
    let ids: Vec<String> = (0..ENTITIES).map(|i| format!("f-{i}")).collect();
    let ask = Duration::from_secs(10);
    for id in &ids {
        assert!(s1.entity(id).ask(Seen, ask).is_ok(), "entity {id}");
    }
    let here: usize = nodes.iter().map(|(_, s)| s.local_entities().len()).sum();
    let on_child = ids.len() - here;
    assert!(on_child > 0, "the child runs no entity");
    let handled_before = HANDLED.load(Ordering::Relaxed);

    // Pause the child; keep telling every entity, from both nodes, until
    // the survivors have claimed every shard, and some more.
    signal(pid, "-STOP");
    // SIGSTOP lands on each thread on its own: send only once all have
    // stopped, so that nothing sent from here on reaches an entity's
    // mailbox before the pause (what is already in one when a node stops
    // is handled when it resumes: the lease is checked when the region
    // hands a message to its entity).
    assert!(
        wait_until(Duration::from_secs(10), || all_stopped(pid)),
        "the child did not stop"
    );
    let mut sent = 0u64;
    let mut round = 0;
    let claimed = |nodes: &[(Arc<Cluster>, Sharding<Fenced>)]| {
        nodes
            .iter()
            .map(|(_, s)| s.stats().shards_owned)
            .sum::<u64>()
            == 16
    };
    while !(claimed(&nodes) && round >= 20) {
        assert!(
            round < 400,
            "the survivors did not claim the child's shards"
        );
        for (i, id) in ids.iter().enumerate() {
            if nodes[i % 2].1.entity(id).tell(Hit).is_ok() {
                sent += 1;
            }
        }
        round += 1;
        std::thread::sleep(Duration::from_millis(25));
    }
    signal(pid, "-CONT");
    // Tells go on while the resumed child finds its shards lost.
    for _ in 0..10 {
        for (i, id) in ids.iter().enumerate() {
            if nodes[i % 2].1.entity(id).tell(Hit).is_ok() {
                sent += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // Every entity answers (from wherever it runs now).
    for id in &ids {
        assert!(
            s1.entity(id).ask(Seen, ask).is_ok(),
            "entity {id} after the pause"
        );
    }
    // What the child still holds in its buffer is forwarded, or counted
    // there; give its region two leases to act, then stop it.
    std::thread::sleep(TICK * 8);
    let _ = child.kill();
    let _ = child.wait();
    let _ = reader.join();
    let handled = HANDLED.load(Ordering::Relaxed) - handled_before;
    let takeovers: u64 = nodes.iter().map(|(_, s)| s.stats().takeovers).sum();
    eprintln!(
        "{on_child} entities on the paused node; {sent} tells sent, {handled} handled by the \
         survivors; {takeovers} takeovers; violations: here {}, child {}",
        VIOLATIONS.load(Ordering::Relaxed),
        child_violations.load(Ordering::Relaxed)
    );
    assert!(takeovers > 0, "the survivors took no shard over");
    assert_eq!(
        VIOLATIONS.load(Ordering::Relaxed),
        0,
        "double activations here"
    );
    assert_eq!(
        child_violations.load(Ordering::Relaxed),
        0,
        "double activations on the resumed node"
    );
}
