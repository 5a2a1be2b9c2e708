//! What a node's entity references, region actor and coordinator share
//! for one sharding type: the settings, the factory, the message
//! decoders, the routing table and the counters.
//!
//! Writers: the routing table is written only by the coordinator (once a
//! tick, and on a claim) and read by entity references and the region
//! ([`Routes`] states how a sending thread reads it without a lock or a
//! reference count); the decoder
//! tables are fixed at start; `pending` is written by the region; the
//! direct table by the region (its module says who writes what).

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use arc_swap::cache::Cache;
use arc_swap::ArcSwap;
use serde::de::DeserializeOwned;
use tokio::runtime::Handle;
use troupe::{Actor, ActorRef, ReplyTo, SystemHandle};
use troupe_remote::RemoteRef;

use crate::config::Config;
use crate::envelope::{ShardAsk, ShardReply, ShardTell, Tag};
use crate::ownership::OwnershipStore;
use crate::region::direct::Direct;
use crate::stats::Counters;

/// Decodes a tell's payload and hands the message to the entity, in one
/// call (the decode and the send are the message type's own code, with
/// the message in registers, not returned through memory to a second
/// call): how it hands it over ([`Hand`]) and what became of it.
pub(crate) type TellFn<A> = Box<dyn Fn(&[u8], &ActorRef<A>, Hand) -> Handed + Send + Sync>;
/// Decodes an ask's payload, asks the entity and answers `reply` (on the
/// entity's thread, as it replies); `false` if the payload did not
/// decode (answered too).
pub(crate) type AskFn<A> =
    Box<dyn Fn(&[u8], &ActorRef<A>, ReplyTo<ShardReply>) -> bool + Send + Sync>;
/// Builds an entity from its id.
pub(crate) type Factory<A> = Box<dyn Fn(&str) -> A + Send + Sync>;

/// How a [`TellFn`] hands a message to its entity.
#[derive(Clone, Copy)]
pub(crate) enum Hand {
    /// `try_tell`: never blocks, neither the inbox's direct path nor the
    /// region (a full bounded mailbox is a refusal: the region buffers
    /// the tell and retries it on its next tick).
    Try,
}

/// What a [`TellFn`] did with a payload.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Handed {
    /// In the entity's mailbox.
    Delivered,
    /// The payload did not decode as the message type.
    Undecodable,
    /// The entity's mailbox refused it (stopped, or full for `Try`).
    Refused,
}

/// The [`TellFn`] of message type `M`.
pub(crate) fn tell_fn<A: Actor, M: DeserializeOwned>() -> TellFn<A>
where
    A::Msg: From<M>,
{
    Box::new(|payload, actor, hand| {
        // The whole payload, as a remote tell's body: trailing bytes are
        // not a message.
        let Ok(m) = troupe_remote::envelope::decode_body::<M>(payload) else {
            return Handed::Undecodable;
        };
        let sent = match hand {
            Hand::Try => actor.try_tell(A::Msg::from(m)),
        };
        match sent {
            Ok(()) => Handed::Delivered,
            Err(_) => Handed::Refused,
        }
    })
}

/// A decoder with the type it decodes.
pub(crate) struct Typed<F> {
    /// The stable type id (`RemoteMessage::TYPE_ID`).
    pub type_id: u64,
    /// The stable name, for the error that reports two equal tags.
    pub name: &'static str,
    /// Tells: the fingerprint of `EntityTell<M>`, which an entity
    /// reference writes in each tell of `M` (computed once, here: the
    /// computation takes a lock). Asks: 0, not used.
    pub wire_schema: u64,
    pub f: F,
}

/// Decoders by [`Tag`], each with the stable type id it was registered
/// for. A sharding type takes a few message types: a vector searched in
/// order costs less than a hash of the tag (a hashed table was 40% of
/// the sender's own work per tell). The tags looked up come off the
/// network, but the table is fixed at start, so a hostile tag costs one
/// pass over it at most.
pub(crate) struct TypeTable<F> {
    entries: Vec<(Tag, Typed<F>)>,
}

impl<F> Default for TypeTable<F> {
    fn default() -> Self {
        TypeTable {
            entries: Vec::new(),
        }
    }
}

impl<F> TypeTable<F> {
    /// The decoder registered under `tag`.
    pub fn get(&self, tag: &Tag) -> Option<&Typed<F>> {
        self.entries.iter().find(|(t, _)| t == tag).map(|(_, d)| d)
    }

    /// The entry of the type `type_id`, if the table takes it (registered
    /// for that very type).
    pub fn find(&self, type_id: u64) -> Option<&Typed<F>> {
        self.entries
            .iter()
            .find(|(_, d)| d.type_id == type_id)
            .map(|(_, d)| d)
    }

    /// Whether the table takes the type `type_id`.
    pub fn takes(&self, type_id: u64) -> bool {
        self.find(type_id).is_some()
    }

    /// Adds `f` for the type `(type_id, name)` (replacing that type's),
    /// with the fingerprint its tells carry ([`Typed::wire_schema`]); the
    /// names of the two types if another type has the same tag.
    pub fn register(
        &mut self,
        type_id: u64,
        name: &'static str,
        wire_schema: u64,
        f: F,
    ) -> Result<(), (&'static str, &'static str)> {
        let tag = Tag::of(type_id);
        let typed = Typed {
            type_id,
            name,
            wire_schema,
            f,
        };
        match self.entries.iter_mut().find(|(t, _)| *t == tag) {
            Some((_, d)) if d.type_id != type_id => Err((d.name, name)),
            Some((_, d)) => {
                *d = typed;
                Ok(())
            }
            None => {
                self.entries.push((tag, typed));
                Ok(())
            }
        }
    }

    /// How many types the table takes.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

/// Where to send an envelope for a shard.
#[derive(Clone)]
pub(crate) enum Route {
    /// To this node's region (it owns the shard, or buffers for it).
    Local,
    /// To the region of the node that owns the shard.
    Remote {
        tell: RemoteRef<ShardTell>,
        ask: RemoteRef<ShardAsk>,
    },
}

pub(crate) struct Shared<A: Actor> {
    pub kind: String,
    pub node: String,
    pub config: Config,
    pub store: Arc<dyn OwnershipStore>,
    pub factory: Factory<A>,
    pub tells: TypeTable<TellFn<A>>,
    pub asks: TypeTable<AskFn<A>>,
    pub routes: Routes,
    pub stats: Counters,
    pub handle: Handle,
    pub system: SystemHandle,
    /// Envelopes the region holds in its buffer now.
    pub pending: AtomicUsize,
    /// This node's part has stopped (`Sharding::leave`, `halt`): entity
    /// references refuse every send (`SendError::Stopped`).
    pub stopped: AtomicBool,
    /// The entities the inbox may tell directly (region/direct.rs).
    pub direct: Direct<A>,
}

/// A published routing table: per shard, the index of its route among
/// the table's few distinct routes (this node's region first, then one
/// per owning peer). A sender reads a 2-byte index and one of a few
/// routes, not one route of its own per shard (each two `RemoteRef`s,
/// 112 bytes): with 64 shards told in turn, 8 KB of routes in 64 places
/// were read where 128 bytes of indexes are now.
#[derive(Clone)]
pub(crate) struct Table {
    /// Per shard, an index into `routes`.
    by_shard: Vec<u16>,
    /// `routes[0]` is `Route::Local`; each peer's route once after it.
    routes: Vec<Route>,
}

impl Table {
    /// No shard routed (every shard goes to this node's region).
    fn empty() -> Table {
        Table {
            by_shard: Vec::new(),
            routes: vec![Route::Local],
        }
    }

    /// The table of `per_shard` (one route per shard); remote routes to
    /// one region (the same `RemoteRef` name) are kept once.
    fn of(per_shard: Vec<Route>) -> Table {
        let mut t = Table::empty();
        t.by_shard.reserve(per_shard.len());
        for r in per_shard {
            let at = match &r {
                Route::Local => 0,
                Route::Remote { tell, .. } => t
                    .routes
                    .iter()
                    .position(
                        |x| matches!(x, Route::Remote { tell: t, .. } if t.name() == tell.name()),
                    )
                    .unwrap_or_else(|| {
                        t.routes.push(r.clone());
                        t.routes.len() - 1
                    }),
            };
            // At most `MAX_MEMBERS` peers (1,024) own shards: an index
            // past u16 cannot be; it would route here (the region hands on).
            t.by_shard.push(u16::try_from(at).unwrap_or(0));
        }
        t
    }

    /// The route of `shard`; `None` past the table (this node's region).
    fn get(&self, shard: u32) -> Option<&Route> {
        let at = *self.by_shard.get(shard as usize)?;
        self.routes.get(usize::from(at))
    }
}

/// The routing table: a [`Route`] per shard ([`Table`]).
///
/// A table is immutable once published: the coordinator (the only
/// writer) builds a new one and swaps it in (`ArcSwap`).
///
/// A sending thread keeps the table it last read, in an `arc_swap`
/// [`Cache`] ([`Routes::with`]): while the published table is still the
/// one it keeps (one atomic load of the pointer), it reads the route with
/// no lock and no reference count; when the table changed, it takes the
/// new one once. A table a thread keeps holds the references of its
/// routes (as a clone of a route would) until the thread reads a newer
/// one or exits; a thread keeps the tables of at most [`CACHED`]
/// shardings.
///
/// A route read this way is the one published when the pointer was
/// loaded, as with a lock: a tell that races a route change goes by the
/// old or the new route, and an old owner that no longer owns the shard
/// hands it on as before (the region's forwarding and fencing).
pub(crate) struct Routes {
    /// Which routing table this is, for the threads' caches: unique in
    /// the process (never reused, unlike an address).
    id: u64,
    table: Arc<ArcSwap<Table>>,
}

/// How many shardings' routing tables a thread keeps.
const CACHED: usize = 4;

/// A routing table a thread keeps, with its `Routes::id`.
type Kept = (u64, Cache<Arc<ArcSwap<Table>>, Arc<Table>>);

thread_local! {
    /// This thread's kept routing tables; replaced round robin.
    static KEPT: RefCell<([Option<Kept>; CACHED], usize)> =
        const { RefCell::new(([None, None, None, None], 0)) };
}

impl Routes {
    pub fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Routes {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            table: Arc::new(ArcSwap::from_pointee(Table::empty())),
        }
    }

    /// Coordinator: `per_shard` (one route per shard) is the routing
    /// table from now on.
    pub fn set(&self, per_shard: Vec<Route>) {
        self.table.store(Arc::new(Table::of(per_shard)));
    }

    /// Coordinator (the only writer): shard `s` routes to this node's
    /// region from now on.
    pub fn set_local(&self, s: u32) {
        let mut next = Table::clone(&self.table.load());
        if let Some(at) = next.by_shard.get_mut(s as usize) {
            *at = 0;
        }
        self.table.store(Arc::new(next));
    }

    /// The route of `shard`, cloned.
    pub fn get(&self, shard: u32) -> Route {
        self.with(shard, Route::clone)
    }

    /// Calls `f` with the route of `shard`, from this thread's kept table
    /// while it is the published one (no lock, no clone).
    pub fn with<R>(&self, shard: u32, f: impl FnOnce(&Route) -> R) -> R {
        let mut f = Some(f);
        let done = KEPT.try_with(|kept| {
            // Busy only if `f` sends again from inside a send (a
            // message's `Serialize`): that send reads without the cache.
            let mut kept = kept.try_borrow_mut().ok()?;
            let (tables, next) = &mut *kept;
            let at = match tables
                .iter()
                .position(|k| matches!(k, Some((id, _)) if *id == self.id))
            {
                Some(i) => i,
                None => {
                    let i = *next;
                    *next = (i + 1) % CACHED;
                    tables[i] = Some((self.id, Cache::new(self.table.clone())));
                    i
                }
            };
            let (_, cache) = tables[at].as_mut()?;
            let table = cache.load();
            let f = f.take()?;
            Some(f(table.get(shard).unwrap_or(&Route::Local)))
        });
        if let Ok(Some(r)) = done {
            return r;
        }
        match f {
            Some(f) => f(self.table.load().get(shard).unwrap_or(&Route::Local)),
            // `f` ran above, and gave its result.
            None => unreachable!("the route's closure ran but gave nothing"),
        }
    }
}

impl<A: Actor> Shared<A> {
    /// What counts against the region's buffer bound: the envelopes it
    /// holds and those the inbox confirmed on their way to it.
    pub fn buffer_held(&self) -> usize {
        self.pending
            .load(Ordering::Acquire)
            .saturating_add(self.direct.inflight())
    }

    pub fn route(&self, shard: u32) -> Route {
        self.routes.get(shard)
    }

    /// Calls `f` with the route of `shard` ([`Routes::with`]: no lock and
    /// no clone in the steady state).
    pub fn with_route<R>(&self, shard: u32, f: impl FnOnce(&Route) -> R) -> R {
        self.routes.with(shard, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_types_with_one_tag_are_refused() {
        let mut t: TypeTable<u8> = TypeTable::default();
        assert_eq!(t.register(1, "a", 0, 0), Ok(()));
        // The same type again: replaced, no clash.
        assert_eq!(t.register(1, "a", 0, 1), Ok(()));
        assert_eq!(t.len(), 1);
        assert_eq!(t.get(&Tag::of(1)).map(|d| d.f), Some(1));
        // 1 << 32 folds to the tag of 1.
        assert_eq!(Tag::of(1 << 32), Tag::of(1));
        assert_eq!(t.register(1 << 32, "b", 0, 2), Err(("a", "b")));
        assert!(t.takes(1));
        assert!(!t.takes(1 << 32), "a tag registered for another type");
        assert!(!t.takes(2));
        assert_eq!(t.register(2, "c", 0, 3), Ok(()));
        assert_eq!(t.get(&Tag::of(2)).map(|d| d.f), Some(3));
        assert!(t.get(&Tag::of(3)).is_none());
    }
}
