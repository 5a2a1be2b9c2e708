//! Entities' lives through the public API, on a real nats-server
//! (JetStream): an entity that stops itself or panics with confirmed
//! tells queued (issue 38, L8), one that passivates itself, the
//! least-recently-used limit and per-kind spawn options (issue 40, item
//! 5). Skips without nats-server unless `TROUPE_REQUIRE_NATS=1`.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{cluster, wait_until};
use serde::{Deserialize, Serialize};
use troupe::{Actor, Context, MailboxConfig, Overflow, ReplyTo, SpawnOptions};
use troupe_cluster::Cluster;
use troupe_remote::{remote, Delivered};
use troupe_sharding::{ClusterSharding, Sharding, ShardingBuilder};
use troupe_test_nats::NatsServer;

const ASK: Duration = Duration::from_secs(5);
const T: Duration = Duration::from_secs(5);

/// A step: `n` written down; then, with `act`, 1: stop, 2: panic, 3:
/// passivate (each after 200 ms, so that what follows queues up).
#[remote("sharding.test.Step")]
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Step {
    n: u64,
    act: u8,
}

/// Which thread handles this entity's messages.
#[remote("sharding.test.Where", reply = String)]
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Where;

enum Msg {
    Step(Step),
    Where(ReplyTo<String>),
}

impl From<Step> for Msg {
    fn from(s: Step) -> Self {
        Msg::Step(s)
    }
}

/// Every step handled, by entity id, across instances.
type Log = Arc<Mutex<Vec<(String, u64)>>>;

struct Worker {
    id: String,
    log: Log,
}

impl Actor for Worker {
    type Msg = Msg;
    fn handle(&mut self, m: Msg, ctx: &mut Context<'_, Self>) {
        match m {
            Msg::Step(s) => {
                self.log.lock().unwrap().push((self.id.clone(), s.n));
                if s.act != 0 {
                    std::thread::sleep(Duration::from_millis(200));
                }
                match s.act {
                    1 => ctx.stop(),
                    2 => panic!("on purpose"),
                    3 => ctx.passivate(),
                    _ => {}
                }
            }
            Msg::Where(r) => {
                r.reply(std::thread::current().name().unwrap_or("").to_string());
            }
        }
    }
}

fn workers(c: &Arc<Cluster>, log: &Log) -> ShardingBuilder<Worker> {
    let log = log.clone();
    c.sharding("worker", move |id| Worker {
        id: id.to_string(),
        log: log.clone(),
    })
    .tell::<Step>()
    .ask::<Where>(|_, r| Msg::Where(r))
    .shards(8)
    .tick(Duration::from_millis(150))
}

fn start(
    server: &NatsServer,
    name: &str,
    log: &Log,
    f: impl FnOnce(ShardingBuilder<Worker>) -> ShardingBuilder<Worker>,
) -> (Arc<Cluster>, Sharding<Worker>) {
    let c = cluster(server, name);
    let s = f(workers(&c, log)).start().expect("start");
    assert!(
        wait_until(Duration::from_secs(20), || s.settled()),
        "did not settle"
    );
    std::thread::sleep(Duration::from_millis(300));
    (c, s)
}

fn steps(log: &Log, id: &str) -> Vec<u64> {
    log.lock()
        .unwrap()
        .iter()
        .filter(|(i, _)| i == id)
        .map(|(_, n)| *n)
        .collect()
}

/// Tells `id` the steps `ns` with a receipt each, every one `Delivered`.
fn tell_all(s: &Sharding<Worker>, id: &str, ns: impl Iterator<Item = u64>) {
    for n in ns {
        let r = s
            .entity(id)
            .tell_confirmed(Step { n, act: 0 }, T)
            .expect("sent");
        assert_eq!(r.wait(), Ok(Delivered));
    }
}

/// L8: confirmed tells queued behind a step that stops the entity, or
/// panics it, are handled by its next instance, once each, in order.
/// (They were dropped with the mailbox.)
#[test]
fn confirmed_tells_outlive_an_entity_that_stops_or_panics() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let log = Log::default();
    let (_c, s) = start(&server, "life1", &log, |b| b);
    for (id, act) in [("quits", 1u8), ("panics", 2)] {
        s.entity(id).tell(Step { n: 0, act }).unwrap();
        tell_all(&s, id, 1..=30);
        let want: Vec<u64> = (0..=30).collect();
        assert!(
            wait_until(Duration::from_secs(10), || steps(&log, id) == want),
            "{id}: {:?} {:?}",
            steps(&log, id),
            s.stats()
        );
    }
    let st = s.stats();
    assert_eq!(
        (st.activations, st.mailbox_dropped, st.entity_gone),
        (4, 0, 0),
        "{st:?}"
    );
    assert!(st.redelivered > 0, "{st:?}");
}

/// Issue 40: an entity that passivates itself handles what it was sent
/// before, and what comes while it drains waits for its next instance:
/// nothing lost, counted as a passivation.
#[test]
fn an_entity_passivates_itself_and_its_tells_wait() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let log = Log::default();
    let (_c, s) = start(&server, "life2", &log, |b| b.idle_timeout(None));
    s.entity("resting").tell(Step { n: 0, act: 3 }).unwrap();
    tell_all(&s, "resting", 1..=30);
    let want: Vec<u64> = (0..=30).collect();
    assert!(
        wait_until(Duration::from_secs(10), || steps(&log, "resting") == want),
        "{:?} {:?}",
        steps(&log, "resting"),
        s.stats()
    );
    assert!(wait_until(Duration::from_secs(5), || s
        .stats()
        .passivations
        == 1));
    let st = s.stats();
    assert_eq!((st.mailbox_dropped, st.entity_gone), (0, 0), "{st:?}");
}

/// Issue 40: `max_entities` passivates the least recently used entity to
/// make room. (An activation beyond it was refused.)
#[test]
fn the_entity_limit_passivates_the_least_recently_used() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let log = Log::default();
    let (_c, s) = start(&server, "life3", &log, |b| b.max_entities(3));
    for id in ["a", "b", "c", "a", "d"] {
        tell_all(&s, id, 1..=1);
    }
    assert!(
        wait_until(Duration::from_secs(5), || s.local_entities()
            == ["a", "c", "d"]),
        "{:?} {:?}",
        s.local_entities(),
        s.stats()
    );
    let st = s.stats();
    assert_eq!((st.evictions, st.entities_refused), (1, 0), "{st:?}");
}

/// Issue 40: spawn options per kind: a bounded mailbox of 2 that refuses
/// when full, on a tokio dispatcher. 200 confirmed tells to one entity
/// (slower than they come) are all handled, in order, on the tokio
/// runtime's thread: what the mailbox refused waited in the region.
#[test]
fn entities_take_their_kind_s_spawn_options() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("entity-rt")
        .enable_all()
        .build()
        .unwrap();
    let system = troupe::ActorSystem::new();
    let on_tokio = system.tokio_dispatcher("entities", rt.handle().clone());
    let log = Log::default();
    let options = SpawnOptions::new()
        .mailbox(MailboxConfig::bounded(2, Overflow::Reject))
        .dispatcher(&on_tokio);
    let (_c, s) = start(&server, "life4", &log, |b| {
        b.system(&system).entity_options(options)
    });
    // A slow first step: the mailbox fills behind it.
    s.entity("bounded").tell(Step { n: 0, act: 4 }).unwrap();
    tell_all(&s, "bounded", 1..=200);
    let want: Vec<u64> = (0..=200).collect();
    assert!(
        wait_until(Duration::from_secs(20), || steps(&log, "bounded") == want),
        "{:?} {:?}",
        steps(&log, "bounded").len(),
        s.stats()
    );
    assert_eq!(
        s.entity("bounded").ask(Where, ASK).as_deref(),
        Ok("entity-rt")
    );
    let st = s.stats();
    assert_eq!(
        (st.entity_gone, st.expired, st.activations),
        (0, 0, 1),
        "{st:?}"
    );
    assert!(st.buffered > 0, "the mailbox never refused: {st:?}");
    drop(s);
    system.shutdown();
}
