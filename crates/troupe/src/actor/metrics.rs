//! Per-actor counters and timings (seed 000's performance model): what the
//! cell records when an actor is spawned with metrics on, and nothing when
//! it is not.
//!
//! The cell holds an `Option<Arc<ActorMetrics>>`: `None` (a null pointer)
//! when metrics are off, so the hot path gains one predictable branch and no
//! atomic, no clock read. The system's [`MetricsSet`] holds every metered
//! actor's `Arc` so the observability layer (`observability/`) can read them.
//!
//! What is counted, and by whom:
//! * `received` (arrivals): every accepted send, by the sender, after the
//!   push (one relaxed `fetch_add`).
//! * `handled`: every message handed to `handle`, by the task holder (the
//!   only writer: a relaxed load and store, no read-modify-write).
//! * `dropped_overflow`, `dropped_stopped`, `panics`: rare paths.
//!
//! Timings sample one message in [`SAMPLE_EVERY`] (the counts stay exact):
//! * **service time**: for every `SAMPLE_EVERY`-th dequeued message the task
//!   holder reads the clock before and after `handle`.
//! * **waiting time**: the sender whose arrival number `s` (the value its
//!   `fetch_add` returned) is a multiple of `SAMPLE_EVERY` reads the clock and
//!   publishes `(s, t)` in slot `s / SAMPLE_EVERY % SLOTS` if that slot is
//!   free (8 slots). The task holder numbers what it dequeues; at each
//!   sampled number `d` it looks in `d`'s slot: when the slot holds `s == d`
//!   it records `now - t`; it frees the slot if `s <= d`. A slot
//!   whose `s` is already behind (the message was dequeued before the sender
//!   published, or evicted) is discarded. Arrival numbers follow the queue's
//!   order except between senders racing within the same few nanoseconds, so
//!   a sample may be attributed to a neighbouring message; the error is that
//!   race's width. Samples lost to the dequeue-before-publish race bias the
//!   figures against the very shortest waits, documented and accepted.
//! * **mailbox depth**: `received - dequeued - evicted`, read at each
//!   sampled dequeue; `depth_max` is the maximum seen there (so a burst
//!   shorter than `SAMPLE_EVERY` messages may be missed).
//!
//! Invariants: only the task holder writes `dequeued`, `handled`, the
//! service histogram and `depth_max`; any thread reads. Readers see each
//! counter monotonic, not a consistent cut across counters.

use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// One message in this many has its waiting and service times measured.
pub const SAMPLE_EVERY: u64 = 16;

/// Upper bounds (nanoseconds) of the histograms' buckets: ten per decade
/// (1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8) from 100 ns to 80 s; a last bucket
/// takes the rest. Quantiles interpolate within a bucket: error under 25%.
pub(crate) static BOUNDS_NS: [u64; BUCKETS] = bounds();

/// Buckets per histogram (the last is unbounded).
pub(crate) const BUCKETS: usize = 91;

const fn bounds() -> [u64; BUCKETS] {
    const STEPS: [u64; 10] = [100, 125, 150, 200, 250, 300, 400, 500, 600, 800];
    let mut out = [0u64; BUCKETS];
    let mut decade = 1u64; // 100 ns * decade
    let mut i = 0;
    while i < BUCKETS - 1 {
        out[i] = STEPS[i % 10] * decade;
        i += 1;
        if i % 10 == 0 {
            decade *= 10;
        }
    }
    out[BUCKETS - 1] = u64::MAX;
    out
}

/// A fixed-bucket histogram of durations, written by one thread (relaxed
/// load + store), read by any.
pub(crate) struct Histogram {
    buckets: [AtomicU64; BUCKETS],
    count: AtomicU64,
    sum_ns: AtomicU64,
    max_ns: AtomicU64,
}

impl Histogram {
    fn new() -> Self {
        Histogram {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            count: AtomicU64::new(0),
            sum_ns: AtomicU64::new(0),
            max_ns: AtomicU64::new(0),
        }
    }

    /// Records one duration. Single writer: plain load/store pairs.
    #[inline]
    fn record(&self, ns: u64) {
        let i = BOUNDS_NS.partition_point(|&b| b < ns);
        bump(&self.buckets[i.min(BUCKETS - 1)], 1);
        bump(&self.count, 1);
        bump(&self.sum_ns, ns);
        if ns > self.max_ns.load(Ordering::Relaxed) {
            self.max_ns.store(ns, Ordering::Relaxed);
        }
    }

    /// A copy of the histogram now.
    pub(crate) fn read(&self) -> HistogramData {
        HistogramData {
            buckets: self
                .buckets
                .iter()
                .map(|b| b.load(Ordering::Relaxed))
                .collect(),
            count: self.count.load(Ordering::Relaxed),
            sum_ns: self.sum_ns.load(Ordering::Relaxed),
            max_ns: self.max_ns.load(Ordering::Relaxed),
        }
    }
}

/// Single-writer increment: no read-modify-write needed.
#[inline]
fn bump(a: &AtomicU64, n: u64) {
    a.store(a.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// A histogram's figures, copied out (see `observability`).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct HistogramData {
    /// Count per bucket of [`BOUNDS_NS`] (not cumulative).
    pub(crate) buckets: Vec<u64>,
    pub(crate) count: u64,
    pub(crate) sum_ns: u64,
    pub(crate) max_ns: u64,
}

/// Waiting-time samples that can be in flight at once: a mailbox deeper
/// than `SLOTS * SAMPLE_EVERY` yields `SLOTS` samples per pass through it.
const SLOTS: usize = 8;

/// The slot for sampled arrival (or dequeue) number `n`.
#[inline]
fn slot_of(n: u64) -> usize {
    (n / SAMPLE_EVERY) as usize % SLOTS
}

/// One waiting-time sample: arrival number + 1 (0 = free, `u64::MAX` =
/// being written) and the time it was sent.
#[derive(Default)]
struct SampleSlot {
    seq: AtomicU64,
    at: AtomicU64,
}

/// An actor's counters; see the module docs for who writes what.
pub(crate) struct ActorMetrics {
    /// `std::any::type_name` of the actor, for labels and aggregation.
    pub(crate) type_name: &'static str,
    pub(crate) id: u64,
    pub(crate) name: Option<Arc<String>>,
    pub(crate) spawned_at: Instant,
    /// Emit a trace span per handled message.
    pub(crate) trace: bool,
    pub(crate) received: AtomicU64,
    pub(crate) handled: AtomicU64,
    dequeued: AtomicU64,
    pub(crate) evicted: AtomicU64,
    pub(crate) dropped_overflow: AtomicU64,
    pub(crate) dropped_stopped: AtomicU64,
    pub(crate) panics: AtomicU64,
    pub(crate) restarts: AtomicU64,
    pub(crate) depth_max: AtomicU64,
    pub(crate) stopped: AtomicBool,
    /// Waiting-time samples in flight (see the module docs).
    slots: [SampleSlot; SLOTS],
    pub(crate) waiting: Histogram,
    pub(crate) service: Histogram,
}

impl ActorMetrics {
    pub(crate) fn new(
        type_name: &'static str,
        id: u64,
        name: Option<Arc<String>>,
        trace: bool,
    ) -> Self {
        ActorMetrics {
            type_name,
            id,
            name,
            spawned_at: Instant::now(),
            trace,
            received: AtomicU64::new(0),
            handled: AtomicU64::new(0),
            dequeued: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
            dropped_overflow: AtomicU64::new(0),
            dropped_stopped: AtomicU64::new(0),
            panics: AtomicU64::new(0),
            restarts: AtomicU64::new(0),
            depth_max: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            slots: std::array::from_fn(|_| SampleSlot::default()),
            waiting: Histogram::new(),
            service: Histogram::new(),
        }
    }

    /// Nanoseconds since the actor was spawned (the clock the samples use).
    #[inline]
    fn now_ns(&self) -> u64 {
        self.spawned_at.elapsed().as_nanos() as u64
    }

    /// A sender's accepted push; `evicted`: it pushed the oldest message out.
    #[inline]
    pub(crate) fn on_send(&self, evicted: bool) {
        if evicted {
            self.evicted.fetch_add(1, Ordering::Relaxed);
            self.dropped_overflow.fetch_add(1, Ordering::Relaxed);
        }
        let s = self.received.fetch_add(1, Ordering::Relaxed);
        if s % SAMPLE_EVERY == 0 {
            self.sample_send(s);
        }
    }

    #[cold]
    fn sample_send(&self, s: u64) {
        let slot = &self.slots[slot_of(s)];
        if slot.seq.load(Ordering::Relaxed) != 0 {
            return; // an older sample still waits there: skip this one
        }
        let now = self.now_ns();
        // Claim the free slot; the consumer frees it.
        if slot
            .seq
            .compare_exchange(0, u64::MAX, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            slot.at.store(now, Ordering::Relaxed);
            slot.seq.store(s + 1, Ordering::Release);
        }
    }

    /// The task holder dequeued a message; returns whether to time its
    /// handler (then call [`after_handle`](Self::after_handle) with the
    /// returned start).
    #[inline]
    pub(crate) fn on_dequeue(&self) -> Option<u64> {
        let d = self.dequeued.load(Ordering::Relaxed);
        self.dequeued.store(d + 1, Ordering::Relaxed);
        bump(&self.handled, 1);
        if d % SAMPLE_EVERY == 0 {
            Some(self.sample_dequeue(d))
        } else {
            None
        }
    }

    #[cold]
    fn sample_dequeue(&self, d: u64) -> u64 {
        let now = self.now_ns();
        let slot = &self.slots[slot_of(d)];
        let seq = slot.seq.load(Ordering::Acquire);
        if seq != 0 && seq != u64::MAX && seq - 1 <= d {
            if seq - 1 == d {
                let at = slot.at.load(Ordering::Relaxed);
                self.waiting.record(now.saturating_sub(at));
            }
            slot.seq.store(0, Ordering::Release);
        }
        let depth = self
            .received
            .load(Ordering::Relaxed)
            .saturating_sub(d + self.evicted.load(Ordering::Relaxed));
        if depth > self.depth_max.load(Ordering::Relaxed) {
            self.depth_max.store(depth, Ordering::Relaxed);
        }
        now
    }

    /// Records the service time of a sampled message started at `start`.
    #[cold]
    pub(crate) fn after_handle(&self, start: u64) {
        self.service.record(self.now_ns().saturating_sub(start));
    }

    /// A send refused: mailbox full, or the actor stopped.
    pub(crate) fn on_refused(&self, stopped: bool) {
        let c = if stopped {
            &self.dropped_stopped
        } else {
            &self.dropped_overflow
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// The actor stopped, dropping `dropped` messages left in its mailbox.
    pub(crate) fn on_stop(&self, dropped: u64, panicked: bool) {
        self.dropped_stopped.fetch_add(dropped, Ordering::Relaxed);
        self.evicted.fetch_add(dropped, Ordering::Relaxed);
        if panicked {
            self.panics.fetch_add(1, Ordering::Relaxed);
        }
        self.stopped.store(true, Ordering::Release);
    }

    /// Messages waiting now (arrived, not yet dequeued or evicted).
    pub(crate) fn depth(&self) -> u64 {
        let dequeued = self.dequeued.load(Ordering::Relaxed);
        let evicted = self.evicted.load(Ordering::Relaxed);
        self.received
            .load(Ordering::Relaxed)
            .saturating_sub(dequeued + evicted)
    }

    /// A label for this actor: its name, else `Type#id`.
    pub(crate) fn label(&self) -> String {
        match &self.name {
            Some(n) => n.to_string(),
            None => format!("{}#{}", short_type_name(self.type_name), self.id),
        }
    }
}

/// `a::b::Foo<c::Bar>` → `Foo<Bar>`: the type's own name, paths dropped.
pub(crate) fn short_type_name(full: &'static str) -> String {
    let mut out = String::with_capacity(full.len());
    let mut seg = String::new();
    for ch in full.chars() {
        match ch {
            '<' | '>' | ',' | ' ' | '(' | ')' | '[' | ']' | '&' => {
                out.push_str(seg.rsplit("::").next().unwrap_or(""));
                seg.clear();
                out.push(ch);
            }
            c => seg.push(c),
        }
    }
    out.push_str(seg.rsplit("::").next().unwrap_or(""));
    out
}

/// Samples `(when, received, handled)` of one actor's counters, oldest
/// first, for windowed rates.
pub(crate) type RateSamples = VecDeque<(Instant, u64, u64)>;

/// A watched channel's figures: name, subscribers, published, delivered,
/// failed; `None` once the channel is gone.
pub(crate) type ChannelProbe =
    Box<dyn Fn() -> Option<(String, usize, u64, u64, u64)> + Send + Sync>;

/// Every metered actor of one system (kept in the `Runtime`).
#[derive(Default)]
pub(crate) struct MetricsSet {
    /// Metrics on for every actor unless its options say otherwise.
    pub(crate) default_on: bool,
    pub(crate) actors: Mutex<Vec<Arc<ActorMetrics>>>,
    /// Channels whose counters the system exports.
    pub(crate) channels: Mutex<Vec<ChannelProbe>>,
    /// Per-actor counter samples for windowed rates, by actor id (read and
    /// written only when metrics are read).
    pub(crate) windows: Mutex<HashMap<u64, RateSamples>>,
}

impl MetricsSet {
    /// Enrols a new actor's metrics (once per spawn, never per message).
    pub(crate) fn add(&self, m: Arc<ActorMetrics>) {
        self.actors.lock().push(m);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn bounds_rise_and_cover() {
        assert_eq!(BOUNDS_NS[0], 100);
        assert_eq!(BOUNDS_NS[10], 1_000);
        assert_eq!(BOUNDS_NS[89], 80_000_000_000);
        assert!(BOUNDS_NS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn histogram_buckets_by_upper_bound() {
        let h = Histogram::new();
        h.record(100); // le 100ns
        h.record(101); // le 125ns
        h.record(1_000_000); // le 1ms
        let d = h.read();
        assert_eq!(d.buckets[0], 1);
        assert_eq!(d.buckets[1], 1);
        assert_eq!(d.buckets[40], 1);
        assert_eq!(BOUNDS_NS[40], 1_000_000);
        assert_eq!((d.count, d.max_ns), (3, 1_000_000));
    }

    #[test]
    fn waiting_sample_pairs_send_and_dequeue_numbers() {
        let m = ActorMetrics::new("T", 1, None, false);
        m.on_send(false); // arrival 0 is sampled
        m.on_send(false);
        std::thread::sleep(std::time::Duration::from_millis(2));
        let start = m.on_dequeue().expect("dequeue 0 is sampled");
        m.after_handle(start);
        assert_eq!(m.waiting.read().count, 1);
        assert!(m.waiting.read().max_ns >= 2_000_000);
        assert_eq!(m.depth(), 1);
        assert_eq!(m.depth_max.load(Ordering::Relaxed), 2);
        assert!(m.on_dequeue().is_none());
    }

    #[test]
    fn short_type_names() {
        assert_eq!(short_type_name("a::b::Foo<c::Bar, u8>"), "Foo<Bar, u8>");
        assert_eq!(short_type_name("Foo"), "Foo");
    }
}
