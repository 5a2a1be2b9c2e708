//! Durable reminders: timers of sharded entities that are stored in the
//! cluster's key-value store (a JetStream KV bucket per sharding type),
//! survive restarts of every node, and wake a passivated entity.
//!
//! ```text
//! let reminders = Reminders::open(&cluster, "cart")?;     // a handle, Clone
//! let carts = cluster.sharding("cart", { let r = reminders.clone(); move |id| Cart::new(id, r.clone()) })
//!     .tell::<Reminder>()                                 // the entity takes Reminder
//!     .start()?;
//! let _firer = reminders.fire_for(&carts)?;               // this node fires what it owns
//! // in a handler:
//! self.reminders.remind(&self.id, "expire", Schedule::after(Duration::from_secs(3600)))?;
//! ```
//!
//! Timers (`troupe`'s `ctx.send_after`) stay as they are, for in-process
//! use: they die with the instance. A reminder outlives it.
//!
//! ## Protocol
//!
//! 1. **Store.** [`Reminders::remind`] writes the record `(id, name, due,
//!    every)` under `r.<hex id>.<hex name>` in the bucket
//!    `troupe-reminders-<cluster>-<kind>` (a blind write: it replaces a
//!    reminder of the same name). [`Reminders::cancel`] deletes it.
//! 2. **Follow.** Each node's firer ([`Reminders::fire_for`]) keeps an
//!    index of the bucket: every record at its start, then every write
//!    (a watch), in revision order; an undecodable record is counted and
//!    left out.
//! 3. **Claim a due time.** Every `poll` (default 50 ms) the firer takes
//!    the records due by now whose entity's shard this node owns by the
//!    ownership store's record (read from the bucket's leader), and for
//!    each makes one **revision-checked** write from the revision it
//!    indexed: the next due time (missed periods skipped), or a delete
//!    for a one-shot. The write is the claim: of two nodes that both
//!    think they own the shard (one deposed and not yet aware), at most
//!    one write succeeds for one revision, so one due time is claimed
//!    once.
//! 4. **Fire.** The claimer tells the entity `Reminder { name, due_ms }`
//!    through its sharding (which activates a passivated entity, buffers
//!    while its shard moves, and delivers only within the owner's lease).
//!
//! ## Guarantees, and what is not guaranteed
//!
//! - **Not fired twice for one due time**, whatever nodes die, pause or
//!   move (step 3 happens before step 4: at most once per due time).
//! - A reminder due while its owner is dead fires once a survivor owns
//!   the shard (the cluster's down detection and the takeover's wait,
//!   `coordinator`), and one due while every node is down fires when one
//!   starts: it is stored, not held in memory.
//! - **Lost** if the claiming node dies between its claim and the
//!   entity's handling (the tell in its buffer or the entity's mailbox):
//!   at most once, not at least once. An entity that must see every
//!   firing keeps its own record (a persistent actor) and re-arms.
//! - Due times are wall-clock (ms since the Unix epoch): nodes need
//!   synchronised clocks; a node whose clock runs ahead fires early.
//! - A firing is late by up to `poll` and the store's round trips; a
//!   periodic reminder whose handler falls behind skips missed periods.
//! - Each node's index holds at most [`MAX_INDEXED`] reminders of a
//!   kind; more are counted in `over_cap` and not fired by that node.

mod firer;
mod record;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tokio::runtime::Handle;
use troupe::Actor;
use troupe_cluster::Cluster;
use troupe_remote::transport::kv::{Bucket, BucketConfig, KvError};

use crate::sharding::Sharding;

pub use firer::Firer;
pub use record::MAX_NAME;

/// The most reminders of one kind a node's firer indexes.
pub const MAX_INDEXED: usize = 1_000_000;

/// The message an entity gets when one of its reminders is due. The
/// entity's message type must convert from it, and its sharding take it
/// (`.tell::<Reminder>()`).
#[troupe_remote::remote("troupe.sharding.Reminder")]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reminder {
    /// The reminder's name.
    pub name: String,
    /// The due time this firing is for, ms since the Unix epoch.
    pub due_ms: u64,
}

/// When a reminder is due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// Once, at this time.
    At(SystemTime),
    /// First at `first`, then every `every` (at least 1 ms).
    Every {
        /// The first due time.
        first: SystemTime,
        /// The period.
        every: Duration,
    },
}

impl Schedule {
    /// Once, `d` from now.
    pub fn after(d: Duration) -> Schedule {
        Schedule::At(SystemTime::now() + d)
    }

    /// Every `d`, the first `d` from now.
    pub fn every(d: Duration) -> Schedule {
        Schedule::Every {
            first: SystemTime::now() + d,
            every: d,
        }
    }
}

/// Why a reminder call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RemindersError {
    /// The entity id is empty or longer than 256 bytes.
    BadId,
    /// The name is empty or longer than [`MAX_NAME`] bytes.
    BadName,
    /// A period of zero.
    ZeroPeriod,
    /// [`Reminders::fire_for`] was given a sharding of another type.
    OtherKind(String),
    /// The store could not be reached or refused the call.
    Store(String),
}

impl std::fmt::Display for RemindersError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RemindersError::BadId => f.write_str("entity ids are 1 to 256 bytes"),
            RemindersError::BadName => write!(f, "reminder names are 1 to {MAX_NAME} bytes"),
            RemindersError::ZeroPeriod => f.write_str("a periodic reminder needs a period > 0"),
            RemindersError::OtherKind(k) => {
                write!(f, "these reminders are not of sharding type {k:?}")
            }
            RemindersError::Store(e) => write!(f, "the reminder store failed: {e}"),
        }
    }
}

impl std::error::Error for RemindersError {}

/// What a node's firer did (counters since it started).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReminderStats {
    /// Due times this node claimed and told its entity.
    pub fired: u64,
    /// Claims another node's write beat (the record was re-read).
    pub conflicts: u64,
    /// Tells refused after a claim (the sharding stopped or its buffer
    /// was full): those firings are lost.
    pub refused: u64,
    /// Records that did not decode (left out).
    pub bad_records: u64,
    /// Reminders beyond [`MAX_INDEXED`] (not fired by this node).
    pub over_cap: u64,
    /// Store calls that failed.
    pub store_errors: u64,
}

#[derive(Default)]
pub(crate) struct Counters {
    pub fired: AtomicU64,
    pub conflicts: AtomicU64,
    pub refused: AtomicU64,
    pub bad_records: AtomicU64,
    pub over_cap: AtomicU64,
    pub store_errors: AtomicU64,
}

impl Counters {
    pub fn add(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    fn snapshot(&self) -> ReminderStats {
        let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ReminderStats {
            fired: l(&self.fired),
            conflicts: l(&self.conflicts),
            refused: l(&self.refused),
            bad_records: l(&self.bad_records),
            over_cap: l(&self.over_cap),
            store_errors: l(&self.store_errors),
        }
    }
}

/// The reminders of one sharding type: store and cancel them from any
/// node (entities keep a clone); [`fire_for`](Self::fire_for) makes this
/// node fire those its sharding owns.
#[derive(Clone)]
pub struct Reminders {
    pub(crate) bucket: Bucket,
    pub(crate) handle: Handle,
    pub(crate) kind: String,
    pub(crate) stats: Arc<Counters>,
}

/// How long one store call may take.
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(5);

impl Reminders {
    /// Opens (or creates) the reminder bucket of sharding type `kind` on
    /// the cluster's transport (over NATS: JetStream must be on).
    pub fn open(cluster: &Cluster, kind: &str) -> Result<Reminders, RemindersError> {
        Self::open_with_replicas(cluster, kind, 1)
    }

    /// As [`open`](Self::open), creating a missing bucket with `replicas`
    /// JetStream replicas.
    pub fn open_with_replicas(
        cluster: &Cluster,
        kind: &str,
        replicas: usize,
    ) -> Result<Reminders, RemindersError> {
        let transport = cluster.node().transport().clone();
        let handle = troupe_remote::runtime::handle().map_err(|e| store(&e))?;
        let config = BucketConfig {
            name: format!("troupe-reminders-{}-{kind}", cluster.node().cluster()),
            max_age: Duration::ZERO,
            replicas,
        };
        let bucket = block(&handle, async move { transport.key_value(&config).await })??;
        Ok(Reminders {
            bucket,
            handle,
            kind: kind.to_string(),
            stats: Arc::default(),
        })
    }

    /// Stores reminder `name` of entity `id` (replacing one of that
    /// name): the entity gets [`Reminder`] at each due time, on whichever
    /// node owns it then. Blocks for one store write; callable from a
    /// handler.
    pub fn remind(&self, id: &str, name: &str, when: Schedule) -> Result<(), RemindersError> {
        if !crate::envelope::check(id.as_bytes(), 0) {
            return Err(RemindersError::BadId);
        }
        if !record::name_ok(name) {
            return Err(RemindersError::BadName);
        }
        let (due, every) = match when {
            Schedule::At(t) => (t, 0),
            Schedule::Every { first, every } => {
                let ms = u64::try_from(every.as_millis()).unwrap_or(u64::MAX);
                if ms == 0 {
                    return Err(RemindersError::ZeroPeriod);
                }
                (first, ms)
            }
        };
        let rec = record::Record {
            id: id.to_string(),
            name: name.to_string(),
            due_ms: unix_ms(due),
            every_ms: every,
        };
        let key = record::key(id, name);
        let bucket = self.bucket.clone();
        let value = Bytes::from(rec.encode());
        block(&self.handle, async move { bucket.put(&key, value).await })??;
        Ok(())
    }

    /// Cancels reminder `name` of entity `id`; `true` if it was stored.
    /// A firing already claimed (being told) is not called back.
    pub fn cancel(&self, id: &str, name: &str) -> Result<bool, RemindersError> {
        if !crate::envelope::check(id.as_bytes(), 0) {
            return Err(RemindersError::BadId);
        }
        let key = record::key(id, name);
        let bucket = self.bucket.clone();
        block(&self.handle, async move {
            let had = bucket.get_leader(&key).await?.is_some();
            if had {
                bucket.delete(&key, None).await?;
            }
            Ok::<_, KvError>(had)
        })?
        .map_err(|e| store(&e))
    }

    /// Whether reminder `name` of entity `id` is stored, and its next due
    /// time (ms since the Unix epoch).
    pub fn due(&self, id: &str, name: &str) -> Result<Option<u64>, RemindersError> {
        let key = record::key(id, name);
        let bucket = self.bucket.clone();
        let e = block(&self.handle, async move { bucket.get_leader(&key).await })??;
        Ok(e.and_then(|e| record::Record::decode(&e.key, &e.value).map(|r| r.due_ms)))
    }

    /// Makes this node fire the reminders of the entities its part of
    /// `sharding` owns, checking every `poll` (default 50 ms:
    /// [`fire_for_every`](Self::fire_for_every)). Firing stops when the
    /// [`Firer`] is dropped.
    pub fn fire_for<A: Actor>(&self, sharding: &Sharding<A>) -> Result<Firer, RemindersError>
    where
        A::Msg: From<Reminder>,
    {
        self.fire_for_every(sharding, Duration::from_millis(50))
    }

    /// As [`fire_for`](Self::fire_for), checking every `poll`.
    pub fn fire_for_every<A: Actor>(
        &self,
        sharding: &Sharding<A>,
        poll: Duration,
    ) -> Result<Firer, RemindersError>
    where
        A::Msg: From<Reminder>,
    {
        firer::start(self.clone(), sharding, poll)
    }

    /// What this handle's firers did.
    pub fn stats(&self) -> ReminderStats {
        self.stats.snapshot()
    }
}

pub(crate) fn store(e: &dyn std::fmt::Display) -> RemindersError {
    RemindersError::Store(e.to_string())
}

impl From<KvError> for RemindersError {
    fn from(e: KvError) -> Self {
        store(&e)
    }
}

/// Ms since the Unix epoch (0 before it).
pub(crate) fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Runs `f` on the I/O runtime and waits at most [`CALL_TIMEOUT`] (not
/// from one of that runtime's threads).
pub(crate) fn block<T: Send + 'static>(
    handle: &Handle,
    f: impl std::future::Future<Output = T> + Send + 'static,
) -> Result<T, RemindersError> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    handle.spawn(async move {
        let _ = tx.send(tokio::time::timeout(CALL_TIMEOUT, f).await);
    });
    match rx.recv() {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(_)) => Err(store(&format!("no answer within {CALL_TIMEOUT:?}"))),
        Err(_) => Err(store(&"the I/O runtime dropped the call")),
    }
}
