//! At-least-once, ordered delivery to entities, on demand: a [`Producer`]
//! (the role of Akka's `ShardingProducerController`) and the entity's
//! [`Consumer`] table (its `ShardingConsumerController`).
//!
//! ```text
//!  Producer::send ──► permit (room) ──► stream (entity, epoch, seq) ──► [durable queue]
//!        ▲                                   │ one delivery out per stream
//!        │ permit back                       ▼
//!   Handled{upto} ◄──────── ask Deliver{producer, epoch, first, msgs} ──► entity:
//!                                            Delivery::handle / fresh + confirm,
//!                                            deduplicated by its Consumer table
//! ```
//!
//! The protocol, by file:
//! - [`wire`]: the two messages, [`Deliver`] and [`Confirmation`];
//! - `streams.rs`: the producer's streams, one per entity with something
//!   unconfirmed, their numbering and states;
//! - [`producer`]: the room, the windows, the driver task, retries;
//! - `queue.rs`: the optional durable queue (a JetStream-backed bucket
//!   of the cluster's transport per producer);
//! - [`consumer`]: the entity's deduplication rules and its bounded table;
//! - `stats.rs`: the producer's counters and its confirmation latency.
//!
//! What holds, and where it stops:
//! - **At least once, while a producer with the id runs.** A message
//!   accepted by `send` is delivered again and again until its entity
//!   confirms it. A confirmation is sent by the entity after it handled
//!   the message (a persistent entity: after its events are stored), not
//!   on arrival: a message in a mailbox that dies with its node is sent
//!   again. Without the durable queue what is unconfirmed dies with the
//!   producer's process; with it, the next producer with the id resends it.
//! - **Once per activation, in order.** Each stream's deliveries leave one
//!   at a time, each from the lowest unconfirmed message; the entity's
//!   table skips what it handled. An in-memory entity's table dies with
//!   its activation, like its state: a retry that reaches a new
//!   activation is handled by it. A persistent entity that records
//!   `(producer, epoch, seq)` in its events handles each message once
//!   over its whole life (exactly-once effect).
//! - **Bounded.** At most `max_unconfirmed` messages are unconfirmed in
//!   all (the producer's memory, its streams and its queue are bounded by
//!   it), at most `window` of them out to one entity (one delivery out per
//!   entity, of at most `window` messages); an entity's table holds at
//!   most [`consumer::MAX_PRODUCERS`] producers.
//! - **One producer per id at a time.** Epochs, which order a producer's
//!   streams across restarts, come from the wall clock (and, after a
//!   restart with the durable queue, from above every stored one): two
//!   producers running under one id, or a clock set back past an earlier
//!   run's epochs, make an entity answer `Stale` to messages it never
//!   handled, which the producer takes as confirmed.
//!
//! An in-memory entity:
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use troupe::{Actor, Context};
//! use troupe_sharding::delivery::{Consumer, Delivery};
//!
//! #[troupe_remote::remote("doc.counter.Add")]
//! #[derive(Serialize, Deserialize, Clone)]
//! struct Add(u64);
//!
//! enum Msg { Delivery(Delivery<Add>) }
//!
//! struct Counter { total: u64, consumer: Consumer }
//! impl Actor for Counter {
//!     type Msg = Msg;
//!     fn handle(&mut self, msg: Msg, _: &mut Context<'_, Self>) {
//!         match msg {
//!             Msg::Delivery(d) => {
//!                 d.handle(&mut self.consumer, |Add(n)| self.total += n);
//!             }
//!         }
//!     }
//! }
//! // cluster.sharding("counter", |_| Counter { total: 0, consumer: Consumer::new() })
//! //     .deliveries::<Add>(Msg::Delivery)   // troupe_sharding::delivery::Deliveries
//! ```
//!
//! A persistent entity keeps the table in its state and records in
//! `apply`, so a command delivered twice stores its events once:
//!
//! ```ignore
//! fn handle_command(&mut self, state: &State, cmd: Cmd) -> Effect<Self> {
//!     match cmd {
//!         Cmd::Delivery(d) => {
//!             let events: Vec<Added> = match d.fresh(&state.consumer) {
//!                 Some(fresh) => fresh
//!                     .map(|(seq, m)| Added { producer: d.producer().into(), epoch: d.epoch(), seq, n: m.0 })
//!                     .collect(),
//!                 None => Vec::new(),
//!             };
//!             Effect::persist_all(events).then(move |stored| match stored {
//!                 Ok(state) => d.confirm(&state.consumer),
//!                 Err(_) => d.fail(),
//!             })
//!         }
//!     }
//! }
//! fn apply(state: &mut State, e: &Added) {
//!     state.consumer.record(&e.producer, e.epoch, e.seq);
//!     state.total += e.n;
//! }
//! ```

pub mod consumer;
pub mod producer;
mod queue;
mod stats;
mod streams;
pub mod wire;

pub use consumer::{Consumer, Deliveries, Delivery};
pub use producer::{
    Producer, ProducerBuilder, ProducerError, StartError, Unconfirmed, DEFAULT_MAX_UNCONFIRMED,
};
pub use stats::{Latency, ProducerStats};
pub use wire::{Confirmation, Deliver};
