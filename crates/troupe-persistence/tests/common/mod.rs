//! A bank account, event-sourced, and a durable counter, shared by the tests.
#![allow(dead_code)]

use serde::{Deserialize, Serialize};
use std::time::Duration;
use troupe::ReplyTo;
use troupe_persistence::{
    Change, DurableActor, Effect, PersistError, PersistenceId, PersistentActor,
};

pub const T: Duration = Duration::from_secs(10);

#[troupe_remote::remote("test.account.Event")]
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Event {
    Deposited(u64),
    Withdrawn(u64),
}

#[derive(Default, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Balance {
    pub balance: u64,
    /// Every amount in the order applied.
    pub history: Vec<i64>,
}

pub type Reply<R> = ReplyTo<Result<R, PersistError>>;

pub enum Cmd {
    Deposit(u64, Reply<u64>),
    /// Two events in one append.
    DepositTwice(u64, Reply<u64>),
    Withdraw(u64, Reply<Result<u64, String>>),
    Get(Reply<Balance>),
    Snapshot(Reply<u64>),
}

pub struct Account {
    pub id: PersistenceId,
}

pub fn account(id: &str) -> Account {
    Account {
        id: PersistenceId::new("account", id).unwrap(),
    }
}

impl PersistentActor for Account {
    type Command = Cmd;
    type Event = Event;
    type State = Balance;

    fn persistence_id(&self) -> PersistenceId {
        self.id.clone()
    }

    fn handle_command(&mut self, state: &Balance, cmd: Cmd) -> Effect<Self> {
        match cmd {
            Cmd::Deposit(n, r) => {
                Effect::<Self>::persist(Event::Deposited(n)).reply(r, |s| s.balance)
            }
            Cmd::DepositTwice(n, r) => {
                Effect::<Self>::persist_all(vec![Event::Deposited(n), Event::Deposited(n)])
                    .reply(r, |s| s.balance)
            }
            Cmd::Withdraw(n, r) if n > state.balance => {
                let refused = format!("balance {} < {n}", state.balance);
                Effect::<Self>::none().reply(r, move |_| Err(refused))
            }
            Cmd::Withdraw(n, r) => {
                Effect::<Self>::persist(Event::Withdrawn(n)).reply(r, |s| Ok(s.balance))
            }
            Cmd::Get(r) => Effect::<Self>::none().reply(r, Balance::clone),
            Cmd::Snapshot(r) => Effect::<Self>::none().snapshot().reply(r, |s| s.balance),
        }
    }

    fn apply(state: &mut Balance, event: &Event) {
        match *event {
            Event::Deposited(n) => {
                state.balance += n;
                state.history.push(n as i64);
            }
            Event::Withdrawn(n) => {
                state.balance -= n;
                state.history.push(-(n as i64));
            }
        }
    }
}

/// A counter whose whole state is stored on each change.
pub struct Counter {
    pub id: PersistenceId,
}

pub enum CounterCmd {
    Add(u64, Reply<u64>),
    Get(Reply<u64>),
}

impl DurableActor for Counter {
    type Command = CounterCmd;
    type State = u64;

    fn persistence_id(&self) -> PersistenceId {
        self.id.clone()
    }

    fn handle_command(&mut self, state: &u64, cmd: CounterCmd) -> Change<Self> {
        match cmd {
            CounterCmd::Add(n, r) => Change::<Self>::set(state + n).reply(r, |s| *s),
            CounterCmd::Get(r) => Change::<Self>::none().reply(r, |s| *s),
        }
    }
}
