//! What a node's entity references, region actor and coordinator share
//! for one sharding type: the settings, the factory, the message
//! decoders, the routing table and the counters.
//!
//! Writers: the routing table is written only by the coordinator (once a
//! tick, and on a claim) and read by entity references and the region
//! ([`Routes`] states how a sending thread reads it without a lock); the decoder
//! tables are fixed at start; `pending` is written by the region; the
//! direct table by the region (its module says who writes what).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;
use tokio::runtime::Handle;
use troupe::{Actor, ActorRef, ReplyTo, SystemHandle};
use troupe_remote::RemoteRef;

use crate::config::Config;
use crate::envelope::{ShardAsk, ShardReply, ShardTell};
use crate::ownership::OwnershipStore;
use crate::region::direct::Direct;
use crate::stats::Counters;

/// Decodes a tell's payload into the entity's message.
pub(crate) type TellFn<A> = Box<dyn Fn(&[u8]) -> Option<<A as Actor>::Msg> + Send + Sync>;
/// Decodes an ask's payload, asks the entity and answers `reply` (on the
/// I/O runtime); `false` if the payload did not decode (answered too).
pub(crate) type AskFn<A> =
    Box<dyn Fn(&[u8], &ActorRef<A>, ReplyTo<ShardReply>, &Handle) -> bool + Send + Sync>;
/// Builds an entity from its id.
pub(crate) type Factory<A> = Box<dyn Fn(&str) -> A + Send + Sync>;

/// Decoders by stable type id. The ids looked up come off the network,
/// but the table is fixed at start; foldhash, seeded at random per
/// process, instead of SipHash (2.5% of the sending thread's samples).
pub(crate) type TypeTable<F> = HashMap<u64, F, foldhash::fast::RandomState>;

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
    /// The entities the inbox may tell directly (region/direct.rs).
    pub direct: Direct<A>,
}

/// The routing table: one [`Route`] per shard.
///
/// The table is immutable once published: the coordinator (the only
/// writer) builds a new one, swaps it in under the write lock and then,
/// still under it, raises `version`. A reader under the read lock gets a
/// matching pair (the table and its version).
///
/// A sending thread keeps the pair it last read ([`Routes::with`]): while
/// `version` still reads the same, its table is the current one, so a
/// route costs one atomic load, no lock and no reference count. When the
/// version moved, the thread takes the read lock once and keeps the new
/// pair. A table a thread keeps holds the references of its routes (as a
/// clone of an entity reference's route would) until the thread reads a
/// newer one or exits; a thread keeps at most [`CACHED`] tables.
///
/// A route read this way is the one current when `version` was loaded,
/// exactly as under the lock: a tell that races a route change goes by
/// the old or the new route, and an old owner that no longer owns the
/// shard hands it on as before (the region's forwarding and fencing).
pub(crate) struct Routes {
    /// Which routing table this is, for the threads' caches: unique in
    /// the process (never reused, unlike an address).
    id: u64,
    table: RwLock<Arc<[Route]>>,
    /// Raised after each new table is in place, under the write lock.
    version: AtomicU64,
}

/// How many routing tables (of different shardings) a thread keeps.
const CACHED: usize = 4;

/// A routing table a thread keeps: `(Routes::id, version, table)`.
type Kept = (u64, u64, Arc<[Route]>);

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
            table: RwLock::new(Arc::from(Vec::new())),
            version: AtomicU64::new(0),
        }
    }

    /// Coordinator: `table` is the routing table from now on.
    pub fn set(&self, table: Vec<Route>) {
        let mut t = self.table.write();
        *t = table.into();
        self.version.fetch_add(1, Ordering::Release);
    }

    /// Coordinator: shard `s` routes to this node's region from now on.
    pub fn set_local(&self, s: u32) {
        let mut t = self.table.write();
        let mut next = t.to_vec();
        if let Some(r) = next.get_mut(s as usize) {
            *r = Route::Local;
        }
        *t = next.into();
        self.version.fetch_add(1, Ordering::Release);
    }

    /// The route of `shard`, cloned.
    pub fn get(&self, shard: u32) -> Route {
        self.with(shard, Route::clone)
    }

    /// Calls `f` with the route of `shard`, from this thread's kept table
    /// while it is current (no lock, no clone), else under the read lock.
    pub fn with<R>(&self, shard: u32, f: impl FnOnce(&Route) -> R) -> R {
        let version = self.version.load(Ordering::Acquire);
        let mut f = Some(f);
        let done = KEPT.try_with(|kept| {
            // Busy only if `f` sends again from inside a send (a
            // message's `Serialize`): that send reads under the lock.
            let mut kept = kept.try_borrow_mut().ok()?;
            let (tables, next) = &mut *kept;
            let found = tables
                .iter()
                .position(|k| matches!(k, Some((id, _, _)) if *id == self.id));
            let at = match found {
                Some(i) if matches!(&tables[i], Some((_, v, _)) if *v == version) => i,
                _ => {
                    let i = found.unwrap_or_else(|| {
                        let i = *next;
                        *next = (i + 1) % CACHED;
                        i
                    });
                    let t = self.table.read();
                    tables[i] = Some((self.id, self.version.load(Ordering::Acquire), t.clone()));
                    i
                }
            };
            let (_, _, table) = tables[at].as_ref()?;
            let f = f.take()?;
            Some(f(table.get(shard as usize).unwrap_or(&Route::Local)))
        });
        match (done, f) {
            (Ok(Some(r)), _) => r,
            (_, Some(f)) => self.with_locked(shard, f),
            // `f` ran and gave its result above.
            (_, None) => unreachable!("the route's closure ran but gave nothing"),
        }
    }

    fn with_locked<R>(&self, shard: u32, f: impl FnOnce(&Route) -> R) -> R {
        let t = self.table.read();
        f(t.get(shard as usize).unwrap_or(&Route::Local))
    }
}

impl<A: Actor> Shared<A> {
    pub fn route(&self, shard: u32) -> Route {
        self.routes.get(shard)
    }

    /// Calls `f` with the route of `shard` ([`Routes::with`]: no lock and
    /// no clone in the steady state).
    pub fn with_route<R>(&self, shard: u32, f: impl FnOnce(&Route) -> R) -> R {
        self.routes.with(shard, f)
    }
}
