//! The at-least-once producer across a SIGKILLed node, with persistent
//! entities: every message is handled exactly once, in order.
//!
//! Three nodes on one JetStream nats-server: two in this process (the
//! producer runs on the first) and a victim, this test binary run again
//! as a child (`child_node`, selected by an environment variable). The
//! entities are event-sourced tallies whose events carry each message's
//! `(producer, epoch, seq)`, so their deduplication table is rebuilt on
//! recovery. The producer sends 150 messages to each of 24 tallies, the
//! victim is SIGKILLed a third of the way in, the producer goes on; then
//! every tally must hold exactly messages 1..=150, each once, in order.
//! The producer's confirmation latency p50/p99 over the kill is printed.
//! Then a delivery repeated by hand across a passivation (the tally
//! recovers its table from the journal) stores its event once.
//!
//! Skips without nats-server (fails under `TROUPE_REQUIRE_NATS=1`).

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use troupe::{Async, ReplyTo};
use troupe_cluster::Cluster;
use troupe_persistence::{
    Effect, JetStreamStore, PersistError, PersistenceId, Persistent, PersistentActor,
};
use troupe_remote::remote;
use troupe_sharding::delivery::{Confirmation, Consumer, Deliver, Deliveries, Delivery, Producer};
use troupe_sharding::{ClusterSharding, Sharding};
use troupe_test_nats::NatsServer;

const HB: Duration = Duration::from_millis(250);
const CHILD: &str = "TROUPE_SHARDING_PRODUCER_KILL_CHILD";
const SHARDS: u32 = 32;

/// The `n`-th message to one tally (from 1).
#[remote("sharding.test.pkill.Item")]
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Item(u64);

/// The journaled event: one message, with its place in its stream.
#[remote("sharding.test.pkill.Added")]
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Added {
    producer: String,
    epoch: u64,
    seq: u64,
    n: u64,
}

#[remote("sharding.test.pkill.Read", reply = Result<Tally, String>)]
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Read;

#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    events: u64,
    sum: u64,
    /// Events whose `n` is not the last one's plus one.
    out_of_order: u64,
}

#[derive(Serialize, Deserialize, Default)]
pub struct State {
    consumer: Consumer,
    tally: Tally,
    last: u64,
}

pub enum Cmd {
    Delivery(Delivery<Item>),
    Read(ReplyTo<Result<Tally, String>>),
}

pub struct TallyEntity {
    id: PersistenceId,
}

impl PersistentActor for TallyEntity {
    type Command = Cmd;
    type Event = Added;
    type State = State;

    fn persistence_id(&self) -> PersistenceId {
        self.id.clone()
    }

    fn handle_command(&mut self, state: &State, cmd: Cmd) -> Effect<Self> {
        match cmd {
            Cmd::Delivery(d) => {
                let events: Vec<Added> = match d.fresh(&state.consumer) {
                    Some(fresh) => fresh
                        .map(|(seq, Item(n))| Added {
                            producer: d.producer().to_string(),
                            epoch: d.epoch(),
                            seq,
                            n: *n,
                        })
                        .collect(),
                    None => Vec::new(),
                };
                Effect::<Self>::persist_all(events).then(move |stored| match stored {
                    Ok(state) => d.confirm(&state.consumer),
                    Err(_) => d.fail(),
                })
            }
            Cmd::Read(reply) => Effect::<Self>::none().then(move |state| {
                reply.reply(state.map(|s| s.tally).map_err(PersistError::to_string));
            }),
        }
    }

    fn apply(state: &mut State, e: &Added) {
        state.consumer.record(&e.producer, e.epoch, e.seq);
        let t = &mut state.tally;
        t.events += 1;
        t.sum += e.n;
        if e.n != state.last + 1 {
            t.out_of_order += 1;
        }
        state.last = e.n;
    }
}

type Entity = Async<Persistent<TallyEntity>>;

fn node(url: &str, name: &str) -> (Arc<Cluster>, Sharding<Entity>) {
    let cluster = Arc::new(
        Cluster::builder(url, name)
            .insecure()
            .heartbeat(HB)
            .connect()
            .expect("connect"),
    );
    let store = Arc::new(
        JetStreamStore::builder(url)
            .namespace("pkill")
            .connect()
            .expect("the journal"),
    );
    let sharding = cluster
        .sharding("tally", move |id| {
            let id = PersistenceId::new("tally", id).expect("a valid id");
            Async::new(Persistent::new(TallyEntity { id }, store.clone()))
        })
        .deliveries::<Item>(Cmd::Delivery)
        .ask::<Read>(|_, r| Cmd::Read(r))
        .idle_timeout(None)
        .shards(SHARDS)
        .tick(Duration::from_millis(100))
        .start()
        .expect("sharding");
    (cluster, sharding)
}

/// Not a test: the child node's entry point (returns at once in an
/// ordinary run).
#[test]
fn child_node() {
    let Ok(args) = std::env::var(CHILD) else {
        return;
    };
    let (url, name) = args.split_once(' ').expect("URL NAME");
    let _node = node(url, name);
    println!("READY");
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

struct Victim(Child);

impl Drop for Victim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn_victim(url: &str, name: &str) -> Victim {
    let mut child = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "child_node",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD, format!("{url} {name}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the node");
    let out = child.stdout.take().expect("stdout");
    let victim = Victim(child);
    let ready = BufReader::new(out)
        .lines()
        .map_while(Result::ok)
        .any(|l| l.trim_end().ends_with("READY"));
    assert!(ready, "the child node did not start");
    victim
}

#[test]
fn every_message_is_handled_exactly_once_across_a_sigkill() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let url = server.url();
    let mut victim = spawn_victim(&url, "k3");
    let survivors: Vec<_> = ["k1", "k2"].iter().map(|n| node(&url, n)).collect();
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
    let producer = Producer::<Item>::builder(s1, "pk")
        .window(100)
        .retry_after(Duration::from_millis(500))
        .start()
        .expect("producer");
    let ids: Vec<String> = (0..24).map(|i| format!("t{i}")).collect();
    const N: u64 = 150;
    const KILL_AT: u64 = 50;
    let mut before_kill = None;
    let mut killed = None;
    for n in 1..=N {
        for id in &ids {
            producer.send_blocking(id, Item(n)).expect("accepted");
        }
        if n == KILL_AT {
            producer
                .flush_blocking(Duration::from_secs(30))
                .expect("the first third confirmed");
            let here: HashSet<String> = survivors
                .iter()
                .flat_map(|(_, s)| s.local_entities())
                .collect();
            let on_victim = ids.iter().filter(|id| !here.contains(*id)).count();
            assert!(on_victim > 0, "no tally ran on the victim");
            eprintln!("{on_victim} of {} tallies on the victim", ids.len());
            before_kill = Some(producer.stats());
            victim.0.kill().expect("SIGKILL");
            let _ = victim.0.wait();
            killed = Some(Instant::now());
        }
    }
    producer
        .flush_blocking(Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{e}: {:?}", producer.stats()));
    let confirmed_after = killed.expect("killed").elapsed();
    let st = producer.stats();
    assert_eq!(st.confirmed, N * ids.len() as u64);
    let want = Tally {
        events: N,
        sum: N * (N + 1) / 2,
        out_of_order: 0,
    };
    for id in &ids {
        let t = s1
            .entity(id)
            .ask(Read, Duration::from_secs(10))
            .expect("asked")
            .expect("read");
        assert_eq!(t, want, "{id}: each message once, in order");
    }
    let during = st.latency.since(&before_kill.expect("before").latency);
    eprintln!(
        "after the SIGKILL: {} messages confirmed in {confirmed_after:?}, \
         confirmation latency p50 {:?} p99 {:?} max-bucket {:?}; {} resent, {} failed deliveries",
        during.count(),
        during.quantile(0.5),
        during.quantile(0.99),
        during.quantile(1.0),
        st.resent,
        st.failures
    );
    assert!(
        st.failures > 0 || st.resent > 0,
        "the kill cost no retry: the test shows nothing"
    );

    // Exactly-once effect over a recovery: a delivery repeated after its
    // tally was passivated (the new activation rebuilds its table from
    // the journal) stores nothing again.
    let id = &ids[0];
    let e = s1.entity(id);
    let t = Duration::from_secs(10);
    let d = || Deliver {
        producer: "hand".to_string(),
        epoch: 1,
        first: 1,
        msgs: vec![Item(N + 1)],
    };
    assert_eq!(e.ask(d(), t), Ok(Confirmation::Handled { upto: 1 }));
    let passivated = survivors.iter().any(|(_, s)| s.passivate(id));
    assert!(passivated, "{id} ran on no survivor");
    assert_eq!(e.ask(d(), t), Ok(Confirmation::Handled { upto: 1 }));
    let after = e.ask(Read, t).expect("asked").expect("read");
    assert_eq!(
        after,
        Tally {
            events: N + 1,
            sum: want.sum + N + 1,
            out_of_order: 0
        },
        "the repeated command stored its event twice"
    );
}
