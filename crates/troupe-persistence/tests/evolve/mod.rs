//! Three versions of one event-sourced account, the journal version 1
//! wrote (committed under `tests/data/evolution-v1/`, made by the ignored
//! test `write_version_1_test_data`), and how to load it into a store.
//!
//! * `v1`: `Opened { owner }`, `Deposited { amount }`, `Withdrawn { amount }`
//!   under `test.evolve.Event`.
//! * `v2`: a renamed field (`owner` → `holder`: an upcaster), a new field
//!   (`Deposited::memo`), a new variant (`Frozen`); the state gains fields
//!   (a snapshot upcaster). Same stable name.
//! * `v3`: a new stable name (`test.evolve.AccountEvent`), a new required
//!   field (`Opened::currency`) and a new variant (`Closed`); upcasters from
//!   v1 and v2 under the former name, a snapshot upcaster from v2 only
//!   (a v1 snapshot is skipped: the journal is replayed from the start).
//! * `compatible`: v1 plus a new variant and an optional field, with no
//!   upcaster: what CBOR reads by names and postcard refuses.
//!
//! Each account is generic over `CBOR`: which encoding it writes.
#![allow(dead_code)]

use futures::future::BoxFuture;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use troupe::ReplyTo;
use troupe_persistence::{
    Codec, Effect, EventRecord, Journal, MemoryStore, PersistError, PersistenceId, PersistentActor,
    Snapshot, SnapshotStore,
};

pub const T: Duration = Duration::from_secs(10);
pub type Reply<R> = ReplyTo<Result<R, PersistError>>;

/// The stable name of versions 1 and 2.
pub const NAME_V1: &str = "test.evolve.Event";

/// What every version is told: persist an event (reply: events so far),
/// snapshot, or tell the state.
pub enum Cmd<E, S: Send + 'static> {
    Do(E, Reply<u64>),
    Snapshot(Reply<u64>),
    Get(Reply<S>),
}

fn handle<A, E, S>(cmd: Cmd<E, S>) -> Effect<A>
where
    A: PersistentActor<Event = E, State = S>,
    S: Clone + Counted + Send + 'static,
{
    match cmd {
        Cmd::Do(e, r) => Effect::<A>::persist(e).reply(r, S::events),
        Cmd::Snapshot(r) => Effect::<A>::none().snapshot().reply(r, S::events),
        Cmd::Get(r) => Effect::<A>::none().reply(r, S::clone),
    }
}

/// A state that counts the events applied to it.
pub trait Counted {
    fn events(&self) -> u64;
}

fn codec<E, S>(cbor: bool, name: &'static str) -> Codec<E, S>
where
    E: Serialize + serde::de::DeserializeOwned + 'static,
    S: Serialize + serde::de::DeserializeOwned + 'static,
{
    if cbor {
        Codec::cbor_named(name)
    } else {
        Codec::postcard_named(name)
    }
}

macro_rules! account {
    ($state:ty) => {
        /// The account of this version; `CBOR`: which encoding it writes.
        pub struct Account<const CBOR: bool> {
            pub id: PersistenceId,
        }

        impl Counted for $state {
            fn events(&self) -> u64 {
                self.events
            }
        }
    };
}

pub mod v1 {
    use super::*;

    #[troupe_remote::remote("test.evolve.Event")]
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    pub enum Event {
        Opened { owner: String },
        Deposited { amount: u64 },
        Withdrawn { amount: u64 },
    }

    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
    pub struct State {
        pub owner: String,
        pub balance: u64,
        pub events: u64,
    }

    account!(State);

    impl<const CBOR: bool> PersistentActor for Account<CBOR> {
        type Command = Cmd<Event, State>;
        type Event = Event;
        type State = State;
        fn persistence_id(&self) -> PersistenceId {
            self.id.clone()
        }
        fn handle_command(&mut self, _: &State, cmd: Self::Command) -> Effect<Self> {
            handle(cmd)
        }
        fn apply(s: &mut State, e: &Event) {
            s.events += 1;
            match e {
                Event::Opened { owner } => s.owner = owner.clone(),
                Event::Deposited { amount } => s.balance += amount,
                Event::Withdrawn { amount } => s.balance -= amount,
            }
        }
        fn codec() -> Codec<Event, State> {
            codec(CBOR, NAME_V1)
        }
    }

    /// The commands of the run that wrote the test data: four events, a
    /// snapshot (after event 4), two more events.
    pub fn script() -> Vec<Option<Event>> {
        vec![
            Some(Event::Opened {
                owner: "ada".into(),
            }),
            Some(Event::Deposited { amount: 100 }),
            Some(Event::Deposited { amount: 50 }),
            Some(Event::Withdrawn { amount: 30 }),
            None,
            Some(Event::Deposited { amount: 7 }),
            Some(Event::Withdrawn { amount: 2 }),
        ]
    }

    /// The state after the script.
    pub fn end() -> State {
        State {
            owner: "ada".into(),
            balance: 125,
            events: 6,
        }
    }
}

pub mod v2 {
    use super::*;

    #[troupe_remote::remote("test.evolve.Event")]
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    pub enum Event {
        /// Renamed field: `owner` in v1.
        Opened {
            holder: String,
        },
        /// New field.
        Deposited {
            amount: u64,
            memo: Option<String>,
        },
        Withdrawn {
            amount: u64,
        },
        /// New variant.
        Frozen,
    }

    impl From<v1::Event> for Event {
        fn from(e: v1::Event) -> Self {
            match e {
                v1::Event::Opened { owner } => Event::Opened { holder: owner },
                v1::Event::Deposited { amount } => Event::Deposited { amount, memo: None },
                v1::Event::Withdrawn { amount } => Event::Withdrawn { amount },
            }
        }
    }

    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
    pub struct State {
        pub holder: String,
        pub balance: u64,
        pub events: u64,
        pub frozen: bool,
        pub memos: Vec<String>,
    }

    impl From<v1::State> for State {
        fn from(s: v1::State) -> Self {
            State {
                holder: s.owner,
                balance: s.balance,
                events: s.events,
                ..State::default()
            }
        }
    }

    account!(State);

    impl<const CBOR: bool> PersistentActor for Account<CBOR> {
        type Command = Cmd<Event, State>;
        type Event = Event;
        type State = State;
        fn persistence_id(&self) -> PersistenceId {
            self.id.clone()
        }
        fn handle_command(&mut self, _: &State, cmd: Self::Command) -> Effect<Self> {
            handle(cmd)
        }
        fn apply(s: &mut State, e: &Event) {
            s.events += 1;
            match e {
                Event::Opened { holder } => s.holder = holder.clone(),
                Event::Deposited { amount, memo } => {
                    s.balance += amount;
                    s.memos.extend(memo.clone());
                }
                Event::Withdrawn { amount } => s.balance -= amount,
                Event::Frozen => s.frozen = true,
            }
        }
        fn codec() -> Codec<Event, State> {
            codec(CBOR, NAME_V1)
                .upcast::<v1::Event>(NAME_V1, Event::from)
                .upcast_snapshot::<v1::State>(State::from)
        }
    }

    /// Version 1's end state, as version 2 sees it.
    pub fn from_v1() -> State {
        State::from(v1::end())
    }
}

pub mod v3 {
    use super::*;

    #[troupe_remote::remote("test.evolve.AccountEvent")]
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    pub enum Event {
        /// New required field.
        Opened {
            holder: String,
            currency: String,
        },
        Deposited {
            amount: u64,
            memo: Option<String>,
        },
        Withdrawn {
            amount: u64,
        },
        Frozen,
        /// New variant.
        Closed,
    }

    impl From<v2::Event> for Event {
        fn from(e: v2::Event) -> Self {
            match e {
                v2::Event::Opened { holder } => Event::Opened {
                    holder,
                    currency: "EUR".into(),
                },
                v2::Event::Deposited { amount, memo } => Event::Deposited { amount, memo },
                v2::Event::Withdrawn { amount } => Event::Withdrawn { amount },
                v2::Event::Frozen => Event::Frozen,
            }
        }
    }

    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
    pub struct State {
        pub holder: String,
        pub currency: String,
        pub balance: u64,
        pub events: u64,
        pub frozen: bool,
        pub closed: bool,
        pub memos: Vec<String>,
    }

    impl From<v2::State> for State {
        fn from(s: v2::State) -> Self {
            State {
                holder: s.holder,
                currency: "EUR".into(),
                balance: s.balance,
                events: s.events,
                frozen: s.frozen,
                closed: false,
                memos: s.memos,
            }
        }
    }

    account!(State);

    impl<const CBOR: bool> PersistentActor for Account<CBOR> {
        type Command = Cmd<Event, State>;
        type Event = Event;
        type State = State;
        fn persistence_id(&self) -> PersistenceId {
            self.id.clone()
        }
        fn handle_command(&mut self, _: &State, cmd: Self::Command) -> Effect<Self> {
            handle(cmd)
        }
        fn apply(s: &mut State, e: &Event) {
            s.events += 1;
            match e {
                Event::Opened { holder, currency } => {
                    s.holder = holder.clone();
                    s.currency = currency.clone();
                }
                Event::Deposited { amount, memo } => {
                    s.balance += amount;
                    s.memos.extend(memo.clone());
                }
                Event::Withdrawn { amount } => s.balance -= amount,
                Event::Frozen => s.frozen = true,
                Event::Closed => s.closed = true,
            }
        }
        fn codec() -> Codec<Event, State> {
            // Version 1's records become version 2's, then version 3's; no
            // upcaster for version 1's snapshot: it is skipped.
            let base = if CBOR {
                Codec::cbor()
            } else {
                Codec::postcard()
            };
            base.upcast::<v1::Event>(NAME_V1, |e| Event::from(v2::Event::from(e)))
                .upcast::<v2::Event>(NAME_V1, Event::from)
                .upcast_snapshot::<v2::State>(State::from)
        }
    }

    /// Version 1's end state, as version 3 sees it.
    pub fn from_v1() -> State {
        State::from(v2::from_v1())
    }
}

/// Version 1 with a new variant and a new optional field, and no rule.
pub mod compatible {
    use super::*;

    #[troupe_remote::remote("test.evolve.Event")]
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    pub enum Event {
        Opened { owner: String },
        Deposited { amount: u64, memo: Option<String> },
        Withdrawn { amount: u64 },
        Frozen,
    }

    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
    pub struct State {
        pub owner: String,
        pub balance: u64,
        pub events: u64,
        #[serde(default)]
        pub frozen: bool,
    }

    account!(State);

    impl<const CBOR: bool> PersistentActor for Account<CBOR> {
        type Command = Cmd<Event, State>;
        type Event = Event;
        type State = State;
        fn persistence_id(&self) -> PersistenceId {
            self.id.clone()
        }
        fn handle_command(&mut self, _: &State, cmd: Self::Command) -> Effect<Self> {
            handle(cmd)
        }
        fn apply(s: &mut State, e: &Event) {
            s.events += 1;
            match e {
                Event::Opened { owner } => s.owner = owner.clone(),
                Event::Deposited { amount, .. } => s.balance += amount,
                Event::Withdrawn { amount } => s.balance -= amount,
                Event::Frozen => s.frozen = true,
            }
        }
        fn codec() -> Codec<Event, State> {
            codec(CBOR, NAME_V1)
        }
    }
}

/// Version 1's event type under a new stable name, with the old one
/// accepted: the same shape, so no upcaster.
pub mod renamed {
    use super::*;

    #[troupe_remote::remote("test.evolve.Ledger")]
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    pub enum Event {
        Opened { owner: String },
        Deposited { amount: u64 },
        Withdrawn { amount: u64 },
    }

    pub struct Account {
        pub id: PersistenceId,
    }

    impl PersistentActor for Account {
        type Command = Cmd<Event, v1::State>;
        type Event = Event;
        type State = v1::State;
        fn persistence_id(&self) -> PersistenceId {
            self.id.clone()
        }
        fn handle_command(&mut self, _: &v1::State, cmd: Self::Command) -> Effect<Self> {
            handle(cmd)
        }
        fn apply(s: &mut v1::State, e: &Event) {
            s.events += 1;
            match e {
                Event::Opened { owner } => s.owner = owner.clone(),
                Event::Deposited { amount } => s.balance += amount,
                Event::Withdrawn { amount } => s.balance -= amount,
            }
        }
        fn codec() -> Codec<Event, v1::State> {
            Codec::cbor().accept_name(NAME_V1)
        }
    }
}

// ---- The committed data -------------------------------------------------

/// One journal message as the JetStream store writes it: the events of one
/// append (`journal/jetstream/batch.rs`).
#[derive(Serialize, Deserialize)]
pub struct Batch {
    pub events: Vec<EventRecord>,
}

/// A snapshot as the JetStream store keeps it in KV, with the stream
/// sequence of its last event (`journal/jetstream.rs`).
#[derive(Serialize, Deserialize)]
pub struct StoredSnapshot {
    pub snapshot: Snapshot,
    pub stream_seq: u64,
}

/// What version 1 stored in JetStream for one entity: each journal
/// message's payload, in stream order, and the snapshot's KV value.
pub struct Data {
    pub messages: Vec<Vec<u8>>,
    pub snapshot: Vec<u8>,
}

/// `tests/data/evolution-v1/`.
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/evolution-v1")
}

/// The encodings the data was written in, by file name.
pub const ENCODINGS: [&str; 2] = ["postcard", "cbor"];

impl Data {
    /// Reads `<encoding>.journal` (each message as a 4-byte little-endian
    /// length and its bytes) and `<encoding>.snapshot` (the KV value).
    pub fn read(encoding: &str) -> Data {
        let dir = data_dir();
        let bytes = std::fs::read(dir.join(format!("{encoding}.journal"))).expect("journal data");
        let mut messages = Vec::new();
        let mut rest = &bytes[..];
        while !rest.is_empty() {
            let (len, tail) = rest.split_at(4);
            let len = u32::from_le_bytes(len.try_into().unwrap()) as usize;
            messages.push(tail[..len].to_vec());
            rest = &tail[len..];
        }
        let snapshot = std::fs::read(dir.join(format!("{encoding}.snapshot"))).expect("snapshot");
        Data { messages, snapshot }
    }

    /// Writes it as [`read`](Self::read) reads it.
    pub fn write(&self, encoding: &str) {
        let dir = data_dir();
        std::fs::create_dir_all(&dir).unwrap();
        let mut bytes = Vec::new();
        for m in &self.messages {
            bytes.extend_from_slice(&(m.len() as u32).to_le_bytes());
            bytes.extend_from_slice(m);
        }
        std::fs::write(dir.join(format!("{encoding}.journal")), bytes).unwrap();
        std::fs::write(dir.join(format!("{encoding}.snapshot")), &self.snapshot).unwrap();
    }

    /// The stored events, in order.
    pub fn records(&self) -> Vec<EventRecord> {
        self.messages
            .iter()
            .flat_map(|m| postcard::from_bytes::<Batch>(m).expect("a batch").events)
            .collect()
    }

    /// The stored snapshot.
    pub fn stored_snapshot(&self) -> StoredSnapshot {
        postcard::from_bytes(&self.snapshot).expect("a stored snapshot")
    }

    /// Loads the events (one append per message, as stored) and, if
    /// `snapshot`, the snapshot into a memory store under `id`.
    pub fn load_memory(&self, store: &MemoryStore, id: &PersistenceId, snapshot: bool) {
        let mut last = 0;
        for m in &self.messages {
            let batch: Batch = postcard::from_bytes(m).expect("a batch");
            last = futures::executor::block_on(store.append(id, last, batch.events)).unwrap();
        }
        if snapshot {
            let s = self.stored_snapshot().snapshot;
            futures::executor::block_on(store.save(id, s)).unwrap();
        }
    }
}

// ---- A store that records where replays start ----------------------------

/// A journal and snapshot store that records the `from` of every read.
pub struct Recorder<S> {
    pub inner: Arc<S>,
    pub reads: Mutex<Vec<u64>>,
}

impl<S> Recorder<S> {
    pub fn new(inner: Arc<S>) -> Arc<Self> {
        Arc::new(Recorder {
            inner,
            reads: Mutex::new(Vec::new()),
        })
    }

    /// The `from` of the reads so far, cleared.
    pub fn take_reads(&self) -> Vec<u64> {
        std::mem::take(&mut *self.reads.lock())
    }
}

impl<S: Journal> Journal for Recorder<S> {
    fn append<'a>(
        &'a self,
        id: &'a PersistenceId,
        expected: u64,
        events: Vec<EventRecord>,
    ) -> BoxFuture<'a, Result<u64, PersistError>> {
        self.inner.append(id, expected, events)
    }

    fn read<'a>(
        &'a self,
        id: &'a PersistenceId,
        from: u64,
    ) -> BoxFuture<'a, Result<Vec<EventRecord>, PersistError>> {
        self.reads.lock().push(from);
        self.inner.read(id, from)
    }

    fn delete_through<'a>(
        &'a self,
        id: &'a PersistenceId,
        seq: u64,
    ) -> BoxFuture<'a, Result<u64, PersistError>> {
        self.inner.delete_through(id, seq)
    }
}

impl<S: SnapshotStore> SnapshotStore for Recorder<S> {
    fn save<'a>(
        &'a self,
        id: &'a PersistenceId,
        snapshot: Snapshot,
    ) -> BoxFuture<'a, Result<(), PersistError>> {
        self.inner.save(id, snapshot)
    }

    fn load<'a>(
        &'a self,
        id: &'a PersistenceId,
    ) -> BoxFuture<'a, Result<Option<Snapshot>, PersistError>> {
        self.inner.load(id)
    }

    fn history<'a>(
        &'a self,
        id: &'a PersistenceId,
    ) -> BoxFuture<'a, Result<Vec<Snapshot>, PersistError>> {
        self.inner.history(id)
    }

    fn retain<'a>(
        &'a self,
        id: &'a PersistenceId,
        keep: usize,
    ) -> BoxFuture<'a, Result<(), PersistError>> {
        self.inner.retain(id, keep)
    }
}

// ---- Loading into a real server -------------------------------------------

impl Data {
    /// Publishes the messages to `id`'s journal subject on the server at
    /// `url` (namespace `ns`, whose stream `store` made) and, if
    /// `snapshot`, puts the snapshot into KV with the stream sequence its
    /// last event has on this server.
    pub fn load_jetstream(
        &self,
        url: &str,
        ns: &str,
        store: &troupe_persistence::JetStreamStore,
        id: &PersistenceId,
        snapshot: bool,
    ) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let client = async_nats::connect(url).await.expect("connect");
            let js = async_nats::jetstream::new(client);
            let subject = store.subject(id);
            let mut at = Vec::new();
            for m in &self.messages {
                let batch: Batch = postcard::from_bytes(m).expect("a batch");
                let ack = js
                    .publish(subject.clone(), m.clone().into())
                    .await
                    .expect("publish")
                    .await
                    .expect("ack");
                at.push((batch.events.last().map_or(0, |e| e.seq), ack.sequence));
            }
            if snapshot {
                let mut s = self.stored_snapshot();
                s.stream_seq = at
                    .iter()
                    .find(|(seq, _)| *seq == s.snapshot.seq)
                    .map_or(0, |(_, stream)| *stream);
                let kv = js
                    .get_key_value(format!("troupe-{ns}-snapshots"))
                    .await
                    .expect("the snapshot bucket");
                kv.put(id.to_string(), postcard::to_stdvec(&s).unwrap().into())
                    .await
                    .expect("put");
            }
        });
    }
}
