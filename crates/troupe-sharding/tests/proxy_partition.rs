//! D2: a node cut off from nats-server by a real TCP fault proxy must stop
//! handling an entity's messages before another node starts handling them.
//!
//! Three nodes in this process; node `a` reaches nats-server through
//! toxiproxy, `b` and `c` directly. An entity owned by `a` is told every
//! millisecond by `a`'s process and by `c`'s. Then `a`'s link is cut both
//! ways (a `timeout` toxic: no socket closes, nothing gets through) for a
//! while and healed. Every message the entity handles is recorded with
//! its instance (one number per activation) and the time; since the nodes
//! share a clock, the handling of two instances overlaps if one handled a
//! message after the other's first and before its last. The test asserts
//! no overlap at the given heartbeat with every sharding setting at its
//! default.
//!
//! Skips with one line where toxiproxy-server is missing; with
//! `TROUPE_REQUIRE_TOXIPROXY=1` that is a failure (see
//! `troupe_test_nats::toxiproxy`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use troupe::{Actor, Context};
use troupe_cluster::Cluster;
use troupe_remote::remote;
use troupe_sharding::{ClusterSharding, Sharding};
use troupe_test_nats::toxiproxy::Toxiproxy;
use troupe_test_nats::NatsServer;

#[remote("sharding.proxy.Hit")]
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Hit;

/// One handled message: (instance, node, when, entity).
type Event = (u64, &'static str, Instant, String);

#[derive(Default)]
struct Log {
    instances: AtomicU64,
    events: Mutex<Vec<Event>>,
}

struct Probe {
    id: String,
    instance: u64,
    node: &'static str,
    log: Arc<Log>,
}

impl Actor for Probe {
    type Msg = Hit;
    fn handle(&mut self, _: Hit, _: &mut Context<'_, Self>) {
        self.log
            .events
            .lock()
            .push((self.instance, self.node, Instant::now(), self.id.clone()));
    }
}

fn node(
    url: &str,
    name: &'static str,
    hb: Duration,
    tick: Option<Duration>,
    log: &Arc<Log>,
) -> (Arc<Cluster>, Sharding<Probe>) {
    let cluster = Arc::new(
        Cluster::builder(url, name)
            .insecure()
            .heartbeat(hb)
            .connect()
            .expect("connect"),
    );
    let log = log.clone();
    let builder = cluster
        .sharding("probe", move |id| Probe {
            id: id.to_string(),
            instance: log.instances.fetch_add(1, Ordering::Relaxed) + 1,
            node: name,
            log: log.clone(),
        })
        .tell::<Hit>();
    let sharding = match tick {
        Some(t) => builder.tick(t),
        None => builder,
    }
    .start()
    .expect("start");
    (cluster, sharding)
}

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

/// Each instance's first and last handling, by instance.
fn spans(events: &[Event], id: &str) -> Vec<(u64, &'static str, Instant, Instant, u64)> {
    let mut out: Vec<(u64, &'static str, Instant, Instant, u64)> = Vec::new();
    for &(i, n, t, _) in events.iter().filter(|e| e.3 == id) {
        match out.iter_mut().find(|s| s.0 == i) {
            Some(s) => {
                s.2 = s.2.min(t);
                s.3 = s.3.max(t);
                s.4 += 1;
            }
            None => out.push((i, n, t, t, 1)),
        }
    }
    out
}

fn cut_off_owner_stops_before_a_new_owner_starts(
    hb: Duration,
    tick: Option<Duration>,
    cut: Duration,
) {
    let Some(proxy_server) = Toxiproxy::start_or_skip() else {
        return;
    };
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let proxy = proxy_server
        .proxy("nats_a", &format!("127.0.0.1:{}", server.port()))
        .expect("proxy");
    let log = Arc::new(Log::default());
    let (ca, sa) = node(
        &format!("nats://127.0.0.1:{}", proxy.port()),
        "a",
        hb,
        tick,
        &log,
    );
    let (cb, sb) = node(&server.url(), "b", hb, tick, &log);
    let (cc, sc) = node(&server.url(), "c", hb, tick, &log);
    let all = [&ca, &cb, &cc];
    assert!(
        wait_until(Duration::from_secs(30), || all
            .iter()
            .all(|c| c.peers().len() == 2)
            && sa.settled()
            && sb.settled()
            && sc.settled()),
        "the cluster did not settle"
    );
    // An entity that `a` owns.
    let id = (0..200)
        .map(|i| format!("e{i}"))
        .find(|id| {
            let before = log.events.lock().len();
            sa.entity(id).tell(Hit).expect("tell");
            wait_until(Duration::from_secs(5), || log.events.lock().len() > before);
            log.events.lock().last().is_some_and(|e| e.1 == "a")
        })
        .expect("an entity owned by a");
    let stop = Arc::new(AtomicBool::new(false));
    let tellers: Vec<_> = [sa.entity(&id), sc.entity(&id)]
        .into_iter()
        .map(|e| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let _ = e.tell(Hit);
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let cut_at = Instant::now();
    proxy.cut().expect("cut");
    std::thread::sleep(cut);
    proxy.heal().expect("heal");
    // The cluster heals: `a` reconnects, the shard may come back to it.
    std::thread::sleep(Duration::from_secs(3).max(hb * 4));
    stop.store(true, Ordering::Relaxed);
    for t in tellers {
        t.join().expect("teller");
    }
    std::thread::sleep(Duration::from_millis(500));
    let events = log.events.lock().clone();
    let spans = spans(&events, &id);
    let since = |t: Instant| t.saturating_duration_since(cut_at).as_millis();
    let described: Vec<String> = spans
        .iter()
        .map(|(i, n, first, last, count)| {
            format!(
                "instance {i} on {n}: {count} handled, {} to {} ms after the cut",
                since(*first),
                since(*last)
            )
        })
        .collect();
    assert!(
        spans.iter().any(|s| s.1 != "a"),
        "no other node took the entity over: {described:?}"
    );
    let mut worst = Duration::ZERO;
    for x in &spans {
        for y in &spans {
            if x.0 < y.0 && x.2 <= y.3 && y.2 <= x.3 {
                worst = worst.max(x.3.min(y.3) - x.2.max(y.2));
            }
        }
    }
    eprintln!(
        "heartbeat {hb:?}, tick {tick:?}, cut {cut:?}: {described:?}; worst overlap {worst:?}"
    );
    assert!(
        !spans
            .iter()
            .any(|x| spans.iter().any(|y| x.0 < y.0 && x.2 <= y.3 && y.2 <= x.3)),
        "two instances handled messages at once (worst overlap {worst:?}): {described:?}"
    );
}

/// At the 200 ms heartbeat the guide's examples use.
#[test]
fn heartbeat_200ms() {
    cut_off_owner_stops_before_a_new_owner_starts(
        Duration::from_millis(200),
        None,
        Duration::from_secs(3),
    );
}

/// At the default heartbeat (1 s).
#[test]
fn heartbeat_default() {
    cut_off_owner_stops_before_a_new_owner_starts(
        Duration::from_secs(1),
        None,
        Duration::from_secs(6),
    );
}

/// At a 200 ms heartbeat with a tick of 500 ms (the default before it was
/// derived from the heartbeat): the lease (1.5 s) outlasts the down
/// detection (350 ms), and the new owner's wait keeps the two apart.
#[test]
fn heartbeat_200ms_tick_500ms() {
    cut_off_owner_stops_before_a_new_owner_starts(
        Duration::from_millis(200),
        Some(Duration::from_millis(500)),
        Duration::from_secs(3),
    );
}
