//! The protocol: what nodes say to each other, over any
//! [`Transport`](crate::transport::Transport). It names no transport type.
//!
//! # Subject scheme
//!
//! ```text
//! troupe.<cluster>.node.<node>      one inbox per node: tells (batched) and asks
//! ```
//!
//! One subject per *node*, with the target actor named in each frame, rather
//! than one subject per actor, because:
//! - tells to any actors on one node share one outbox, so a burst is
//!   coalesced into few messages whatever the mix of targets;
//! - exposing an actor is a local table insert, not a server round trip, and
//!   the server's interest graph grows with nodes, not actors;
//! - order is kept per (sender node, receiver node), which implies the
//!   per-(sender, actor) order users expect from local actors.
//!
//! The cost: "no responders" only says the *node* is absent; an actor that
//! a live node does not expose is reported by that node (status
//! `UnknownTarget`), which the asker sees as the same error.
//!
//! Every subject starts with `troupe.<cluster>.`, so two clusters sharing a
//! server never see each other's traffic (and a server's permissions can
//! fence a cluster with one `troupe.<cluster>.>` rule).
//!
//! # Files
//! - [`envelope`](crate::envelope): the frame layout, byte by byte;
//!   [`auth`](crate::auth): seals; [`message`](crate::message): type ids;
//!   [`portable`](crate::portable): the CBOR body encoding of types
//!   exposed to other languages;
//!   [`schema`](crate::schema): shape fingerprints;
//!   [`trace_context`](crate::trace_context): the W3C trace block a frame
//!   may carry; `otel.rs` (feature `otel`): the OpenTelemetry side of it.
//! - `core.rs`: a node's protocol state (`Core`), start and shutdown.
//! - `inbox.rs`: the inbox loop; `serve.rs`: the ask server and the
//!   handlers an exposed actor installs; `ask.rs`: the asking side.
//! - `links.rs`: the receiver's link accounting and the link task;
//!   `outbox.rs`: coalescing and the sender's half; `ledger.rs`: the
//!   sender's accounting of acks; `receipts.rs`: one tell's fate, for a
//!   sender who asked.
//! - `schema_export.rs`: the JSON document of a node's exposed types.
//! - `stats.rs`: the counters; `error.rs`: setup errors and the status ↔
//!   ask error mapping.

pub mod auth;
pub mod envelope;
pub mod message;
pub mod portable;
pub mod schema;
pub mod trace_context;

mod ask;
pub(crate) mod core;
pub(crate) mod error;
mod inbox;
pub(crate) mod ledger;
mod links;
pub(crate) mod otel;
pub(crate) mod outbox;
pub(crate) mod receipts;
pub(crate) mod schema_export;
pub(crate) mod serve;
pub(crate) mod stats;
