//! Real faults against a real nats-server (JetStream), all started and
//! stopped here, each bounded in time.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use troupe::{Actor, ActorSystem, AskError, Context, Down, ReplyTo, StopReason};
use troupe_cluster::{is_node_down, Cluster, ClusterError};
use troupe_remote::remote;
use troupe_test_nats::NatsServer;

const HB: Duration = Duration::from_millis(200);

#[remote("cluster.test.Job")]
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Job(u64);

#[remote("cluster.test.Echo", reply = u64)]
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Echo(u64);

enum WMsg {
    Job(Job),
    Echo(Echo, ReplyTo<u64>),
}
impl From<Job> for WMsg {
    fn from(j: Job) -> Self {
        WMsg::Job(j)
    }
}

/// Counts jobs; `Job(0)` makes it fail; `Echo(n)` answers after n ms.
struct Worker(mpsc::Sender<u64>);
impl Actor for Worker {
    type Msg = WMsg;
    fn handle(&mut self, m: WMsg, ctx: &mut Context<'_, Self>) {
        match m {
            WMsg::Job(Job(0)) => ctx.stop_with(StopReason::Failed("job zero".into())),
            WMsg::Job(Job(n)) => {
                let _ = self.0.send(n);
            }
            WMsg::Echo(Echo(n), r) => {
                std::thread::sleep(Duration::from_millis(n));
                r.reply(n);
            }
        }
    }
}

struct Watcher(mpsc::Sender<(Instant, Down)>);
impl Actor for Watcher {
    type Msg = Down;
    fn handle(&mut self, d: Down, _: &mut Context<'_, Self>) {
        let _ = self.0.send((Instant::now(), d));
    }
}

fn cluster(server: &NatsServer, name: &str) -> Cluster {
    Cluster::builder(&server.url(), name)
        .insecure()
        .heartbeat(HB)
        .connect()
        .expect("connect")
}

fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    f()
}

/// A node process; its stdout lines arrive with the time they were read.
struct Proc {
    child: Child,
    lines: mpsc::Receiver<(Instant, String)>,
}

impl Proc {
    fn start(url: &str, name: &str, args: &[&str]) -> Proc {
        let mut child = Command::new(env!("CARGO_BIN_EXE_troupe-cluster-node"))
            .arg(url)
            .arg(name)
            .arg(HB.as_millis().to_string())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn node");
        let out = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send((Instant::now(), l));
            }
        });
        Proc { child, lines }
    }

    fn expect(&self, prefix: &str, limit: Duration) -> (Instant, String) {
        let end = Instant::now() + limit;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok((t, l)) if l.starts_with(prefix) => return (t, l),
                Ok(_) => continue,
                Err(_) => panic!("no {prefix:?} line within {limit:?}"),
            }
        }
    }
}

impl Proc {
    /// Waits for one line starting with each prefix, in any order.
    fn expect_all(&self, prefixes: &[&str], limit: Duration) -> Vec<(Instant, String)> {
        let end = Instant::now() + limit;
        let mut found: Vec<Option<(Instant, String)>> = vec![None; prefixes.len()];
        while found.iter().any(Option::is_none) {
            let left = end.saturating_duration_since(Instant::now());
            let Ok((t, l)) = self.lines.recv_timeout(left) else {
                panic!("not all of {prefixes:?} within {limit:?}: {found:?}")
            };
            for (k, p) in prefixes.iter().enumerate() {
                if found[k].is_none() && l.starts_with(p) {
                    found[k] = Some((t, l.clone()));
                }
            }
        }
        found.into_iter().flatten().collect()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn sigkill_one_of_three_processes_gives_down_and_registry_cleanup_within_two_heartbeats() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let url = server.url();
    let mut victim = Proc::start(&url, "n3", &["--serve"]);
    victim.expect("READY", Duration::from_secs(20));
    let watch = ["--watch", "worker@n3", "--track", "svc-n3"];
    let w1 = Proc::start(&url, "n1", &watch);
    let w2 = Proc::start(&url, "n2", &watch);
    w1.expect("READY", Duration::from_secs(20));
    w2.expect("READY", Duration::from_secs(20));
    // Both watchers have heard n3's heartbeats for a while.
    std::thread::sleep(HB * 3);
    let killed = Instant::now();
    victim.child.kill().expect("SIGKILL");
    let _ = victim.child.wait();
    let bound = HB * 2 + Duration::from_millis(60); // 2 heartbeats + pipe and scheduling
    for w in [&w1, &w2] {
        let got = w.expect_all(&["DOWN worker@n3", "GONE svc-n3"], Duration::from_secs(5));
        let (t, line) = got[0].clone();
        assert!(line.ends_with("failed: node down: n3"), "{line}");
        let down = t
            .checked_duration_since(killed)
            .expect("a Down before the kill");
        let t = got[1].0;
        let gone = t
            .checked_duration_since(killed)
            .expect("cleanup before the kill");
        eprintln!("kill -> Down {down:?}, kill -> registry cleanup {gone:?}");
        assert!(down <= bound, "Down after {down:?}, bound {bound:?}");
        assert!(
            gone <= bound,
            "registry cleanup after {gone:?}, bound {bound:?}"
        );
    }
    // The bucket too: a fresh node never sees svc-n3.
    let fresh = cluster(&server, "n4");
    assert!(wait_until(Duration::from_secs(2), || {
        drop(Cluster::find::<Job>(&fresh, "svc-n3"));
        fresh.find::<Job>("svc-n3").is_none()
    }));
}

/// A balanced tell travels in the envelope on the node's link: the
/// sender's acks account for every one, as for any remote tell.
#[test]
fn balanced_tells_are_accounted_like_other_remote_tells() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let system = ActorSystem::builder().threads(1).build();
    let a = cluster(&server, "a");
    let b = cluster(&server, "b");
    assert_eq!(
        b.dispatch_balanced("lb", &Job(1)),
        Err(ClusterError::NoMember("lb".into()))
    );
    let (tx, jobs) = mpsc::channel();
    let w = system.spawn(Worker(tx));
    a.join_balanced::<Job, _>("lb", &w).unwrap();
    assert!(wait_until(Duration::from_secs(3), || b
        .balanced_members("lb")
        .len()
        == 1));
    assert!(b.members("lb").is_empty(), "not a broadcast group");
    let (sent, delivered) = (b.node().stats(), a.node().stats());
    for n in 1..=50 {
        b.dispatch_balanced("lb", &Job(n)).unwrap();
    }
    let got: Vec<u64> = (0..50)
        .map(|_| jobs.recv_timeout(Duration::from_secs(2)).unwrap())
        .collect();
    assert_eq!(got, (1..=50).collect::<Vec<_>>(), "in order, once each");
    assert!(b.node().settle(Duration::from_secs(5)), "every tell acked");
    let (now_b, now_a) = (b.node().stats(), a.node().stats());
    assert_eq!(now_b.tells_confirmed - sent.tells_confirmed, 50);
    assert_eq!(now_b.frames_lost, 0);
    assert_eq!(now_b.tells_unconfirmed, 0);
    assert_eq!(now_a.delivered - delivered.delivered, 50);
    // The member leaves with its actor.
    w.kill();
    assert!(wait_until(Duration::from_secs(3), || b
        .balanced_members("lb")
        .is_empty()));
}

#[test]
fn remote_stop_reason_links_registry_and_groups() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let system = ActorSystem::builder().threads(2).build();
    let a = cluster(&server, "a");
    let b = cluster(&server, "b");
    let (jobs_tx, jobs) = mpsc::channel();
    let w1 = system.spawn(Worker(jobs_tx.clone()));
    a.expose("w1", &w1)
        .tell::<Job>()
        .ask::<Echo>(WMsg::Echo)
        .serve()
        .unwrap();
    a.register::<Job>("w1", "w1").unwrap();
    assert_eq!(
        a.register::<Job>("w1", "w1"),
        Err(ClusterError::NameTaken("w1".into()))
    );
    a.join_group::<Job>("pool", "w1").unwrap();
    let w2 = system.spawn(Worker(jobs_tx.clone()));
    b.expose("w2", &w2).tell::<Job>().serve().unwrap();
    b.join_group::<Job>("pool", "w2").unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || {
            b.members("pool").len() == 2 && b.find::<Job>("w1").is_some()
        }),
        "b's registry: members {:?}, {:?}",
        b.members("pool"),
        b.stats()
    );
    assert!(
        b.find::<Echo>("w1").is_none(),
        "registered for Job, not Echo"
    );

    // dispatch_group reaches both nodes' members.
    assert_eq!(b.dispatch_group("pool", Job(7)), 2);
    for _ in 0..2 {
        assert_eq!(jobs.recv_timeout(Duration::from_secs(2)), Ok(7));
    }
    // Load-balanced: each message to one member.
    a.join_balanced::<Job, _>("lb", &w1).unwrap();
    b.join_balanced::<Job, _>("lb", &w2).unwrap();
    assert!(wait_until(Duration::from_secs(3), || b
        .balanced_members("lb")
        .len()
        == 2));
    for n in 100..120 {
        b.dispatch_balanced("lb", &Job(n)).unwrap();
    }
    let mut got: Vec<u64> = (0..20)
        .map(|_| jobs.recv_timeout(Duration::from_secs(2)).unwrap())
        .collect();
    got.sort();
    assert_eq!(got, (100..120).collect::<Vec<_>>());
    assert!(
        jobs.recv_timeout(Duration::from_millis(200)).is_err(),
        "a balanced message went twice"
    );

    // A remote monitor gets the actor's own reason; a link kills the local side.
    let (tx, downs) = mpsc::channel();
    let watcher = system.spawn(Watcher(tx));
    let m = b.monitor(&watcher, "w1@a", |d| d).unwrap();
    let (ltx, _) = mpsc::channel();
    let linked = system.spawn(Worker(ltx));
    b.link(&linked, "w1@a").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    b.find::<Job>("w1").unwrap().tell(Job(0)).unwrap();
    let (_, d) = downs.recv_timeout(Duration::from_secs(2)).expect("Down");
    assert_eq!(d.id, m.id());
    assert_eq!(d.reason, StopReason::Failed("job zero".into()));
    assert_eq!(
        linked.join_timeout(Duration::from_secs(2)),
        Some(StopReason::Killed)
    );
    // Its registry entries went with it.
    assert!(wait_until(Duration::from_secs(2), || b
        .find::<Job>("w1")
        .is_none()));
    // A monitor after the stop still reports it.
    let late = b.monitor(&watcher, "w1@a", |d| d).unwrap();
    let (_, d) = downs
        .recv_timeout(Duration::from_secs(2))
        .expect("late Down");
    assert_eq!(
        (d.id, d.reason),
        (late.id(), StopReason::Failed("job zero".into()))
    );

    // Link the other way: the local side's failure kills the remote actor.
    let (t3, _) = mpsc::channel();
    let w3 = system.spawn(Worker(t3));
    a.expose("w3", &w3).tell::<Job>().serve().unwrap();
    let (t4, _) = mpsc::channel();
    let local = system.spawn(Worker(t4));
    b.link(&local, "w3@a").unwrap();
    local.tell(WMsg::Job(Job(0))).ok();
    assert_eq!(
        w3.join_timeout(Duration::from_secs(2)),
        Some(StopReason::Killed)
    );

    // A node that leaves is down for its watchers at once.
    let w4 = system.spawn(Worker(jobs_tx));
    a.expose("w4", &w4).tell::<Job>().serve().unwrap();
    b.monitor(&watcher, "w4@a", |d| d).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    drop(a);
    let (_, d) = downs
        .recv_timeout(Duration::from_secs(2))
        .expect("Down on leave");
    assert_eq!(is_node_down(&d.reason), Some("a"));
    assert!(b.members("pool") == vec!["w2@b".to_string()]);
}

#[test]
fn server_restart_reconnects_resyncs_and_reports_losses() {
    let Some(mut server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let system = ActorSystem::builder().threads(2).build();
    let a = cluster(&server, "a");
    let b = cluster(&server, "b");
    let (jobs_tx, jobs) = mpsc::channel();
    let w = system.spawn(Worker(jobs_tx));
    a.expose("w", &w)
        .tell::<Job>()
        .ask::<Echo>(WMsg::Echo)
        .serve()
        .unwrap();
    a.register::<Job>("w", "w").unwrap();
    let (tx, downs) = mpsc::channel();
    let watcher = system.spawn(Watcher(tx));
    b.monitor(&watcher, "w@a", |d| d).unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || b.find::<Job>("w").is_some()),
        "b never saw a's name: b {:?}, a {:?}",
        b.stats(),
        a.stats()
    );
    let job = b.find::<Job>("w").unwrap();
    let echo = b.node().lookup::<Echo>("w@a").unwrap();

    // An ask in flight when the server dies.
    let asker = std::thread::spawn(move || echo.ask(Echo(1500), Duration::from_secs(5)));
    std::thread::sleep(Duration::from_millis(200));
    // Tells sent around the kill: accepted ones are delivered or counted lost.
    // The client sees the kill a moment later (its socket's end), so tells go
    // on, at least 2,000 in all, until one is handed back (5 s at most).
    let mut accepted = 0u64;
    let mut refused = 0u64;
    let mut killed_at = None;
    for n in 1u64.. {
        if n == 1000 {
            server.kill();
            killed_at = Some(Instant::now());
        }
        if n > 2000 {
            let since = killed_at.map_or(Duration::ZERO, |t| t.elapsed());
            if refused > 0 || since > Duration::from_secs(5) {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        match job.tell(Job(n)) {
            Ok(()) => accepted += 1,
            Err(_) => refused += 1,
        }
    }
    let ask = asker.join().unwrap();
    assert!(matches!(ask, Err(AskError::Disconnected)), "{ask:?}");
    std::thread::sleep(HB * 3);
    server.restart().expect("restart");
    assert!(wait_until(Duration::from_secs(10), || a
        .node()
        .is_connected()
        && b.node().is_connected()));
    // Registry works again: a new name made after the restart reaches b's cache.
    assert!(wait_until(Duration::from_secs(5), || a
        .register::<Job>("w-again", "w")
        .is_ok()));
    assert!(wait_until(Duration::from_secs(5), || b
        .find::<Job>("w-again")
        .is_some()
        && b.find::<Job>("w").is_some()));
    assert!(b.stats().resyncs >= 2, "{:?}", b.stats());
    // Traffic flows again. The server is back within a second (the ask in
    // flight failed at once), while the worker may still sleep in the 1.5 s
    // Echo: up to 999 tells a took before the kill wait in its mailbox and
    // come out now, ahead of the new ones. Each round takes all that comes.
    let mut delivered = jobs.try_iter().count() as u64;
    let mut again = 0u64;
    assert!(wait_until(Duration::from_secs(5), || {
        if job.tell(Job(9999)).is_ok() {
            again += 1;
        }
        let round = Instant::now() + Duration::from_millis(100);
        while let Ok(n) = jobs.recv_timeout(round.saturating_duration_since(Instant::now())) {
            delivered += 1;
            if n == 9999 {
                return true;
            }
        }
        false
    }));
    // Every tell b accepted is accounted on b once a's acks are in:
    // confirmed (a's actor took it), refused by a, or reported lost.
    assert!(
        b.node().settle(Duration::from_secs(10)),
        "{:?}",
        b.node().stats()
    );
    let s = b.node().stats();
    assert!(wait_until(Duration::from_secs(5), || {
        delivered += jobs.try_iter().count() as u64;
        delivered >= s.tells_confirmed
    }));
    let accepted_all = accepted + again;
    let silently_lost =
        accepted_all as i64 - (delivered + s.frames_lost + s.tells_refused_by_peer) as i64;
    eprintln!(
        "restart: tells accepted {accepted} (+{again} after the restart), refused (handed back) {refused}, delivered {delivered}, reported lost {}, refused by the peer {}, silently lost {silently_lost}; ask in flight: {ask:?}",
        s.frames_lost, s.tells_refused_by_peer
    );
    assert!(accepted + refused >= 2000 && refused > 0);
    assert_eq!(
        s.tells_confirmed + s.tells_refused_by_peer + s.frames_lost,
        accepted_all,
        "{s:?}"
    );
    assert_eq!(s.tells_confirmed, delivered, "{s:?}");
    assert_eq!(silently_lost, 0, "{s:?}");
    // No false Down from the outage: the server restart is not a node death.
    assert!(
        downs.try_recv().is_err(),
        "a server restart fired a Down: {:?}",
        downs.try_recv()
    );
}

#[test]
fn wrong_credentials_fail_fast_and_namespaces_isolate() {
    let Some(server) = NatsServer::builder()
        .jetstream()
        .user("app", "s3cret")
        .start_or_skip()
    else {
        return;
    };
    let start = Instant::now();
    let r = Cluster::builder(&server.url(), "x")
        .insecure()
        .user_password("app", "wrong")
        .connect_timeout(Duration::from_secs(2))
        .connect();
    let took = start.elapsed();
    let e = r.err().expect("refused");
    eprintln!("wrong password: {e} after {took:?}");
    assert!(matches!(e, ClusterError::Node(_)), "{e}");
    assert!(e.to_string().to_lowercase().contains("author"), "{e}");
    assert!(took < Duration::from_secs(4));

    let ok = |ns: &str, name: &str| {
        Cluster::builder(&server.url(), name)
            .insecure()
            .namespace(ns)
            .heartbeat(HB)
            .user_password("app", "s3cret")
            .connect()
            .expect("good credentials")
    };
    let system = ActorSystem::builder().threads(1).build();
    let (a1, b1) = (ok("red", "n1"), ok("blue", "n1"));
    let a2 = ok("red", "n2");
    let (tx, jobs) = mpsc::channel();
    let w = system.spawn(Worker(tx));
    b1.expose("w", &w).tell::<Job>().serve().unwrap();
    b1.register::<Job>("svc", "w").unwrap();
    b1.join_group::<Job>("pool", "w").unwrap();
    assert!(wait_until(Duration::from_secs(2), || a1.peers()
        == vec!["n2".to_string()]));
    std::thread::sleep(HB * 2);
    assert_eq!(a1.peers(), vec!["n2".to_string()], "red saw blue's node");
    assert!(b1.peers().is_empty());
    assert!(a2.find::<Job>("svc").is_none());
    assert_eq!(a2.dispatch_group("pool", Job(1)), 0);
    let echo = a2.node().lookup::<Echo>("w@n1").unwrap();
    assert_eq!(
        echo.ask(Echo(0), Duration::from_secs(1)),
        Err(AskError::NoResponders)
    );
    assert!(jobs.try_recv().is_err());
}
