//! A bank account as an event-sourced actor on NATS JetStream: deposits and
//! withdrawals are journaled before the reply; the actor system is then
//! dropped, and a new one, over a new connection, recovers the balance.
//!
//! `cargo run -p troupe-persistence --example bank_account` starts its own
//! `nats-server -js` (or set NATS_URL); without nats-server it runs on the
//! in-memory store.

use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use troupe::{ActorSystem, ReplyTo};
use troupe_persistence::{
    Effect, JetStreamStore, Journal, MemoryStore, PersistError, PersistenceConfig, PersistenceId,
    Persistent, PersistentActor, SnapshotStore,
};

/// What happened to an account: journaled, replayed on recovery.
#[troupe_remote::remote("bank.account.Event")]
#[derive(Debug, Serialize, Deserialize)]
enum Event {
    Deposited(u64),
    Withdrawn(u64),
}

/// What an account is asked to do.
enum Command {
    Deposit(u64, ReplyTo<Result<u64, PersistError>>),
    /// Refused (nothing persisted) if the balance is short.
    Withdraw(u64, ReplyTo<Result<Result<u64, String>, PersistError>>),
    Balance(ReplyTo<Result<u64, PersistError>>),
}

struct Account {
    id: PersistenceId,
}

impl PersistentActor for Account {
    type Command = Command;
    type Event = Event;
    type State = u64;

    fn persistence_id(&self) -> PersistenceId {
        self.id.clone()
    }

    fn handle_command(&mut self, balance: &u64, cmd: Command) -> Effect<Self> {
        match cmd {
            Command::Deposit(n, r) => Effect::<Self>::persist(Event::Deposited(n)).reply(r, |b| *b),
            Command::Withdraw(n, r) if n > *balance => {
                let why = format!("balance {balance} is short of {n}");
                Effect::<Self>::none().reply(r, move |_| Err(why))
            }
            Command::Withdraw(n, r) => {
                Effect::<Self>::persist(Event::Withdrawn(n)).reply(r, |b| Ok(*b))
            }
            Command::Balance(r) => Effect::<Self>::none().reply(r, |b| *b),
        }
    }

    fn apply(balance: &mut u64, event: &Event) {
        match event {
            Event::Deposited(n) => *balance += n,
            Event::Withdrawn(n) => *balance -= n,
        }
    }
}

const T: Duration = Duration::from_secs(10);

fn session<S: Journal + SnapshotStore>(store: Arc<S>, work: bool) -> u64 {
    let system = ActorSystem::new();
    let id = PersistenceId::new("account", "alice").expect("a valid id");
    let account = system.spawn(troupe::Async::new(
        Persistent::new(Account { id }, store).config(PersistenceConfig {
            snapshot_every: Some(100),
            ..Default::default()
        }),
    ));
    if work {
        for n in 1..=10 {
            account
                .ask(|r| Command::Deposit(n * 10, r), T)
                .unwrap()
                .unwrap();
        }
        let refused = account
            .ask(|r| Command::Withdraw(1_000, r), T)
            .unwrap()
            .unwrap();
        println!("withdraw 1000: {refused:?}");
        let left = account
            .ask(|r| Command::Withdraw(50, r), T)
            .unwrap()
            .unwrap();
        println!("withdraw 50: {left:?}");
    }
    let balance = account.ask(Command::Balance, T).unwrap().unwrap();
    system.shutdown();
    balance
}

fn main() {
    let server = match std::env::var("NATS_URL") {
        Ok(_) => None,
        Err(_) if troupe_test_nats::available() => Some(
            troupe_test_nats::NatsServer::builder()
                .jetstream()
                .start()
                .expect("nats-server -js"),
        ),
        Err(_) => None,
    };
    let url = std::env::var("NATS_URL")
        .ok()
        .or(server.as_ref().map(|s| s.url()));
    match url {
        Some(url) => {
            let connect = || {
                Arc::new(
                    JetStreamStore::builder(&url)
                        .namespace("bank")
                        .connect()
                        .expect("connect"),
                )
            };
            let before = session(connect(), true);
            println!("balance {before}; the actor system and the connection are dropped");
            let after = session(connect(), false);
            println!("a new system recovered balance {after} from JetStream");
            assert_eq!(before, after);
        }
        None => {
            println!("no nats-server: on the in-memory store");
            let store = MemoryStore::new();
            let before = session(store.clone(), true);
            let after = session(store, false);
            println!("balance {before}, recovered {after}");
            assert_eq!(before, after);
        }
    }
}
