//! What a server reads and acts on: the node's layers, as handles to
//! their public APIs. [`ShardingView`] erases a `Sharding<A>`'s actor type
//! so that one server serves every sharded kind of the node.

use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use troupe::{Actor, SystemHandle};
use troupe_cluster::Cluster;
use troupe_sharding::ownership::OwnershipStore;
use troupe_sharding::{Sharding, ShardingStats};

/// A sharded kind's public API, whatever its actor type.
pub trait ShardingView: Send + Sync + 'static {
    /// This node's counters for the kind.
    fn stats(&self) -> ShardingStats;
    /// The ids of the kind's entities running on this node, sorted.
    fn local_entities(&self) -> Vec<String>;
    /// The shard of `id`.
    fn shard_of(&self, id: &str) -> u32;
    /// Whether every shard was owned where membership wants it, at the
    /// last tick.
    fn settled(&self) -> bool;
    /// Passivates entity `id` on this node; whether it was running here.
    fn passivate(&self, id: &str) -> bool;
    /// The shards moving to or from this node now.
    fn handovers(&self) -> Vec<troupe_sharding::moving::Handover>;
}

impl<A: Actor> ShardingView for Sharding<A> {
    fn stats(&self) -> ShardingStats {
        Sharding::stats(self)
    }
    fn local_entities(&self) -> Vec<String> {
        Sharding::local_entities(self)
    }
    fn shard_of(&self, id: &str) -> u32 {
        Sharding::shard_of(self, id)
    }
    fn settled(&self) -> bool {
        Sharding::settled(self)
    }
    fn passivate(&self, id: &str) -> bool {
        Sharding::passivate(self, id)
    }
    fn handovers(&self) -> Vec<troupe_sharding::moving::Handover> {
        Sharding::handovers(self)
    }
}

/// One sharded kind the server reports.
pub struct Kind {
    /// Its name, as given to `ClusterSharding::sharding`.
    pub name: String,
    /// Its shard count, as configured (`ShardingBuilder::shards`).
    pub shards: u32,
    /// Its public API.
    pub view: Arc<dyn ShardingView>,
    /// The ownership store its shard records are read from.
    pub store: Arc<dyn OwnershipStore>,
}

/// A hook the application gives for an action this crate cannot take by
/// itself (e.g. a graceful leave, which consumes the application's
/// `Sharding` and `Cluster`).
pub type Hook = Box<dyn Fn() + Send + Sync>;

/// Everything a server reads and acts on.
pub struct Target {
    /// The node's cluster membership, if it has one.
    pub cluster: Option<Arc<Cluster>>,
    /// The actor system whose actors `/api/v1/actors` lists.
    pub system: Option<SystemHandle>,
    /// The sharded kinds.
    pub kinds: Vec<Kind>,
    /// When the server started (the uptime's origin).
    pub started: Instant,
    /// The leave hook, taken (run once) by the first leave.
    pub on_leave: Mutex<Option<Hook>>,
}

impl Drop for Target {
    /// The server's reference to a kind's `Sharding` or to the `Cluster`
    /// may be the last one, and it is dropped by a task on the process's
    /// I/O runtime. Their drops wait for work on that runtime (a leave's
    /// ownership reads, a flush), so dropped there they would wait for
    /// themselves: on a runtime thread they are dropped on a thread of
    /// their own.
    fn drop(&mut self) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let kinds = std::mem::take(&mut self.kinds);
        let cluster = self.cluster.take();
        let _ = std::thread::Builder::new()
            .name("troupe-admin-drop".into())
            .spawn(move || drop((kinds, cluster)));
    }
}
