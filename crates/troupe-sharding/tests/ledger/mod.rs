//! A sharded, persistent entity for the tests that kill things: a ledger
//! whose deposits are events in a JetStream journal, and a count of its
//! activations per id, across every node of the process.
//!
//! Deposit `k` (the `k`-th to one ledger, `k` from 1) carries the amount
//! `k`, so a ledger that holds exactly its first `n` deposits reads back
//! `Totals { events: n, sum: n (n + 1) / 2 }`: one lost, doubled or
//! reordered-away event shows in one of the two.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use troupe::{Async, ReplyTo};
use troupe_cluster::Cluster;
use troupe_persistence::{
    Effect, JetStreamStore, PersistError, PersistenceId, Persistent, PersistentActor,
};
use troupe_remote::remote;
use troupe_sharding::{ClusterSharding, ShardingBuilder};

/// Stores `amount` in the ledger; the reply is the number of events the
/// ledger holds once the deposit is in the journal, or why it is not.
#[remote("sharding.ledger.Deposit", reply = Result<u64, String>)]
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Deposit(pub u64);

/// The ledger's totals.
#[remote("sharding.ledger.Read", reply = Result<Totals, String>)]
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Read;

/// The journaled event.
#[remote("sharding.ledger.Deposited")]
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Deposited(pub u64);

/// A ledger's state: how many deposits, and their sum.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub events: u64,
    pub sum: u64,
}

impl Totals {
    /// The totals of a ledger that holds exactly deposits `1..=n`.
    pub fn after(n: u64) -> Totals {
        Totals {
            events: n,
            sum: n * (n + 1) / 2,
        }
    }
}

pub enum Command {
    Deposit(Deposit, ReplyTo<Result<u64, String>>),
    Read(ReplyTo<Result<Totals, String>>),
}

pub struct Ledger {
    id: PersistenceId,
}

impl Ledger {
    /// The ledger of sharding id `id` (journaled as `ledger/<id>`).
    pub fn new(id: &str) -> Ledger {
        Ledger {
            id: PersistenceId::new("ledger", id).expect("test ids are valid persistence ids"),
        }
    }
}

impl PersistentActor for Ledger {
    type Command = Command;
    type Event = Deposited;
    type State = Totals;

    fn persistence_id(&self) -> PersistenceId {
        self.id.clone()
    }

    fn handle_command(&mut self, _: &Totals, cmd: Command) -> Effect<Self> {
        match cmd {
            Command::Deposit(Deposit(n), reply) => {
                Effect::<Self>::persist(Deposited(n)).then(move |stored| {
                    reply.reply(stored.map(|t| t.events).map_err(PersistError::to_string));
                })
            }
            Command::Read(reply) => Effect::<Self>::none().then(move |state| {
                reply.reply(state.copied().map_err(PersistError::to_string));
            }),
        }
    }

    fn apply(t: &mut Totals, e: &Deposited) {
        t.events += 1;
        t.sum += e.0;
    }

    fn rejected(&mut self, cmd: Command, error: PersistError) {
        let why = error.to_string();
        match cmd {
            Command::Deposit(_, reply) => {
                reply.reply(Err(why));
            }
            Command::Read(reply) => {
                reply.reply(Err(why));
            }
        }
    }
}

pub type Entity = Async<Persistent<Ledger>>;

/// Activations per ledger id on the nodes of this process.
#[derive(Clone, Default)]
pub struct Activations(pub Arc<Mutex<HashMap<String, u64>>>);

impl Activations {
    pub fn of(&self, id: &str) -> u64 {
        self.0.lock().get(id).copied().unwrap_or(0)
    }
}

/// The `ledger` sharding type on `cluster`, journaled in `store`, before
/// `start`: every activation is counted in `activations`.
pub fn ledgers(
    cluster: &Arc<Cluster>,
    store: &Arc<JetStreamStore>,
    activations: &Activations,
) -> ShardingBuilder<Entity> {
    let (store, activations) = (store.clone(), activations.clone());
    cluster
        .sharding("ledger", move |id| {
            *activations.0.lock().entry(id.to_string()).or_insert(0) += 1;
            Async::new(Persistent::new(Ledger::new(id), store.clone()))
        })
        .ask::<Deposit>(Command::Deposit)
        .ask::<Read>(|_, reply| Command::Read(reply))
        .idle_timeout(None)
        .tick(Duration::from_millis(100))
}

/// Retries `f` every 200 ms until it succeeds or `limit` has passed
/// (JetStream elects its leaders after the servers listen).
pub fn retry<T, E: std::fmt::Display>(
    what: &str,
    limit: Duration,
    mut f: impl FnMut() -> Result<T, E>,
) -> T {
    let end = Instant::now() + limit;
    loop {
        match f() {
            Ok(v) => return v,
            Err(e) => {
                assert!(Instant::now() < end, "{what}: still failing: {e}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

/// The `p`-quantile of sorted durations (nearest rank).
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}
