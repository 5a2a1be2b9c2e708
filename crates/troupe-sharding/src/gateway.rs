//! The portable entry to sharded entities: processes in other languages
//! tell and ask an entity by kind and id through any node.
//!
//! A region's envelopes ([`envelope`](crate::envelope)) are postcard of
//! Rust types, so only a Rust peer can write them. A node that runs a
//! [`Gateway`] exposes one more actor, `shard-gateway` ([`GATEWAY`]), on
//! its ordinary inbox (`troupe.<cluster>.node.<node>`, target id
//! `type_id("shard-gateway")`), which takes two portable types: a client
//! sends them as it sends any tell or ask to an exposed actor (link frame,
//! numbering, seal, CBOR flag), and the gateway routes each with this
//! node's [`EntityRef`], so the entity is reached
//! wherever its shard lives (forwarded, or buffered while it moves).
//!
//! # The messages, in order
//!
//! 1. **Tell** ([`GatewayTell`], `troupe.sharding.gateway.Tell.v1`): a
//!    tell frame to `shard-gateway` whose body is `{kind, id, type, body}`:
//!    the sharding's kind, the entity id, the stable name of the message
//!    type and that message's CBOR bytes (a byte string). The node decodes
//!    it and hands it to the gateway actor (the frame's fate is
//!    "delivered" from then on); the gateway finds the kind and the type
//!    the gateway was given, decodes `body` to the type and tells the
//!    entity. What it refuses (an unknown kind or type, an id of 0 or more
//!    than 256 bytes, a body that does not decode, the entity's region
//!    refusing the tell) is counted in [`GatewayStats`] and logged at a
//!    limited rate; a tell has no reply.
//! 2. **Ask** ([`GatewayAsk`], `troupe.sharding.gateway.Ask.v1`): an ask
//!    frame to `shard-gateway`, body `{kind, id, type, body, timeout_ms}`.
//!    The gateway checks it as a tell, asks the entity with a deadline of
//!    `timeout_ms` (0: [`DEFAULT_ASK`], at most [`MAX_ASK`]) and answers
//!    with a reply frame of status Ok whose body is a [`GatewayReply`]:
//!    `{"Ok": bytes}` (the entity's reply, CBOR) or the name of a
//!    refusal as a text string (`"UnknownKind"`, see [`GatewayRefusal`]). A frame-level failure (a seal, a body that is
//!    not a `GatewayAsk`) is answered by the node with its status
//!    (`BadFrame`), as for any exposed actor.
//!
//! # Invariants
//!
//! - Nothing read off the wire can panic the gateway: every lookup is by
//!   borrowed name in a table fixed at [`GatewayBuilder::serve`], every
//!   decode is checked, ids are checked ([`envelope::check`](crate::envelope::check))
//!   before an entity reference is made.
//! - Bounded state: at most [`MAX_WAITING`] asks wait for their entity at
//!   once; one more is answered `MailboxFull` (not run).
//! - The gateway never blocks: tells use the entity reference's `tell`
//!   (which never blocks); asks wait in a task of the cluster's I/O
//!   runtime, not on the gateway's thread.
//! - Order: one gateway actor per node takes the tells in the order the
//!   node's inbox delivered them and tells each entity in that order, so
//!   tells from one client through one node to one entity keep their
//!   order while the shard stays where it is, as a Rust sender's do.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::FutureExt;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use troupe::{Actor, ActorSystem, AskError, Context, ReplyTo, SendError, SpawnOptions};
use troupe_cluster::Cluster;
use troupe_remote::portable::{decode_cbor, encode_cbor};
use troupe_remote::{remote, RemoteAsk, RemoteMessage};

use crate::envelope::check;
use crate::sharding::{EntityRef, Sharding, ShardingError};

/// The name the gateway is exposed under on every node that runs one.
pub const GATEWAY: &str = "shard-gateway";
/// An ask's deadline when the client gives 0.
pub const DEFAULT_ASK: Duration = Duration::from_secs(5);
/// The longest deadline a client may give an ask.
pub const MAX_ASK: Duration = Duration::from_secs(60);
/// Most asks that wait for their entity at once on one gateway.
pub const MAX_WAITING: usize = 10_000;

/// A message's bytes: a CBOR byte string (postcard: a length and the bytes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Payload(pub Vec<u8>);

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Bytes;
        impl serde::de::Visitor<'_> for Bytes {
            type Value = Payload;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a byte string")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Payload, E> {
                Ok(Payload(v.to_vec()))
            }
            fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<Payload, E> {
                Ok(Payload(v))
            }
        }
        d.deserialize_byte_buf(Bytes)
    }
}

/// A tell to entity `id` of sharding `kind`: `body` is the CBOR of a
/// message of stable name `type`.
#[remote("troupe.sharding.gateway.Tell.v1")]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct GatewayTell {
    /// The sharding's kind (`cluster.sharding("cart", ..)`: `cart`).
    pub kind: String,
    /// The entity's id (1 to 256 bytes).
    pub id: String,
    /// The message's stable name (`#[remote("shop.cart.AddItem")]`).
    #[serde(rename = "type")]
    pub type_name: String,
    /// The message, CBOR.
    pub body: Payload,
}

/// An ask of entity `id` of sharding `kind`, answered within `timeout_ms`.
#[remote("troupe.sharding.gateway.Ask.v1", reply = GatewayReply)]
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct GatewayAsk {
    /// The sharding's kind.
    pub kind: String,
    /// The entity's id (1 to 256 bytes).
    pub id: String,
    /// The request's stable name.
    #[serde(rename = "type")]
    pub type_name: String,
    /// The request, CBOR.
    pub body: Payload,
    /// How long the entity may take (0: [`DEFAULT_ASK`]; at most [`MAX_ASK`]).
    pub timeout_ms: u32,
}

/// The answer to a [`GatewayAsk`]: the entity's reply, or the name of
/// the refusal ([`GatewayRefusal`], one unit variant each, so that the
/// CBOR is `{"Ok": bytes}` or a text string such as `"UnknownKind"`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub enum GatewayReply {
    /// The entity's reply, CBOR.
    Ok(Payload),
    /// [`GatewayRefusal::UnknownKind`].
    UnknownKind,
    /// [`GatewayRefusal::UnknownType`].
    UnknownType,
    /// [`GatewayRefusal::BadId`].
    BadId,
    /// [`GatewayRefusal::Undecodable`].
    Undecodable,
    /// [`GatewayRefusal::NoResponders`].
    NoResponders,
    /// [`GatewayRefusal::MailboxFull`].
    MailboxFull,
    /// [`GatewayRefusal::ActorStopped`].
    ActorStopped,
    /// [`GatewayRefusal::NoReply`].
    NoReply,
    /// [`GatewayRefusal::Timeout`].
    Timeout,
    /// [`GatewayRefusal::Disconnected`].
    Disconnected,
}

impl GatewayReply {
    /// The refusal this reply stands for (`None` for `Ok`).
    pub fn refusal(&self) -> Option<GatewayRefusal> {
        Some(match self {
            GatewayReply::Ok(_) => return None,
            GatewayReply::UnknownKind => GatewayRefusal::UnknownKind,
            GatewayReply::UnknownType => GatewayRefusal::UnknownType,
            GatewayReply::BadId => GatewayRefusal::BadId,
            GatewayReply::Undecodable => GatewayRefusal::Undecodable,
            GatewayReply::NoResponders => GatewayRefusal::NoResponders,
            GatewayReply::MailboxFull => GatewayRefusal::MailboxFull,
            GatewayReply::ActorStopped => GatewayRefusal::ActorStopped,
            GatewayReply::NoReply => GatewayRefusal::NoReply,
            GatewayReply::Timeout => GatewayRefusal::Timeout,
            GatewayReply::Disconnected => GatewayRefusal::Disconnected,
        })
    }
}

impl From<GatewayRefusal> for GatewayReply {
    fn from(r: GatewayRefusal) -> Self {
        match r {
            GatewayRefusal::UnknownKind => GatewayReply::UnknownKind,
            GatewayRefusal::UnknownType => GatewayReply::UnknownType,
            GatewayRefusal::BadId => GatewayReply::BadId,
            GatewayRefusal::Undecodable => GatewayReply::Undecodable,
            GatewayRefusal::NoResponders => GatewayReply::NoResponders,
            GatewayRefusal::MailboxFull => GatewayReply::MailboxFull,
            GatewayRefusal::ActorStopped => GatewayReply::ActorStopped,
            GatewayRefusal::NoReply => GatewayReply::NoReply,
            GatewayRefusal::Timeout => GatewayReply::Timeout,
            GatewayRefusal::Disconnected => GatewayReply::Disconnected,
        }
    }
}

/// Why a gateway refused a tell or could not answer an ask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GatewayRefusal {
    /// No sharding of that kind takes messages through this gateway. Not run.
    UnknownKind,
    /// The kind takes no message of that type (as a tell, or as an ask) here. Not run.
    UnknownType,
    /// The id is empty or longer than 256 bytes. Not run.
    BadId,
    /// The body did not decode to the type. Not run.
    Undecodable,
    /// The entity could not be reached (no owner within the deadline, too
    /// many hops, the shard's buffer refused it). Not run: safe to retry.
    NoResponders,
    /// The entity's bounded mailbox, a region's buffer or the gateway's
    /// bound of waiting asks was full. Not run.
    MailboxFull,
    /// The entity stopped before it answered. Unknown whether it ran.
    ActorStopped,
    /// The entity dropped the request without answering. Unknown.
    NoReply,
    /// No answer within the ask's deadline. Unknown.
    Timeout,
    /// The owner's node was lost before the answer came. Unknown.
    Disconnected,
}

impl GatewayRefusal {
    fn of_ask(e: AskError) -> GatewayRefusal {
        match e {
            AskError::Timeout => GatewayRefusal::Timeout,
            AskError::ActorStopped => GatewayRefusal::ActorStopped,
            AskError::MailboxFull => GatewayRefusal::MailboxFull,
            AskError::NoReply => GatewayRefusal::NoReply,
            AskError::NoResponders => GatewayRefusal::NoResponders,
            AskError::Disconnected => GatewayRefusal::Disconnected,
            // The gateway's tasks are no worker threads, and errors added
            // later: read as "unknown whether it ran".
            _ => GatewayRefusal::NoReply,
        }
    }

    fn of_send<M>(e: &SendError<M>) -> GatewayRefusal {
        match e {
            SendError::Full(_) => GatewayRefusal::MailboxFull,
            SendError::Closed(_) => GatewayRefusal::NoResponders,
            SendError::Stopped(_) => GatewayRefusal::ActorStopped,
        }
    }
}

/// What a gateway took and refused since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GatewayStats {
    /// Tells that reached the gateway.
    pub tells: u64,
    /// Asks that reached the gateway.
    pub asks: u64,
    /// Tells the entity reference accepted.
    pub tells_routed: u64,
    /// Asks answered `Ok`.
    pub asks_answered: u64,
    /// Refused: no such kind here.
    pub unknown_kind: u64,
    /// Refused: no such type for the kind here.
    pub unknown_type: u64,
    /// Refused: an empty or too long id.
    pub bad_id: u64,
    /// Refused: the body did not decode.
    pub undecodable: u64,
    /// Tells the entity reference refused (full, stopped, closed).
    pub tells_refused: u64,
    /// Asks answered with a refusal of the entity's side (timeout,
    /// stopped, unreachable, the bound of waiting asks).
    pub asks_failed: u64,
}

#[derive(Default)]
struct Counters {
    tells: AtomicU64,
    asks: AtomicU64,
    tells_routed: AtomicU64,
    asks_answered: AtomicU64,
    unknown_kind: AtomicU64,
    unknown_type: AtomicU64,
    bad_id: AtomicU64,
    undecodable: AtomicU64,
    tells_refused: AtomicU64,
    asks_failed: AtomicU64,
    /// Asks waiting for their entity now (bounded by [`MAX_WAITING`]).
    waiting: AtomicUsize,
    /// When a refusal was last logged (ms since `born`).
    last_log_ms: AtomicU64,
}

fn add(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

impl Counters {
    fn snapshot(&self) -> GatewayStats {
        let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
        GatewayStats {
            tells: l(&self.tells),
            asks: l(&self.asks),
            tells_routed: l(&self.tells_routed),
            asks_answered: l(&self.asks_answered),
            unknown_kind: l(&self.unknown_kind),
            unknown_type: l(&self.unknown_type),
            bad_id: l(&self.bad_id),
            undecodable: l(&self.undecodable),
            tells_refused: l(&self.tells_refused),
            asks_failed: l(&self.asks_failed),
        }
    }

    /// Counts a refusal of the gateway's own checks (or a refused tell),
    /// and logs it at most once a second.
    fn refused(&self, r: GatewayRefusal, what: &str, kind: &str, type_name: &str, born: Instant) {
        match r {
            GatewayRefusal::UnknownKind => add(&self.unknown_kind),
            GatewayRefusal::UnknownType => add(&self.unknown_type),
            GatewayRefusal::BadId => add(&self.bad_id),
            GatewayRefusal::Undecodable => add(&self.undecodable),
            _ if what == "tell" => add(&self.tells_refused),
            _ => add(&self.asks_failed),
        }
        let now = u64::try_from(born.elapsed().as_millis()).unwrap_or(u64::MAX);
        let last = self.last_log_ms.load(Ordering::Relaxed);
        if (now.saturating_sub(last) >= 1000 || last == 0)
            && self
                .last_log_ms
                .compare_exchange(last, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            // Names from the network, cut short and printed escaped.
            let cut = |s: &str| s.chars().take(64).collect::<String>();
            tracing::warn!(
                refusal = ?r,
                kind = ?cut(kind),
                message_type = ?cut(type_name),
                "shard gateway refused a {what} (counted in GatewayStats; logged at most once a second)"
            );
        }
    }
}

/// Decodes a CBOR body and tells one entity.
type TellEntry = Box<dyn Fn(&str, &[u8]) -> Result<(), GatewayRefusal> + Send + Sync>;
/// Decodes a CBOR request and asks one entity; the future gives the answer.
type AskEntry = Box<
    dyn Fn(&str, &[u8], Duration) -> Result<BoxFuture<'static, GatewayReply>, GatewayRefusal>
        + Send
        + Sync,
>;

#[derive(Default)]
struct KindTable {
    tells: HashMap<&'static str, TellEntry>,
    asks: HashMap<&'static str, AskEntry>,
}

/// The kinds and types a gateway routes; fixed when it starts.
#[derive(Default)]
struct Table {
    kinds: HashMap<String, KindTable>,
}

/// The types a gateway routes: add them with [`tell`](Self::tell) and
/// [`ask`](Self::ask), then [`serve`](Self::serve) it.
///
/// ```no_run
/// # use std::sync::Arc;
/// # use serde::{Deserialize, Serialize};
/// # use troupe::{Actor, Context, ReplyTo};
/// # use troupe_cluster::Cluster;
/// # use troupe_remote::remote;
/// # use troupe_sharding::{gateway::Gateway, ClusterSharding};
/// #[remote("shop.cart.AddItem")]
/// #[derive(Serialize, Deserialize)]
/// struct AddItem { sku: String, qty: u32 }
/// #[remote("shop.cart.Count", reply = u64)]
/// #[derive(Serialize, Deserialize)]
/// struct Count;
/// # enum Msg { Add(AddItem), Count(ReplyTo<u64>) }
/// # impl From<AddItem> for Msg { fn from(a: AddItem) -> Self { Msg::Add(a) } }
/// # struct Cart(u64);
/// # impl Actor for Cart {
/// #     type Msg = Msg;
/// #     fn handle(&mut self, m: Msg, _: &mut Context<'_, Self>) {
/// #         match m { Msg::Add(_) => self.0 += 1, Msg::Count(r) => { r.reply(self.0); } }
/// #     }
/// # }
/// # fn demo(cluster: Arc<Cluster>) -> Result<(), Box<dyn std::error::Error>> {
/// let carts = cluster
///     .sharding("cart", |_id| Cart(0))
///     .tell::<AddItem>()
///     .ask::<Count>(|_, r| Msg::Count(r))
///     .start()?;
/// let gateway = Gateway::builder()
///     .tell::<AddItem, _>(&carts)
///     .ask::<Count, _>(&carts)
///     .serve(&cluster)?;
/// # drop(gateway);
/// # Ok(())
/// # }
/// ```
#[must_use = "nothing is exposed until .serve()"]
#[derive(Default)]
pub struct GatewayBuilder {
    table: Table,
}

/// A node's portable entry to its shardings' entities (see the module
/// docs). Dropping it unexposes the gateway and stops its actor.
pub struct Gateway {
    counters: Arc<Counters>,
    cluster: Arc<Cluster>,
    system: Option<ActorSystem>,
}

impl Gateway {
    /// Starts listing the types a gateway routes.
    pub fn builder() -> GatewayBuilder {
        GatewayBuilder::default()
    }

    /// What this gateway took and refused.
    pub fn stats(&self) -> GatewayStats {
        self.counters.snapshot()
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        self.cluster.node().unexpose(GATEWAY);
        if let Some(s) = self.system.take() {
            s.shutdown_timeout(Duration::from_secs(5));
        }
    }
}

impl fmt::Debug for Gateway {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gateway")
            .field("stats", &self.stats())
            .finish()
    }
}

/// An entity reference of `sharding` from which each message's own is
/// made (`EntityRef::sibling`: a clone of two `Arc`s and the id).
fn prototype<A: Actor>(sharding: &Sharding<A>) -> EntityRef<A> {
    sharding.entity("gateway")
}

impl GatewayBuilder {
    fn kind_of(&mut self, kind: &str) -> &mut KindTable {
        self.table.kinds.entry(kind.to_string()).or_default()
    }

    /// Routes tells of `M` to the entities of `sharding` (which must take
    /// `M` as a tell: `.tell::<M>()` on its builder).
    pub fn tell<M: RemoteMessage, A: Actor>(mut self, sharding: &Sharding<A>) -> Self
    where
        A::Msg: From<M>,
    {
        let proto = prototype(sharding);
        let entry: TellEntry = Box::new(move |id: &str, body: &[u8]| {
            let m = decode_cbor::<M>(body).map_err(|_| GatewayRefusal::Undecodable)?;
            proto
                .sibling(id)
                .tell(m)
                .map_err(|e| GatewayRefusal::of_send(&e))
        });
        self.kind_of(sharding.kind()).tells.insert(M::NAME, entry);
        self
    }

    /// Routes asks of `Q` to the entities of `sharding` (which must answer
    /// `Q`: `.ask::<Q>(..)` on its builder); the reply travels as CBOR.
    pub fn ask<Q: RemoteAsk, A: Actor>(mut self, sharding: &Sharding<A>) -> Self {
        let proto = prototype(sharding);
        let entry: AskEntry = Box::new(move |id: &str, body: &[u8], within: Duration| {
            let q = decode_cbor::<Q>(body).map_err(|_| GatewayRefusal::Undecodable)?;
            let entity = proto.sibling(id);
            Ok(async move {
                match entity.ask_async(q, within).await {
                    Ok(reply) => {
                        let mut out = Vec::with_capacity(64);
                        match encode_cbor(&reply, &mut out) {
                            Ok(()) => GatewayReply::Ok(Payload(out)),
                            Err(_) => GatewayReply::NoReply,
                        }
                    }
                    Err(e) => GatewayRefusal::of_ask(e).into(),
                }
            }
            .boxed())
        });
        self.kind_of(sharding.kind()).asks.insert(Q::NAME, entry);
        self
    }

    /// Exposes the gateway as [`GATEWAY`] on `cluster`'s node.
    pub fn serve(self, cluster: &Arc<Cluster>) -> Result<Gateway, ShardingError> {
        let rt =
            troupe_remote::runtime::handle().map_err(|e| ShardingError::Expose(e.to_string()))?;
        let counters = Arc::new(Counters::default());
        let system = ActorSystem::new();
        let actor = system.spawn_with(
            GatewayActor {
                table: self.table,
                counters: counters.clone(),
                rt,
                born: Instant::now(),
            },
            SpawnOptions::new().dedicated_thread(),
        );
        let served = cluster
            .expose(GATEWAY, &actor)
            .tell_portable::<GatewayTell>()
            .ask_portable::<GatewayAsk>(GatewayMsg::Ask)
            .serve();
        if let Err(e) = served {
            system.shutdown_timeout(Duration::from_secs(5));
            return Err(ShardingError::Expose(e.to_string()));
        }
        Ok(Gateway {
            counters,
            cluster: cluster.clone(),
            system: Some(system),
        })
    }
}

/// What the gateway actor takes: what the node decoded off its inbox.
enum GatewayMsg {
    Tell(GatewayTell),
    Ask(GatewayAsk, ReplyTo<GatewayReply>),
}

impl From<GatewayTell> for GatewayMsg {
    fn from(t: GatewayTell) -> Self {
        GatewayMsg::Tell(t)
    }
}

struct GatewayActor {
    table: Table,
    counters: Arc<Counters>,
    rt: tokio::runtime::Handle,
    born: Instant,
}

impl GatewayActor {
    fn kind(&self, kind: &str, id: &str) -> Result<&KindTable, GatewayRefusal> {
        let k = self
            .table
            .kinds
            .get(kind)
            .ok_or(GatewayRefusal::UnknownKind)?;
        if !check(id.as_bytes(), 0) {
            return Err(GatewayRefusal::BadId);
        }
        Ok(k)
    }

    fn tell(&self, t: &GatewayTell) -> Result<(), GatewayRefusal> {
        let k = self.kind(&t.kind, &t.id)?;
        let entry = k
            .tells
            .get(t.type_name.as_str())
            .ok_or(GatewayRefusal::UnknownType)?;
        entry(&t.id, &t.body.0)
    }

    fn ask(&self, a: &GatewayAsk) -> Result<BoxFuture<'static, GatewayReply>, GatewayRefusal> {
        let k = self.kind(&a.kind, &a.id)?;
        let entry = k
            .asks
            .get(a.type_name.as_str())
            .ok_or(GatewayRefusal::UnknownType)?;
        let within = match a.timeout_ms {
            0 => DEFAULT_ASK,
            ms => Duration::from_millis(u64::from(ms)).min(MAX_ASK),
        };
        entry(&a.id, &a.body.0, within)
    }
}

impl Actor for GatewayActor {
    type Msg = GatewayMsg;

    fn handle(&mut self, msg: GatewayMsg, _: &mut Context<'_, Self>) {
        match msg {
            GatewayMsg::Tell(t) => {
                add(&self.counters.tells);
                match self.tell(&t) {
                    Ok(()) => add(&self.counters.tells_routed),
                    Err(r) => self
                        .counters
                        .refused(r, "tell", &t.kind, &t.type_name, self.born),
                }
            }
            GatewayMsg::Ask(a, reply) => {
                add(&self.counters.asks);
                let c = &self.counters;
                if c.waiting.load(Ordering::Relaxed) >= MAX_WAITING {
                    c.refused(
                        GatewayRefusal::MailboxFull,
                        "ask",
                        &a.kind,
                        &a.type_name,
                        self.born,
                    );
                    reply.reply(GatewayReply::MailboxFull);
                    return;
                }
                match self.ask(&a) {
                    Ok(answer) => {
                        c.waiting.fetch_add(1, Ordering::Relaxed);
                        let counters = c.clone();
                        self.rt.spawn(async move {
                            let answer = answer.await;
                            counters.waiting.fetch_sub(1, Ordering::Relaxed);
                            match answer {
                                GatewayReply::Ok(_) => add(&counters.asks_answered),
                                _ => add(&counters.asks_failed),
                            }
                            reply.reply(answer);
                        });
                    }
                    Err(r) => {
                        c.refused(r, "ask", &a.kind, &a.type_name, self.born);
                        reply.reply(r.into());
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_remote::envelope::decode_body;

    /// The envelope's shape is what docs/protocol.md and the clients
    /// write: field names and order, `body` a byte string.
    #[test]
    fn the_envelopes_have_the_documented_shapes() {
        let tell = troupe_remote::schema::describe::<GatewayTell>();
        assert_eq!(tell.shape, "struct{kind:str,id:str,type:str,body:bytes}");
        let t = GatewayTell {
            kind: "cart".into(),
            id: "c-1".into(),
            type_name: "shop.cart.AddItem".into(),
            body: Payload(vec![0xf6]),
        };
        let mut cbor = Vec::new();
        encode_cbor(&t, &mut cbor).unwrap();
        assert_eq!(decode_cbor::<GatewayTell>(&cbor).unwrap(), t);
        // The body is a CBOR byte string (major type 2), not an array.
        let tail = [0x64, b'b', b'o', b'd', b'y', 0x41, 0xf6];
        assert!(cbor.ends_with(&tail), "{cbor:02x?}");
        let pc = postcard::to_allocvec(&t).unwrap();
        assert_eq!(decode_body::<GatewayTell>(&pc).unwrap(), t);
        // An array of integers where the bytes belong is refused.
        let mut wrong = cbor[..cbor.len() - 2].to_vec();
        wrong.extend([0x81, 0x01]);
        assert!(decode_cbor::<GatewayTell>(&wrong).is_err());
        // A refusal is its name, a text string; Ok a one-entry map.
        let mut out = Vec::new();
        encode_cbor(&GatewayReply::UnknownKind, &mut out).unwrap();
        assert_eq!(out, b"\x6bUnknownKind");
        let reply = GatewayReply::Ok(Payload(vec![0x01]));
        out.clear();
        encode_cbor(&reply, &mut out).unwrap();
        assert_eq!(out, [0xa1, 0x62, b'O', b'k', 0x41, 0x01]);
        assert_eq!(decode_cbor::<GatewayReply>(&out).unwrap(), reply);
        let shape = troupe_remote::schema::describe::<GatewayReply>().shape;
        assert!(
            shape.contains("UnknownKind") && shape.contains("Disconnected"),
            "{shape}"
        );
    }
}
