//! A sharding's settings, with their defaults.

use std::time::Duration;

use troupe::SpawnOptions;

/// Settings of one sharding type (set through
/// [`ShardingBuilder`](crate::ShardingBuilder)).
#[derive(Clone, Debug)]
pub struct Config {
    /// Number of shards; fixed for the life of the cluster (default 64).
    pub shards: u32,
    /// An entity idle this long is passivated; `None`: never (default 120 s).
    pub idle_timeout: Option<Duration>,
    /// Keep active ids in the store and reactivate them on the shard's
    /// next owner (default off).
    pub remember_entities: bool,
    /// How often the coordinator reads membership and ownership (default:
    /// [`Config::tick_for`] the cluster's down detection, 437.5 ms at the
    /// cluster's defaults, 87.5 ms at a 200 ms heartbeat).
    pub tick: Duration,
    /// Most envelopes a region buffers for shards without an owner (default 10,000).
    pub buffer: usize,
    /// How long a buffered envelope waits for an owner (default 10 s).
    pub buffer_timeout: Duration,
    /// Most entities one node runs at once for this type (default
    /// 1,000,000): an activation beyond it passivates the least recently
    /// used one; beyond as many stopping ones besides, it is refused (ids
    /// come from the network).
    pub max_entities: usize,
    /// How long a starting node waits before it takes over the shards of
    /// nodes it has never seen live (default 5 s).
    pub takeover_grace: Duration,
    /// How long a hand-over waits for the shard's entities to stop (default 5 s).
    pub handover_timeout: Duration,
    /// The longest a region waits for the reply to an ask it forwards to
    /// another node (default 10 s); it waits no longer than the ask's
    /// asker either (the ask carries its deadline).
    pub forward_timeout: Duration,
    /// JetStream replicas of the ownership bucket, when this node creates
    /// it (default 1; 3 on a 3-server NATS cluster, so that no shard's
    /// record is lost with one server). A bucket that exists keeps its count.
    pub replicas: usize,
    /// How each entity is spawned: its mailbox (bounded, with an overflow
    /// policy), its dispatcher (a tokio dispatcher for persistent
    /// entities), metrics (default: the actor system's defaults).
    pub entity_options: SpawnOptions,
}

/// The longest tick [`Config::tick_for`] derives.
const MAX_DERIVED_TICK: Duration = Duration::from_millis(500);

impl Config {
    /// The default tick for a cluster whose down detection (heartbeat
    /// times `down_after`, `Cluster::down_detection`)
    /// is `down`: a quarter of it, between 10 ms and 500 ms.
    /// The delivery lease (3 ticks) then ends before a silent node is
    /// declared down, and a taken-over shard's wait (4 ticks) is about
    /// one down detection.
    pub fn tick_for(down: Duration) -> Duration {
        (down / 4).clamp(Duration::from_millis(10), MAX_DERIVED_TICK)
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            shards: 64,
            idle_timeout: Some(Duration::from_secs(120)),
            remember_entities: false,
            tick: Duration::from_millis(500),
            buffer: 10_000,
            buffer_timeout: Duration::from_secs(10),
            max_entities: 1_000_000,
            takeover_grace: Duration::from_secs(5),
            handover_timeout: Duration::from_secs(5),
            forward_timeout: Duration::from_secs(10),
            replicas: 1,
            entity_options: SpawnOptions::default(),
        }
    }
}
