//! `troupe-persistence-bench`: persisted events per second beside raw
//! async-nats JetStream publishing with the same acknowledgement settings,
//! in the same run, and the recovery time of 10,000 events with and
//! without a snapshot.
//!
//! ```text
//! troupe-persistence-bench [--quick] [--events N] [--rounds R]
//!                          [--entities 1,16] [--url nats://...] [--json FILE|-]
//!                          [--workers W] [--wait-each]
//!                          [--only events|recovery] [--json-rounds FILE|-]
//! ```
//!
//! Workloads (BENCHMARKS.md's JSON line format, one line per figure):
//! - `persist_events`: N events through `Persistent<Counter>` actors, one
//!   per command, all commands sent at once (`ask_async`); events/s from
//!   the first command to the last reply. Beside it `nats-raw`: the same
//!   number of publishes, one subject per entity, each with
//!   `Nats-Expected-Last-Subject-Sequence` and awaited before the next on
//!   that subject (a persistent actor handles one command at a time), by
//!   tokio tasks on a one-worker runtime that also runs their connection.
//!   Beside it too, `across threads`: the same publishers with their
//!   connection on the process's I/O runtime, so every publish and every
//!   acknowledgement crosses threads as a persistent actor's does (the
//!   floor of that design). And `I/O dispatcher`: the same persistent
//!   actors on a tokio dispatcher of the store's runtime
//!   (`SystemHandle::tokio_dispatcher`), so their turns run on the
//!   connection's thread, as the raw publishers run beside theirs. And
//!   `on the I/O runtime`: the raw publishers spawned on the store's
//!   runtime, beside the connection there (the across-threads one): the
//!   I/O dispatcher's own floor, on the same one-thread runtime (the
//!   `raw` side's runtime is a multi-thread one with one worker). The
//!   five alternate in each of R rounds; each
//!   figure is the median; `ratio` and `ratio_across_threads` are the
//!   medians of the per-round ratios of persisted to each (on each
//!   persisted line: the worker-pool side's and the I/O dispatcher's);
//!   the I/O dispatcher's line adds `ratio_raw_on_io_runtime`. Each line also
//!   carries the process's CPU time per event (`cpu_us_per_event`, all its
//!   threads, the server apart) and context switches per event
//!   (`switches_per_event`), medians of R: what a side costs, which a
//!   loaded machine swings far less than the wall clock.
//!
//!   The actor system has `--workers` worker threads (default 1, as the
//!   raw publishers' runtime has one). Threads per side: raw, the raw
//!   runtime's one worker (publishers and connection); across threads,
//!   that worker and the I/O runtime's thread (connection); persisted,
//!   the system's worker(s) (actors) and the I/O thread (connection); I/O
//!   dispatcher and raw on the I/O runtime, the I/O thread alone (actors
//!   or publishers, and connection). The main thread sends and waits on
//!   every side. The replies are awaited each
//!   entity's last first: an entity replies in order, so this thread is
//!   woken once per entity, not once per event; `--wait-each` waits in the
//!   order sent instead (the set-up of the runs before 2026-11-27).
//! - `persist_recovery`: spawn one entity holding N events and get its
//!   first reply, replaying the whole journal (`full`) or from a snapshot
//!   taken after the last event (`snapshot`); events/s and ms, median of R.
//!
//! `--only` runs one of the two. `--json-rounds` writes *sample lines*, one
//! per figure and round, for the suite (`troupe-bench cluster`):
//! `{"framework","workload","label","params":{..,"op"},"round","seconds",
//! "ops","unit",..extras}`, the round's own CPU and switches per event, and
//! on a persisted side its round's `ratio` (raw seconds / persisted
//! seconds) and `ratio_across_threads`, and its `window_s` and
//! `other_cpu_s` (the CPU time other processes used meanwhile: the
//! machine's less this process's and its nats-server's). `params.op` names
//! what a figure is compared on.
//!
//! The store runs on the process's I/O runtime, and the actor system is
//! bridged to it (`tokio_handle`). It starts its own `nats-server -js` on
//! loopback unless `--url` names one. `--quick` is a smoke run for CI
//! (1,000 events, 1 round).

use async_nats::jetstream::{self, context::Publish};
use clap::Parser;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe::dispatcher::Dispatcher;
use troupe::{ActorSystem, ReplyTo, SpawnOptions};
use troupe_persistence::{
    spawn_persistent, Effect, JetStreamStore, PersistError, PersistenceConfig, PersistenceId,
    Persistent, PersistentActor, DEFAULT_PIPELINE,
};

mod measure;
mod recovery;

use measure::*;
use recovery::recovery;

#[derive(Parser)]
#[command(about = "Persisted events/s beside raw JetStream publishing; recovery time")]
struct Args {
    /// A smoke run: 1,000 events, 1 round.
    #[arg(long)]
    quick: bool,
    /// Events per run (and held by the recovered entity).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    events: Option<u64>,
    /// Rounds; raw and persisted alternate in each.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: Option<u32>,
    /// Entity counts to run, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "1,16")]
    entities: Vec<u64>,
    /// A nats-server with JetStream to use instead of starting one.
    #[arg(long)]
    url: Option<String>,
    /// Write the figures as JSON lines to FILE (`-`: stdout).
    #[arg(long)]
    json: Option<String>,
    /// Worker threads of the actor system that runs the persistent actors
    /// (the raw publishers run on one).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    workers: u64,
    /// Wait for the replies in the order sent (a thread woken per reply)
    /// instead of each entity's last reply first.
    #[arg(long)]
    wait_each: bool,
    /// Run only the persisted events or only the recovery.
    #[arg(long, value_parser = ["events", "recovery"])]
    only: Option<String>,
    /// Write one sample line per figure and round to FILE (`-`: stdout).
    #[arg(long)]
    json_rounds: Option<String>,
    /// The persistent actors' pipeline depth (`PersistenceConfig::pipeline`;
    /// 1: one command stored before the next is decided); also the window
    /// of the `raw, W in flight` side.
    #[arg(long, default_value_t = DEFAULT_PIPELINE as u64, value_parser = clap::value_parser!(u64).range(1..))]
    pipeline: u64,
}

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

/// Seconds to persist `events` over `entities` fresh entities, on the
/// system's workers or on `dispatcher`.
#[allow(clippy::too_many_arguments)]
fn persisted(
    system: &ActorSystem,
    store: &Arc<JetStreamStore>,
    run: &str,
    entities: u64,
    events: u64,
    wait_each: bool,
    dispatcher: Option<&Dispatcher>,
    pipeline: usize,
) -> f64 {
    let actors: Vec<_> = (0..entities)
        .map(|e| {
            let id = PersistenceId::new("bench", format!("p{run}-{e}")).expect("id");
            let options = match dispatcher {
                Some(d) => SpawnOptions::new().dispatcher(d),
                None => SpawnOptions::new(),
            };
            let config = PersistenceConfig {
                pipeline,
                ..Default::default()
            };
            let actor = Persistent::new(Counter { id }, store.clone()).config(config);
            system.spawn_with(troupe::Async::new(actor), options)
        })
        .collect();
    let per = events / entities;
    let t0 = Instant::now();
    let mut pending = Vec::with_capacity(events as usize);
    for a in &actors {
        for n in 1..=per {
            pending.push(a.ask_async(move |r| (n, r)));
        }
    }
    let mut replies: Vec<Option<_>> = pending.into_iter().map(Some).collect();
    if !wait_each {
        // An entity replies in order, so once its last reply is in, all
        // its replies are: waiting for those first wakes this thread once
        // per entity, not once per event (every reply is still checked).
        for last in (1..=entities).map(|e| (e * per) as usize - 1) {
            let reply = replies[last].take().expect("not taken yet");
            reply
                .wait_timeout(Duration::from_secs(60))
                .expect("reply")
                .expect("persisted");
        }
    }
    for reply in replies.into_iter().flatten() {
        reply
            .wait_timeout(Duration::from_secs(60))
            .expect("reply")
            .expect("persisted");
    }
    let took = t0.elapsed().as_secs_f64();
    for a in actors {
        a.stop();
    }
    took
}

/// Seconds to publish `events` raw over `entities` subjects, by tasks on
/// `publishers_on`, waited for from this thread (on `rt`).
fn raw(
    rt: &tokio::runtime::Runtime,
    js: &jetstream::Context,
    run: &str,
    entities: u64,
    events: u64,
    publishers_on: &tokio::runtime::Handle,
) -> f64 {
    let per = events / entities;
    // About the size of the persisted message (a one-event batch).
    let payload = bytes::Bytes::from(vec![7u8; 36]);
    rt.block_on(async {
        let t0 = Instant::now();
        let mut tasks = Vec::new();
        for e in 0..entities {
            let (js, payload) = (js.clone(), payload.clone());
            let subject = format!("troupe.bench.journal.raw.r{run}-{e}");
            tasks.push(publishers_on.spawn(async move {
                let mut last = 0;
                for _ in 0..per {
                    let p = Publish::build()
                        .payload(payload.clone())
                        .expected_last_subject_sequence(last);
                    let ack = js
                        .send_publish(subject.clone(), p)
                        .await
                        .expect("publish")
                        .await
                        .expect("acknowledged");
                    last = ack.sequence;
                }
            }));
        }
        for t in tasks {
            t.await.expect("publisher");
        }
        t0.elapsed().as_secs_f64()
    })
}

/// Seconds to publish `events` raw over `entities` subjects with up to
/// `window` publishes in flight per subject (no expected-sequence header:
/// a publish's predecessor's stream sequence is known only at its
/// acknowledgement), each acknowledgement awaited: JetStream's ceiling
/// for one-event messages at that many in flight.
fn raw_window(
    rt: &tokio::runtime::Runtime,
    js: &jetstream::Context,
    run: &str,
    entities: u64,
    events: u64,
    window: u64,
) -> f64 {
    let per = events / entities;
    let payload = bytes::Bytes::from(vec![7u8; 36]);
    rt.block_on(async {
        let t0 = Instant::now();
        let mut tasks = Vec::new();
        for e in 0..entities {
            let (js, payload) = (js.clone(), payload.clone());
            let subject = format!("troupe.bench.journal.raw.w{run}-{e}");
            tasks.push(tokio::spawn(async move {
                let mut acks = std::collections::VecDeque::new();
                for _ in 0..per {
                    if acks.len() as u64 >= window {
                        let ack: jetstream::context::PublishAckFuture =
                            acks.pop_front().expect("in flight");
                        ack.await.expect("acknowledged");
                    }
                    let ack = js
                        .send_publish(subject.clone(), Publish::build().payload(payload.clone()))
                        .await
                        .expect("publish");
                    acks.push_back(ack);
                }
                for ack in acks {
                    ack.await.expect("acknowledged");
                }
            }));
        }
        for t in tasks {
            t.await.expect("publisher");
        }
        t0.elapsed().as_secs_f64()
    })
}

fn main() {
    let args = Args::parse();
    let events = args
        .events
        .unwrap_or(if args.quick { 1_000 } else { 10_000 });
    let rounds = args.rounds.unwrap_or(if args.quick { 1 } else { 5 });
    let own = match &args.url {
        Some(_) => None,
        None => match troupe_test_nats::NatsServer::builder().jetstream().start() {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("troupe-persistence-bench: nats-server -js did not start ({e}); pass --url to use a running one");
                std::process::exit(2);
            }
        },
    };
    let _ = SERVER_PID.set(own.as_ref().and_then(|s| s.pid()));
    let url = args
        .url
        .clone()
        .unwrap_or_else(|| own.as_ref().expect("started").url());
    let io = troupe_remote::runtime::handle().expect("the I/O runtime");
    let system = ActorSystem::builder()
        .threads(args.workers as usize)
        .tokio_handle(io.clone())
        .build();
    let store = Arc::new(
        JetStreamStore::builder(&url)
            .namespace("bench")
            .connect()
            .expect("connect"),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let js = rt.block_on(async {
        let client = async_nats::connect(url.as_str()).await.expect("connect");
        let js = jetstream::new(client);
        // The journal stream (made by the store) holds the raw subjects too.
        js.get_stream("troupe-bench-journal").await.expect("stream");
        js
    });
    // The thread-hop floor: the same raw publishers (on `rt`), their
    // connection on the process's I/O runtime, as the store's is, so each
    // publish and each acknowledgement crosses threads as an actor's does.
    let js_hop = {
        let url = url.clone();
        let connecting = io.spawn(async move { async_nats::connect(url.as_str()).await });
        let client = rt
            .block_on(connecting)
            .expect("the I/O runtime")
            .expect("connect");
        jetstream::new(client)
    };
    // The store's runtime: persistent actors there run beside its connection.
    let journal = system.tokio_dispatcher("journal", store.runtime());
    // Subjects unique to this process, so a reused server starts empty.
    let tag = std::process::id();
    let mut out = Vec::new();
    let mut rounds_out = Vec::new();
    let entity_counts: &[u64] = match args.only.as_deref() {
        Some("recovery") => &[],
        _ => &args.entities,
    };
    for &entities in entity_counts {
        let entities = entities.clamp(1, events);
        let (mut r, mut h, mut p, mut d) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut o, mut io_own_ratios) = (Vec::new(), Vec::new());
        let (mut w, mut w_ratios, mut w_io_ratios) = (Vec::new(), Vec::new(), Vec::new());
        let (mut ratios, mut hop_ratios) = (Vec::new(), Vec::new());
        let (mut io_ratios, mut io_hop_ratios) = (Vec::new(), Vec::new());
        // Per side: process CPU µs per event, context switches per event.
        let mut cost: [(Vec<f64>, Vec<f64>); 5] = Default::default();
        for round in 0..rounds {
            let run = format!("{tag}-{entities}-{round}");
            let rm = measured(events, || {
                raw(&rt, &js, &run, entities, events, rt.handle())
            });
            let hm = measured(events, || {
                raw(
                    &rt,
                    &js_hop,
                    &format!("{run}-hop"),
                    entities,
                    events,
                    rt.handle(),
                )
            });
            let om = measured(events, || {
                raw(&rt, &js_hop, &format!("{run}-io"), entities, events, &io)
            });
            // The persistent actors on the worker pool, then on the I/O
            // dispatcher (each on fresh entities).
            let persisted_on = |run: &str, on| {
                measured(events, || {
                    persisted(
                        &system,
                        &store,
                        run,
                        entities,
                        events,
                        args.wait_each,
                        on,
                        args.pipeline as usize,
                    )
                })
            };
            let pm = persisted_on(&run, None);
            let dm = persisted_on(&format!("{run}-io"), Some(&journal));
            let wm = measured(events, || {
                raw_window(
                    &rt,
                    &js,
                    &format!("{run}-w"),
                    entities,
                    events,
                    args.pipeline,
                )
            });
            let (rs, hs, ps, ds, os) = (rm.0, hm.0, pm.0, dm.0, om.0);
            let ws = wm.0;
            eprintln!(
                "{entities:>2} entities, round {round}: raw, {} in flight {:>7.0} ev/s; \
                 persisted/raw-window {:.2}, I/O dispatcher/raw-window {:.2}",
                args.pipeline,
                events as f64 / ws,
                ws / ps,
                ws / ds
            );
            rounds_out.push(sample_line(
                (
                    "nats-raw",
                    "persist_events",
                    &format!(
                        "raw JetStream, {} in flight, {entities} entities",
                        args.pipeline
                    ),
                ),
                &format!(
                    "{{\"events\":{events},\"entities\":{entities},\"op\":\"persist {entities}\"}}"
                ),
                round,
                ws,
                events,
                format!(
                    ",\"cpu_us_per_event\":{:.2},\"switches_per_event\":{:.3}{}",
                    wm.1, wm.2, wm.3
                ),
            ));
            w.push(ws);
            w_ratios.push(ws / ps);
            w_io_ratios.push(ws / ds);
            let (rm, hm, pm, dm, om) = (&rm, &hm, &pm, &dm, &om);
            eprintln!(
                "{entities:>2} entities, round {round}: raw {:>7.0}, raw across threads {:>7.0}, \
                 raw on the I/O runtime {:>7.0}, \
                 persisted {:>7.0}, persisted (I/O dispatcher) {:>7.0} ev/s; \
                 persisted/raw {:.2}, persisted/across {:.2}, I/O dispatcher/raw {:.2}, \
                 I/O dispatcher/across {:.2}, I/O dispatcher/raw on the I/O runtime {:.2}; \
                 CPU µs/event {:.1} {:.1} {:.1} {:.1} {:.1}, \
                 switches/event {:.2} {:.2} {:.2} {:.2} {:.2}",
                events as f64 / rs,
                events as f64 / hs,
                events as f64 / os,
                events as f64 / ps,
                events as f64 / ds,
                rs / ps,
                hs / ps,
                rs / ds,
                hs / ds,
                os / ds,
                rm.1,
                hm.1,
                om.1,
                pm.1,
                dm.1,
                rm.2,
                hm.2,
                om.2,
                pm.2,
                dm.2
            );
            let params = format!(
                "{{\"events\":{events},\"entities\":{entities},\"op\":\"persist {entities}\"}}"
            );
            let of = if entities == 1 {
                "1 entity".to_string()
            } else {
                format!("{entities} entities")
            };
            for (framework, label, m, ratios) in [
                ("nats-raw", format!("raw JetStream, {of}"), rm, None),
                (
                    "nats-raw",
                    format!("raw JetStream across threads, {of}"),
                    hm,
                    None,
                ),
                (
                    "nats-raw",
                    format!("raw JetStream on the I/O runtime, {of}"),
                    om,
                    None,
                ),
                (
                    "troupe",
                    format!("persisted, {of}"),
                    pm,
                    Some((rs / ps, hs / ps)),
                ),
                (
                    "troupe",
                    format!("persisted on an I/O dispatcher, {of}"),
                    dm,
                    Some((rs / ds, hs / ds)),
                ),
            ] {
                let mut extra = format!(
                    ",\"cpu_us_per_event\":{:.2},\"switches_per_event\":{:.3}{}",
                    m.1, m.2, m.3
                );
                if let Some((ratio, across)) = ratios {
                    extra.push_str(&format!(
                        ",\"ratio\":{ratio:.3},\"ratio_across_threads\":{across:.3}"
                    ));
                }
                rounds_out.push(sample_line(
                    (framework, "persist_events", &label),
                    &params,
                    round,
                    m.0,
                    events,
                    extra,
                ));
            }
            for (side, m) in cost.iter_mut().zip([rm, hm, pm, dm, om]) {
                side.0.push(m.1);
                side.1.push(m.2);
            }
            r.push(rs);
            h.push(hs);
            p.push(ps);
            d.push(ds);
            o.push(os);
            io_own_ratios.push(os / ds);
            ratios.push(rs / ps);
            hop_ratios.push(hs / ps);
            io_ratios.push(rs / ds);
            io_hop_ratios.push(hs / ds);
        }
        let [(rc, rw), (hc, hw), (pc, pw), (dc, dw), (oc, ow)] = cost;
        let cost = |c: Vec<f64>, w: Vec<f64>| {
            format!(
                ",\"cpu_us_per_event\":{:.2},\"switches_per_event\":{:.3}",
                median(c),
                median(w)
            )
        };
        let (rcost, hcost, pcost, dcost, ocost) = (
            cost(rc, rw),
            cost(hc, hw),
            cost(pc, pw),
            cost(dc, dw),
            cost(oc, ow),
        );
        let params = format!("{{\"events\":{events},\"entities\":{entities},\"rounds\":{rounds}}}");
        let (rs, hs, ps, ds) = (median(r), median(h), median(p), median(d));
        let (ratio, hop_ratio) = (median(ratios), median(hop_ratios));
        let (io_ratio, io_hop_ratio) = (median(io_ratios), median(io_hop_ratios));
        let (os, io_own_ratio) = (median(o), median(io_own_ratios));
        out.push(line(
            "nats-raw",
            "persist_events",
            &format!("{entities} entities"),
            params.clone(),
            (rs, events as f64 / rs, "events/s"),
            rcost,
        ));
        out.push(line(
            "nats-raw",
            "persist_events",
            &format!("{entities} entities, across threads"),
            params.clone(),
            (hs, events as f64 / hs, "events/s"),
            hcost,
        ));
        out.push(line(
            "nats-raw",
            "persist_events",
            &format!("{entities} entities, on the I/O runtime"),
            params.clone(),
            (os, events as f64 / os, "events/s"),
            ocost,
        ));
        out.push(line(
            "troupe",
            "persist_events",
            &format!("{entities} entities"),
            params.clone(),
            (ps, events as f64 / ps, "events/s"),
            format!(",\"ratio\":{ratio:.3},\"ratio_across_threads\":{hop_ratio:.3}{pcost}"),
        ));
        out.push(line(
            "troupe",
            "persist_events",
            &format!("{entities} entities, I/O dispatcher"),
            params,
            (ds, events as f64 / ds, "events/s"),
            format!(
                ",\"ratio\":{io_ratio:.3},\"ratio_across_threads\":{io_hop_ratio:.3},\
                 \"ratio_raw_on_io_runtime\":{io_own_ratio:.3}{dcost}"
            ),
        ));
        let (ws, w_ratio, w_io_ratio) = (median(w), median(w_ratios), median(w_io_ratios));
        out.push(line(
            "nats-raw",
            "persist_events",
            &format!("{entities} entities, {} in flight", args.pipeline),
            format!(
                "{{\"events\":{events},\"entities\":{entities},\"rounds\":{rounds},\"window\":{}}}",
                args.pipeline
            ),
            (ws, events as f64 / ws, "events/s"),
            format!(",\"ratio_persisted\":{w_ratio:.3},\"ratio_io_dispatcher\":{w_io_ratio:.3}"),
        ));
        eprintln!(
            "{entities:>2} entities, pipeline {}: median ratios persisted/raw-window {w_ratio:.2}, \
             I/O dispatcher/raw-window {w_io_ratio:.2}",
            args.pipeline
        );
        eprintln!(
            "{entities:>2} entities: median ratios persisted/raw {ratio:.2}, persisted/across threads {hop_ratio:.2}; \
             I/O dispatcher/raw {io_ratio:.2}, I/O dispatcher/across threads {io_hop_ratio:.2}, \
             I/O dispatcher/raw on the I/O runtime {io_own_ratio:.2}"
        );
    }
    if args.only.as_deref() != Some("events") {
        let tag = tag.to_string();
        out.extend(recovery(
            &system,
            &store,
            &tag,
            events,
            rounds,
            &mut rounds_out,
        ));
    }
    system.shutdown();
    if let Some(to) = args.json.as_deref() {
        write_lines(to, &out);
    }
    if let Some(to) = args.json_rounds.as_deref() {
        write_lines(to, &rounds_out);
    }
}
