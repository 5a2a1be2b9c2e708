//! Journal lifetime: snapshot retention (keep the newest N) and deleting
//! the events a kept snapshot includes, on the memory store and on a real
//! `nats-server -js` (skipped with one line where nats-server is missing):
//! after N + k snapshots N remain, the deleted events are not read back,
//! and recovery from the snapshots gives the state it had; a latest
//! snapshot that does not decode falls back to the older kept one.

mod common;

use common::*;
use futures::executor::block_on;
use std::sync::Arc;
use troupe::{ActorSystem, Async};
use troupe_persistence::{
    JetStreamStore, Journal, MemoryStore, PersistenceConfig, PersistenceId, Persistent,
    PersistentRef, Snapshot, SnapshotStore,
};
use troupe_test_nats::NatsServer;

fn spawn<S: Journal + SnapshotStore>(
    system: &ActorSystem,
    name: &str,
    store: &Arc<S>,
) -> PersistentRef<Account> {
    let config = PersistenceConfig {
        snapshot_every: Some(10),
        keep_snapshots: 2,
        delete_events: true,
        ..Default::default()
    };
    system.spawn(Async::new(
        Persistent::new(account(name), store.clone()).config(config),
    ))
}

/// 55 events, a snapshot every 10 (5 in all), 2 kept, events deleted up
/// to the oldest kept; then a recovery, and one past a bogus latest.
fn retention_and_deletion<S: Journal + SnapshotStore>(store: Arc<S>, name: &str) {
    let id = PersistenceId::new("account", name).unwrap();
    let system = ActorSystem::new();
    let a = spawn(&system, name, &store);
    for n in 1..=55u64 {
        assert_eq!(a.ask(|r| Cmd::Deposit(n, r), T), Ok(Ok(n * (n + 1) / 2)));
    }
    let before = a.ask(Cmd::Get, T).unwrap().unwrap();
    system.shutdown();

    let kept: Vec<u64> = block_on(store.history(&id))
        .unwrap()
        .iter()
        .map(|s| s.seq)
        .collect();
    assert_eq!(kept, vec![50, 40], "5 snapshots taken, the newest 2 kept");
    let events = block_on(store.read(&id, 1)).unwrap();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (41..=55).collect::<Vec<_>>(), "events 1..=40 deleted");

    // Recovery from the latest snapshot: the same state, events on.
    let system = ActorSystem::new();
    let a = spawn(&system, name, &store);
    assert_eq!(a.ask(Cmd::Get, T).unwrap().unwrap(), before);
    assert_eq!(a.ask(|r| Cmd::Deposit(1, r), T), Ok(Ok(before.balance + 1)));
    system.shutdown();

    // A latest snapshot that does not decode: the older kept one (50)
    // and the events after it give the same state.
    let bogus = Snapshot {
        seq: 56,
        fingerprint: 12345,
        payload: vec![0xff; 3],
    };
    block_on(store.save(&id, bogus)).unwrap();
    let system = ActorSystem::new();
    let a = spawn(&system, name, &store);
    let after = a.ask(Cmd::Get, T).unwrap().unwrap();
    assert_eq!(after.balance, before.balance + 1);
    assert_eq!(after.history.len(), 56);
    system.shutdown();
}

#[test]
fn memory_keeps_the_newest_snapshots_and_deletes_the_events_they_include() {
    retention_and_deletion(MemoryStore::new(), "kept");
}

#[test]
fn jetstream_keeps_the_newest_snapshots_and_deletes_the_events_they_include() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let store = Arc::new(
        JetStreamStore::builder(&server.url())
            .namespace("life")
            .connect()
            .expect("connect"),
    );
    retention_and_deletion(store, "kept");
}

/// The default keeps one snapshot and every event; deleting through the
/// last event keeps the last append (the journal's position), and the
/// next append is numbered on.
fn defaults_and_the_last_append<S: Journal + SnapshotStore>(store: Arc<S>) {
    let id = PersistenceId::new("account", "last").unwrap();
    let system = ActorSystem::new();
    let config = PersistenceConfig {
        snapshot_every: Some(5),
        ..Default::default()
    };
    let a = system.spawn(Async::new(
        Persistent::new(account("last"), store.clone()).config(config),
    ));
    for n in 1..=12u64 {
        a.ask(|r| Cmd::Deposit(n, r), T).unwrap().unwrap();
    }
    system.shutdown();
    let kept: Vec<u64> = block_on(store.history(&id))
        .unwrap()
        .iter()
        .map(|s| s.seq)
        .collect();
    assert_eq!(kept, vec![10]);
    assert_eq!(block_on(store.read(&id, 1)).unwrap().len(), 12);
    assert_eq!(block_on(store.delete_through(&id, 12)).unwrap(), 11);
    let left: Vec<u64> = block_on(store.read(&id, 1))
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(left, vec![12], "the last append stays");
    // Event 11 is gone and the kept snapshot is at 10: recovery is
    // refused (naming where the journal starts), never a wrong state.
    let system = ActorSystem::new();
    let a = system.spawn(Async::new(Persistent::new(account("last"), store.clone())));
    let refused = a.ask(Cmd::Get, T);
    assert!(
        refused.is_err() || refused.as_ref().unwrap().is_err(),
        "{refused:?}"
    );
    system.shutdown();
}

#[test]
fn memory_deletion_keeps_the_last_append() {
    defaults_and_the_last_append(MemoryStore::new());
}

#[test]
fn jetstream_deletion_keeps_the_last_append() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let store = Arc::new(
        JetStreamStore::builder(&server.url())
            .namespace("life")
            .connect()
            .expect("connect"),
    );
    defaults_and_the_last_append(store);
}
