//! Pipelined appends (`PersistenceConfig::pipeline`): several commands in
//! flight, stored in order, grouped into fewer appends, each reply only
//! after its events are stored; a failed append fails its commands and
//! every later one in flight, stores none of them, and the actor reloads.
//! On the memory store (its `hold_appends`/`fail_appends`) and on a real
//! `nats-server -js` (skipped with one line where it is missing), where a
//! second writer makes the held append conflict.

mod common;

use common::T;
use futures::executor::block_on;
use futures::future::BoxFuture;
use futures::FutureExt;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe::{ActorSystem, Async, ReplyTo};
use troupe_persistence::{
    Effect, EventRecord, JetStreamStore, Journal, MemoryStore, PersistError, PersistenceConfig,
    PersistenceId, Persistent, PersistentActor, PersistentRef,
};
use troupe_test_nats::NatsServer;

#[troupe_remote::remote("test.pipeline.Added")]
#[derive(Serialize, Deserialize)]
struct Added(u64);

/// A running total that counts the commands it has decided.
struct Tally {
    id: PersistenceId,
    decided: Arc<AtomicUsize>,
}

type Reply = ReplyTo<Result<u64, PersistError>>;

impl PersistentActor for Tally {
    type Command = (u64, Reply);
    type Event = Added;
    type State = u64;
    fn persistence_id(&self) -> PersistenceId {
        self.id.clone()
    }
    fn handle_command(&mut self, _: &u64, (n, r): Self::Command) -> Effect<Self> {
        self.decided.fetch_add(1, Ordering::SeqCst);
        match n {
            0 => Effect::<Self>::none().reply(r, |s| *s),
            n => Effect::<Self>::persist(Added(n)).reply(r, |s| *s),
        }
    }
    fn apply(total: &mut u64, e: &Added) {
        *total += e.0;
    }
}

fn spawn(
    system: &ActorSystem,
    name: &str,
    journal: Arc<dyn Journal>,
    snapshots: Arc<dyn troupe_persistence::SnapshotStore>,
) -> (PersistentRef<Tally>, Arc<AtomicUsize>) {
    let decided = Arc::new(AtomicUsize::new(0));
    let tally = Tally {
        id: PersistenceId::new("tally", name).unwrap(),
        decided: decided.clone(),
    };
    let config = PersistenceConfig {
        pipeline: 32,
        ..Default::default()
    };
    let a = system.spawn(Async::new(
        Persistent::with_stores(tally, journal, snapshots).config(config),
    ));
    (a, decided)
}

fn until(what: &str, f: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn commands_in_flight_are_grouped_and_replied_only_once_stored() {
    let store = MemoryStore::new();
    let id = PersistenceId::new("tally", "grouped").unwrap();
    let system = ActorSystem::new();
    let (a, decided) = spawn(&system, "grouped", store.clone(), store.clone());
    let hold = store.hold_appends();
    let mut replies: Vec<_> = (1..=10u64).map(|n| a.ask_async(move |r| (n, r))).collect();
    // A read among them: its reply saw the in-flight events, so it waits too.
    replies.push(a.ask_async(|r| (0, r)));
    until("11 decided, 1 append held", || {
        decided.load(Ordering::SeqCst) == 11 && store.appends_waiting() == 1
    });
    assert!(store.events(&id).is_empty());
    for r in &mut replies {
        assert!(
            r.now_or_never().is_none(),
            "a reply left before its events were stored"
        );
    }
    drop(hold);
    let totals: Vec<u64> = replies
        .into_iter()
        .map(|r| r.wait_timeout(T).unwrap().unwrap())
        .collect();
    let mut expected: Vec<u64> = (1..=10u64).map(|n| n * (n + 1) / 2).collect();
    expected.push(55);
    assert_eq!(totals, expected);
    // The held append took what was queued when the writer woke (the
    // first command, or more), the one after it all the rest.
    assert!(store.appends() <= 2, "{} appends", store.appends());
    let seqs: Vec<u64> = store.events(&id).iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=10).collect::<Vec<_>>());
    system.shutdown();
}

/// A failed append fails its command and every later one in flight (the
/// injected error each, not a conflict of an append after a gap), stores
/// none, and the next command is decided on the reloaded state.
/// Mutation: with the actor not reloading after the failure (the
/// `failure()` branch of `pipelined` removed) the last deposit answers 1 +
/// the failed ones' 2..=6 and this fails.
#[test]
fn a_failed_append_fails_every_later_command_in_flight() {
    let store = MemoryStore::new();
    let id = PersistenceId::new("tally", "failing").unwrap();
    let system = ActorSystem::new();
    let (a, decided) = spawn(&system, "failing", store.clone(), store.clone());
    assert_eq!(a.ask(|r| (1, r), T), Ok(Ok(1)));
    let hold = store.hold_appends();
    let replies: Vec<_> = (2..=6u64).map(|n| a.ask_async(move |r| (n, r))).collect();
    until("6 decided, 1 append held", || {
        decided.load(Ordering::SeqCst) == 6 && store.appends_waiting() == 1
    });
    store.fail_appends(1);
    drop(hold);
    for r in replies {
        let failed = r.wait_timeout(T).unwrap();
        assert!(
            matches!(failed, Err(PersistError::Unavailable { .. })),
            "{failed:?}"
        );
    }
    assert_eq!(
        store.events(&id).len(),
        1,
        "none of the failed commands stored"
    );
    assert_eq!(a.ask(|r| (10, r), T), Ok(Ok(11)));
    let seqs: Vec<u64> = store.events(&id).iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![1, 2], "no gap");
    system.shutdown();
}

/// A journal whose appends wait while `held` is set: a test holds one
/// append of a real store in flight.
struct Gate {
    inner: Arc<JetStreamStore>,
    held: Arc<std::sync::atomic::AtomicBool>,
    waiting: Arc<AtomicUsize>,
}

impl Journal for Gate {
    fn append<'a>(
        &'a self,
        id: &'a PersistenceId,
        expected: u64,
        events: Vec<EventRecord>,
    ) -> BoxFuture<'a, Result<u64, PersistError>> {
        Box::pin(async move {
            if self.held.load(Ordering::SeqCst) {
                self.waiting.fetch_add(1, Ordering::SeqCst);
                while self.held.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                self.waiting.fetch_sub(1, Ordering::SeqCst);
            }
            self.inner.append(id, expected, events).await
        })
    }
    fn read<'a>(
        &'a self,
        id: &'a PersistenceId,
        from: u64,
    ) -> BoxFuture<'a, Result<Vec<EventRecord>, PersistError>> {
        self.inner.read(id, from)
    }
    fn delete_through<'a>(
        &'a self,
        id: &'a PersistenceId,
        seq: u64,
    ) -> BoxFuture<'a, Result<u64, PersistError>> {
        self.inner.delete_through(id, seq)
    }
}

#[test]
fn jetstream_pipelines_in_order_and_a_conflict_fails_the_commands_in_flight() {
    let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
        return;
    };
    let connect = || {
        Arc::new(
            JetStreamStore::builder(&server.url())
                .namespace("pipe")
                .connect()
                .expect("connect"),
        )
    };
    let store = connect();
    let held = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let waiting = Arc::new(AtomicUsize::new(0));
    let gate = Arc::new(Gate {
        inner: store.clone(),
        held: held.clone(),
        waiting: waiting.clone(),
    });
    let system = ActorSystem::new();
    let (a, decided) = spawn(&system, "js", gate.clone(), store.clone());
    // 500 at once: running totals in order, and recovered the same.
    let replies: Vec<_> = (1..=500u64).map(|n| a.ask_async(move |r| (n, r))).collect();
    for (n, r) in (1..=500u64).zip(replies) {
        assert_eq!(r.wait_timeout(T), Ok(Ok(n * (n + 1) / 2)));
    }
    let total = 500 * 501 / 2;
    let seqs: Vec<u64> = block_on(store.read(&PersistenceId::new("tally", "js").unwrap(), 1))
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(seqs, (1..=500).collect::<Vec<_>>());

    // One append held in flight, four more commands decided behind it;
    // meanwhile another writer appends event 501.
    held.store(true, Ordering::SeqCst);
    let before = decided.load(Ordering::SeqCst);
    let replies: Vec<_> = (1..=5u64).map(|n| a.ask_async(move |r| (n, r))).collect();
    until("5 decided, 1 append held", || {
        decided.load(Ordering::SeqCst) == before + 5 && waiting.load(Ordering::SeqCst) == 1
    });
    let other = connect();
    let id = PersistenceId::new("tally", "js").unwrap();
    let record = troupe_persistence::Codec::<Added, u64>::postcard()
        .encode_event(&id, 501, &Added(1000))
        .unwrap();
    assert_eq!(block_on(other.append(&id, 500, vec![record])), Ok(501));
    held.store(false, Ordering::SeqCst);
    for r in replies {
        let failed = r.wait_timeout(T).unwrap();
        assert!(
            matches!(failed, Err(PersistError::Conflict { .. })),
            "{failed:?}"
        );
    }
    // Reloaded: the other writer's event, then this one's.
    assert_eq!(a.ask(|r| (7, r), T), Ok(Ok(total + 1000 + 7)));
    system.shutdown();
}
