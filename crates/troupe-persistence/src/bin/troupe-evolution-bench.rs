//! `troupe-evolution-bench`: what schema evolution costs, postcard beside
//! CBOR, and an upcaster beside none, in one run.
//!
//! ```text
//! troupe-evolution-bench [--events N] [--rounds R] [--only codec|recovery]
//!                        [--no-jetstream] [--url nats://...]
//! ```
//!
//! The event is an account's (`Opened { holder }`, `Deposited { amount,
//! memo: Option<String> }`, `Withdrawn { amount }`, `Frozen`); its version
//! 1 had `Opened { owner }` and `Deposited { amount }`, and no `Frozen`.
//! Journals are N events, one per append (one JetStream message each, as
//! an actor writes one command's event), 1 in 100 a withdrawal, the first
//! an opening; records made by the crate's `Codec`, so byte for byte what
//! an actor stores.
//!
//! - `codec`: per event, the time to encode (postcard, CBOR), to decode a
//!   current record, to decode a version 1 record through the upcaster,
//!   and (CBOR) to decode a version 1 record by names into a type with the
//!   new variant and field and no upcaster; and the bytes per event as
//!   stored (the record in the journal message). Median of R rounds of N.
//! - `recovery`: the time from spawning a persistent actor over an entity
//!   of N events to its first reply: the whole journal replayed, for
//!   current records (no upcaster used) and for version 1 records (every
//!   one through the upcaster), in each encoding, on a `MemoryStore` (the
//!   decoding alone) and on JetStream (a `nats-server -js` it starts, or
//!   `--url`). The scenarios alternate in each round; each figure is the
//!   median of R, and `upcast/current` the median of the per-round ratios.
//!
//! Each codec scenario runs in its own `#[inline(never)]` function
//! (`ir_*`), so `valgrind --tool=callgrind` and `callgrind_annotate
//! --inclusive=yes` count its instructions apart (`--only codec`).

use clap::Parser;
use serde::{Deserialize, Serialize};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe::{ActorSystem, ReplyTo};
use troupe_persistence::{
    spawn_persistent, Codec, Effect, EventRecord, JetStreamStore, Journal, MemoryStore,
    PersistError, PersistenceId, PersistentActor, SnapshotStore,
};

#[derive(Parser)]
#[command(about = "Schema evolution's cost: postcard and CBOR, with and without an upcaster")]
struct Args {
    /// Events per journal and per codec round.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    events: u64,
    /// Rounds.
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
    /// Run only the codec figures or only the recoveries.
    #[arg(long, value_parser = ["codec", "recovery"])]
    only: Option<String>,
    /// Recover from the memory store only.
    #[arg(long)]
    no_jetstream: bool,
    /// A nats-server with JetStream to use instead of starting one.
    #[arg(long)]
    url: Option<String>,
    /// Run one codec scenario once over N events and nothing else (for
    /// callgrind: `--toggle-collect='*ir_*'`).
    #[arg(long, value_parser = SCENARIOS)]
    scenario: Option<String>,
    /// Recover only this recovery scenario (0-4, in the table's order),
    /// from the memory store, R times (for callgrind:
    /// `--toggle-collect='*recover_once*'`).
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..5))]
    recovery_scenario: Option<u64>,
}

/// The codec scenarios, in the order of the table.
const SCENARIOS: [&str; 7] = [
    "encode-postcard",
    "encode-cbor",
    "decode-postcard",
    "upcast-postcard",
    "decode-cbor",
    "upcast-cbor",
    "by-names-cbor",
];

const NAME: &str = "bench.evolve.Event";

/// Version 1 of the event.
mod v1 {
    use serde::{Deserialize, Serialize};

    #[derive(Clone, Serialize, Deserialize)]
    pub enum Event {
        Opened { owner: String },
        Deposited { amount: u64 },
        Withdrawn { amount: u64 },
    }
}

/// The current event.
#[troupe_remote::remote("bench.evolve.Event")]
#[derive(Clone, Serialize, Deserialize)]
enum Event {
    Opened { holder: String },
    Deposited { amount: u64, memo: Option<String> },
    Withdrawn { amount: u64 },
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

/// Version 1 with the new variant and field but the old field name: read
/// by names (CBOR) with no upcaster.
mod compatible {
    use serde::{Deserialize, Serialize};

    #[troupe_remote::remote("bench.evolve.Event")]
    #[derive(Clone, Serialize, Deserialize)]
    pub enum Event {
        Opened { owner: String },
        Deposited { amount: u64, memo: Option<String> },
        Withdrawn { amount: u64 },
        Frozen,
    }
}

fn apply_amount(balance: &mut u64, deposit: Option<u64>, withdrawal: Option<u64>) {
    *balance += deposit.unwrap_or(0);
    *balance -= withdrawal.unwrap_or(0);
}

/// The current account, writing CBOR if `C`, with the upcaster from v1.
struct Account<const C: bool> {
    id: PersistenceId,
}

impl<const C: bool> PersistentActor for Account<C> {
    type Command = ReplyTo<Result<u64, PersistError>>;
    type Event = Event;
    type State = u64;
    fn persistence_id(&self) -> PersistenceId {
        self.id.clone()
    }
    fn handle_command(&mut self, _: &u64, r: Self::Command) -> Effect<Self> {
        Effect::<Self>::none().reply(r, |b| *b)
    }
    fn apply(balance: &mut u64, e: &Event) {
        match e {
            Event::Deposited { amount, .. } => apply_amount(balance, Some(*amount), None),
            Event::Withdrawn { amount } => apply_amount(balance, None, Some(*amount)),
            Event::Opened { .. } | Event::Frozen => {}
        }
    }
    fn codec() -> Codec<Event, u64> {
        current_codec(C)
    }
}

fn current_codec(cbor: bool) -> Codec<Event, u64> {
    let base = if cbor {
        Codec::cbor()
    } else {
        Codec::postcard()
    };
    base.upcast::<v1::Event>(NAME, Event::from)
}

/// The compatible account (CBOR, no upcaster).
struct Compatible {
    id: PersistenceId,
}

impl PersistentActor for Compatible {
    type Command = ReplyTo<Result<u64, PersistError>>;
    type Event = compatible::Event;
    type State = u64;
    fn persistence_id(&self) -> PersistenceId {
        self.id.clone()
    }
    fn handle_command(&mut self, _: &u64, r: Self::Command) -> Effect<Self> {
        Effect::<Self>::none().reply(r, |b| *b)
    }
    fn apply(balance: &mut u64, e: &compatible::Event) {
        match e {
            compatible::Event::Deposited { amount, .. } => {
                apply_amount(balance, Some(*amount), None)
            }
            compatible::Event::Withdrawn { amount } => apply_amount(balance, None, Some(*amount)),
            compatible::Event::Opened { .. } | compatible::Event::Frozen => {}
        }
    }
    fn codec() -> Codec<compatible::Event, u64> {
        Codec::cbor()
    }
}

/// Event `i` (1-based) of a journal, in version 1's shape.
fn v1_event(i: u64) -> v1::Event {
    match i {
        1 => v1::Event::Opened {
            owner: "ada lovelace".into(),
        },
        i if i % 100 == 0 => v1::Event::Withdrawn { amount: 3 },
        i => v1::Event::Deposited { amount: i },
    }
}

/// The balance of `n` events.
fn balance(n: u64) -> u64 {
    (2..=n)
        .map(|i| if i % 100 == 0 { 0 } else { i })
        .sum::<u64>()
        - 3 * (n / 100)
}

/// `n` records as `Codec` writes them: current events, or version 1's.
fn records(n: u64, cbor: bool, old: bool) -> Vec<EventRecord> {
    let id = PersistenceId::new("bench", "records").expect("id");
    let v1 = if cbor {
        Codec::<v1::Event, u64>::cbor_named(NAME)
    } else {
        Codec::<v1::Event, u64>::postcard_named(NAME)
    };
    let current = current_codec(cbor);
    (1..=n)
        .map(|i| {
            if old {
                v1.encode_event(&id, i, &v1_event(i))
            } else {
                current.encode_event(&id, i, &Event::from(v1_event(i)))
            }
            .expect("encode")
        })
        .collect()
}

/// CPU time (ns) this process's threads have used so far, from
/// `/proc/self/task/*/schedstat` (0 where unreadable): on a loaded
/// machine it swings far less than the wall clock.
fn cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// The scenarios of round `round`: forwards in even rounds, backwards in
/// odd ones.
fn order(round: u32, n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    if round % 2 == 1 {
        v.reverse();
    }
    v
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn per_event(took: Duration, n: u64) -> f64 {
    took.as_secs_f64() * 1e9 / n as f64
}

#[inline(never)]
fn ir_encode(codec: &Codec<Event, u64>, events: &[Event]) -> usize {
    let id = PersistenceId::new("bench", "encode").expect("id");
    let mut bytes = 0;
    for (seq, e) in (1..).zip(events) {
        bytes += black_box(codec.encode_event(&id, seq, e).expect("encode"))
            .payload
            .len();
    }
    bytes
}

#[inline(never)]
fn ir_encode_postcard(codec: &Codec<Event, u64>, events: &[Event]) -> usize {
    black_box("postcard");
    ir_encode(codec, events)
}

#[inline(never)]
fn ir_encode_cbor(codec: &Codec<Event, u64>, events: &[Event]) -> usize {
    black_box("cbor");
    ir_encode(codec, events)
}

#[inline(never)]
fn ir_decode<E: Serialize + serde::de::DeserializeOwned + 'static>(
    codec: &Codec<E, u64>,
    records: &[EventRecord],
) -> usize {
    let id = PersistenceId::new("bench", "decode").expect("id");
    let mut n = 0;
    for r in records {
        black_box(codec.decode_event(&id, r).expect("decode"));
        n += 1;
    }
    n
}

macro_rules! decoders {
    ($($name:ident: $e:ty),* $(,)?) => {$(
        #[inline(never)]
        fn $name(codec: &Codec<$e, u64>, records: &[EventRecord]) -> usize {
            // The name keeps the linker from folding the five into one.
            black_box(stringify!($name));
            ir_decode(codec, records)
        }
    )*};
}

decoders! {
    ir_decode_postcard_current: Event,
    ir_decode_postcard_upcast: Event,
    ir_decode_cbor_current: Event,
    ir_decode_cbor_upcast: Event,
    ir_decode_cbor_by_names: compatible::Event,
}

fn codec_figures(n: u64, rounds: u32, only: Option<&str>) {
    let events: Vec<Event> = (1..=n).map(|i| Event::from(v1_event(i))).collect();
    let (postcard, cbor) = (current_codec(false), current_codec(true));
    let compat = Codec::<compatible::Event, u64>::cbor();
    let sets = [
        records(n, false, false),
        records(n, false, true),
        records(n, true, false),
        records(n, true, true),
    ];
    let run = |i: usize| match i {
        0 => ir_encode_postcard(&postcard, &events),
        1 => ir_encode_cbor(&cbor, &events),
        2 => ir_decode_postcard_current(&postcard, &sets[0]),
        3 => ir_decode_postcard_upcast(&postcard, &sets[1]),
        4 => ir_decode_cbor_current(&cbor, &sets[2]),
        5 => ir_decode_cbor_upcast(&cbor, &sets[3]),
        _ => ir_decode_cbor_by_names(&compat, &sets[3]),
    };
    if let Some(one) = only {
        let i = SCENARIOS
            .iter()
            .position(|s| *s == one)
            .expect("a scenario");
        black_box(run(i));
        println!("{one}: ran once over {n} events");
        return;
    }
    let mut times: [Vec<f64>; 7] = Default::default();
    for round in 0..rounds {
        // Odd rounds run backwards, so no scenario always follows another.
        for i in order(round, times.len()) {
            let t0 = Instant::now();
            black_box(run(i));
            times[i].push(per_event(t0.elapsed(), n));
        }
    }
    let [enc_p, enc_c, dec_p, up_p, dec_c, up_c, names_c] = times.map(median);
    // As stored: the record inside its journal message (a one-event batch
    // adds one byte, its length).
    let stored = |set: &[EventRecord]| {
        set.iter()
            .map(|r| postcard::to_stdvec(r).expect("record").len())
            .sum::<usize>() as f64
            / set.len() as f64
    };
    let payload = |set: &[EventRecord]| {
        set.iter().map(|r| r.payload.len()).sum::<usize>() as f64 / set.len() as f64
    };
    println!("codec, per event, wall time (median of {rounds} rounds of {n}):");
    println!("  encoding   encode ns  decode ns  via upcaster ns  by names ns  bytes stored  payload bytes");
    println!(
        "  postcard   {enc_p:>9.0}  {dec_p:>9.0}  {up_p:>15.0}  {:>11}  {:>12.1}  {:>13.1}",
        "-",
        stored(&sets[0]),
        payload(&sets[0])
    );
    println!(
        "  cbor       {enc_c:>9.0}  {dec_c:>9.0}  {up_c:>15.0}  {names_c:>11.0}  {:>12.1}  {:>13.1}",
        stored(&sets[2]),
        payload(&sets[2])
    );
    println!(
        "  version 1 records: postcard {:.1} bytes stored, cbor {:.1}",
        stored(&sets[1]),
        stored(&sets[3])
    );
}

/// Appends `records` to `id`, one append each.
fn fill<J: Journal>(store: &J, id: &PersistenceId, records: Vec<EventRecord>) {
    futures::executor::block_on(async {
        for r in records {
            let expected = r.seq - 1;
            store.append(id, expected, vec![r]).await.expect("append");
        }
    });
}

/// The recovery of every scenario on `store`, alternating, R rounds.
fn recovery<S: Journal + SnapshotStore>(
    label: &str,
    store: Arc<S>,
    n: u64,
    rounds: u32,
    tag: &str,
    only: Option<usize>,
) {
    let scenarios: [(&str, bool, bool); 5] = [
        ("postcard, current records", false, false),
        ("postcard, v1 records via upcaster", false, true),
        ("cbor, current records", true, false),
        ("cbor, v1 records via upcaster", true, true),
        ("cbor, v1 records by names", true, true),
    ];
    let ids: Vec<PersistenceId> = scenarios
        .iter()
        .enumerate()
        .map(|(i, (_, cbor, old))| {
            let id = PersistenceId::new("bench", format!("evolve-{tag}-{i}")).expect("id");
            // The by-names scenario reads the v1 CBOR journal of its own id.
            if only.is_none_or(|o| o == i) {
                fill(&*store, &id, records(n, *cbor, *old));
            }
            id
        })
        .collect();
    let system = ActorSystem::new();
    let expected = balance(n);
    let mut times: [Vec<f64>; 5] = Default::default();
    let mut cpu: [Vec<f64>; 5] = Default::default();
    let timeout = Duration::from_secs(120);
    for round in 0..rounds {
        for i in order(round, ids.len()) {
            if only.is_some_and(|o| o != i) {
                continue;
            }
            let id = ids[i].clone();
            let (t0, c0) = (Instant::now(), cpu_ns());
            let got = match i {
                0 | 1 => {
                    let a = spawn_persistent(&system, Account::<false> { id }, store.clone());
                    let got = a.ask(|r| r, timeout);
                    a.stop();
                    got
                }
                2 | 3 => {
                    let a = spawn_persistent(&system, Account::<true> { id }, store.clone());
                    let got = a.ask(|r| r, timeout);
                    a.stop();
                    got
                }
                _ => {
                    let a = spawn_persistent(&system, Compatible { id }, store.clone());
                    let got = a.ask(|r| r, timeout);
                    a.stop();
                    got
                }
            };
            times[i].push(t0.elapsed().as_secs_f64() * 1e3);
            cpu[i].push((cpu_ns() - c0) as f64 / 1e6);
            assert_eq!(got, Ok(Ok(expected)), "{label}: {}", scenarios[i].0);
        }
    }
    if let Some(o) = only {
        println!("{}: recovered {rounds} times", scenarios[o].0);
        system.shutdown();
        return;
    }
    let ratio = |t: &[Vec<f64>; 5], a: usize, b: usize| {
        median(t[a].iter().zip(&t[b]).map(|(x, y)| x / y).collect())
    };
    println!("recovery of {n} events, {label} (median of {rounds} rounds, ms):");
    println!("  {:<36} {:>8} {:>8}", "", "wall", "CPU");
    for (i, (name, _, _)) in scenarios.iter().enumerate() {
        println!(
            "  {name:<36} {:>8.2} {:>8.2}",
            median(times[i].clone()),
            median(cpu[i].clone())
        );
    }
    for (what, t) in [("wall", &times), ("CPU", &cpu)] {
        println!(
            "  {what}: upcast/current: postcard {:.3}, cbor {:.3}; by names/current (cbor) {:.3}; cbor/postcard (current) {:.3}",
            ratio(t, 1, 0),
            ratio(t, 3, 2),
            ratio(t, 4, 2),
            ratio(t, 2, 0)
        );
    }
    system.shutdown();
}

fn main() {
    let args = Args::parse();
    let (n, rounds) = (args.events, args.rounds);
    if args.only.as_deref() != Some("recovery") {
        codec_figures(n, rounds, args.scenario.as_deref());
    }
    if args.scenario.is_some() {
        return;
    }
    if args.only.as_deref() == Some("codec") {
        return;
    }
    let tag = std::process::id().to_string();
    let only = args.recovery_scenario.map(|i| i as usize);
    recovery("MemoryStore", MemoryStore::new(), n, rounds, &tag, only);
    if args.no_jetstream || only.is_some() {
        return;
    }
    let own = match &args.url {
        Some(_) => None,
        None => match troupe_test_nats::NatsServer::builder().jetstream().start() {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("troupe-evolution-bench: nats-server -js did not start ({e}); JetStream skipped");
                return;
            }
        },
    };
    let url = args
        .url
        .clone()
        .unwrap_or_else(|| own.as_ref().map(|s| s.url()).unwrap_or_default());
    let store = JetStreamStore::builder(&url)
        .namespace("evolve")
        .connect()
        .expect("connect");
    recovery("JetStream", Arc::new(store), n, rounds, &tag, None);
}
