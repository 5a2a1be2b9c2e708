//! L9: a command told without a reply whose store write fails is counted
//! and logged, not dropped unseen, for both actor kinds. Its own test
//! binary: the counters are process-wide, and these are exact.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use troupe::{ActorSystem, ReplyTo};
use troupe_persistence::{
    spawn_durable, stats, Change, DurableActor, Effect, MemoryStore, PersistError, PersistenceId,
    PersistentActor, StateStore,
};

const T: Duration = Duration::from_secs(10);

#[troupe_remote::remote("test.unanswered.Added")]
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Added(u64);

enum Cmd {
    /// Told: no reply.
    Add(u64),
    Get(ReplyTo<Result<u64, PersistError>>),
}

struct Sum(PersistenceId);

impl PersistentActor for Sum {
    type Command = Cmd;
    type Event = Added;
    type State = u64;
    fn persistence_id(&self) -> PersistenceId {
        self.0.clone()
    }
    fn handle_command(&mut self, _: &u64, cmd: Cmd) -> Effect<Self> {
        match cmd {
            Cmd::Add(n) => Effect::<Self>::persist(Added(n)),
            Cmd::Get(r) => Effect::<Self>::none().reply(r, |s| *s),
        }
    }
    fn apply(state: &mut u64, e: &Added) {
        *state += e.0;
    }
}

struct Total(PersistenceId);

impl DurableActor for Total {
    type Command = Cmd;
    type State = u64;
    fn persistence_id(&self) -> PersistenceId {
        self.0.clone()
    }
    fn handle_command(&mut self, state: &u64, cmd: Cmd) -> Change<Self> {
        match cmd {
            Cmd::Add(n) => Change::<Self>::set(state + n),
            Cmd::Get(r) => Change::<Self>::none().reply(r, |s| *s),
        }
    }
}

fn wait_for(f: impl Fn() -> bool) -> bool {
    let end = Instant::now() + T;
    while !f() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(5));
    }
    f()
}

/// A told command whose append fails (the store refuses the next 2) and
/// a told durable change whose write loses a revision race are each
/// counted once in `unanswered_failures` (and `write_failures`); asked
/// ones are not (their callers got the error). (Nothing counted them:
/// both counters stayed at 0.)
#[test]
fn a_told_command_whose_write_fails_is_counted() {
    let store = MemoryStore::new();
    let system = ActorSystem::new();
    let before = stats();

    // One command stored before the next is decided, so each failed
    // append fails one told command (with a pipeline, the commands in
    // flight behind a failed one fail with it: tests/pipeline.rs).
    let config = troupe_persistence::PersistenceConfig {
        pipeline: 1,
        ..Default::default()
    };
    let sum = system.spawn(troupe::Async::new(
        troupe_persistence::Persistent::new(
            Sum(PersistenceId::new("sum", "1").unwrap()),
            store.clone(),
        )
        .config(config),
    ));
    assert_eq!(sum.ask(Cmd::Get, T), Ok(Ok(0)));
    store.fail_appends(2);
    sum.tell(Cmd::Add(5)).unwrap();
    sum.tell(Cmd::Add(7)).unwrap();
    sum.tell(Cmd::Add(1)).unwrap();
    assert_eq!(sum.ask(Cmd::Get, T), Ok(Ok(1)), "two adds were not stored");
    assert!(wait_for(|| stats().unanswered_failures
        - before.unanswered_failures
        == 2));

    // A durable total whose stored revision another writer moved on.
    let id = PersistenceId::new("total", "1").unwrap();
    let total = spawn_durable(&system, Total(id.clone()), store.clone());
    assert_eq!(total.ask(Cmd::Get, T), Ok(Ok(0)));
    let other: Arc<dyn StateStore> = store.clone();
    futures::executor::block_on(other.put(&id, 0, Vec::new())).unwrap();
    total.tell(Cmd::Add(3)).unwrap();
    assert!(wait_for(|| stats().unanswered_failures
        - before.unanswered_failures
        == 3));
    let after = stats();
    assert_eq!(after.write_failures - before.write_failures, 3, "{after:?}");
    system.shutdown();
}
