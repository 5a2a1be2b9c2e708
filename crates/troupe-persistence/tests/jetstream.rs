//! The actor kinds on a real `nats-server -js` (started by
//! troupe-test-nats; skipped with one line where nats-server is missing,
//! a failure with TROUPE_REQUIRE_NATS=1): persist and recover in a new
//! system and connection, snapshots, two writers, durable state, a
//! server restart under load that loses no acknowledged event, a
//! three-server cluster (replicas = 3) losing one server under load, and
//! replays through the journal's leader election.

mod common;

use common::*;
use futures::executor::block_on;
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use troupe::{ActorSystem, Async, SpawnOptions};
use troupe_persistence::{
    spawn_durable, spawn_persistent, spawn_persistent_with, EventRecord, JetStreamStore, Journal,
    PersistError, PersistenceConfig, PersistenceId, Persistent, PersistentRef,
};
use troupe_test_nats::NatsServer;

fn server() -> Option<NatsServer> {
    NatsServer::builder().jetstream().start_or_skip()
}

fn store(server: &NatsServer) -> Arc<JetStreamStore> {
    Arc::new(
        JetStreamStore::builder(&server.url())
            .namespace("test")
            .connect()
            .expect("connect"),
    )
}

fn get(a: &PersistentRef<Account>) -> Balance {
    a.ask(Cmd::Get, T).unwrap().unwrap()
}

#[test]
fn persisted_events_survive_the_system_and_the_connection() {
    let Some(server) = server() else { return };
    let before = {
        let store = store(&server);
        let system = ActorSystem::new();
        let a = spawn_persistent(&system, account("1"), store.clone());
        let pending: Vec<_> = (1..=50)
            .map(|n| a.ask_async(move |r| Cmd::Deposit(n, r)))
            .collect();
        for (n, p) in (1..=50u64).zip(pending) {
            assert_eq!(p.wait_timeout(T), Ok(Ok(n * (n + 1) / 2)));
        }
        assert_eq!(a.ask(|r| Cmd::DepositTwice(1, r), T), Ok(Ok(1277)));
        let b = get(&a);
        drop(system);
        b
    };
    let store = store(&server);
    let system = ActorSystem::new();
    let a = spawn_persistent(&system, account("1"), store.clone());
    assert_eq!(get(&a), before);
    assert_eq!(a.ask(|r| Cmd::Withdraw(7, r), T), Ok(Ok(Ok(1270))));
    // Another entity's journal is apart.
    let b = spawn_persistent(&system, account("2"), store);
    assert_eq!(get(&b).balance, 0);
    system.shutdown();
}

/// Persistent actors on a tokio dispatcher of the store's runtime (their
/// turns beside the connection): every command acknowledged once, in
/// order per entity (running totals); a new system on its worker
/// pool recovers the same totals.
#[test]
fn persistent_actors_on_the_stores_runtime_persist_and_recover() {
    let Some(server) = server() else { return };
    let store = store(&server);
    let before: Vec<Balance> = {
        let system = ActorSystem::new();
        let journal = system.tokio_dispatcher("journal", store.runtime());
        let accounts: Vec<_> = (0..4)
            .map(|k| {
                spawn_persistent_with(
                    &system,
                    account(&format!("io-{k}")),
                    store.clone(),
                    SpawnOptions::new().dispatcher(&journal),
                )
            })
            .collect();
        let pending: Vec<_> = (1..=100u64)
            .map(|n| {
                let a = &accounts[(n % 4) as usize];
                (n, a.ask_async(move |r| Cmd::Deposit(n, r)))
            })
            .collect();
        let mut totals = [0u64; 4];
        for (n, p) in pending {
            totals[(n % 4) as usize] += n;
            assert_eq!(p.wait_timeout(T), Ok(Ok(totals[(n % 4) as usize])));
        }
        let before = accounts.iter().map(get).collect();
        let report = system.shutdown();
        assert_eq!((report.messages_dropped, report.panics), (0, 0));
        before
    };
    let system = ActorSystem::new();
    for (k, b) in before.iter().enumerate() {
        let a = spawn_persistent(&system, account(&format!("io-{k}")), store.clone());
        assert_eq!(&get(&a), b);
    }
    assert_eq!(before.iter().map(|b| b.balance).sum::<u64>(), 5050);
    system.shutdown();
}

#[test]
fn recovery_starts_from_the_latest_snapshot() {
    let Some(server) = server() else { return };
    let spawn = |system: &ActorSystem, store: &Arc<JetStreamStore>| {
        system.spawn(Async::new(
            Persistent::new(account("snap"), store.clone()).config(PersistenceConfig {
                snapshot_every: Some(10),
                ..Default::default()
            }),
        ))
    };
    let before = {
        let store = store(&server);
        let system = ActorSystem::new();
        let a = spawn(&system, &store);
        for n in 1..=35 {
            a.ask(|r| Cmd::Deposit(n, r), T).unwrap().unwrap();
        }
        let b = get(&a);
        drop(system);
        b
    };
    assert_eq!(before.balance, 630);
    let store = store(&server);
    let system = ActorSystem::new();
    let a = spawn(&system, &store);
    assert_eq!(get(&a), before, "snapshot at #30 plus events 31..=35");
    assert_eq!(a.ask(|r| Cmd::Deposit(1, r), T), Ok(Ok(631)));
    system.shutdown();
}

#[test]
fn two_writers_on_one_id_the_second_gets_a_conflict() {
    let Some(server) = server() else { return };
    let (one, two) = (store(&server), store(&server));
    let system = ActorSystem::new();
    let first = spawn_persistent(&system, account("shared"), one);
    let second = spawn_persistent(&system, account("shared"), two);
    get(&first);
    get(&second);
    assert_eq!(first.ask(|r| Cmd::Deposit(1, r), T), Ok(Ok(1)));
    let refused = second.ask(|r| Cmd::Deposit(2, r), T).unwrap();
    assert!(
        matches!(refused, Err(PersistError::Conflict { .. })),
        "{refused:?}"
    );
    assert_eq!(second.ask(|r| Cmd::Deposit(2, r), T), Ok(Ok(3)));
    // And now the first writer is the stale one.
    let refused = first.ask(|r| Cmd::Deposit(4, r), T).unwrap();
    assert!(
        matches!(refused, Err(PersistError::Conflict { .. })),
        "{refused:?}"
    );
    system.shutdown();
}

#[test]
fn durable_state_with_a_revision_check() {
    let Some(server) = server() else { return };
    let id = PersistenceId::new("counter", "1").unwrap();
    let system = ActorSystem::new();
    let first = spawn_durable(&system, Counter { id: id.clone() }, store(&server));
    let second = spawn_durable(&system, Counter { id: id.clone() }, store(&server));
    assert_eq!(first.ask(CounterCmd::Get, T), Ok(Ok(0)));
    assert_eq!(second.ask(CounterCmd::Get, T), Ok(Ok(0)));
    assert_eq!(first.ask(|r| CounterCmd::Add(5, r), T), Ok(Ok(5)));
    let refused = second.ask(|r| CounterCmd::Add(1, r), T).unwrap();
    assert!(
        matches!(refused, Err(PersistError::StateConflict { .. })),
        "{refused:?}"
    );
    assert_eq!(second.ask(|r| CounterCmd::Add(1, r), T), Ok(Ok(6)));
    drop(system);
    let system = ActorSystem::new();
    let again = spawn_durable(&system, Counter { id }, store(&server));
    assert_eq!(again.ask(CounterCmd::Get, T), Ok(Ok(6)));
    system.shutdown();
}

#[test]
fn a_server_restart_under_load_loses_no_acknowledged_event() {
    let Some(mut server) = server() else { return };
    const N: u64 = 200;
    let acked = Arc::new(Mutex::new(Vec::new()));
    let errors = Arc::new(AtomicUsize::new(0));
    let st = store(&server);
    let system = ActorSystem::new();
    let a = spawn_persistent(&system, account("restart"), st.clone());
    let writer = {
        let (a, acked, errors) = (a.clone(), acked.clone(), errors.clone());
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(60);
            for n in 1..=N {
                // Retried until acknowledged: a retry after an unconfirmed
                // append may store the amount twice, never lose it.
                loop {
                    assert!(Instant::now() < deadline, "no progress after the restart");
                    match a.ask(|r| Cmd::Deposit(n, r), T) {
                        Ok(Ok(_)) => break,
                        _ => {
                            errors.fetch_add(1, Ordering::Relaxed);
                            std::thread::sleep(Duration::from_millis(20));
                        }
                    }
                }
                acked.lock().unwrap().push(n);
            }
        })
    };
    while acked.lock().unwrap().len() < 50 {
        std::thread::sleep(Duration::from_millis(1));
    }
    // SIGKILL, as a crash: acknowledged messages are in the store files.
    server.kill();
    server.restart().expect("restart");
    writer.join().expect("writer");
    drop(system);
    drop(st);

    let system = ActorSystem::new();
    let a = spawn_persistent(&system, account("restart"), store(&server));
    let history: HashSet<i64> = get(&a).history.into_iter().collect();
    let acked = acked.lock().unwrap().clone();
    assert_eq!(acked.len() as u64, N);
    let lost: Vec<u64> = acked
        .iter()
        .copied()
        .filter(|n| !history.contains(&(*n as i64)))
        .collect();
    assert!(lost.is_empty(), "acknowledged but lost: {lost:?}");
    eprintln!(
        "restart under load: {N} acknowledged, {} failed attempts retried, 0 lost",
        errors.load(Ordering::Relaxed)
    );
    system.shutdown();
}

/// Three clustered servers, the journal with 3 replicas: killing the
/// server the store is connected to, under load, loses no acknowledged
/// event.
///
/// On the shared 2-core machine a run takes 9 to 14 s: about 2 s for the
/// first JetStream leaders, then up to 11 s when the killed server led the
/// stream (the writes wait for a new leader) or the meta group (the
/// recovery does); figures in bench/results/2026-11-26-persistence.
#[test]
fn a_three_server_cluster_loses_no_acknowledged_event_when_one_dies() {
    let Some(mut cluster) = troupe_test_nats::NatsCluster::start_or_skip(3) else {
        return;
    };
    // JetStream elects its leaders after the servers listen: retry.
    let deadline = Instant::now() + Duration::from_secs(60);
    // Short store timeouts (500 ms): while the cluster elects, a request
    // goes unanswered, and the connect, the writes and the recovery all
    // retry sooner than after the default 5 s.
    let connect = |url: &str| loop {
        match JetStreamStore::builder(url)
            .namespace("ha")
            .replicas(3)
            .timeout(Duration::from_millis(500))
            .connect()
        {
            Ok(store) => break Arc::new(store),
            Err(e) => {
                assert!(
                    Instant::now() < deadline,
                    "the cluster never served JetStream: {e}"
                );
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    };
    let t0 = Instant::now();
    let st = connect(&cluster.urls());
    eprintln!("cluster: JetStream ready after {:?}", t0.elapsed());
    const N: u64 = 200;
    let acked = Arc::new(Mutex::new(Vec::new()));
    let system = ActorSystem::new();
    let a = spawn_persistent(&system, account("ha"), st.clone());
    let writer = {
        let (a, acked) = (a.clone(), acked.clone());
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(90);
            for n in 1..=N {
                while !matches!(a.ask(|r| Cmd::Deposit(n, r), T), Ok(Ok(_))) {
                    assert!(Instant::now() < deadline, "no progress after the kill");
                    std::thread::sleep(Duration::from_millis(20));
                }
                acked.lock().unwrap().push(n);
            }
        })
    };
    while acked.lock().unwrap().len() < 50 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let t1 = Instant::now();
    cluster.server(0).kill();
    writer.join().expect("writer");
    eprintln!("cluster: writes done {:?} after the kill", t1.elapsed());
    drop(system);
    drop(st);

    let survivors = format!("{},{}", cluster.url(1), cluster.url(2));
    let system = ActorSystem::new();
    let t2 = Instant::now();
    // Recovery retries for up to 50 s (the default is 30) while the
    // survivors elect, below the ask's 60 s.
    let a = system.spawn(Async::new(
        Persistent::new(account("ha"), connect(&survivors)).config(PersistenceConfig {
            recovery_timeout: Duration::from_secs(50),
            ..Default::default()
        }),
    ));
    // Recovery waits for the survivors to elect new leaders.
    let recovered = match a.ask(Cmd::Get, Duration::from_secs(60)) {
        Ok(r) => r.unwrap(),
        Err(e) => panic!("{e}: {:?}", a.join()),
    };
    eprintln!(
        "cluster: recovered {} events in {:?}",
        recovered.history.len(),
        t2.elapsed()
    );
    let history: HashSet<i64> = recovered.history.into_iter().collect();
    let lost: Vec<u64> = acked
        .lock()
        .unwrap()
        .iter()
        .copied()
        .filter(|n| !history.contains(&(*n as i64)))
        .collect();
    assert!(lost.is_empty(), "acknowledged but lost: {lost:?}");
    system.shutdown();
}

/// The leader of JetStream stream `stream`, from `$JS.API.STREAM.INFO`
/// through a plain connection to `url`.
fn stream_leader(url: &str, stream: &str) -> Option<String> {
    let (url, subject) = (url.to_string(), format!("$JS.API.STREAM.INFO.{stream}"));
    let io = troupe_remote::runtime::handle().ok()?;
    let reply = io.block_on(async move {
        let client = async_nats::connect(url).await.ok()?;
        let fut = client.request(subject, Vec::new().into());
        tokio::time::timeout(Duration::from_secs(2), fut)
            .await
            .ok()?
            .ok()
    })?;
    let json = String::from_utf8_lossy(&reply.payload).into_owned();
    let key = "\"leader\":\"";
    let at = json.find(key)? + key.len();
    Some(json[at..at + json[at..].find('"')?].to_string())
}

/// Three clustered servers, the journal with 3 replicas: right after the
/// server leading the journal's stream is killed, a store on a survivor
/// replays every entity's journal exactly (whole, and from the middle),
/// through the leader's election: the ordered consumer cannot be
/// created then, so the replay reads by direct gets
/// (`journal/jetstream/replay.rs`).
#[test]
fn a_replay_through_a_journal_electing_its_leader_is_whole() {
    let Some(mut cluster) = troupe_test_nats::NatsCluster::start_or_skip(3) else {
        return;
    };
    const ENTITIES: usize = 20;
    const APPENDS: u64 = 3;
    let deadline = Instant::now() + Duration::from_secs(60);
    let connect = |url: &str| loop {
        match JetStreamStore::builder(url)
            .namespace("replay")
            .replicas(3)
            .timeout(Duration::from_millis(500))
            .connect()
        {
            Ok(store) => break store,
            Err(e) => {
                assert!(Instant::now() < deadline, "no JetStream: {e}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    };
    let event = |seq: u64| EventRecord {
        seq,
        name: "test.Event".into(),
        fingerprint: 7,
        payload: seq.to_le_bytes().to_vec(),
        tags: Vec::new(),
    };
    let ids: Vec<PersistenceId> = (0..ENTITIES)
        .map(|i| PersistenceId::new("acct", format!("e{i}")).unwrap())
        .collect();
    let st = connect(&cluster.urls());
    for id in &ids {
        for k in 0..APPENDS {
            let events = vec![event(2 * k + 1), event(2 * k + 2)];
            loop {
                match block_on(st.append(id, 2 * k, events.clone())) {
                    Ok(last) => break assert_eq!(last, 2 * k + 2),
                    Err(e) => assert!(Instant::now() < deadline, "{id}: {e}"),
                }
            }
        }
    }
    let leader = (0..3)
        .find_map(|i| stream_leader(&cluster.url(i), &st.stream_name()))
        .expect("the journal's leader");
    let victim = leader
        .strip_prefix("troupe-test-")
        .and_then(|i| i.parse::<usize>().ok())
        .filter(|&i| i < 3)
        .expect("a leader of this cluster");
    drop(st);
    let killed = Instant::now();
    cluster.server(victim).kill();
    let survivor = connect(&cluster.url((victim + 1) % 3));
    let all: Vec<EventRecord> = (1..=2 * APPENDS).map(event).collect();
    // The store's connect waited for the stream's new leader; the
    // consumer may still be placed on the dead server, so replays from
    // here on must succeed at once, by direct gets where need be.
    let mut took = Vec::new();
    for id in &ids {
        for from in [1, 4] {
            let t = Instant::now();
            let got = block_on(survivor.read(id, from))
                .unwrap_or_else(|e| panic!("{id} from {from}: {e}"));
            took.push(t.elapsed());
            assert_eq!(got, all[from as usize - 1..], "{id} from {from}");
        }
    }
    eprintln!(
        "replay: {} replays done {:?} after killing the journal's leader; \
         the first took {:?}, the slowest of the others {:?}",
        took.len(),
        killed.elapsed(),
        took[0],
        took[1..].iter().max()
    );
}

/// `connect` blocks; on the runtime the store runs on it would wait on
/// itself forever, so there it is an error.
#[test]
fn connecting_on_the_stores_own_runtime_is_an_error_not_a_hang() {
    let io = troupe_remote::runtime::handle().expect("the I/O runtime");
    let (tx, rx) = std::sync::mpsc::channel();
    io.spawn(async move {
        let refused = JetStreamStore::builder("nats://127.0.0.1:1").connect();
        let _ = tx.send(refused.err().map(|e| e.to_string()));
    });
    let refused = rx.recv_timeout(T).expect("connect returned");
    assert!(
        refused.is_some_and(|e| e.contains("outside the runtime")),
        "connect on the I/O runtime's thread"
    );
}
