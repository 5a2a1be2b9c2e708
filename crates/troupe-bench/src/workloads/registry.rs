//! `registry` (seed 001, the Gleam library chip): K actors registered by name
//! and put in 10 groups (actor i in group i % 10), as the peers do
//! (`peers/README.md`). Per size, one figure per operation:
//!
//! * `find_owned` (op `find`, the figure the peers are compared with): names
//!   looked up round robin (~200,000 lookups, at least two rounds) through
//!   `Registry::find`, which takes its own guard and clones the `ActorRef`
//!   per call (what ractor's `where_is` and kameo's `lookup` return), each
//!   checked to be the expected actor;
//! * `find (borrowed)` (op `find_borrowed`): the same lookups through a
//!   [`troupe::registry::Reader`] re-taken every 1,024 lookups (one epoch
//!   guard per batch, the reference borrowed), a row of its own, compared
//!   only with the baseline below, not with the peers' owned lookups;
//! * baseline `std HashMap find (borrowed)`: the same lookups in a `std`
//!   `HashMap` from name to index with the same hasher (foldhash),
//!   single-threaded and unsynchronized: the floor for a borrowed lookup;
//! * `dispatch_group`: one message to every member of group 0, repeated until
//!   about 100,000 deliveries (10 to 10,000 rounds); every member answers the
//!   driver, which starts the next round once all have; time per member
//!   delivered. The driver is an actor (the peers' drivers run on their
//!   runtimes too), so the dispatch runs on a worker;
//! * `dispatch_group_countdown`: the same dispatch, but members do not
//!   answer one by one: each counts a shared countdown down and the last one
//!   answers (one message per round). Not what the peers run: it shows what
//!   the dispatch itself costs without the fan-in of one answer per member;
//! * `dispatch`: the same to every registered actor;
//! * `memory`: heap in use (glibc `mallinfo2`) added by registering the K
//!   actors (name, group, the monitor that removes them), per entry; taken
//!   after one lookup, so the thread's one-time registration with the epoch
//!   collector is not counted, and after 4,096 lookups (steady state: the
//!   tables replaced while growing are freed once the epoch has moved on,
//!   which the lookups' guards make happen). It includes the 10 groups' fixed cost (about
//!   200 bytes each, which dominates at K = 10). Its `ns_per_op_*` fields
//!   read as bytes per entry (also in `bytes_per_entry`).
//!
//! Dispatch figures are taken at sizes up to 10,000 only; `find` at every
//! size (1,000,000 included).

use super::actor_creation::heap_in_use;
use super::{params, verify, RunCfg};
use super::{PlotCtx, Plotted, Workload};
use crate::stats::{Figure, Sample};
use crossbeam_channel::{bounded, Sender};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;
use troupe::registry::Registry;
use troupe::{Actor, ActorRef, Context};
use troupe_bench_contract::spec;

pub struct Params {
    pub sizes: Vec<usize>,
}

const GROUPS: usize = 10;
const MAX_DISPATCH_SIZE: usize = 10_000;

/// A registered actor: answers a ping to the driver, or counts a
/// countdown ping down (the last one answers).
pub struct Member {
    driver: ActorRef<Driver>,
    countdown: Arc<AtomicUsize>,
}

#[derive(Clone, Copy)]
pub enum Ping {
    /// Answer the driver.
    Ack,
    /// Count the shared countdown down; answer the driver if it hits zero.
    Countdown,
}

impl Actor for Member {
    type Msg = Ping;
    #[inline]
    fn handle(&mut self, ping: Ping, _: &mut Context<'_, Self>) {
        let answer = match ping {
            Ping::Ack => true,
            Ping::Countdown => self.countdown.fetch_sub(1, Ordering::AcqRel) == 1,
        };
        if answer {
            let _ = self.driver.tell(DriverMsg::Ack);
        }
    }
}

pub enum DriverMsg {
    /// Run `rounds` dispatches (to `group`, or to all when `None`) and report
    /// (seconds, deliveries) or an error.
    Start {
        registry: Registry<Member>,
        group: Option<String>,
        /// The members' shared countdown, for countdown rounds; `None`:
        /// every member answers.
        countdown: Option<Arc<AtomicUsize>>,
        rounds: usize,
        done: Sender<Result<(f64, u64), String>>,
    },
    Ack,
}

struct Run {
    registry: Registry<Member>,
    group: Option<String>,
    countdown: Option<Arc<AtomicUsize>>,
    rounds_left: usize,
    expected: usize,
    acks: usize,
    delivered: u64,
    started: Instant,
    done: Sender<Result<(f64, u64), String>>,
}

/// Drives the dispatch rounds from a worker thread.
#[derive(Default)]
pub struct Driver {
    run: Option<Run>,
}

impl Run {
    fn round(&mut self) -> Result<(), String> {
        let ping = match &self.countdown {
            Some(c) => {
                c.store(self.expected, Ordering::Release);
                Ping::Countdown
            }
            None => Ping::Ack,
        };
        let sent = match &self.group {
            Some(g) => self.registry.dispatch_group(g, ping),
            None => self.registry.dispatch(ping),
        };
        verify(sent == self.expected, || {
            format!(
                "registry: dispatch reached {sent} members, expected {}",
                self.expected
            )
        })?;
        self.acks = 0;
        self.rounds_left -= 1;
        Ok(())
    }
}

impl Actor for Driver {
    type Msg = DriverMsg;
    fn handle(&mut self, msg: DriverMsg, _: &mut Context<'_, Self>) {
        match msg {
            DriverMsg::Start {
                registry,
                group,
                countdown,
                rounds,
                done,
            } => {
                let expected = match &group {
                    Some(g) => registry.group_len(g),
                    None => registry.len(),
                };
                let mut run = Run {
                    registry,
                    group,
                    countdown,
                    rounds_left: rounds.max(1),
                    expected,
                    acks: 0,
                    delivered: 0,
                    started: Instant::now(),
                    done,
                };
                if let Err(e) = run.round() {
                    let _ = run.done.send(Err(e));
                    return;
                }
                self.run = Some(run);
            }
            DriverMsg::Ack => {
                let Some(run) = self.run.as_mut() else {
                    return;
                };
                run.acks += 1;
                if run.countdown.is_some() {
                    // One answer per round, for every member.
                    run.acks = run.expected;
                }
                if run.acks < run.expected {
                    run.delivered += 1;
                    return;
                }
                run.delivered += if run.countdown.is_some() {
                    run.expected as u64
                } else {
                    1
                };
                if run.rounds_left == 0 {
                    let secs = run.started.elapsed().as_secs_f64();
                    let _ = run.done.send(Ok((secs, run.delivered)));
                    self.run = None;
                } else if let Err(e) = run.round() {
                    let _ = run.done.send(Err(e));
                    self.run = None;
                }
            }
        }
    }
}

fn letter(i: usize) -> char {
    (b'a' + (i % 26) as u8) as char
}

fn figure_params(size: usize, op: &str) -> serde_json::Map<String, serde_json::Value> {
    params(&[("size", json!(size)), ("op", json!(op))])
}

pub fn run(cfg: &RunCfg, p: &Params) -> Result<Vec<Figure>, String> {
    let mut figures = Vec::new();
    for (i, &size) in p.sizes.iter().enumerate() {
        if size == 0 {
            return Err("registry: sizes must be positive".into());
        }
        let l = letter(i);
        let system = cfg.system();
        let driver = system.spawn(Driver::default());
        let registry: Registry<Member> = Registry::new();
        let names: Vec<String> = (0..size).map(|j| format!("k{size}-actor-{j}")).collect();
        let groups: Vec<String> = (0..GROUPS).map(|g| format!("k{size}-group-{g}")).collect();
        let countdown = Arc::new(AtomicUsize::new(0));
        let actors: Vec<ActorRef<Member>> = (0..size)
            .map(|_| {
                system.spawn(Member {
                    driver: driver.clone(),
                    countdown: countdown.clone(),
                })
            })
            .collect();
        // Outside the figure: the thread's one-time epoch registration, and
        // what earlier sizes left for the collector (this thread's bag of
        // deferred frees included, which a table growth would flush).
        settle_epoch(&registry);
        let heap_before = heap_in_use();
        for (j, a) in actors.iter().enumerate() {
            registry.register(&names[j], a).map_err(|e| e.to_string())?;
            registry.join_group(&groups[j % GROUPS], a);
        }
        // Steady state: the tables replaced while growing are freed once the
        // epoch moves on, which a few thousand guarded lookups make happen.
        for j in 0..4_096 {
            let _ = registry.find(&names[j % size]);
        }
        let heap_after = heap_in_use();
        let bytes_per_entry = heap_after.saturating_sub(heap_before) as f64 / size as f64;
        let lookups = (200_000 / size).max(2) * size;

        figures.push(cfg.measure(
            "troupe",
            "registry",
            format!("{l} {size} find (borrowed)"),
            figure_params(size, "find_borrowed"),
            "finds/s",
            || {
                let t0 = Instant::now();
                let mut wrong = 0usize;
                let mut j = 0usize;
                let mut done = 0usize;
                while done < lookups {
                    let reader = registry.reader();
                    let batch = (lookups - done).min(1024);
                    for _ in 0..batch {
                        match reader.find(&names[j]) {
                            Some(a) if *a == actors[j] => {}
                            _ => wrong += 1,
                        }
                        j += 1;
                        if j == size {
                            j = 0;
                        }
                    }
                    done += batch;
                }
                let secs = t0.elapsed().as_secs_f64();
                verify(wrong == 0, || format!("registry: {wrong} lookups failed"))?;
                Ok(Sample::new(secs, lookups as f64))
            },
        )?);

        figures.push(cfg.measure(
            "troupe",
            "registry",
            format!("{l} {size} find_owned"),
            figure_params(size, "find"),
            "finds/s",
            || {
                time_lookups(lookups, size, |j| {
                    registry.find(&names[j]).is_some_and(|a| a == actors[j])
                })
            },
        )?);

        figures.push(std_map_find(cfg, l, size, &names, lookups)?);

        if size <= MAX_DISPATCH_SIZE {
            let group0 = Some(groups[0].clone());
            let in_group = size.div_ceil(GROUPS);
            for (op, group, members, countdown) in [
                ("dispatch_group", group0.clone(), in_group, None),
                (
                    "dispatch_group_countdown",
                    group0,
                    in_group,
                    Some(countdown.clone()),
                ),
                ("dispatch", None, size, None),
            ] {
                let rounds = (100_000 / members).clamp(10, 10_000);
                figures.push(cfg.measure(
                    "troupe",
                    "registry",
                    format!("{l} {size} {op}"),
                    figure_params(size, op),
                    "deliveries/s",
                    || {
                        let (tx, rx) = bounded(1);
                        driver
                            .tell(DriverMsg::Start {
                                registry: registry.clone(),
                                group: group.clone(),
                                countdown: countdown.clone(),
                                rounds,
                                done: tx,
                            })
                            .map_err(|e| e.to_string())?;
                        let (secs, delivered) = rx.recv().map_err(|e| e.to_string())??;
                        let expected = (rounds * members) as u64;
                        verify(delivered == expected, || {
                            format!("registry: {delivered} deliveries, expected {expected}")
                        })?;
                        Ok(Sample::new(secs, delivered as f64))
                    },
                )?);
            }
        }

        let mem = Sample::new(bytes_per_entry * 1e-9, 1.0).with("bytes_per_entry", bytes_per_entry);
        figures.push(Figure::from_samples(
            "troupe",
            "registry",
            format!("{l} {size} memory"),
            figure_params(size, "memory"),
            "bytes/entry",
            cfg.threads,
            &[mem],
        ));
        drop(actors);
        system.shutdown();
    }
    Ok(figures)
}

/// The same lookups in a single-threaded, unsynchronized `std` `HashMap`
/// with the registry's hasher: the floor for a find at this size.
fn std_map_find(
    cfg: &RunCfg,
    l: char,
    size: usize,
    names: &[String],
    lookups: usize,
) -> Result<Figure, String> {
    let map: std::collections::HashMap<String, usize, foldhash::fast::RandomState> = names
        .iter()
        .enumerate()
        .map(|(j, n)| (n.clone(), j))
        .collect();
    cfg.measure(
        "baseline",
        "registry",
        format!("{l} {size} std HashMap find (borrowed)"),
        figure_params(size, "find_borrowed"),
        "finds/s",
        || time_lookups(lookups, size, |j| map.get(names[j].as_str()) == Some(&j)),
    )
}

/// Runs the frees that earlier registries deferred (the registry frees a
/// removed entry once no reader can see it), so that the memory figure
/// counts this size's registrations only.
fn settle_epoch(registry: &Registry<Member>) {
    for _ in 0..8 {
        crossbeam_epoch::pin().flush();
        for _ in 0..512 {
            let _ = registry.find("");
        }
    }
}

/// Times `lookups` calls of `found(j)`, `j` going round `0..size`; every
/// call must find the expected entry.
fn time_lookups(
    lookups: usize,
    size: usize,
    mut found: impl FnMut(usize) -> bool,
) -> Result<Sample, String> {
    let t0 = Instant::now();
    let mut wrong = 0usize;
    let mut j = 0usize;
    for _ in 0..lookups {
        wrong += !found(j) as usize;
        j += 1;
        if j == size {
            j = 0;
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    verify(wrong == 0, || format!("registry: {wrong} lookups failed"))?;
    Ok(Sample::new(secs, lookups as f64))
}
/// `registry`: the contract's sizes; `--plot` draws find, dispatch_group and
/// memory per entry against the registry size.
pub const WORKLOAD: Workload = Workload {
    spec: &spec::REGISTRY,
    peers: true,
    run: |cfg, a| {
        run(
            cfg,
            &Params {
                sizes: a.list("sizes"),
            },
        )
    },
    plot: Some(plot),
};

fn plot(c: &PlotCtx<'_>) -> Result<Plotted, String> {
    let mut out = String::new();
    for op in ["find", "dispatch_group", "memory"] {
        let points: Vec<(f64, f64)> = c
            .figs
            .iter()
            .filter(|f| {
                f.framework == "troupe" && f.params.get("op").and_then(|v| v.as_str()) == Some(op)
            })
            .filter_map(|f| {
                let size = f.params.get("size")?.as_f64()?;
                let y = if op == "memory" {
                    f.extra.get("bytes_per_entry")?.as_f64()?
                } else {
                    f.ns_per_op_mean
                };
                Some((size.log10(), y))
            })
            .collect();
        if points.is_empty() {
            continue;
        }
        let (svg, csv) = crate::plot::line_chart(
            c.dir,
            &format!("registry_{op}"),
            &format!("registry {op}: cost against registry size"),
            "log10(registry size)",
            if op == "memory" {
                "bytes per entry"
            } else {
                "ns per op"
            },
            &points,
        )?;
        out.push_str(&format!("plot: {} ({})\n", svg.display(), csv.display()));
    }
    Ok((out, Vec::new()))
}
