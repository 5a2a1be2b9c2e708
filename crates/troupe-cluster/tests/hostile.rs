//! A plain NATS client (not a node) on the cluster's subjects: garbled,
//! padded and made-up messages. Each must be counted, answered where a
//! reply is expected, and change nothing.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use troupe::{Actor, ActorSystem, Context};
use troupe_cluster::wire::{self, Ctl, CtlReply, Heartbeat, WireReason};
use troupe_cluster::{Cluster, ClusterError};
use troupe_remote::remote;
use troupe_test_nats::NatsServer;

const HB: Duration = Duration::from_millis(200);
const T: Duration = Duration::from_secs(5);

#[remote("cluster.hostile.Job")]
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Job(u64);

struct Worker;
impl Actor for Worker {
    type Msg = Job;
    fn handle(&mut self, _: Job, _: &mut Context<'_, Self>) {}
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

/// A plain NATS client on its own small runtime.
struct Raw {
    rt: tokio::runtime::Runtime,
    client: async_nats::Client,
}

impl Raw {
    fn connect(url: &str) -> Raw {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = rt.block_on(async_nats::connect(url)).unwrap();
        Raw { rt, client }
    }

    fn publish(&self, msgs: Vec<(String, Vec<u8>)>) {
        self.rt.block_on(async {
            for (subject, p) in msgs {
                self.client.publish(subject, p.into()).await.unwrap();
            }
            self.client.flush().await.unwrap();
        });
    }

    /// A request; the answer's payload and how long it took.
    fn request(&self, subject: String, p: Vec<u8>) -> (Option<Vec<u8>>, Duration) {
        let start = Instant::now();
        let r = self.rt.block_on(async {
            let req = async_nats::Request::new()
                .payload(p.into())
                .timeout(Some(Duration::from_secs(3)));
            self.client.send_request(subject, req).await
        });
        (r.ok().map(|m| m.payload.to_vec()), start.elapsed())
    }
}

fn cluster(server: &NatsServer, name: &str) -> Cluster {
    Cluster::builder(&server.url(), name)
        .insecure()
        .heartbeat(HB)
        .connect()
        .expect("connect")
}

/// Issue 25, findings 2 and 5: the control subject decoded with
/// `postcard::from_bytes`, which ignores trailing bytes, so garbled
/// requests could pass for a `Kill`; a bad request got no reply.
#[test]
fn bad_control_requests_get_an_error_at_once_and_kill_nothing() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let system = ActorSystem::builder().threads(1).build();
    let a = cluster(&server, "a");
    let w = system.spawn(Worker);
    a.expose("w", &w).tell::<Job>().serve().unwrap();
    let raw = Raw::connect(&server.url());
    let subject = wire::ctl_subject("default", "a");

    let mut padded = postcard::to_allocvec(&Ctl::Kill {
        actor: "w".into(),
        reason: WireReason::Killed,
    })
    .unwrap();
    padded.push(0);
    for payload in [vec![0xff, 0xfe, 0x07], padded] {
        let (answer, took) = raw.request(subject.clone(), payload);
        let answer = answer.expect("an answer, not a timeout");
        assert_eq!(
            wire::decode::<CtlReply>(&answer),
            Some(CtlReply::BadRequest)
        );
        assert!(took < Duration::from_secs(2), "answered at once ({took:?})");
    }
    std::thread::sleep(Duration::from_millis(50));
    assert!(w.is_alive(), "a padded Kill must not kill");
    assert_eq!(a.stats().bad_control, 2);

    // A well-formed Watch still works.
    let watch = postcard::to_allocvec(&Ctl::Watch { actor: "w".into() }).unwrap();
    let (answer, _) = raw.request(subject, watch);
    assert_eq!(
        wire::decode::<CtlReply>(&answer.unwrap()),
        Some(CtlReply::Alive)
    );
}

/// Issue 25, finding 4: heartbeats of made-up nodes announcing
/// `interval_ms = u32::MAX` filled the peer table for ~50 days each.
#[test]
fn made_up_heartbeats_do_not_grow_the_peer_table() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let a = Cluster::builder(&server.url(), "a")
        .insecure()
        .heartbeat(HB)
        .max_peers(16)
        .connect()
        .unwrap();
    let raw = Raw::connect(&server.url());
    let mut msgs = Vec::new();
    for i in 0..2000 {
        let node = format!("fake{i}");
        let hb = Heartbeat {
            node: node.clone(),
            incarnation: 1,
            interval_ms: u32::MAX,
        };
        msgs.push((
            wire::heartbeat_subject("default", &node),
            postcard::to_allocvec(&hb).unwrap(),
        ));
    }
    // Garbage, padding, and a heartbeat naming another node than its subject.
    let hb = |node: &str| Heartbeat {
        node: node.into(),
        incarnation: 1,
        interval_ms: 100,
    };
    let mut padded = postcard::to_allocvec(&hb("p")).unwrap();
    padded.push(1);
    msgs.push((wire::heartbeat_subject("default", "g"), vec![0xff; 3]));
    msgs.push((wire::heartbeat_subject("default", "p"), padded));
    msgs.push((
        wire::heartbeat_subject("default", "q"),
        postcard::to_allocvec(&hb("a-victim")).unwrap(),
    ));
    raw.publish(msgs);
    assert!(
        wait_until(T, || a.stats().bad_heartbeats == 3
            && a.stats().peers_refused + 16 >= 2000),
        "{:?}",
        a.stats()
    );
    assert_eq!(a.peers().len(), 16);
    assert!(!a.peers().contains(&"a-victim".to_string()));
}

/// A goodbye for a peer's other incarnation (stale, or forged by someone
/// who guessed a name) does not declare the live peer down.
#[test]
fn a_goodbye_of_another_incarnation_declares_nobody_down() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let a = cluster(&server, "a");
    let b = cluster(&server, "b");
    assert!(wait_until(T, || a.peers() == ["b"]));
    let raw = Raw::connect(&server.url());
    let bye = Heartbeat {
        node: "b".into(),
        incarnation: 12345,
        interval_ms: 200,
    };
    raw.publish(vec![(
        wire::bye_subject("default", "b"),
        postcard::to_allocvec(&bye).unwrap(),
    )]);
    assert!(wait_until(T, || a.stats().bad_byes == 1));
    assert_eq!(a.stats().nodes_down, 0);
    assert_eq!(a.peers(), ["b"]);
    drop(b);
    assert!(
        wait_until(T, || a.stats().nodes_down == 1),
        "a real goodbye works"
    );
}

/// Issue 25, finding 9: `NameTaken` named the internal key (`n.svc`).
#[test]
fn name_taken_names_the_name() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let system = ActorSystem::builder().threads(1).build();
    let a = cluster(&server, "a");
    let b = cluster(&server, "b");
    let (wa, wb) = (system.spawn(Worker), system.spawn(Worker));
    a.expose("w", &wa).tell::<Job>().serve().unwrap();
    b.expose("w", &wb).tell::<Job>().serve().unwrap();
    a.register::<Job>("svc", "w").unwrap();
    let err = b.register::<Job>("svc", "w").unwrap_err();
    assert_eq!(err, ClusterError::NameTaken("svc".into()));
    assert_eq!(err.to_string(), "the name svc is registered already");
}

struct Watcher(std::sync::mpsc::Sender<troupe::Down>);
impl Actor for Watcher {
    type Msg = troupe::Down;
    fn handle(&mut self, d: troupe::Down, _: &mut Context<'_, Self>) {
        let _ = self.0.send(d);
    }
}

/// Issue 25, findings 2 and 3, with the chosen design (a cluster key):
/// well-formed control requests, heartbeats, goodbyes, stop events and
/// registry values from a client that is not a node achieve nothing and
/// are counted; the nodes themselves work as before.
#[test]
fn with_a_cluster_key_a_plain_client_cannot_kill_or_declare_down() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let keyed = |name: &str| {
        Cluster::builder(&server.url(), name)
            .heartbeat(HB)
            .secret("the cluster's secret")
            .connect()
            .unwrap()
    };
    let system = ActorSystem::builder().threads(1).build();
    let a = keyed("a");
    let b = keyed("b");
    let w = system.spawn(Worker);
    a.expose("w", &w).tell::<Job>().serve().unwrap();
    a.register::<Job>("svc", "w").unwrap();
    assert!(wait_until(T, || a.peers() == ["b"] && b.peers() == ["a"]));
    assert!(
        wait_until(T, || b.find::<Job>("svc").is_some()),
        "sealed registry values"
    );
    let (tx, downs) = std::sync::mpsc::channel();
    let watcher = system.spawn(Watcher(tx));
    b.monitor(&watcher, "w@a", |d| d).unwrap();

    let raw = Raw::connect(&server.url());
    let kill = postcard::to_allocvec(&Ctl::Kill {
        actor: "w".into(),
        reason: WireReason::Killed,
    })
    .unwrap();
    let (answer, took) = raw.request(wire::ctl_subject("default", "a"), kill);
    // The reply is sealed too (over the asker's reply subject): the payload
    // is all but its last SEAL_LEN bytes.
    let answer = answer.expect("answered");
    let body = answer.len().checked_sub(troupe_remote::auth::SEAL_LEN);
    assert_eq!(
        body.and_then(|n| wire::decode::<CtlReply>(&answer[..n])),
        Some(CtlReply::BadRequest)
    );
    assert!(took < Duration::from_secs(2));
    let restarted = Heartbeat {
        node: "b".into(),
        incarnation: 42,
        interval_ms: 200,
    };
    let stop = troupe_cluster::wire::StopEvent {
        actor: "w".into(),
        reason: WireReason::Failed("forged".into()),
    };
    raw.publish(vec![
        (
            wire::heartbeat_subject("default", "b"),
            postcard::to_allocvec(&restarted).unwrap(),
        ),
        (
            wire::bye_subject("default", "b"),
            postcard::to_allocvec(&restarted).unwrap(),
        ),
        (
            wire::down_subject("default", "a"),
            postcard::to_allocvec(&stop).unwrap(),
        ),
    ]);
    // a: the Kill, the heartbeat, the goodbye and the stop event.
    assert!(
        wait_until(T, || a.stats().unauthenticated == 4),
        "{:?}",
        a.stats()
    );
    std::thread::sleep(3 * HB);
    assert!(w.is_alive(), "a forged Kill must not kill");
    assert_eq!(
        a.stats().nodes_down,
        0,
        "a forged restart must not declare b down"
    );
    assert_eq!(a.peers(), ["b"]);
    assert!(
        downs.try_recv().is_err(),
        "a forged stop event must not fire a Down"
    );
    assert!(b.find::<Job>("svc").is_some(), "b's registry entries stay");

    // The real thing still works: a stop reaches b's watcher.
    w.kill();
    let d = downs.recv_timeout(T).expect("a Down");
    assert_eq!(d.reason, troupe::StopReason::Killed);
}
