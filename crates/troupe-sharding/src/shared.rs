//! What a node's entity references, region actor and coordinator share
//! for one sharding type: the settings, the factory, the message
//! decoders, the routing table and the counters.
//!
//! Writers: the routing table is written only by the coordinator (once a
//! tick, whole) and read by entity references and the region; the decoder
//! tables are fixed at start; `pending` is written by the region; the
//! direct table by the region (its module says who writes what).

use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
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
    pub routes: RwLock<Vec<Route>>,
    pub stats: Counters,
    pub handle: Handle,
    pub system: SystemHandle,
    /// Envelopes the region holds in its buffer now.
    pub pending: AtomicUsize,
    /// The entities the inbox may tell directly (region/direct.rs).
    pub direct: Direct<A>,
}

impl<A: Actor> Shared<A> {
    pub fn route(&self, shard: u32) -> Route {
        self.routes
            .read()
            .get(shard as usize)
            .cloned()
            .unwrap_or(Route::Local)
    }

    /// Calls `f` with the route of `shard`, under the table's read lock
    /// (no reference is cloned).
    pub fn with_route<R>(&self, shard: u32, f: impl FnOnce(&Route) -> R) -> R {
        let routes = self.routes.read();
        f(routes.get(shard as usize).unwrap_or(&Route::Local))
    }
}
