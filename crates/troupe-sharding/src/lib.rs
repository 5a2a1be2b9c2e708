//! # Troupe sharding: entities addressed by type and id
//!
//! `cluster.sharding::<Cart>("cart", factory)` makes `Cart` a sharded
//! entity type: [`Sharding::entity`] gives an [`EntityRef`] with `tell` and
//! `ask`, usable from any node, from plain threads and (with
//! [`EntityRef::ask_async`]) from actors. The cluster runs each entity on
//! one node, starts it on its first message (the factory builds it from
//! its id), stops it when idle, and moves it when nodes come and go.
//! Entities are ordinary Troupe actors, sync or async ([`troupe::Async`]).
//!
//! ```no_run
//! use serde::{Deserialize, Serialize};
//! use std::{sync::Arc, time::Duration};
//! use troupe::{Actor, Context, ReplyTo};
//! use troupe_cluster::Cluster;
//! use troupe_remote::remote;
//! use troupe_sharding::ClusterSharding;
//!
//! #[remote("shop.cart.Add")]
//! #[derive(Serialize, Deserialize)]
//! struct Add(u32);
//! #[remote("shop.cart.Total", reply = u32)]
//! #[derive(Serialize, Deserialize)]
//! struct Total;
//!
//! enum CartMsg { Add(Add), Total(ReplyTo<u32>) }
//! impl From<Add> for CartMsg { fn from(a: Add) -> Self { CartMsg::Add(a) } }
//!
//! struct Cart { items: u32 }
//! impl Actor for Cart {
//!     type Msg = CartMsg;
//!     fn handle(&mut self, msg: CartMsg, _: &mut Context<'_, Self>) {
//!         match msg {
//!             CartMsg::Add(Add(n)) => self.items += n,
//!             CartMsg::Total(r) => { r.reply(self.items); }
//!         }
//!     }
//! }
//!
//! let cluster = Arc::new(Cluster::builder("nats://127.0.0.1:4222", "n1").insecure().connect()?);
//! let carts = cluster
//!     .sharding("cart", |_id| Cart { items: 0 })
//!     .tell::<Add>()
//!     .ask::<Total>(|_, r| CartMsg::Total(r))
//!     .start()?;
//! let cart = carts.entity("user-42");
//! cart.tell(Add(2)).ok();
//! assert_eq!(cart.ask(Total, Duration::from_secs(1)), Ok(2));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Invariants
//!
//! - **One owner per shard.** An id maps to one of a fixed number of
//!   shards ([`placement::shard_of`], a stable FNV-1a hash). A shard's
//!   owner is recorded in the ownership store ([`ownership`]; by default a
//!   key-value bucket of the cluster's transport) and changes only by a revision-checked write, so
//!   two nodes never hold one record revision.
//! - **Fencing.** The record's revision is the shard's fencing token: a
//!   region spawns an entity only after reading the record back as
//!   `(itself, token)`; a coordinator that finds its shard owned by
//!   another kills the shard's entities at once ([`region`]).
//! - **Lease.** A region delivers to an owned shard only within three
//!   coordinator ticks of the coordinator's last successful read of the
//!   records; a node paused or cut off longer (and so possibly declared
//!   down and replaced) delivers nothing until it has read them again.
//!   The direct path (below) checks the same lease, ended a little earlier.
//!   A node that takes a shard over delivers only once the old owner's
//!   lease has surely run out (a lease and a tick after its claim), so a
//!   node cut off but still running never handles an entity's messages
//!   while another does ([`coordinator`], "Taking over").
//! - **Direct path.** A remote tell to an entity active on its owner is
//!   handed to the entity by the node's inbox loop, without the region
//!   actor's thread, when nothing for that node waits in the region; the
//!   region publishes which entities qualify (`region/direct.rs`).
//! - **Hand-over.** When placement moves a shard (a node joins or
//!   leaves), the old owner stops the shard's entities (each handles what
//!   is in its mailbox first), then releases the record; the new owner
//!   claims it ([`coordinator`]). A shard of a node declared down is
//!   claimed by the survivor that placement picks.
//! - **No silent loss.** An envelope for a shard without an owner here is
//!   forwarded to the owner or buffered (bounded, with a timeout) and
//!   delivered after the move; a local tell refused by a full buffer comes
//!   back as a `SendError`, a remote tell the owner's buffer could not
//!   take is refused by the owner's inbox before it is confirmed (the
//!   sender's node counts it in `NodeStats::tells_refused_by_peer`); every
//!   envelope dropped is counted in [`ShardingStats`] and logged at a
//!   limited rate, and an ask is answered with the reason
//!   ([`envelope::Refusal`]: whether the entity can have handled it). What
//!   an entity's mailbox held when it stopped itself or panicked goes to
//!   its next instance (`redelivered`); what it held when it was killed
//!   (a lost shard, a leave that could not drain) is dropped and counted
//!   (`mailbox_dropped`, and the actor system's `dropped_messages`).
//! - **Hostile input.** Envelopes from the network are checked
//!   ([`envelope::check`]: id length, hop count), the shard is computed
//!   locally, bad payloads are counted; nothing from the wire can panic a
//!   region.
//!
//! ## Who writes what
//!
//! The coordinator thread ([`coordinator`]) alone writes owner records and
//! the routing table; the region actor ([`region`]) alone spawns and
//! stops entities, writes remembered ids and publishes the direct path's
//! table; entity references only read the routing table (each sending
//! thread keeps the table it last read while it is the published one,
//! `shared.rs`); the inbox loop only reads the direct path's table and
//! writes its direct-delivery counter.

//! ## Layers
//!
//! A file imports only from its own floor or below (`.ci/layers.py`
//! checks it): 0 wire: [`placement`], [`envelope`], `config.rs`,
//! `stats.rs`; 1 store: [`ownership`] (through troupe-remote's
//! transport seam; no file names async-nats), [`controls`] (drain, down,
//! pause, kept in the store); 2 region: `shared.rs`, [`region`]; 3
//! [`coordinator`]; 4 api: `sharding.rs` ([`ClusterSharding`],
//! [`Sharding`], [`EntityRef`]), [`metrics`] (the counters to Prometheus
//! and OpenTelemetry), [`delivery`] (the at-least-once producer and the
//! entity's deduplication, on top of `sharding.rs`'s asks); 5 [`singleton`]
//! (one entity of a one-shard type, on top of `sharding.rs`), [`reminders`]
//! (durable timers of entities, in the transport's key-value store),
//! [`gateway`] (the portable entry for clients in other languages, on
//! top of `sharding.rs`'s entity references).

#![warn(missing_docs)]

mod config;
pub mod controls;
pub mod coordinator;
pub mod delivery;
pub mod envelope;
pub mod gateway;
pub mod metrics;
pub mod moving;
pub mod ownership;
pub mod placement;
pub mod region;
pub mod reminders;
mod sharding;
mod shared;
pub mod singleton;
mod stats;

pub use config::Config;
pub use sharding::{ClusterSharding, EntityRef, Sharding, ShardingBuilder, ShardingError};
pub use singleton::{ClusterSingleton, Singleton, SingletonBuilder, SingletonRef};
pub use stats::ShardingStats;

/// `use troupe_sharding::prelude::*;` for the extension trait and the handles.
pub mod prelude {
    pub use crate::{ClusterSharding, ClusterSingleton, EntityRef, Sharding, SingletonRef};
}
