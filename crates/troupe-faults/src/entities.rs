//! The two entity kinds under test, sharded and persistent on JetStream:
//!
//! - `register`: a durable-state entity (the whole value stored on each
//!   write, with a revision check) holding one `u64`; `Write(v)` stores
//!   `v`, `ReadRegister` answers the value;
//! - `ledger`: an event-sourced entity whose `Deposit(amount)` journals one
//!   event and answers the balance after it; `ReadBalance` answers the
//!   balance.
//!
//! Every reply carries a [`Stamp`]: the node and the activation that
//! handled the command, and when its handler ran (on the run's one clock,
//! [`crate::clock::now`]). For a write or a deposit that is before the
//! store confirms it: the confirmation of a write the instance began
//! while it was the only one can arrive after a new instance was created
//! (under latency, a partition), and that is not a second instance
//! handling a command. Whether such a late write took effect after the
//! new instance loaded its state is what the linearizability check (a
//! stale read) and the store's fencing (a refused write) see. An activation is a random number drawn when
//! the entity is created, so the checker can tell two instances of one id
//! apart and find intervals in which both handled commands (a double
//! activation) without any shared memory between the processes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use troupe::{Async, ReplyTo};
use troupe_cluster::Cluster;
use troupe_persistence::{
    Change, Durable, DurableActor, Effect, JetStreamStore, PersistError, PersistenceId, Persistent,
    PersistentActor,
};
use troupe_remote::remote;
use troupe_sharding::{ClusterSharding, ShardingBuilder};

use crate::history::History;

/// Shards per entity kind; the same on every node.
pub const SHARDS: u32 = 16;

/// Which instance handled a command, and when.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// The node (its name, which holds its incarnation).
    pub node: String,
    /// The activation: drawn at random when the instance was created.
    pub act: u64,
    /// When the command's handler ran ([`crate::clock::now`], ns).
    pub at: u64,
}

/// What an entity answers: its value and stamp, or why the command failed
/// (the store's error, as text).
pub type Answer = Result<(u64, Stamp), String>;

/// Stores `v` in the register; answers `v`.
#[remote("faults.register.Write", reply = Answer)]
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Write(pub u64);

/// The register's value.
#[remote("faults.register.Read", reply = Answer)]
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct ReadRegister;

/// Journals a deposit of `amount`; answers the balance after it.
#[remote("faults.ledger.Deposit", reply = Answer)]
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Deposit(pub u64);

/// The ledger's balance.
#[remote("faults.ledger.Read", reply = Answer)]
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct ReadBalance;

/// The ledger's journaled event.
#[remote("faults.ledger.Deposited")]
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Deposited(pub u64);

/// The register's stored state.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default)]
pub struct Value(pub u64);

/// Who this instance is, for its stamps.
#[derive(Clone)]
struct Instance {
    node: Arc<str>,
    act: u64,
}

#[derive(Serialize)]
struct Activated<'a> {
    k: &'static str,
    kind: &'a str,
    key: &'a str,
    node: &'a str,
    act: u64,
    t: u64,
}

impl Instance {
    /// A new activation of `kind`/`key` on `node`, recorded in `history`
    /// (an `{"k":"activated"}` line: when the instance was created, before
    /// it loads its state).
    fn new(node: &Arc<str>, kind: &str, key: &str, history: &History) -> Instance {
        let me = Instance {
            node: node.clone(),
            act: fresh_activation(),
        };
        history.record(&Activated {
            k: "activated",
            kind,
            key,
            node: &me.node,
            act: me.act,
            t: crate::clock::now(),
        });
        me
    }
    fn stamp(&self) -> Stamp {
        Stamp {
            node: self.node.to_string(),
            act: self.act,
            at: crate::clock::now(),
        }
    }
}

/// A number no other activation of this run draws: the clock mixed with a
/// per-process counter and the process id (splitmix64's finalizer).
fn fresh_activation() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut z = crate::clock::now()
        ^ (u64::from(std::process::id()) << 40)
        ^ NEXT
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The register's commands.
pub enum RegisterCmd {
    /// Store a value.
    Write(u64, ReplyTo<Answer>),
    /// Answer the value.
    Read(ReplyTo<Answer>),
}

/// A durable register (see the module docs).
pub struct Register {
    id: PersistenceId,
    me: Instance,
}

impl DurableActor for Register {
    type Command = RegisterCmd;
    type State = Value;

    fn persistence_id(&self) -> PersistenceId {
        self.id.clone()
    }

    fn handle_command(&mut self, state: &Value, cmd: RegisterCmd) -> Change<Self> {
        // Stamped when the handler runs (see the module docs).
        let stamp = self.me.stamp();
        match cmd {
            RegisterCmd::Write(v, reply) => Change::set(Value(v)).then(move |stored| {
                reply.reply(
                    stored
                        .map(|s: &Value| (s.0, stamp))
                        .map_err(PersistError::to_string),
                );
            }),
            RegisterCmd::Read(reply) => {
                reply.reply(Ok((state.0, stamp)));
                Change::none()
            }
        }
    }

    fn rejected(&mut self, cmd: RegisterCmd, error: PersistError) {
        let why = error.to_string();
        match cmd {
            RegisterCmd::Write(_, reply) | RegisterCmd::Read(reply) => {
                reply.reply(Err(why));
            }
        }
    }
}

/// The ledger's commands.
pub enum LedgerCmd {
    /// Journal a deposit.
    Deposit(u64, ReplyTo<Answer>),
    /// Answer the balance.
    Read(ReplyTo<Answer>),
}

/// An event-sourced ledger (see the module docs).
pub struct Ledger {
    id: PersistenceId,
    me: Instance,
}

impl PersistentActor for Ledger {
    type Command = LedgerCmd;
    type Event = Deposited;
    type State = Value;

    fn persistence_id(&self) -> PersistenceId {
        self.id.clone()
    }

    fn handle_command(&mut self, _: &Value, cmd: LedgerCmd) -> Effect<Self> {
        // Stamped when the handler runs (see the module docs).
        let stamp = self.me.stamp();
        match cmd {
            LedgerCmd::Deposit(n, reply) => {
                Effect::<Self>::persist(Deposited(n)).then(move |stored| {
                    reply.reply(
                        stored
                            .map(|s| (s.0, stamp))
                            .map_err(PersistError::to_string),
                    );
                })
            }
            LedgerCmd::Read(reply) => Effect::<Self>::none().then(move |state| {
                reply.reply(state.map(|s| (s.0, stamp)).map_err(PersistError::to_string));
            }),
        }
    }

    fn apply(v: &mut Value, e: &Deposited) {
        v.0 = v.0.saturating_add(e.0);
    }

    fn rejected(&mut self, cmd: LedgerCmd, error: PersistError) {
        let why = error.to_string();
        match cmd {
            LedgerCmd::Deposit(_, reply) | LedgerCmd::Read(reply) => {
                reply.reply(Err(why));
            }
        }
    }
}

/// The register entity as sharding hosts it.
pub type RegisterEntity = Async<Durable<Register>>;
/// The ledger entity as sharding hosts it.
pub type LedgerEntity = Async<Persistent<Ledger>>;

/// Sharding settings both kinds share: entities never passivate (every
/// activation is then a move or a restart), ticks as the tests use them.
pub(crate) fn common<A: troupe::Actor>(b: ShardingBuilder<A>) -> ShardingBuilder<A> {
    b.shards(SHARDS)
        .replicas(3)
        .idle_timeout(None)
        .tick(Duration::from_millis(150))
}

pub(crate) fn pid(kind: &str, id: &str) -> PersistenceId {
    // Ids come from this crate's driver (`r0`, `l3`): valid by construction;
    // a bad one falls back to a fixed id rather than panic a node.
    PersistenceId::new(kind, id).unwrap_or_else(|_| {
        PersistenceId::new(kind, "invalid").expect("a literal persistence id is valid")
    })
}

/// The `register` sharding type on `cluster`, stored in `store`; each
/// activation is recorded in `history`.
pub fn registers(
    cluster: &Arc<Cluster>,
    store: &Arc<JetStreamStore>,
    node: &Arc<str>,
    history: &Arc<History>,
) -> ShardingBuilder<RegisterEntity> {
    let (store, node, history) = (store.clone(), node.clone(), history.clone());
    let b = cluster
        .sharding("register", move |id| {
            Async::new(Durable::new(
                Register {
                    id: pid("register", id),
                    me: Instance::new(&node, "register", id, &history),
                },
                store.clone(),
            ))
        })
        .ask::<Write>(|Write(v), r| RegisterCmd::Write(v, r))
        .ask::<ReadRegister>(|_, r| RegisterCmd::Read(r));
    common(b)
}

/// The `ledger` sharding type on `cluster`, journaled in `store`; each
/// activation is recorded in `history`.
pub fn ledgers(
    cluster: &Arc<Cluster>,
    store: &Arc<JetStreamStore>,
    node: &Arc<str>,
    history: &Arc<History>,
) -> ShardingBuilder<LedgerEntity> {
    let (store, node, history) = (store.clone(), node.clone(), history.clone());
    let b = cluster
        .sharding("ledger", move |id| {
            Async::new(Persistent::new(
                Ledger {
                    id: pid("ledger", id),
                    me: Instance::new(&node, "ledger", id, &history),
                },
                store.clone(),
            ))
        })
        .ask::<Deposit>(|Deposit(n), r| LedgerCmd::Deposit(n, r))
        .ask::<ReadBalance>(|_, r| LedgerCmd::Read(r));
    common(b)
}
