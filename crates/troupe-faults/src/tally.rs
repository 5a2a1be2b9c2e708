//! The `tally` kind: an event-sourced entity fed by at-least-once
//! producers (`troupe_sharding::delivery`), which records what it handled
//! per producer so the checker can count exactly.
//!
//! Each journaled event is one message with its place in its producer's
//! stream (`producer, epoch, seq`) and the producer's own number `n` for
//! this tally (1, 2, 3, ...). `apply` records the place in the entity's
//! [`Consumer`] table, so a delivery repeated after a move, a kill or a
//! lost confirmation stores nothing twice (the exactly-once effect the
//! producer promises persistent entities), and keeps per producer: how
//! many messages it handled, the last `n`, and how many came out of
//! order (an `n` other than the last one's plus one). A correct run has,
//! for every producer, `count == last` and `out_of_order == 0`: every
//! message handled once, in order, none skipped.
//!
//! The table of producers is bounded by the run: one producer per node
//! incarnation.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use troupe::{Async, ReplyTo};
use troupe_cluster::Cluster;
use troupe_persistence::{
    Effect, JetStreamStore, PersistError, PersistenceId, Persistent, PersistentActor,
};
use troupe_remote::remote;
use troupe_sharding::delivery::{Consumer, Deliveries, Delivery};
use troupe_sharding::{ClusterSharding, ShardingBuilder};

use crate::entities::{common, pid};

/// The `n`-th message of one producer to one tally (from 1).
#[remote("faults.tally.Item")]
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Item(pub u64);

/// What the tally saw of each producer.
#[remote("faults.tally.Read", reply = Result<Vec<Seen>, String>)]
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct ReadTally;

/// One producer's messages as the tally handled them.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    /// The producer's id.
    pub producer: String,
    /// Messages handled.
    pub count: u64,
    /// The last one's `n`.
    pub last: u64,
    /// Messages whose `n` was not the last one's plus one.
    pub out_of_order: u64,
}

/// The journaled event: one message, with its place in its stream.
#[remote("faults.tally.Added")]
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Added {
    producer: String,
    epoch: u64,
    seq: u64,
    n: u64,
}

/// The tally's state: its deduplication table and what it saw.
#[derive(Serialize, Deserialize, Default)]
pub struct State {
    consumer: Consumer,
    seen: BTreeMap<String, Seen>,
}

/// The tally's commands.
pub enum TallyCmd {
    /// A producer's delivery.
    Delivery(Delivery<Item>),
    /// Answer what it saw.
    Read(ReplyTo<Result<Vec<Seen>, String>>),
}

/// The event-sourced tally (see the module docs).
pub struct Tally {
    id: PersistenceId,
}

impl PersistentActor for Tally {
    type Command = TallyCmd;
    type Event = Added;
    type State = State;

    fn persistence_id(&self) -> PersistenceId {
        self.id.clone()
    }

    fn handle_command(&mut self, state: &State, cmd: TallyCmd) -> Effect<Self> {
        match cmd {
            TallyCmd::Delivery(d) => {
                let events: Vec<Added> = match d.fresh(&state.consumer) {
                    Some(fresh) => fresh
                        .map(|(seq, Item(n))| Added {
                            producer: d.producer().to_string(),
                            epoch: d.epoch(),
                            seq,
                            n: *n,
                        })
                        .collect(),
                    None => Vec::new(),
                };
                // Confirmed only once its events are stored; a failed
                // append is answered `Failed` and sent again.
                Effect::<Self>::persist_all(events).then(move |stored| match stored {
                    Ok(state) => d.confirm(&state.consumer),
                    Err(_) => d.fail(),
                })
            }
            TallyCmd::Read(reply) => Effect::<Self>::none().then(move |state| {
                reply.reply(
                    state
                        .map(|s| s.seen.values().cloned().collect())
                        .map_err(PersistError::to_string),
                );
            }),
        }
    }

    fn apply(state: &mut State, e: &Added) {
        state.consumer.record(&e.producer, e.epoch, e.seq);
        let s = state.seen.entry(e.producer.clone()).or_default();
        if s.producer.is_empty() {
            s.producer = e.producer.clone();
        }
        s.count = s.count.saturating_add(1);
        if e.n != s.last.saturating_add(1) {
            s.out_of_order = s.out_of_order.saturating_add(1);
        }
        s.last = e.n;
    }

    fn rejected(&mut self, cmd: TallyCmd, _error: PersistError) {
        match cmd {
            // Not handled: the producer sends it again.
            TallyCmd::Delivery(d) => d.fail(),
            TallyCmd::Read(reply) => {
                reply.reply(Err("rejected".into()));
            }
        }
    }
}

/// The tally entity as sharding hosts it.
pub type TallyEntity = Async<Persistent<Tally>>;

/// The `tally` sharding type on `cluster`, journaled in `store`.
pub fn tallies(
    cluster: &Arc<Cluster>,
    store: &Arc<JetStreamStore>,
) -> ShardingBuilder<TallyEntity> {
    let store = store.clone();
    let b = cluster
        .sharding("tally", move |id| {
            Async::new(Persistent::new(
                Tally {
                    id: pid("tally", id),
                },
                store.clone(),
            ))
        })
        .deliveries::<Item>(TallyCmd::Delivery)
        .ask::<ReadTally>(|_, r| TallyCmd::Read(r));
    common(b)
}
