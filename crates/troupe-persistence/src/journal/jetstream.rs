//! The NATS JetStream store: the only module of this crate that knows
//! async-nats.
//!
//! Layout, for namespace `ns`:
//! * events: stream `troupe-<ns>-journal`, one subject per entity,
//!   `troupe.<ns>.journal.<kind>.<id>`. One append is one message (a
//!   postcard `Batch` of the command's events, `batch.rs`), so the events of one
//!   command are stored all or none.
//! * snapshots: KV bucket `troupe-<ns>-snapshots`, key `<kind>.<id>`, one
//!   revision per snapshot, up to [`SNAPSHOT_HISTORY`] kept by the bucket
//!   (a bucket made with fewer, by an older version, is raised to it at
//!   connect); [`SnapshotStore::retain`] purges all but the newest N
//!   revisions of the key.
//! * durable states: KV bucket `troupe-<ns>-state`, key `<kind>.<id>`,
//!   updated with the KV's revision check.
//! * projection offsets: KV bucket `troupe-<ns>-offsets`, key the
//!   projection's name, updated with the KV's revision check
//!   (`offsets.rs`; the bucket is made at the first projection's start).
//!
//! Tags: an append whose events carry tags has a `Troupe-Tags` header
//! (`batch.rs`); the read side (`read.rs`) selects messages by it without
//! decoding their bodies. The stored format is docs/journal-format.md.
//!
//! Optimistic concurrency: an append is published with JetStream's
//! `Nats-Expected-Last-Subject-Sequence` header set to the *stream*
//! sequence of the entity's last message as this writer knows it, so the
//! server refuses it if anyone else appended since (the header is checked
//! inside the stream's leader, under replication). The store caches, per
//! entity, the pair (last event number, its stream sequence) learned from
//! its own appends and reads, beside the entity's subject (formatted once);
//! on a miss, or when the writer's expected event number differs, it asks
//! the server for the subject's last message.
//!
//! Per append on the hot path (a cached position): the cache's lock twice
//! (read before the publish, update after the acknowledgement), one
//! exactly sized buffer for the message, no formatting.
//!
//! Replay (`replay.rs`): the entity's last message, asked of the stream's
//! leader, is where the replay ends; an ordered consumer filtered on the
//! entity's subject delivers from the start, or from just after the stream
//! sequence stored with the latest snapshot, so a snapshot spares reading
//! older messages. Where the consumer cannot be created or stalls (a
//! replicated stream electing its leader), the replay goes on with direct
//! gets, which any replica answers; failed requests are retried with
//! back-off within a bounded time, and a replay returns every event through
//! the last message or an error.
//!
//! Runtime: the connection's tasks run on the process's one I/O runtime,
//! [`troupe_remote::runtime::handle`] (the one nodes and the cluster use),
//! or on the one passed to [`JetStreamBuilder::runtime`]. (A Troupe
//! system's own async runtime has no I/O driver, so it cannot carry the
//! connection; a system built with `tokio_handle(runtime::handle()?)` polls
//! its async actors inside the I/O runtime's context.) Appends and KV
//! operations are polled in the caller's tokio context when there is one
//! (a Troupe async actor is polled inside its system's runtime, which has
//! timers), else run on the store's runtime; replays always run there.
//!
//! Deletion (`delete.rs`): [`Journal::delete_through`] purges the
//! entity's subject below the first message that holds a later event, and
//! never its last message, whose stream sequence the next append is
//! checked against.
//!
//! Acknowledgement: an append returns `Ok` only once the server's publish
//! acknowledgement arrived, that is once the stream stored the message
//! with its replicas (`num_replicas`, see [`JetStreamBuilder::replicas`]).

use super::{
    check_numbering, from_bytes, to_bytes, EventRecord, Journal, Revisioned, Snapshot,
    SnapshotStore, StateStore,
};
use crate::error::PersistError;
use crate::id::{check, PersistenceId};
use async_nats::jetstream::{self, context::Publish, kv, stream};
use async_nats::Subject;
use batch::{encode_batch, tags_header, Batch, Replay, TAGS_HEADER};
use cache::{cache, Position};
use futures::future::BoxFuture;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

mod batch;
mod cache;
mod delete;
mod offsets;
mod read;
mod replay;

/// How many revisions of each key the snapshot bucket keeps at most (the
/// KV maximum): the ceiling of [`SnapshotStore::retain`]'s `keep`.
pub const SNAPSHOT_HISTORY: i64 = 64;

/// A snapshot as stored in KV, with the stream sequence of its last event
/// (0 when not known), where a replay after it may start.
#[derive(Serialize, Deserialize)]
struct StoredSnapshot {
    snapshot: Snapshot,
    stream_seq: u64,
}

/// A [`Journal`], [`SnapshotStore`] and [`StateStore`] on NATS JetStream
/// (see the module docs).
pub struct JetStreamStore {
    shared: Arc<Shared>,
}

struct Shared {
    handle: tokio::runtime::Handle,
    js: jetstream::Context,
    stream: stream::Stream,
    snapshots: kv::Store,
    states: kv::Store,
    ns: String,
    timeout: Duration,
    /// Per entity: its position and subject (see [`Position`]). A cache:
    /// a miss asks the server; at most `cache::CACHED` entries.
    positions: Mutex<HashMap<PersistenceId, Position>>,
    /// Per entity: (a snapshot's event number, its stream sequence). A
    /// cache: a miss replays from the stream's start; at most `cache::CACHED`.
    hints: Mutex<HashMap<PersistenceId, (u64, u64)>>,
    /// Until when replays skip the ordered consumer, whose creation
    /// failed last (written by replays, `replay.rs`).
    direct_until: Mutex<Option<tokio::time::Instant>>,
    /// The projections' offset bucket, opened at its first use
    /// (`offsets.rs`).
    offsets: tokio::sync::OnceCell<kv::Store>,
    replicas: usize,
}

/// Configures a [`JetStreamStore`].
#[derive(Clone, Debug)]
pub struct JetStreamBuilder {
    url: String,
    ns: String,
    replicas: usize,
    timeout: Duration,
    runtime: Option<tokio::runtime::Handle>,
}

impl JetStreamBuilder {
    /// The namespace of the stream, buckets and subjects (default
    /// `"default"`); letters, digits, `-`, `_`, `=`.
    pub fn namespace(mut self, ns: &str) -> Self {
        self.ns = ns.to_string();
        self
    }

    /// JetStream replicas of the stream and buckets (default 1; 3 on a
    /// three-server cluster, so a server's loss loses no acknowledged
    /// event). Applies when this store creates them.
    pub fn replicas(mut self, n: usize) -> Self {
        self.replicas = n.max(1);
        self
    }

    /// How long to wait for the server (connecting, each acknowledgement,
    /// each replay); default 5 s.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Runs the connection on this runtime (it needs I/O and timers
    /// enabled) instead of the process's I/O runtime
    /// ([`troupe_remote::runtime::handle`]).
    pub fn runtime(mut self, handle: tokio::runtime::Handle) -> Self {
        self.runtime = Some(handle);
        self
    }

    /// Connects and creates (or opens) the stream and the buckets. Blocks;
    /// call it outside any async context.
    pub fn connect(self) -> Result<JetStreamStore, PersistError> {
        let fail = |reason: String| PersistError::Unavailable {
            id: format!("namespace {}", self.ns),
            reason,
        };
        check("namespace", &self.ns)?;
        let handle = match &self.runtime {
            Some(h) => h.clone(),
            None => troupe_remote::runtime::handle()
                .map_err(|e| fail(format!("no I/O runtime: {e}")))?,
        };
        let (url, ns, replicas, timeout) = (
            self.url.clone(),
            self.ns.clone(),
            self.replicas,
            self.timeout,
        );
        // Spawned, then waited for here: the process's I/O runtime is a
        // current-thread one that its own thread drives. Waiting on one
        // of its own threads would wait forever: refused.
        if tokio::runtime::Handle::try_current().is_ok_and(|h| h.id() == handle.id()) {
            return Err(fail(
                "connect() blocks: call it outside the runtime the store runs on".into(),
            ));
        }
        let (tx, rx) = std::sync::mpsc::channel();
        handle.spawn(async move {
            let opened = tokio::time::timeout(timeout * 2, open(url, ns, replicas, timeout))
                .await
                .unwrap_or_else(|_| Err(format!("no answer within {:?}", timeout * 2)));
            let _ = tx.send(opened);
        });
        let (js, stream, snapshots, states) = rx
            .recv()
            .unwrap_or_else(|_| Err("the runtime stopped".to_string()))
            .map_err(fail)?;
        Ok(JetStreamStore {
            shared: Arc::new(Shared {
                handle,
                js,
                stream,
                snapshots,
                states,
                ns: self.ns,
                timeout,
                positions: Mutex::new(HashMap::new()),
                hints: Mutex::new(HashMap::new()),
                direct_until: Mutex::new(None),
                offsets: tokio::sync::OnceCell::new(),
                replicas: self.replicas,
            }),
        })
    }
}

async fn open(
    url: String,
    ns: String,
    replicas: usize,
    timeout: Duration,
) -> Result<(jetstream::Context, stream::Stream, kv::Store, kv::Store), String> {
    let client = async_nats::ConnectOptions::new()
        .connection_timeout(timeout)
        .retry_on_initial_connect()
        .connect(url.split(',').map(str::trim).collect::<Vec<_>>())
        .await
        .map_err(|e| format!("cannot connect to {url}: {e}"))?;
    let mut js = jetstream::new(client);
    js.set_timeout(timeout);
    let stream = js
        .get_or_create_stream(stream::Config {
            name: format!("troupe-{ns}-journal"),
            subjects: vec![format!("troupe.{ns}.journal.>")],
            storage: stream::StorageType::File,
            num_replicas: replicas,
            allow_direct: true,
            ..Default::default()
        })
        .await
        .map_err(|e| {
            format!("cannot open the journal stream (is JetStream on, `nats-server -js`?): {e}")
        })?;
    let mut buckets = Vec::new();
    for (name, history) in [("snapshots", SNAPSHOT_HISTORY), ("state", 1)] {
        let bucket = format!("troupe-{ns}-{name}");
        let kv = match js
            .create_key_value(kv::Config {
                bucket: bucket.clone(),
                history,
                storage: stream::StorageType::File,
                num_replicas: replicas,
                ..Default::default()
            })
            .await
        {
            Ok(kv) => kv,
            Err(_) => js
                .get_key_value(&bucket)
                .await
                .map_err(|e| format!("cannot open the KV bucket {bucket}: {e}"))?,
        };
        // A bucket an older version made keeps fewer revisions: raised.
        let mut config = kv
            .stream
            .get_info()
            .await
            .map_err(|e| format!("cannot read the KV bucket {bucket}: {e}"))?
            .config;
        if config.max_messages_per_subject < history {
            config.max_messages_per_subject = history;
            js.update_stream(config)
                .await
                .map_err(|e| format!("cannot raise the history of {bucket}: {e}"))?;
        }
        buckets.push(kv);
    }
    let states = buckets.pop().expect("two buckets");
    let snapshots = buckets.pop().expect("two buckets");
    Ok((js, stream, snapshots, states))
}

impl JetStreamStore {
    /// A builder for the server at `url` (`nats://127.0.0.1:4222`), or
    /// any of several (`nats://a:4222,nats://b:4222`).
    pub fn builder(url: &str) -> JetStreamBuilder {
        JetStreamBuilder {
            url: url.to_string(),
            ns: "default".to_string(),
            replicas: 1,
            timeout: Duration::from_secs(5),
            runtime: None,
        }
    }

    /// Connects with the defaults (namespace `"default"`, one replica).
    pub fn connect(url: &str) -> Result<Self, PersistError> {
        Self::builder(url).connect()
    }

    /// The journal subject of `id`.
    pub fn subject(&self, id: &PersistenceId) -> String {
        self.shared.subject(id)
    }

    /// The journal stream's name.
    pub fn stream_name(&self) -> String {
        format!("troupe-{}-journal", self.shared.ns)
    }

    /// The runtime the connection runs on. Persistent actors on a tokio
    /// dispatcher of it (`system.tokio_dispatcher("journal",
    /// store.runtime())`, see [`spawn_persistent_with`](crate::spawn_persistent_with))
    /// run beside the connection: no thread hop per append and per
    /// acknowledgement.
    pub fn runtime(&self) -> tokio::runtime::Handle {
        self.shared.handle.clone()
    }

    /// Runs `fut` in the caller's tokio context if there is one, else on
    /// the store's runtime.
    async fn run<T: Send + 'static>(
        &self,
        id: &PersistenceId,
        always_spawn: bool,
        fut: impl Future<Output = Result<T, PersistError>> + Send + 'static,
    ) -> Result<T, PersistError> {
        if !always_spawn && tokio::runtime::Handle::try_current().is_ok() {
            return fut.await;
        }
        match self.shared.handle.spawn(fut).await {
            Ok(r) => r,
            Err(e) => Err(PersistError::Unavailable {
                id: id.to_string(),
                reason: format!("the store's runtime stopped: {e}"),
            }),
        }
    }
}

impl Shared {
    fn subject(&self, id: &PersistenceId) -> String {
        format!("troupe.{}.journal.{}.{}", self.ns, id.kind(), id.id())
    }

    /// `id`'s subject: the cached one if any, else formatted.
    fn cached_subject(&self, id: &PersistenceId) -> Subject {
        match self.positions.lock().get(id) {
            Some(p) => p.subject.clone(),
            None => self.subject(id).into(),
        }
    }

    fn unavailable(id: &PersistenceId, what: &str, e: impl std::fmt::Display) -> PersistError {
        PersistError::Unavailable {
            id: id.to_string(),
            reason: format!("{what}: {e}"),
        }
    }

    /// Caches `id`'s (last event number, stream sequence), updating the
    /// entry in place when there is one (no clone of the id or subject).
    fn remember(&self, id: &PersistenceId, (seq, stream_seq): (u64, u64), subject: &Subject) {
        if let Some(p) = self.positions.lock().get_mut(id) {
            (p.seq, p.stream_seq) = (seq, stream_seq);
            return;
        }
        let subject = subject.clone();
        cache(
            &self.positions,
            id,
            Position {
                seq,
                stream_seq,
                subject,
            },
        );
    }

    /// The entity's last message: (last event number, stream sequence),
    /// (0, 0) when it has none.
    async fn last(&self, id: &PersistenceId, subject: &str) -> Result<(u64, u64), PersistError> {
        let (_, last, stream_seq) = self.last_message(id, subject).await?;
        Ok((last, stream_seq))
    }

    /// The entity's last message: (its first and last event numbers, its
    /// stream sequence), (0, 0, 0) when it has none.
    async fn last_message(
        &self,
        id: &PersistenceId,
        subject: &str,
    ) -> Result<(u64, u64, u64), PersistError> {
        use async_nats::jetstream::stream::LastRawMessageErrorKind;
        match self.stream.get_last_raw_message_by_subject(subject).await {
            Ok(msg) => {
                let batch: Batch = from_bytes(id, &msg.payload)?;
                let first = batch.events.first().map_or(0, |e| e.seq);
                let last = batch.events.last().map_or(0, |e| e.seq);
                Ok((first, last, msg.sequence))
            }
            Err(e) if e.kind() == LastRawMessageErrorKind::NoMessageFound => Ok((0, 0, 0)),
            Err(e) => Err(Self::unavailable(
                id,
                "cannot read the journal's last message",
                e,
            )),
        }
    }

    async fn append(
        &self,
        id: &PersistenceId,
        expected: u64,
        events: Vec<EventRecord>,
    ) -> Result<u64, PersistError> {
        let last = check_numbering(id, expected, &events)?;
        let cached = self
            .positions
            .lock()
            .get(id)
            .map(|p| (p.seq, p.stream_seq, p.subject.clone()));
        let (stream_seq, subject) = match cached {
            Some((seq, stream_seq, subject)) if seq == expected => (stream_seq, subject),
            cached => {
                let subject = match cached {
                    Some((_, _, subject)) => subject,
                    None => self.subject(id).into(),
                };
                let (seq, stream_seq) = self.last(id, &subject).await?;
                self.remember(id, (seq, stream_seq), &subject);
                if seq != expected {
                    return Err(PersistError::Conflict {
                        id: id.to_string(),
                        expected,
                        found: Some(seq),
                    });
                }
                (stream_seq, subject)
            }
        };
        if events.is_empty() {
            return Ok(expected);
        }
        let mut publish = Publish::build()
            .payload(encode_batch(id, &events)?)
            .expected_last_subject_sequence(stream_seq);
        if let Some(tags) = tags_header(&events) {
            publish = publish.header(TAGS_HEADER, tags.as_str());
        }
        let acked = match self.js.send_publish(subject.clone(), publish).await {
            Ok(ack) => ack.await,
            Err(e) => Err(e),
        };
        match acked {
            Ok(ack) => {
                self.remember(id, (last, ack.sequence), &subject);
                Ok(last)
            }
            Err(e) => {
                self.positions.lock().remove(id);
                if e.kind() == jetstream::context::PublishErrorKind::WrongLastSequence {
                    Err(PersistError::Conflict {
                        id: id.to_string(),
                        expected,
                        found: None,
                    })
                } else {
                    Err(Self::unavailable(id, "the append was not acknowledged", e))
                }
            }
        }
    }
}

impl Journal for JetStreamStore {
    fn append<'a>(
        &'a self,
        id: &'a PersistenceId,
        expected: u64,
        events: Vec<EventRecord>,
    ) -> BoxFuture<'a, Result<u64, PersistError>> {
        // The hot path (an actor polls it in its system's tokio context)
        // borrows: no clone of the id or the store per append.
        if tokio::runtime::Handle::try_current().is_ok() {
            return Box::pin(self.shared.append(id, expected, events));
        }
        let (shared, owned) = (self.shared.clone(), id.clone());
        Box::pin(self.run(id, true, async move {
            shared.append(&owned, expected, events).await
        }))
    }

    fn read<'a>(
        &'a self,
        id: &'a PersistenceId,
        from: u64,
    ) -> BoxFuture<'a, Result<Vec<EventRecord>, PersistError>> {
        let (shared, owned) = (self.shared.clone(), id.clone());
        Box::pin(self.run(id, true, async move { shared.read(&owned, from).await }))
    }

    fn delete_through<'a>(
        &'a self,
        id: &'a PersistenceId,
        seq: u64,
    ) -> BoxFuture<'a, Result<u64, PersistError>> {
        let (shared, owned) = (self.shared.clone(), id.clone());
        Box::pin(self.run(
            id,
            true,
            async move { shared.delete_through(&owned, seq).await },
        ))
    }
}

impl SnapshotStore for JetStreamStore {
    fn save<'a>(
        &'a self,
        id: &'a PersistenceId,
        snapshot: Snapshot,
    ) -> BoxFuture<'a, Result<(), PersistError>> {
        let (shared, owned) = (self.shared.clone(), id.clone());
        Box::pin(self.run(id, false, async move {
            let stream_seq = match shared.positions.lock().get(&owned) {
                Some(p) if p.seq == snapshot.seq => p.stream_seq,
                _ => 0,
            };
            let bytes = to_bytes(
                &owned,
                &StoredSnapshot {
                    snapshot,
                    stream_seq,
                },
            )?;
            shared
                .snapshots
                .put(owned.to_string(), bytes.into())
                .await
                .map_err(|e| Shared::unavailable(&owned, "cannot store the snapshot", e))?;
            Ok(())
        }))
    }

    fn load<'a>(
        &'a self,
        id: &'a PersistenceId,
    ) -> BoxFuture<'a, Result<Option<Snapshot>, PersistError>> {
        let (shared, owned) = (self.shared.clone(), id.clone());
        Box::pin(self.run(id, false, async move {
            let entry = shared
                .snapshots
                .entry(owned.to_string())
                .await
                .map_err(|e| Shared::unavailable(&owned, "cannot read the snapshot", e))?;
            let Some(entry) = entry.filter(|e| e.operation == kv::Operation::Put) else {
                return Ok(None);
            };
            let stored: StoredSnapshot = from_bytes(&owned, &entry.value)?;
            cache(
                &shared.hints,
                &owned,
                (stored.snapshot.seq, stored.stream_seq),
            );
            Ok(Some(stored.snapshot))
        }))
    }

    fn history<'a>(
        &'a self,
        id: &'a PersistenceId,
    ) -> BoxFuture<'a, Result<Vec<Snapshot>, PersistError>> {
        let (shared, owned) = (self.shared.clone(), id.clone());
        Box::pin(self.run(id, true, async move {
            use futures::StreamExt;
            let fail = |e: &dyn std::fmt::Display| {
                Shared::unavailable(&owned, "cannot read the snapshots", e)
            };
            // A key without revisions would keep the history waiting.
            let latest = shared
                .snapshots
                .entry(owned.to_string())
                .await
                .map_err(|e| fail(&e))?;
            if latest.is_none() {
                return Ok(Vec::new());
            }
            let mut history =
                tokio::time::timeout(shared.timeout, shared.snapshots.history(owned.to_string()))
                    .await
                    .map_err(|e| fail(&e))?
                    .map_err(|e| fail(&e))?;
            let mut kept = Vec::new();
            loop {
                let next = tokio::time::timeout(shared.timeout, history.next())
                    .await
                    .map_err(|e| fail(&e))?;
                let Some(entry) = next else { break };
                let entry = entry.map_err(|e| fail(&e))?;
                if entry.operation != kv::Operation::Put {
                    kept.clear();
                    continue;
                }
                let stored: StoredSnapshot = from_bytes(&owned, &entry.value)?;
                kept.push(stored);
            }
            // The oldest hint last: a replay after any of them may use
            // it (a mismatch only replays from the subject's start).
            let mut out = Vec::with_capacity(kept.len());
            for stored in kept.into_iter().rev() {
                cache(
                    &shared.hints,
                    &owned,
                    (stored.snapshot.seq, stored.stream_seq),
                );
                out.push(stored.snapshot);
            }
            Ok(out)
        }))
    }

    fn retain<'a>(
        &'a self,
        id: &'a PersistenceId,
        keep: usize,
    ) -> BoxFuture<'a, Result<(), PersistError>> {
        let (shared, owned) = (self.shared.clone(), id.clone());
        Box::pin(self.run(id, false, async move {
            let subject = format!("{}{}", shared.snapshots.prefix, owned);
            shared
                .snapshots
                .stream
                .purge()
                .filter(subject)
                .keep(keep.max(1) as u64)
                .await
                .map_err(|e| Shared::unavailable(&owned, "cannot drop old snapshots", e))?;
            Ok(())
        }))
    }
}

impl StateStore for JetStreamStore {
    fn get<'a>(
        &'a self,
        id: &'a PersistenceId,
    ) -> BoxFuture<'a, Result<Option<Revisioned>, PersistError>> {
        let (shared, owned) = (self.shared.clone(), id.clone());
        Box::pin(self.run(id, false, async move {
            let entry = shared
                .states
                .entry(owned.to_string())
                .await
                .map_err(|e| Shared::unavailable(&owned, "cannot read the state", e))?;
            Ok(entry
                .filter(|e| e.operation == kv::Operation::Put)
                .map(|e| Revisioned {
                    revision: e.revision,
                    bytes: e.value.to_vec(),
                }))
        }))
    }

    fn put<'a>(
        &'a self,
        id: &'a PersistenceId,
        expected: u64,
        bytes: Vec<u8>,
    ) -> BoxFuture<'a, Result<u64, PersistError>> {
        let (shared, owned) = (self.shared.clone(), id.clone());
        Box::pin(self.run(id, false, async move {
            match shared
                .states
                .update(owned.to_string(), bytes.into(), expected)
                .await
            {
                Ok(revision) => Ok(revision),
                Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => {
                    Err(PersistError::StateConflict {
                        id: owned.to_string(),
                        expected,
                    })
                }
                Err(e) => Err(Shared::unavailable(&owned, "the state was not stored", e)),
            }
        }))
    }
}
