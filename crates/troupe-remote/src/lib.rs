//! # Troupe remote: actors in other processes, over NATS
//!
//! A [`Node`] joins a NATS server; [`Node::expose`] makes a local actor
//! reachable as `name@node`; [`Node::lookup`] gives a [`RemoteRef`] with
//! `tell` and `ask` that behave like a local reference's, with troupe's
//! error family ([`troupe::SendError`] hands the message back,
//! [`troupe::AskError`] says why an ask got no answer).
//!
//! A message type crosses processes only if it declares a stable name with
//! [`#[remote("...")]`](macro@remote), from which its 64-bit type id is
//! computed at compile time; `RemoteRef<M>` requires `M: RemoteMessage`, so
//! sending anything else does not compile.
//!
//! Both "processes" below run in one for the doctest, against a
//! `nats-server` it starts (the `#` lines); in real use each has its own.
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use std::time::Duration;
//! use troupe::{Actor, ActorSystem, Context, ReplyTo};
//! use troupe_remote::{remote, Node};
//!
//! #[remote("shop.cart.Add")]
//! #[derive(Serialize, Deserialize)]
//! struct Add { item: String, qty: u32 }
//!
//! #[remote("shop.cart.Total", reply = u32)]
//! #[derive(Serialize, Deserialize)]
//! struct Total;
//!
//! enum CartMsg { Add(Add), Total(Total, ReplyTo<u32>) }
//! impl From<Add> for CartMsg { fn from(a: Add) -> Self { CartMsg::Add(a) } }
//!
//! #[derive(Default)]
//! struct Cart { items: u32 }
//! impl Actor for Cart {
//!     type Msg = CartMsg;
//!     fn handle(&mut self, msg: CartMsg, _: &mut Context<'_, Self>) {
//!         match msg {
//!             CartMsg::Add(a) => self.items += a.qty,
//!             CartMsg::Total(_, reply) => { reply.reply(self.items); }
//!         }
//!     }
//! }
//!
//! # let Some(server) = troupe_test_nats::NatsServer::start_or_skip() else { return Ok(()) };
//! # let url = server.url(); // e.g. "nats://127.0.0.1:4222"
//! // Process 1
//! let system = ActorSystem::new();
//! let cart = system.spawn(Cart::default());
//! let shop = Node::builder(&url, "shop").insecure().connect()?;
//! shop.expose("cart", &cart).tell::<Add>().ask::<Total>(CartMsg::Total).serve()?;
//!
//! // Process 2
//! let client = Node::builder(&url, "client").insecure().connect()?;
//! let add = client.lookup::<Add>("cart@shop")?;
//! add.tell(Add { item: "tea".into(), qty: 2 }).unwrap();
//! client.flush(Duration::from_secs(1)); // asks may overtake queued tells
//! # std::thread::sleep(Duration::from_millis(100));
//! let total = add.retype::<Total>()?.ask(Total, Duration::from_secs(1));
//! assert_eq!(total, Ok(2));
//! # Ok::<(), troupe_remote::NodeError>(())
//! ```
//!
//! A type without a stable name cannot be looked up, hence not sent:
//!
//! ```compile_fail
//! # fn f(node: &troupe_remote::Node) {
//! let refused = node.lookup::<String>("cart@shop"); // String: RemoteMessage is not satisfied
//! # }
//! ```
//!
//! # Layers
//!
//! The crate is a house of three floors; a file imports only from its own
//! floor or below (`.ci/layers.py` checks it):
//!
//! 0. [`transport`]: the one place that knows how bytes travel: the
//!    [`Transport`](transport::Transport) trait (publish, subscribe,
//!    request/reply, [key-value buckets](transport::kv)),
//!    [`transport::nats`] (the only module that names an async-nats type,
//!    with its JetStream buckets and [`permissions`]: a subject the server
//!    forbids is an error at connect) and [`transport::memory`] (an
//!    in-process router and buckets that run the protocol, and the
//!    cluster, in tests).
//! 1. `protocol/`: what nodes say to each other: [`envelope`] (the frame
//!    layout, byte by byte), [`auth`] (the cluster key: HMAC-SHA256 seals,
//!    so only nodes holding it are obeyed), [`message`] (stable names, type
//!    ids), [`schema`] (shape fingerprints, and how to evolve a message
//!    type), [`portable`] (the CBOR bodies of types exposed to other
//!    languages), the schema export, the subject scheme, the inbox loop, the link/ack accounting,
//!    the ask server, the counters.
//! 2. `api/`: [`Node`], [`NodeBuilder`], [`RemoteRef`], [`Exposure`], and
//!    [`runtime`], the process's one I/O runtime.
//!
//! The `nats-server` child process that tests and benchmarks start is
//! the `troupe-test-nats` crate's.

#![warn(missing_docs)]

extern crate self as troupe_remote;

mod api;
mod protocol;
pub mod transport;

pub use api::builder::NodeBuilder;
pub use api::expose::Exposure;
pub use api::node::Node;
pub use api::receipt::{Receipt, ReceiptFuture};
pub use api::remote_ref::{EncodesAs, RemoteRef};
pub use api::runtime;
#[cfg(feature = "otel")]
pub use api::telemetry;
pub use api::{node_metrics, stats_export};
pub use protocol::core::{is_token, node_subject, ping_frame};
pub use protocol::error::NodeError;
pub use protocol::message::{
    type_id, type_id_extend, RemoteAsk, RemoteMessage, TypeEntry, TypeRegistry,
};
pub use protocol::receipts::{Delivered, TellRefusal, Undelivered};
pub use protocol::schema::SchemaMismatch;
pub use protocol::serve::TellOutcome;
pub use protocol::stats::NodeStats;
pub use protocol::{auth, envelope, message, portable, schema, trace_context};
pub use transport::permissions;
pub use troupe_macros::remote;
