//! The stall watchdog: one thread per system with stall detection on
//! ([`SystemBuilder::stall_threshold`](crate::SystemBuilder::stall_threshold)),
//! which scans the workers' turn slots and reports handlers that run longer
//! than their threshold; and the workers' view it keeps
//! ([`SystemHandle::workers`]).
//!
//! How it sees a stall, scan by scan (every quarter of the shortest
//! threshold in use, between 1 ms and 250 ms):
//! 1. Each worker of each pool of the system publishes the turn it runs
//!    (`engine::scheduler::watch`: a counter, the actor's table key and
//!    id; plain stores per turn, nothing per message, no clock read).
//! 2. For a worker running a turn, the watchdog looks the actor up in the
//!    system's table by its key, checks that the turn still runs and that
//!    the actor is the one published (keys are reused), and reads how many
//!    messages the actor has popped. The same turn with the same count at
//!    two scans is the same handler, still running (a long turn of many
//!    short messages moves the count).
//! 3. The first scan that saw a handler is its start, as far as the
//!    watchdog knows: the running time it reports is a lower bound, short
//!    of the truth by at most one scan period (and by the time the handler
//!    ran before the scan that first saw it). A handler whose running time
//!    reaches its threshold (the actor's own,
//!    [`SpawnOptions::stall_threshold`](crate::SpawnOptions::stall_threshold),
//!    else the system's) is reported once: a `tracing` warning (target
//!    `troupe::stall`) with the actor's id, name and type and its message
//!    type, the `detected` counter, and an entry in
//!    [`Stalls::ongoing`]. When a later scan sees that handler gone (the
//!    count moved, the turn ended), it is reported again, with how long it
//!    ran (to within one scan period), counted in `returned`, and moved to
//!    [`Stalls::recent`].
//!
//! The watchdog never touches a running actor: it reads the slots, takes
//! the table's shard lock for a look-up (as a spawn does), and holds the
//! actor's `Arc` for the look-up only. It stops with the system's shutdown,
//! after the workers are joined.
//!
//! Invariants: each stalled handler is reported exactly once as stalled
//! and at most once as returned (once, unless the system shuts down while
//! it runs); `recent` holds at most [`RECENT_STALLS`] entries.

use super::SystemHandle;
use crate::actor::id::ActorId;
use crate::actor::metrics::short_type_name;
use crate::actor::stall::Described;
use crate::engine::scheduler::watch::Seen;
use parking_lot::{Condvar, Mutex};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How many returned stalls a system keeps ([`Stalls::recent`]).
pub const RECENT_STALLS: usize = 32;

/// A handler that ran, or runs, longer than its stall threshold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stall {
    /// The actor.
    pub actor: ActorId,
    /// Its name, if it was spawned with one.
    pub name: Option<String>,
    /// Its type (`std::any::type_name`).
    pub actor_type: &'static str,
    /// The type of the messages it handles.
    pub msg_type: &'static str,
    /// The pool its handler runs on (the worker threads' name prefix).
    pub pool: String,
    /// The worker's index in that pool.
    pub worker: usize,
    /// The threshold it passed.
    pub threshold: Duration,
    /// How long it has run (ongoing) or ran (returned), as the watchdog
    /// measured it: to within one scan period.
    pub running: Duration,
    /// Whether the handler has returned.
    pub returned: bool,
}

/// A system's stall reports ([`SystemHandle::stalls`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stalls {
    /// Handlers reported as stalled so far.
    pub detected: u64,
    /// Of those, the ones reported as returned.
    pub returned: u64,
    /// Stalled handlers still running, as of the last scan.
    pub ongoing: Vec<Stall>,
    /// The last [`RECENT_STALLS`] stalled handlers that returned, oldest
    /// first.
    pub recent: Vec<Stall>,
}

/// What a worker runs ([`SystemHandle::workers`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerView {
    /// Its pool (the worker threads' name prefix).
    pub pool: String,
    /// Its index in the pool (its thread is `{pool}-{index}`).
    pub index: usize,
    /// The handler it runs, if any, as of the watchdog's last scan.
    pub running: Option<RunningHandler>,
}

/// A handler a worker runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunningHandler {
    /// The actor.
    pub actor: ActorId,
    /// Its name, if it was spawned with one.
    pub name: Option<String>,
    /// Its type, paths dropped (`Greeter`).
    pub actor_type: String,
    /// Its message type, paths dropped.
    pub msg_type: String,
    /// How long the handler has run, from the first scan that saw it.
    pub running_for: Duration,
    /// Whether it has passed its stall threshold.
    pub stalled: bool,
}

/// The watchdog's memory of one worker.
struct Worker {
    pool: String,
    index: usize,
    /// The slot's counter at the last scan.
    seq: u64,
    /// The running actor's popped count at the last scan (`None`: no turn,
    /// or not looked up).
    popped: Option<u64>,
    /// When the last scan's handler was first seen.
    since: Instant,
    /// The last scan's handler, described.
    actor: Option<Described>,
    /// Its stall, once reported.
    stalled: Option<Stall>,
}

#[derive(Default)]
struct State {
    /// By (pool id, worker index).
    workers: HashMap<(usize, usize), Worker>,
    /// The order of the last scan, for the workers' view.
    order: Vec<(usize, usize)>,
    recent: VecDeque<Stall>,
}

struct Shared {
    stop: Mutex<bool>,
    wake: Condvar,
    detected: AtomicU64,
    returned: AtomicU64,
    state: Mutex<State>,
    /// The system's threshold.
    threshold: Duration,
}

/// A running watchdog, held by its system.
pub(crate) struct Watchdog {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Starts the thread `{name}-watch` for `system`, with the system's
    /// threshold `threshold`.
    pub(crate) fn start(system: SystemHandle, name: &str, threshold: Duration) -> Watchdog {
        let shared = Arc::new(Shared {
            stop: Mutex::new(false),
            wake: Condvar::new(),
            detected: AtomicU64::new(0),
            returned: AtomicU64::new(0),
            state: Mutex::new(State::default()),
            threshold,
        });
        // A first scan now: the workers' view lists every worker at once.
        scan(&system, &shared);
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("{name}-watch"))
            .spawn(move || run(&system, &s))
            .expect("failed to spawn the troupe stall watchdog thread");
        Watchdog {
            shared,
            thread: Some(thread),
        }
    }

    /// Stops the thread and waits for it (once; later calls do nothing).
    pub(crate) fn stop(&mut self) {
        *self.shared.stop.lock() = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    pub(crate) fn stalls(&self) -> Stalls {
        let state = self.shared.state.lock();
        Stalls {
            detected: self.shared.detected.load(Ordering::Relaxed),
            returned: self.shared.returned.load(Ordering::Relaxed),
            ongoing: state
                .order
                .iter()
                .filter_map(|k| state.workers[k].stalled.clone())
                .collect(),
            recent: state.recent.iter().cloned().collect(),
        }
    }

    pub(crate) fn workers(&self) -> Vec<WorkerView> {
        let state = self.shared.state.lock();
        let now = Instant::now();
        state
            .order
            .iter()
            .map(|k| {
                let w = &state.workers[k];
                WorkerView {
                    pool: w.pool.clone(),
                    index: w.index,
                    running: w.actor.as_ref().map(|d| RunningHandler {
                        actor: d.id,
                        name: d.name.as_deref().cloned(),
                        actor_type: short_type_name(d.type_name),
                        msg_type: short_type_name(d.msg_type),
                        running_for: now.saturating_duration_since(w.since),
                        stalled: w.stalled.is_some(),
                    }),
                }
            })
            .collect()
    }
}

/// The scan period for the shortest threshold `t`: a quarter of it, within
/// 1 ms and 250 ms.
fn period(t: Duration) -> Duration {
    (t / 4).clamp(Duration::from_millis(1), Duration::from_millis(250))
}

fn run(system: &SystemHandle, shared: &Shared) {
    let mut stop = shared.stop.lock();
    while !*stop {
        let wait = period(system.rt.watch.shortest());
        shared.wake.wait_for(&mut stop, wait);
        if *stop {
            break;
        }
        drop(stop);
        scan(system, shared);
        stop = shared.stop.lock();
    }
}

/// One scan of every worker of every pool (see the module docs).
fn scan(system: &SystemHandle, shared: &Shared) {
    let pools = system.pools();
    let now = Instant::now();
    let mut guard = shared.state.lock();
    let State {
        workers, recent, ..
    } = &mut *guard;
    let mut order = Vec::new();
    for pool in &pools {
        let Some(slots) = &pool.watch else { continue };
        for (index, slot) in slots.iter().enumerate() {
            let key = (pool.id, index);
            order.push(key);
            let w = workers.entry(key).or_insert_with(|| Worker {
                pool: pool.name.clone(),
                index,
                seq: 0,
                popped: None,
                since: now,
                actor: None,
                stalled: None,
            });
            let seen = slot.read();
            let described = look_up(system, slot, seen);
            let (popped, actor) = match described {
                Some(d) => (Some(d.popped), Some(d)),
                None => (None, None),
            };
            let same = seen.seq == w.seq && popped.is_some() && popped == w.popped;
            if !same {
                if let Some(st) = w.stalled.take() {
                    returned_into(shared, recent, st, now, w.since);
                }
                w.seq = seen.seq;
                w.popped = popped;
                w.since = now;
            }
            w.actor = actor;
            if let (Some(d), None) = (&w.actor, &w.stalled) {
                let threshold = d.stall.threshold().unwrap_or(Some(shared.threshold));
                let running = now.saturating_duration_since(w.since);
                if let Some(t) = threshold.filter(|t| running >= *t) {
                    w.stalled = Some(stalled(shared, d, &pool.name, index, t, running));
                }
            }
            if let Some(st) = &mut w.stalled {
                st.running = now.saturating_duration_since(w.since);
            }
        }
    }
    // Workers of pools that are gone (a dedicated actor's thread).
    workers.retain(|k, w| {
        let here = order.contains(k);
        if !here {
            if let Some(st) = w.stalled.take() {
                returned_into(shared, recent, st, now, w.since);
            }
        }
        here
    });
    guard.order = order;
}

/// The actor of the turn `seen` on `slot`, if one runs and is still the
/// one published (see the module docs).
fn look_up(
    system: &SystemHandle,
    slot: &crate::engine::scheduler::watch::TurnSlot,
    seen: Seen,
) -> Option<Described> {
    let (key, id) = seen.running?;
    let actor = system.inner().table.get(key)?;
    let d = actor.describe()?;
    // The look-up found the running actor only if the turn still runs.
    (slot.seq() == seen.seq && d.id.as_u64() == id).then_some(d)
}

fn returned_into(
    shared: &Shared,
    recent: &mut VecDeque<Stall>,
    st: Stall,
    now: Instant,
    since: Instant,
) {
    let st = report_return(shared, st, now, since);
    push_recent(recent, st);
}

fn push_recent(recent: &mut VecDeque<Stall>, st: Stall) {
    if recent.len() == RECENT_STALLS {
        recent.pop_front();
    }
    recent.push_back(st);
}

/// Reports a handler past its threshold.
fn stalled(
    shared: &Shared,
    d: &Described,
    pool: &str,
    worker: usize,
    threshold: Duration,
    running: Duration,
) -> Stall {
    shared.detected.fetch_add(1, Ordering::Relaxed);
    let st = Stall {
        actor: d.id,
        name: d.name.as_deref().cloned(),
        actor_type: d.type_name,
        msg_type: d.msg_type,
        pool: pool.to_owned(),
        worker,
        threshold,
        running,
        returned: false,
    };
    tracing::warn!(
        target: "troupe::stall",
        actor = %st.actor,
        name = st.name.as_deref(),
        actor_type = st.actor_type,
        msg_type = st.msg_type,
        pool = %st.pool,
        worker = st.worker,
        running_ms = st.running.as_millis() as u64,
        threshold_ms = st.threshold.as_millis() as u64,
        "handler running longer than its stall threshold"
    );
    st
}

/// Reports a stalled handler that returned: it ran from `since` (the first
/// scan that saw it) to about `now`.
fn report_return(shared: &Shared, mut st: Stall, now: Instant, since: Instant) -> Stall {
    shared.returned.fetch_add(1, Ordering::Relaxed);
    st.running = now.saturating_duration_since(since);
    st.returned = true;
    tracing::warn!(
        target: "troupe::stall",
        actor = %st.actor,
        name = st.name.as_deref(),
        actor_type = st.actor_type,
        msg_type = st.msg_type,
        pool = %st.pool,
        worker = st.worker,
        ran_ms = st.running.as_millis() as u64,
        threshold_ms = st.threshold.as_millis() as u64,
        "stalled handler returned"
    );
    st
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_period_is_a_quarter_within_bounds() {
        assert_eq!(
            period(Duration::from_millis(100)),
            Duration::from_millis(25)
        );
        assert_eq!(period(Duration::from_micros(100)), Duration::from_millis(1));
        assert_eq!(period(Duration::from_secs(60)), Duration::from_millis(250));
    }
}
