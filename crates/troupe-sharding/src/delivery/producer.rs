//! The producer: [`Producer`] (the handle `send` is called on) and its
//! driver task, which delivers each entity's stream (`streams.rs`)
//! and retries until confirmed.
//!
//! Protocol of one message (the messages are in [`wire`](super::wire)):
//! 1. *Room.* `send` takes one of the producer's permits (waits for one;
//!    `try_send` answers [`ProducerError::Full`] instead). A permit comes
//!    back when its message is confirmed, so at most `max_unconfirmed`
//!    messages are unconfirmed at any time, over all entities: the
//!    producer's memory bound.
//! 2. *Accept.* The driver numbers the message in its entity's stream; a
//!    durable producer stores it first (`queue.rs`) and `send`
//!    returns only then. `Ok` from `send` means: accepted; delivered, in
//!    order, until confirmed, as long as this producer runs (a durable
//!    one: or the next one with its id).
//! 3. *Deliver.* A stream with no delivery out sends one: the oldest
//!    unconfirmed messages, at most `batch` (at most the `window`), as one
//!    ask of [`Deliver`] with the retry deadline. So each entity has at
//!    most `window` messages on their way to it unconfirmed (the flow
//!    control window of one producer-entity pair, Akka's
//!    `flow-control-window`), and entities are served side by side: a
//!    slow one holds its own stream, not the others'.
//! 4. *Confirm.* `Handled { upto }` drops the stream's messages up to
//!    `upto`, gives their permits back (and deletes their records); the
//!    stream sends what queued meanwhile. `Stale` confirms what the
//!    delivery held of an older run; the stream's other messages move to
//!    a new epoch.
//! 5. *Retry.* Any other answer (a timeout, a refusal, `Failed`) leaves
//!    the messages where they are: a timeout resends at once, the rest
//!    after a back-off (10 ms doubling, at most the retry deadline). The
//!    entity's table ([`consumer`](super::consumer)) drops what a retry
//!    repeats, so each message is handled once per activation, in order.
//!
//! Dropping the producer stops its driver: what is unconfirmed is
//! abandoned (a durable producer's stays in its queue).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::StreamExt;
use tokio::runtime::Handle;
use tokio::sync::{mpsc, oneshot, Semaphore};
use troupe::{Actor, AskError};
use troupe_remote::RemoteMessage;

use crate::delivery::queue::Queue;
use crate::delivery::stats::{Counters, ProducerStats};
use crate::delivery::streams::{Pending, Streams};
use crate::delivery::wire::{valid_producer_id, Confirmation, Deliver};
use crate::envelope::check;
use crate::sharding::{EntityRef, Sharding};

/// The default bound on a producer's unconfirmed messages over all its
/// entities ([`ProducerBuilder::max_unconfirmed`]): 100 entities' full
/// windows at the default window of 100.
pub const DEFAULT_MAX_UNCONFIRMED: usize = 10_000;

/// Why a message was not accepted; it is handed back.
pub enum ProducerError<M> {
    /// The producer is full (`try_send` only): `max_unconfirmed` messages
    /// wait for their confirmation. Send it again later, or use `send`,
    /// which waits.
    Full(M),
    /// The entity id is empty or longer than 256 bytes.
    BadEntity(M),
    /// The producer's driver has stopped (its runtime is shutting down).
    Stopped(M),
    /// The durable queue could not store it (the reason): not accepted.
    Queue(M, String),
    /// The producer stopped while storing it in the durable queue: it
    /// may be stored (and so sent by the next producer with this id) or
    /// not. The message is gone with the producer.
    StoppedStoring,
}

impl<M> ProducerError<M> {
    /// The message handed back (all but `StoppedStoring` hand it back).
    pub fn into_inner(self) -> Option<M> {
        match self {
            ProducerError::Full(m)
            | ProducerError::BadEntity(m)
            | ProducerError::Stopped(m)
            | ProducerError::Queue(m, _) => Some(m),
            ProducerError::StoppedStoring => None,
        }
    }
}

impl<M> fmt::Debug for ProducerError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProducerError::Full(_) => write!(f, "Full(..)"),
            ProducerError::BadEntity(_) => write!(f, "BadEntity(..)"),
            ProducerError::Stopped(_) => write!(f, "Stopped(..)"),
            ProducerError::Queue(_, e) => write!(f, "Queue(.., {e:?})"),
            ProducerError::StoppedStoring => write!(f, "StoppedStoring"),
        }
    }
}

impl<M> fmt::Display for ProducerError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProducerError::Full(_) => write!(
                f,
                "the producer holds its most unconfirmed messages; not accepted"
            ),
            ProducerError::BadEntity(_) => write!(f, "the entity id is empty or too long"),
            ProducerError::Stopped(_) => write!(f, "the producer has stopped; not accepted"),
            ProducerError::Queue(_, e) => {
                write!(f, "the durable queue could not store the message: {e}")
            }
            ProducerError::StoppedStoring => write!(
                f,
                "the producer stopped while storing the message: it may or may not be stored"
            ),
        }
    }
}

impl<M> std::error::Error for ProducerError<M> {}

/// Why a producer could not start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartError {
    /// The id is not 1 to 64 letters, digits, `_` or `-`.
    BadId(String),
    /// The durable queue could not be opened or read.
    Queue(String),
    /// The process's runtime is gone.
    Runtime,
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartError::BadId(id) => write!(
                f,
                "producer id {id:?} must be 1 to 64 letters, digits, '_' or '-'"
            ),
            StartError::Queue(e) => write!(f, "the durable producer queue: {e}"),
            StartError::Runtime => write!(f, "the process's I/O runtime is gone"),
        }
    }
}

impl std::error::Error for StartError {}

/// What `flush` found: messages still unconfirmed at its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unconfirmed(pub u64);

impl fmt::Display for Unconfirmed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} messages still unconfirmed", self.0)
    }
}

impl std::error::Error for Unconfirmed {}

/// Settings of a producer; finish with [`start`](Self::start).
#[must_use = "nothing runs until .start()"]
pub struct ProducerBuilder<A: Actor, M> {
    to: EntityRef<A>,
    runtime: Handle,
    transport: Arc<dyn troupe_remote::transport::Transport>,
    id: String,
    window: usize,
    max_unconfirmed: usize,
    batch: Option<usize>,
    retry_after: Duration,
    durable: Option<usize>,
    _m: PhantomData<fn(M)>,
}

impl<A: Actor, M: RemoteMessage + Clone> ProducerBuilder<A, M> {
    /// At most `n` messages on their way to one entity unconfirmed: the
    /// largest delivery, one delivery out per entity (default 100, at
    /// least 1). Messages to an entity beyond its window wait in its
    /// stream, accepted, until earlier ones are confirmed.
    pub fn window(mut self, n: usize) -> Self {
        self.window = n.max(1);
        self
    }

    /// At most `n` messages accepted and unconfirmed in all, over every
    /// entity (default [`DEFAULT_MAX_UNCONFIRMED`], at least 1): `send`
    /// waits and `try_send` answers `Full` beyond it. This bounds the
    /// producer's memory, its streams and its durable queue.
    pub fn max_unconfirmed(mut self, n: usize) -> Self {
        self.max_unconfirmed = n.max(1);
        self
    }

    /// At most `n` messages in one delivery (default and at most: the
    /// window).
    pub fn batch(mut self, n: usize) -> Self {
        self.batch = Some(n.max(1));
        self
    }

    /// How long a delivery waits for its confirmation before it is sent
    /// again (default 1 s).
    pub fn retry_after(mut self, t: Duration) -> Self {
        self.retry_after = t.max(Duration::from_millis(1));
        self
    }

    /// Keeps what is accepted and not confirmed in a JetStream-backed
    /// bucket of the cluster's transport (`troupe_producer_<id>`, with
    /// `replicas` copies if this start creates it), so that a producer
    /// started later with the same id resends it.
    pub fn durable(mut self, replicas: usize) -> Self {
        self.durable = Some(replicas.clamp(1, 5));
        self
    }

    /// Starts the producer (with a durable queue: opens it and reloads
    /// what it holds). Blocks; not from a thread of the I/O runtime.
    pub fn start(self) -> Result<Producer<M>, StartError> {
        if !valid_producer_id(&self.id) {
            return Err(StartError::BadId(self.id));
        }
        let stats = Arc::new(Counters::default());
        let mut streams = Streams::new(0);
        let mut restored = 0usize;
        let queue = match self.durable {
            None => None,
            Some(replicas) => {
                let (transport, id) = (self.transport.clone(), self.id.clone());
                let opened = troupe_remote::runtime::block_on(&self.runtime, async move {
                    let q = Queue::open(&transport, &id, replicas).await?;
                    let loaded = q.load().await?;
                    Ok::<_, troupe_remote::transport::kv::KvError>((q, loaded))
                })
                .ok_or(StartError::Runtime)?
                .map_err(|e| StartError::Queue(e.to_string()))?;
                let (q, (stored, bad)) = opened;
                if bad > 0 {
                    tracing::warn!(producer = %self.id, bad, "durable queue records that do not decode; left alone");
                }
                let q = Arc::new(q);
                let now = Instant::now();
                let mut stale_keys = Vec::new();
                for s in stored {
                    let Ok(msg) = postcard::from_bytes::<M>(&s.msg) else {
                        tracing::warn!(producer = %self.id, key = %s.key, "a stored message does not decode; left alone");
                        continue;
                    };
                    restored += 1;
                    let p = Pending {
                        seq: s.seq,
                        msg,
                        at: now,
                        key: Some(s.key),
                        restored: true,
                    };
                    for old in streams.restore(&s.entity, s.epoch, p) {
                        restored -= 1;
                        stale_keys.extend(old.key);
                    }
                }
                if !stale_keys.is_empty() {
                    let q2 = q.clone();
                    self.runtime.spawn(async move {
                        for k in stale_keys {
                            let _ = q2.remove(&k).await;
                        }
                    });
                }
                Some(q)
            }
        };
        Counters::add(&stats.restored, restored as u64);
        // The restored messages hold permits too.
        let free = self.max_unconfirmed.saturating_sub(restored);
        let room = Arc::new(Semaphore::new(free));
        let (tx, rx) = mpsc::unbounded_channel();
        let driver = Driver {
            producer: self.id.clone(),
            to: self.to,
            streams,
            room: room.clone(),
            stats: stats.clone(),
            batch: self.batch.unwrap_or(self.window).min(self.window),
            retry_after: self.retry_after,
            queue: queue.clone(),
            timers: BinaryHeap::new(),
            owed: restored.saturating_sub(self.max_unconfirmed),
        };
        self.runtime.spawn(driver.run(rx));
        Ok(Producer {
            id: self.id.into(),
            room,
            per_entity: self.window,
            capacity: self.max_unconfirmed,
            tx,
            stats,
            runtime: self.runtime,
            durable: queue.is_some(),
        })
    }
}

enum Cmd<M> {
    Send {
        entity: String,
        msg: M,
        /// A durable producer's caller waits for the store.
        stored: Option<oneshot::Sender<Result<(), (M, String)>>>,
    },
}

/// A producer of `M`s to the entities of one sharding type: at least
/// once, in order per entity, with a window of unconfirmed messages per
/// entity and a bound on them all (see
/// the module docs for the protocol, and the guide's sharding chapter for
/// what each outcome means).
///
/// ```no_run
/// # use std::time::Duration;
/// # fn doc<A: troupe::Actor, M: troupe_remote::RemoteMessage + Clone>(
/// #     carts: &troupe_sharding::Sharding<A>, add: M) -> Result<(), Box<dyn std::error::Error>> {
/// use troupe_sharding::delivery::Producer;
/// let producer = Producer::<M>::builder(carts, "orders-1").window(100).start()?;
/// producer.send_blocking("cart-7", add)?;
/// producer.flush_blocking(Duration::from_secs(5))?;
/// # Ok(()) }
/// ```
pub struct Producer<M: RemoteMessage> {
    id: Arc<str>,
    /// Permits for accepted, unconfirmed messages (`capacity` in all).
    room: Arc<Semaphore>,
    per_entity: usize,
    capacity: usize,
    tx: mpsc::UnboundedSender<Cmd<M>>,
    stats: Arc<Counters>,
    runtime: Handle,
    durable: bool,
}

impl<M: RemoteMessage + Clone> Producer<M> {
    /// A producer with id `id` (unique among the producers running, see
    /// the module docs) of `M`s to entities of `sharding`.
    pub fn builder<A: Actor>(sharding: &Sharding<A>, id: &str) -> ProducerBuilder<A, M> {
        let cluster = sharding.cluster();
        ProducerBuilder {
            to: sharding.entity("-"),
            runtime: cluster.node().runtime().clone(),
            transport: cluster.node().transport().clone(),
            id: id.to_string(),
            window: 100,
            max_unconfirmed: DEFAULT_MAX_UNCONFIRMED,
            batch: None,
            retry_after: Duration::from_secs(1),
            durable: None,
            _m: PhantomData,
        }
    }

    /// The producer's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The window of one entity: at most this many messages on their
    /// way to it unconfirmed.
    pub fn window(&self) -> usize {
        self.per_entity
    }

    /// At most this many messages accepted and unconfirmed in all.
    pub fn max_unconfirmed(&self) -> usize {
        self.capacity
    }

    /// The producer's counters.
    pub fn stats(&self) -> ProducerStats {
        self.stats.snapshot()
    }

    /// Sends `msg` to entity `entity`, waiting for room (at most
    /// `max_unconfirmed` messages unconfirmed).
    /// `Ok`: accepted (for a durable producer: stored), and delivered
    /// until confirmed, after every message sent to `entity` before it.
    pub async fn send(&self, entity: &str, msg: M) -> Result<(), ProducerError<M>> {
        if !check(entity.as_bytes(), 0) {
            return Err(ProducerError::BadEntity(msg));
        }
        match self.room.acquire().await {
            Ok(p) => p.forget(),
            Err(_) => return Err(ProducerError::Stopped(msg)),
        }
        match self.push(entity, msg) {
            Ok(None) => Ok(()),
            Ok(Some(rx)) => Self::stored(rx.await),
            Err(e) => Err(e),
        }
    }

    /// As [`send`](Self::send), but never waits for room: `Full` hands
    /// `msg` back when the producer is full. (A durable producer still waits
    /// for the store, blocking: not from a thread of the I/O runtime.)
    pub fn try_send(&self, entity: &str, msg: M) -> Result<(), ProducerError<M>> {
        if !check(entity.as_bytes(), 0) {
            return Err(ProducerError::BadEntity(msg));
        }
        match self.room.try_acquire() {
            Ok(p) => p.forget(),
            Err(tokio::sync::TryAcquireError::NoPermits) => return Err(ProducerError::Full(msg)),
            Err(_) => return Err(ProducerError::Stopped(msg)),
        }
        match self.push(entity, msg) {
            Ok(None) => Ok(()),
            Ok(Some(rx)) => Self::stored(rx.blocking_recv()),
            Err(e) => Err(e),
        }
    }

    /// As [`send`](Self::send), from a plain thread (not one of the I/O
    /// runtime's): blocks while the producer is full.
    pub fn send_blocking(&self, entity: &str, msg: M) -> Result<(), ProducerError<M>> {
        if !check(entity.as_bytes(), 0) {
            return Err(ProducerError::BadEntity(msg));
        }
        match futures::executor::block_on(self.room.acquire()) {
            Ok(p) => p.forget(),
            Err(_) => return Err(ProducerError::Stopped(msg)),
        }
        match self.push(entity, msg) {
            Ok(None) => Ok(()),
            Ok(Some(rx)) => Self::stored(rx.blocking_recv()),
            Err(e) => Err(e),
        }
    }

    fn stored(
        r: Result<Result<(), (M, String)>, oneshot::error::RecvError>,
    ) -> Result<(), ProducerError<M>> {
        match r {
            Ok(Ok(())) => Ok(()),
            Ok(Err((m, e))) => Err(ProducerError::Queue(m, e)),
            // The driver stopped with the message.
            Err(_) => Err(ProducerError::StoppedStoring),
        }
    }

    /// Hands the message (its permit taken) to the driver.
    #[allow(clippy::type_complexity)]
    fn push(
        &self,
        entity: &str,
        msg: M,
    ) -> Result<Option<oneshot::Receiver<Result<(), (M, String)>>>, ProducerError<M>> {
        Counters::add(&self.stats.accepted, 1);
        let (stored, rx) = if self.durable {
            let (tx, rx) = oneshot::channel();
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        let cmd = Cmd::Send {
            entity: entity.to_string(),
            msg,
            stored,
        };
        match self.tx.send(cmd) {
            Ok(()) => Ok(rx),
            Err(mpsc::error::SendError(Cmd::Send { msg, .. })) => {
                self.room.add_permits(1);
                self.stats
                    .accepted
                    .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                Err(ProducerError::Stopped(msg))
            }
        }
    }

    /// Waits until every message accepted before it is confirmed, at most
    /// `timeout`; `Err` says how many were still unconfirmed then.
    pub async fn flush(&self, timeout: Duration) -> Result<(), Unconfirmed> {
        flush(
            self.room.clone(),
            self.capacity,
            self.stats.clone(),
            timeout,
        )
        .await
    }

    /// As [`flush`](Self::flush), from a plain thread.
    pub fn flush_blocking(&self, timeout: Duration) -> Result<(), Unconfirmed> {
        let fut = flush(
            self.room.clone(),
            self.capacity,
            self.stats.clone(),
            timeout,
        );
        troupe_remote::runtime::block_on(&self.runtime, fut)
            .unwrap_or(Err(Unconfirmed(self.stats.snapshot().unconfirmed)))
    }
}

async fn flush(
    room: Arc<Semaphore>,
    capacity: usize,
    stats: Arc<Counters>,
    timeout: Duration,
) -> Result<(), Unconfirmed> {
    let n = u32::try_from(capacity).unwrap_or(u32::MAX);
    match tokio::time::timeout(timeout, room.acquire_many(n)).await {
        // Every permit is back: nothing is unconfirmed. Dropping them
        // gives them back.
        Ok(Ok(_all)) => Ok(()),
        _ => Err(Unconfirmed(stats.snapshot().unconfirmed)),
    }
}

type Out = BoxFuture<'static, (String, Result<Confirmation, AskError>)>;

/// The driver task: owns the streams (see the module docs).
struct Driver<A: Actor, M> {
    producer: String,
    to: EntityRef<A>,
    streams: Streams<M>,
    room: Arc<Semaphore>,
    stats: Arc<Counters>,
    batch: usize,
    retry_after: Duration,
    queue: Option<Arc<Queue>>,
    timers: BinaryHeap<Reverse<(Instant, String)>>,
    /// Permits restored messages took beyond `max_unconfirmed`:
    /// confirmations pay these back before the room grows.
    owed: usize,
}

impl<A: Actor, M: RemoteMessage + Clone> Driver<A, M> {
    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Cmd<M>>) {
        let mut out: FuturesUnordered<Out> = FuturesUnordered::new();
        for e in self.streams.all_ready() {
            self.launch(&e, &mut out);
        }
        loop {
            let timer = self.timers.peek().map(|Reverse((t, _))| *t);
            tokio::select! {
                cmd = rx.recv() => {
                    let Some(cmd) = cmd else { break };
                    let mut cmds = vec![cmd];
                    while cmds.len() < 1024 {
                        match rx.try_recv() {
                            Ok(c) => cmds.push(c),
                            Err(_) => break,
                        }
                    }
                    self.accept(cmds, &mut out).await;
                }
                Some((entity, r)) = out.next(), if !out.is_empty() => {
                    self.settle(entity, r, &mut out).await;
                }
                _ = sleep_until(timer), if timer.is_some() => {
                    let now = Instant::now();
                    while self.timers.peek().is_some_and(|Reverse((t, _))| *t <= now) {
                        if let Some(Reverse((_, e))) = self.timers.pop() {
                            self.streams.wake(&e);
                            self.launch(&e, &mut out);
                        }
                    }
                }
            }
        }
    }

    /// Step 2: numbers (and stores) what `send` handed over.
    async fn accept(&mut self, cmds: Vec<Cmd<M>>, out: &mut FuturesUnordered<Out>) {
        let now = Instant::now();
        let Some(queue) = self.queue.clone() else {
            for Cmd::Send { entity, msg, .. } in cmds {
                self.streams.push(&entity, msg, now);
                self.launch(&entity, out);
            }
            return;
        };
        // Durable: number every message, store them all at once, then
        // queue those stored; a failed store fails the messages after it
        // to the same entity too (their numbers are taken back), so a
        // stream never has a gap.
        let mut numbered = Vec::with_capacity(cmds.len());
        for Cmd::Send {
            entity,
            msg,
            stored,
        } in cmds
        {
            let (epoch, seq) = self.streams.reserve(&entity);
            let bytes = postcard::to_allocvec(&msg);
            numbered.push((entity, msg, stored, epoch, seq, bytes));
        }
        let puts = numbered.iter().map(|(entity, _, _, epoch, seq, bytes)| {
            let q = queue.clone();
            async move {
                match bytes {
                    Ok(b) => q
                        .store(entity, *epoch, *seq, b)
                        .await
                        .map_err(|e| e.to_string()),
                    Err(e) => Err(e.to_string()),
                }
            }
        });
        let results = futures::future::join_all(puts).await;
        let mut failed: Vec<String> = Vec::new();
        for ((entity, msg, stored, _epoch, seq, _), r) in numbered.into_iter().zip(results) {
            let r = if failed.contains(&entity) {
                if let Ok(k) = &r {
                    let _ = queue.remove(k).await;
                }
                Err("an earlier message to the entity was not stored".to_string())
            } else {
                r
            };
            match r {
                Ok(key) => {
                    self.streams
                        .push_reserved(&entity, seq, msg, now, Some(key));
                    if let Some(tx) = stored {
                        let _ = tx.send(Ok(()));
                    }
                    self.launch(&entity, out);
                }
                Err(e) => {
                    Counters::add(&self.stats.queue_errors, 1);
                    self.stats
                        .accepted
                        .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                    self.room.add_permits(1);
                    if !failed.contains(&entity) {
                        self.streams.rewind(&entity, seq);
                        failed.push(entity);
                    }
                    if let Some(tx) = stored {
                        let _ = tx.send(Err((msg, e)));
                    }
                }
            }
        }
    }

    /// Step 3: sends `entity`'s next delivery if it can.
    fn launch(&mut self, entity: &str, out: &mut FuturesUnordered<Out>) {
        let Some((epoch, first, msgs, retry)) = self.streams.take_batch(entity, self.batch) else {
            return;
        };
        Counters::add(&self.stats.deliveries, 1);
        if retry {
            Counters::add(&self.stats.resent, msgs.len() as u64);
        }
        let to = self.to.sibling(entity);
        let q = Deliver {
            producer: self.producer.clone(),
            epoch,
            first,
            msgs,
        };
        let timeout = self.retry_after;
        let entity = entity.to_string();
        out.push(Box::pin(async move {
            let r = to.ask_async(q, timeout).await;
            (entity, r)
        }));
    }

    /// Steps 4 and 5.
    async fn settle(
        &mut self,
        entity: String,
        r: Result<Confirmation, AskError>,
        out: &mut FuturesUnordered<Out>,
    ) {
        match r {
            Ok(Confirmation::Handled { upto }) => {
                let done = self.streams.confirm(&entity, upto).done;
                self.confirmed(done, false);
                self.launch(&entity, out);
            }
            Ok(Confirmation::Stale { current }) => {
                // What came from an older run was confirmed then; the rest
                // (never sent in that epoch's life) moves to a new epoch.
                let (done, moved) = self.streams.stale(&entity, current);
                self.confirmed(done, true);
                if let Some(q) = self.queue.clone() {
                    self.restore_moved(&q, &entity, moved).await;
                }
                self.launch(&entity, out);
            }
            Ok(Confirmation::Failed) | Err(_) => {
                Counters::add(&self.stats.failures, 1);
                let n = self.streams.failed(&entity);
                let wait = if matches!(r, Err(AskError::Timeout)) {
                    Duration::ZERO
                } else {
                    let exp = n.saturating_sub(1).min(16);
                    Duration::from_millis(10u64 << exp).min(self.retry_after)
                };
                self.timers.push(Reverse((Instant::now() + wait, entity)));
            }
        }
    }

    /// Gives confirmed messages' permits back, counts them, deletes their
    /// records.
    fn confirmed(&mut self, done: Vec<Pending<M>>, stale: bool) {
        if done.is_empty() {
            return;
        }
        let now = Instant::now();
        let n = done.len();
        let mut keys = Vec::new();
        for p in done {
            self.stats.latency(now.saturating_duration_since(p.at));
            keys.extend(p.key);
        }
        Counters::add(&self.stats.confirmed, n as u64);
        if stale {
            Counters::add(&self.stats.stale, n as u64);
        }
        let paid = n.min(self.owed);
        self.owed -= paid;
        self.room.add_permits(n - paid);
        if let (Some(q), false) = (self.queue.clone(), keys.is_empty()) {
            let stats = self.stats.clone();
            tokio::spawn(async move {
                for k in keys {
                    if q.remove(&k).await.is_err() {
                        Counters::add(&stats.queue_errors, 1);
                    }
                }
            });
        }
    }

    /// Rewrites the records of messages a `Stale` answer moved to a new
    /// epoch: stored under the new numbers, then the old ones deleted.
    async fn restore_moved(
        &mut self,
        q: &Arc<Queue>,
        entity: &str,
        moved: Vec<(u64, u64, String)>,
    ) {
        for (epoch, seq, old) in moved {
            let Some(Ok(bytes)) = self.streams.message(entity, seq).map(postcard::to_allocvec)
            else {
                continue;
            };
            match q.store(entity, epoch, seq, &bytes).await {
                Ok(k) => {
                    self.streams.set_key(entity, seq, k);
                    let _ = q.remove(&old).await;
                }
                Err(_) => Counters::add(&self.stats.queue_errors, 1),
            }
        }
    }
}

async fn sleep_until(t: Option<Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t.into()).await,
        None => futures::future::pending().await,
    }
}
