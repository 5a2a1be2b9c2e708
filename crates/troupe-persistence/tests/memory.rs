//! The actor kinds on the memory store: ordering, optimistic concurrency,
//! snapshots and replay, failures that surface to the caller, and no reply
//! before the store has the events.

mod common;

use common::*;
use futures::FutureExt;
use std::sync::Arc;
use troupe::{ActorSystem, StopReason};
use troupe_persistence::journal::{EventRecord, Journal};
use troupe_persistence::{
    spawn_durable, spawn_persistent, MemoryStore, PersistError, PersistenceConfig, PersistenceId,
    Persistent,
};

fn get(a: &troupe_persistence::PersistentRef<Account>) -> Balance {
    a.ask(Cmd::Get, T).unwrap().unwrap()
}

#[test]
fn events_are_journaled_in_command_order_and_recovered() {
    let store = MemoryStore::new();
    let system = ActorSystem::new();
    let a = spawn_persistent(&system, account("1"), store.clone());
    // Sent all at once, handled one at a time.
    let pending: Vec<_> = (1..=100)
        .map(|n| a.ask_async(move |r| Cmd::Deposit(n, r)))
        .collect();
    for (n, p) in (1..=100u64).zip(pending) {
        assert_eq!(p.wait_timeout(T), Ok(Ok(n * (n + 1) / 2)));
    }
    let before = get(&a);
    assert_eq!(before.balance, 5050);
    assert_eq!(before.history, (1..=100).collect::<Vec<i64>>());
    let id = PersistenceId::new("account", "1").unwrap();
    let seqs: Vec<u64> = store.events(&id).iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=100).collect::<Vec<u64>>());
    system.shutdown();
    drop(system);

    let system = ActorSystem::new();
    let a = spawn_persistent(&system, account("1"), store.clone());
    assert_eq!(get(&a), before, "recovered from the journal");
    // Two events of one command are one append.
    let appends = store.appends();
    assert_eq!(a.ask(|r| Cmd::DepositTwice(5, r), T), Ok(Ok(5060)));
    assert_eq!(store.appends(), appends + 1);
    system.shutdown();
}

#[test]
fn the_journal_refuses_a_stale_expected_sequence() {
    let store = MemoryStore::new();
    let id = PersistenceId::new("account", "c").unwrap();
    let rec = |seq| EventRecord {
        seq,
        name: "x".into(),
        fingerprint: 0,
        payload: vec![],
        tags: Vec::new(),
    };
    assert_eq!(
        futures::executor::block_on(store.append(&id, 0, vec![rec(1), rec(2)])),
        Ok(2)
    );
    assert!(matches!(
        futures::executor::block_on(store.append(&id, 0, vec![rec(1)])),
        Err(PersistError::Conflict {
            expected: 0,
            found: Some(2),
            ..
        })
    ));
    // Numbering must follow the expected sequence.
    assert!(matches!(
        futures::executor::block_on(store.append(&id, 2, vec![rec(4)])),
        Err(PersistError::Corrupt { .. })
    ));
    assert_eq!(
        futures::executor::block_on(store.read(&id, 2)).unwrap(),
        vec![rec(2)]
    );
}

#[test]
fn two_writers_on_one_id_the_second_gets_a_conflict() {
    let store = MemoryStore::new();
    let system = ActorSystem::new();
    let first = spawn_persistent(&system, account("shared"), store.clone());
    let second = spawn_persistent(&system, account("shared"), store.clone());
    // Both have recovered (empty) before either writes.
    get(&first);
    get(&second);
    assert_eq!(first.ask(|r| Cmd::Deposit(1, r), T), Ok(Ok(1)));
    let refused = second.ask(|r| Cmd::Deposit(2, r), T).unwrap();
    assert!(
        matches!(refused, Err(PersistError::Conflict { .. })),
        "{refused:?}"
    );
    // The loser reloads and then sees the winner's event.
    assert_eq!(second.ask(|r| Cmd::Deposit(2, r), T), Ok(Ok(3)));
    system.shutdown();
}

#[test]
fn snapshots_every_n_events_and_recovery_starts_from_the_latest() {
    let store = MemoryStore::new();
    let id = PersistenceId::new("account", "snap").unwrap();
    let spawn = |system: &ActorSystem| {
        system.spawn(troupe::Async::new(
            Persistent::new(account("snap"), store.clone()).config(PersistenceConfig {
                snapshot_every: Some(10),
                ..Default::default()
            }),
        ))
    };
    let system = ActorSystem::new();
    let a = spawn(&system);
    for n in 1..=25 {
        assert_eq!(
            a.ask(|r| Cmd::Deposit(n, r), T).unwrap().unwrap(),
            n * (n + 1) / 2
        );
    }
    get(&a);
    assert_eq!(store.snapshot(&id).map(|s| s.seq), Some(20));
    let before = get(&a);
    system.shutdown();

    let system = ActorSystem::new();
    let a = spawn(&system);
    assert_eq!(get(&a), before);
    // On demand.
    assert_eq!(a.ask(Cmd::Snapshot, T), Ok(Ok(325)));
    // Saved after the reply, before the next command.
    get(&a);
    assert_eq!(store.snapshot(&id).map(|s| s.seq), Some(25));
    system.shutdown();
}

#[test]
fn a_snapshot_of_another_shape_is_skipped_and_the_journal_replayed() {
    let store = MemoryStore::new();
    let id = PersistenceId::new("account", "reshaped").unwrap();
    let system = ActorSystem::new();
    let a = spawn_persistent(&system, account("reshaped"), store.clone());
    assert_eq!(a.ask(|r| Cmd::Deposit(7, r), T), Ok(Ok(7)));
    system.shutdown();
    let bogus = troupe_persistence::Snapshot {
        seq: 1,
        fingerprint: 12345,
        payload: vec![0xff; 3],
    };
    futures::executor::block_on(troupe_persistence::SnapshotStore::save(&*store, &id, bogus))
        .unwrap();
    let system = ActorSystem::new();
    let a = spawn_persistent(&system, account("reshaped"), store.clone());
    assert_eq!(get(&a).balance, 7);
    system.shutdown();
}

#[test]
fn a_failed_append_is_an_error_to_the_caller_and_changes_nothing() {
    let store = MemoryStore::new();
    let system = ActorSystem::new();
    let a = spawn_persistent(&system, account("fail"), store.clone());
    assert_eq!(a.ask(|r| Cmd::Deposit(10, r), T), Ok(Ok(10)));
    store.fail_appends(1);
    let failed = a.ask(|r| Cmd::Deposit(5, r), T).unwrap();
    assert!(
        matches!(failed, Err(PersistError::Unavailable { .. })),
        "{failed:?}"
    );
    assert_eq!(get(&a).balance, 10, "the state holds only stored events");
    assert_eq!(a.ask(|r| Cmd::Deposit(1, r), T), Ok(Ok(11)));
    system.shutdown();
}

#[test]
fn no_reply_leaves_before_the_store_has_the_events() {
    let store = MemoryStore::new();
    let id = PersistenceId::new("account", "held").unwrap();
    let system = ActorSystem::new();
    let a = spawn_persistent(&system, account("held"), store.clone());
    get(&a);
    let hold = store.hold_appends();
    let mut reply = a.ask_async(|r| Cmd::Deposit(3, r));
    while store.appends_waiting() == 0 {
        std::thread::yield_now();
    }
    // The append is in flight: not stored, so no reply.
    assert!(store.events(&id).is_empty());
    assert!(
        (&mut reply).now_or_never().is_none(),
        "replied before the store had the event"
    );
    drop(hold);
    assert_eq!(reply.wait_timeout(T), Ok(Ok(3)));
    assert_eq!(store.events(&id).len(), 1);
    system.shutdown();
}

#[test]
fn a_stored_event_of_another_shape_stops_recovery_naming_both() {
    let store = MemoryStore::new();
    let id = PersistenceId::new("account", "schema").unwrap();
    let alien = EventRecord {
        seq: 1,
        name: "test.account.Event".into(),
        fingerprint: 0xdead_beef,
        payload: vec![0, 1],
        tags: Vec::new(),
    };
    futures::executor::block_on(store.append(&id, 0, vec![alien])).unwrap();
    let system = ActorSystem::new();
    let a = spawn_persistent(&system, account("schema"), store.clone());
    let StopReason::Failed(why) = a.join() else {
        panic!("recovery should fail");
    };
    assert!(why.contains("test.account.Event"), "{why}");
    assert!(why.contains("0x00000000deadbeef"), "{why}");
    assert!(why.contains("common::Event"), "{why}");
    system.shutdown();
}

#[test]
fn durable_state_is_stored_whole_and_a_stale_writer_fails() {
    let store = MemoryStore::new();
    let id = PersistenceId::new("counter", "1").unwrap();
    let system = ActorSystem::new();
    let first = spawn_durable(&system, Counter { id: id.clone() }, store.clone());
    let second = spawn_durable(&system, Counter { id: id.clone() }, store.clone());
    assert_eq!(first.ask(CounterCmd::Get, T), Ok(Ok(0)));
    assert_eq!(second.ask(CounterCmd::Get, T), Ok(Ok(0)));
    assert_eq!(first.ask(|r| CounterCmd::Add(5, r), T), Ok(Ok(5)));
    let refused = second.ask(|r| CounterCmd::Add(1, r), T).unwrap();
    assert!(
        matches!(refused, Err(PersistError::StateConflict { .. })),
        "{refused:?}"
    );
    assert_eq!(second.ask(|r| CounterCmd::Add(1, r), T), Ok(Ok(6)));
    system.shutdown();

    let system = ActorSystem::new();
    let again = spawn_durable(&system, Counter { id }, Arc::clone(&store));
    assert_eq!(again.ask(CounterCmd::Get, T), Ok(Ok(6)));
    system.shutdown();
}
