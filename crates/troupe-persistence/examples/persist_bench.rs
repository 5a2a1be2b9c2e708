//! Persisted events per second against raw async-nats JetStream publishing
//! with the same acknowledgement settings, in the same run, alternating.
//!
//! Both sides publish one message per event to a subject per entity with
//! `Nats-Expected-Last-Subject-Sequence` set and await each publish
//! acknowledgement before the next on that subject (a persistent actor
//! handles one command at a time). "1 entity": one subject, one writer;
//! "16 entities": 16 writers at once. Persisted: commands are sent to the
//! actors all at once (`ask_async`) and the run ends when every reply has
//! arrived.
//!
//! Then the recovery time of one entity with as many events, replayed in
//! full and from a snapshot (the time to spawn it and get its first reply).
//!
//! `cargo run --release -p troupe-persistence --example persist_bench [events] [rounds]`
//! (starts its own `nats-server -js`; set NATS_URL to use another server).

use async_nats::jetstream::{self, context::Publish};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe::{ActorSystem, Async, ReplyTo};
use troupe_persistence::{
    spawn_persistent, Effect, JetStreamStore, PersistError, PersistenceId, Persistent,
    PersistentActor,
};

#[troupe_remote::remote("bench.Added")]
#[derive(Serialize, Deserialize)]
struct Added(u64);

struct Counter {
    id: PersistenceId,
}

impl PersistentActor for Counter {
    type Command = (u64, ReplyTo<Result<u64, PersistError>>);
    type Event = Added;
    type State = u64;
    fn persistence_id(&self) -> PersistenceId {
        self.id.clone()
    }
    fn handle_command(&mut self, _: &u64, (n, r): Self::Command) -> Effect<Self> {
        match n {
            // `u64::MAX`: snapshot now; 0: persist nothing (a read).
            u64::MAX => Effect::<Self>::none().snapshot().reply(r, |s| *s),
            0 => Effect::<Self>::none().reply(r, |s| *s),
            n => Effect::<Self>::persist(Added(n)).reply(r, |s| *s),
        }
    }
    fn apply(state: &mut u64, e: &Added) {
        *state += e.0;
    }
}

fn persisted(
    system: &ActorSystem,
    store: &Arc<JetStreamStore>,
    run: u32,
    entities: u64,
    events: u64,
) -> f64 {
    let actors: Vec<_> = (0..entities)
        .map(|e| {
            let id = PersistenceId::new("bench", format!("p{run}-{e}")).unwrap();
            spawn_persistent(system, Counter { id }, store.clone())
        })
        .collect();
    let per = events / entities;
    let t0 = Instant::now();
    let mut pending = Vec::new();
    for a in &actors {
        for n in 1..=per {
            pending.push(a.ask_async(move |r| (n, r)));
        }
    }
    for p in pending {
        p.wait_timeout(Duration::from_secs(30))
            .expect("reply")
            .expect("persisted");
    }
    let rate = (per * entities) as f64 / t0.elapsed().as_secs_f64();
    for a in actors {
        a.stop();
    }
    rate
}

fn raw(
    rt: &tokio::runtime::Runtime,
    js: &jetstream::Context,
    run: u32,
    entities: u64,
    events: u64,
) -> f64 {
    let per = events / entities;
    // About the size of the persisted message (a one-event batch).
    let payload = bytes::Bytes::from(vec![7u8; 36]);
    rt.block_on(async {
        let t0 = Instant::now();
        let mut tasks = Vec::new();
        for e in 0..entities {
            let (js, payload) = (js.clone(), payload.clone());
            tasks.push(tokio::spawn(async move {
                let subject = format!("troupe.bench.journal.raw.r{run}-{e}");
                let mut last = 0;
                for _ in 0..per {
                    let p = Publish::build()
                        .payload(payload.clone())
                        .expected_last_subject_sequence(last);
                    let ack = js
                        .send_publish(subject.clone(), p)
                        .await
                        .unwrap()
                        .await
                        .unwrap();
                    last = ack.sequence;
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        (per * entities) as f64 / t0.elapsed().as_secs_f64()
    })
}

/// One way to run the persisted side: its system and its store.
struct Setup {
    name: &'static str,
    system: ActorSystem,
    store: Arc<JetStreamStore>,
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let events = args.first().copied().unwrap_or(5_000);
    let rounds = args.get(1).copied().unwrap_or(3) as u32;
    let own = match std::env::var("NATS_URL") {
        Ok(_) => None,
        Err(_) => Some(
            troupe_test_nats::NatsServer::builder()
                .jetstream()
                .start()
                .expect("nats-server -js (install nats-server or set NATS_URL)"),
        ),
    };
    let url = std::env::var("NATS_URL").unwrap_or_else(|_| own.as_ref().unwrap().url());
    let connect = |b: troupe_persistence::JetStreamBuilder| {
        Arc::new(b.namespace("bench").connect().expect("connect"))
    };
    // The raw publishers' runtime, and the store runtime of the "own" setup
    // (a second one-worker runtime, as the store started before it ran on
    // the process's I/O runtime).
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let own_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let io = troupe_remote::runtime::handle().expect("I/O runtime");
    let setups = [
        Setup {
            name: "io+bridge",
            system: ActorSystem::builder().tokio_handle(io.clone()).build(),
            store: connect(JetStreamStore::builder(&url)),
        },
        Setup {
            name: "io",
            system: ActorSystem::new(),
            store: connect(JetStreamStore::builder(&url)),
        },
        Setup {
            name: "own-rt",
            system: ActorSystem::new(),
            store: connect(JetStreamStore::builder(&url).runtime(own_rt.handle().clone())),
        },
    ];
    let js = rt.block_on(async {
        let client = async_nats::connect(url.as_str()).await.unwrap();
        let js = jetstream::new(client);
        // The journal stream (made by the store) holds the raw subjects too.
        js.get_stream("troupe-bench-journal").await.unwrap();
        js
    });
    println!(
        "events per run: {events}; rounds: {rounds}; raw and the persisted setups alternate \
         (io+bridge: store on the process I/O runtime, system bridged to it; io: store there, \
         system's own bridge; own-rt: store on a runtime of its own)"
    );
    for entities in [1u64, 16] {
        let mut sums = vec![0.0; setups.len()];
        let mut raw_sum = 0.0;
        let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); setups.len()];
        for round in 0..rounds {
            let run = round + entities as u32 * 100;
            let r = raw(&rt, &js, run, entities, events);
            raw_sum += r;
            let mut line = format!("{entities:>2} entities, round {round}: raw {r:>7.0}");
            for (k, s) in setups.iter().enumerate() {
                let p = persisted(&s.system, &s.store, run * 10 + k as u32, entities, events);
                sums[k] += p;
                ratios[k].push(p / r);
                line += &format!(", {} {p:>7.0} ({:.2})", s.name, p / r);
            }
            println!("{line} ev/s");
        }
        for (k, s) in setups.iter().enumerate() {
            let mut rs = ratios[k].clone();
            rs.sort_by(|a, b| a.partial_cmp(b).unwrap());
            println!(
                "{entities:>2} entities, {}: mean raw {:.0}, persisted {:.0} ev/s; ratio of means {:.2}, median ratio {:.2}",
                s.name,
                raw_sum / rounds as f64,
                sums[k] / rounds as f64,
                sums[k] / raw_sum,
                rs[rs.len() / 2]
            );
        }
    }
    recovery(&setups[0].system, &setups[0].store, events);
    for s in setups {
        s.system.shutdown();
    }
}

/// Recovery time of one entity with `events` events, replayed in full and
/// from a snapshot taken after the last event.
fn recovery(system: &ActorSystem, store: &Arc<JetStreamStore>, events: u64) {
    let fill = |name: &str, snapshot: bool| {
        let id = PersistenceId::new("bench", name).unwrap();
        let a = system.spawn(Async::new(Persistent::new(
            Counter { id: id.clone() },
            store.clone(),
        )));
        let pending: Vec<_> = (1..=events).map(|n| a.ask_async(move |r| (n, r))).collect();
        for p in pending {
            p.wait_timeout(Duration::from_secs(30))
                .expect("reply")
                .expect("persisted");
        }
        if snapshot {
            // An on-demand snapshot: a command that persists nothing.
            a.ask(|r| (u64::MAX, r), Duration::from_secs(30))
                .expect("reply")
                .expect("snapshot");
        }
        a.stop();
        id
    };
    let time = |id: PersistenceId| {
        let t0 = Instant::now();
        let a = system.spawn(Async::new(Persistent::new(Counter { id }, store.clone())));
        let total = a
            .ask(|r| (0, r), Duration::from_secs(60))
            .expect("reply")
            .expect("recovered");
        let took = t0.elapsed();
        a.stop();
        (took, total)
    };
    let full = fill("recover-full", false);
    let snap = fill("recover-snap", true);
    for round in 0..3 {
        let (f, ft) = time(full.clone());
        let (s, st) = time(snap.clone());
        assert_eq!(ft, st);
        println!(
            "recovery of {events} events, round {round}: full replay {:.1} ms, from a snapshot {:.1} ms",
            f.as_secs_f64() * 1e3,
            s.as_secs_f64() * 1e3
        );
    }
}
