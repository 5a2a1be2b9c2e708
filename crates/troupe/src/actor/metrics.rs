//! Per-actor counters and timings (seed 000's performance model): what the
//! cell records when an actor is spawned with metrics on, and nothing when
//! it is not.
//!
//! The cell holds an `Option<Arc<ActorMetrics>>`: `None` (a null pointer)
//! when metrics are off, so the hot path gains one predictable branch and no
//! atomic, no clock read. The system's [`MetricsSet`] holds every metered
//! actor's `Arc`, with a weak handle on its mailbox, so the observability
//! layer (`observability/`) can read them.
//!
//! With metrics on, a message costs no extra atomic read-modify-write:
//! * **arrivals** are not counted at send: they are derived when read, as
//!   `dequeued + mailbox length + evicted` (the mailbox already knows its
//!   length and its evictions), plus what was drained at the stop. The
//!   reader keeps the figure monotonic (two loads race with the consumer).
//! * **handled** (`dequeued`): by the task holder, the only writer (a
//!   relaxed load and store).
//! * refused sends (`Full`, `Stopped`), panics, restarts: rare paths.
//!
//! Timings sample about one message in [`SAMPLE_EVERY`] (64; the counts
//! stay exact). 64 rather than 16 because a clock read (`Instant::now`,
//! ~20 ns) is more than a whole message hop costs (~10 ns): at 1 in 64 the
//! clock adds well under 1 ns per message:
//! * **service time**: every `SAMPLE_EVERY`-th dequeued message, the task
//!   holder reads the clock before and after `handle`.
//! * **waiting time**: every `SAMPLE_EVERY`-th dequeue the task holder
//!   *arms* the sampler (a flag on the senders' line); each send loads the
//!   flag (a cache hit: it changes once per `SAMPLE_EVERY` messages), and
//!   the first sender to find it set clears it and samples. A sampled
//!   sender reads the clock, computes its message's arrival number
//!   `s = dequeued + mailbox length - 1`, and publishes `(s, t)` in slot
//!   `s % SLOTS` if that slot is free (8 slots), then lowers `next_sample`
//!   to `s` (a CAS loop). At each dequeue `d` the task holder compares `d`
//!   with `next_sample` (on the line it writes anyway); on a match, and at
//!   every `SAMPLE_EVERY`-th dequeue, it scans the slots, records `now - t`
//!   for the sample of `d`, frees those it has passed, and sets
//!   `next_sample` to the smallest still pending (unless a sender lowered it
//!   meanwhile; a sample whose notice is lost this way is freed, unrecorded,
//!   at a later scan). The arrival number is
//!   exact unless another sender or the consumer moves the queue between
//!   the push and the two loads; such a sample is attributed to a
//!   neighbouring message (an error of that race's width). A sample can
//!   be published after the consumer has passed its message (dequeued
//!   before its sender finished sampling): the sender notices (the dequeue
//!   count passed `s`), takes the sample back with a CAS (the consumer takes
//!   samples with a CAS too, so each is recorded once) and records the time
//!   since it sent as an upper bound, in the buckets up to 10 µs (a longer
//!   bound, e.g. a preempted sender, is discarded).
//! * **mailbox depth**: the mailbox's length, read when the metrics are read;
//!   `depth_max` is the largest length seen at sampled dequeues or reads
//!   (so a burst between two samples may be missed).
//!
//! Layout: `dequeued`, `next_sample` and `armed`, which every message
//! touches, share one cache line; the slots and refusal counters (written
//! by senders) and the histograms (written by the task holder) are on lines
//! of their own.
//!
//! Invariants: only the task holder writes `dequeued`, the histograms and `depth_max`; senders write only the slots and the refusal
//! counters, on a cache line of their own. Readers see each counter
//! monotonic, not a consistent cut across counters.

use crossbeam_utils::CachePadded;
use parking_lot::Mutex;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// One message in this many has its waiting and service times measured.
pub const SAMPLE_EVERY: u64 = 64;

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
        bump(&self.buckets[bucket_of(ns)], 1);
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

/// The bucket for `ns`: the first whose bound is at least `ns`.
#[inline]
fn bucket_of(ns: u64) -> usize {
    BOUNDS_NS.partition_point(|&b| b < ns).min(BUCKETS - 1)
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
/// than about `SLOTS * SAMPLE_EVERY` yields up to `SLOTS` samples per pass.
const SLOTS: usize = 8;

/// Buckets of `SenderSide::early`: bounds up to 10 µs.
const EARLY_BUCKETS: usize = 21;

/// One waiting-time sample: arrival number + 1 (0 = free, `u64::MAX` =
/// being written) and the time it was sent.
#[derive(Default)]
struct SampleSlot {
    seq: AtomicU64,
    at: AtomicU64,
}

/// What senders write: on a cache line apart from the consumer's.
#[derive(Default)]
struct SenderSide {
    slots: [SampleSlot; SLOTS],
    /// Waiting samples of messages dequeued before their sender had
    /// published the sample, by bucket, up to 10 µs (their waiting is less
    /// than the sender's sampling took; longer bounds are discarded).
    early: [AtomicU64; EARLY_BUCKETS],
    refused_full: AtomicU64,
    refused_stopped: AtomicU64,
}

/// The one line every message touches: the dequeue count (task holder),
/// the sampler's flag (read by every send) and the next pending waiting
/// sample (compared at every dequeue). One line, so a hop to a cold actor
/// costs one extra cache miss with metrics on, not three.
struct Hot {
    /// Messages dequeued (= handed to `handle`); task holder only.
    dequeued: AtomicU64,
    /// Arrival number of the smallest pending waiting sample, `u64::MAX`
    /// if none: lowered by senders (CAS), reset by the task holder.
    next_sample: AtomicU64,
    /// Set by the task holder every `SAMPLE_EVERY` dequeues: the next
    /// sender to see it (and clear it) samples its send.
    armed: AtomicBool,
}

/// What only the task holder writes.
struct ConsumerSide {
    depth_max: AtomicU64,
    waiting: Histogram,
    service: Histogram,
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
    hot: CachePadded<Hot>,
    consumer: CachePadded<ConsumerSide>,
    sender: CachePadded<SenderSide>,
    /// Messages left in the mailbox and dropped at the stop.
    drained: AtomicU64,
    /// Mailbox evictions, copied at the stop (the mailbox may be gone when
    /// the metrics are read).
    final_evicted: AtomicU64,
    pub(crate) panics: AtomicU64,
    pub(crate) restarts: AtomicU64,
    pub(crate) stopped: AtomicBool,
}

/// The actor's mailbox as the metrics see it (implemented by the cell).
pub(crate) trait MailboxProbe: Send + Sync {
    /// Messages waiting now.
    fn depth(&self) -> u64;
    /// Messages evicted or dropped by the overflow policy so far.
    fn evicted(&self) -> u64;
}

/// An actor's figures, read at one moment (see `observability`).
pub(crate) struct ActorReading {
    pub(crate) received: u64,
    pub(crate) handled: u64,
    pub(crate) depth: u64,
    pub(crate) depth_max: u64,
    pub(crate) dropped_overflow: u64,
    pub(crate) dropped_stopped: u64,
    pub(crate) waiting: HistogramData,
    pub(crate) service: HistogramData,
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
            // Armed from the start: the first send is sampled.
            hot: CachePadded::new(Hot {
                dequeued: AtomicU64::new(0),
                next_sample: AtomicU64::new(u64::MAX),
                armed: AtomicBool::new(true),
            }),
            consumer: CachePadded::new(ConsumerSide {
                depth_max: AtomicU64::new(0),
                waiting: Histogram::new(),
                service: Histogram::new(),
            }),
            sender: CachePadded::default(),
            drained: AtomicU64::new(0),
            final_evicted: AtomicU64::new(0),
            panics: AtomicU64::new(0),
            restarts: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
        }
    }

    /// Nanoseconds since the actor was spawned (the clock the samples use).
    #[inline]
    fn now_ns(&self) -> u64 {
        self.spawned_at.elapsed().as_nanos() as u64
    }

    /// A sender's accepted push; `depth` reads the mailbox length (called
    /// only on a sampled send).
    #[inline]
    pub(crate) fn on_send(&self, depth: impl FnOnce() -> u64) {
        // A load of a line written once per `SAMPLE_EVERY` messages.
        if self.hot.armed.load(Ordering::Relaxed) {
            self.sample_send(depth);
        }
    }

    #[cold]
    #[inline(never)]
    fn sample_send(&self, depth: impl FnOnce() -> u64) {
        if !self.hot.armed.swap(false, Ordering::Relaxed) {
            return; // another sender took this sample
        }
        let sent = self.now_ns();
        // `dequeued` first: a pop between the two loads then makes `s`
        // smaller, never counts a message twice.
        let dequeued = self.hot.dequeued.load(Ordering::Acquire);
        let Some(s) = (dequeued + depth()).checked_sub(1) else {
            return;
        };
        let slot = &self.sender.slots[s as usize % SLOTS];
        // Claim the slot if free; whoever takes the sample frees it.
        if slot
            .seq
            .compare_exchange(0, u64::MAX, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        slot.at.store(sent, Ordering::Relaxed);
        slot.seq.store(s + 1, Ordering::Release);
        // Tell the task holder to look at dequeue `s`.
        let next = &self.hot.next_sample;
        let mut cur = next.load(Ordering::Relaxed);
        while s < cur {
            match next.compare_exchange_weak(cur, s, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => break,
                Err(c) => cur = c,
            }
        }
        // Was the message dequeued before we published? Then the consumer
        // missed the slot, and the message waited less than the time since
        // `sent`: take the sample back and record that bound, if short.
        if self.hot.dequeued.load(Ordering::Acquire) > s
            && slot
                .seq
                .compare_exchange(s + 1, 0, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            let bound = self.now_ns().saturating_sub(sent);
            if let Some(b) = self.sender.early.get(bucket_of(bound)) {
                b.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The task holder dequeued a message; returns a start time if its
    /// handler is to be timed (then call [`after_handle`](Self::after_handle)).
    /// `depth` reads the mailbox length (called on sampled dequeues only).
    #[inline]
    pub(crate) fn on_dequeue(&self, depth: impl FnOnce() -> u64) -> Option<u64> {
        let h = &self.hot;
        let d = h.dequeued.load(Ordering::Relaxed);
        h.dequeued.store(d + 1, Ordering::Relaxed);
        if d % SAMPLE_EVERY == 0 || d == h.next_sample.load(Ordering::Relaxed) {
            Some(self.sample_dequeue(d, depth()))
        } else {
            None
        }
    }

    #[cold]
    #[inline(never)]
    fn sample_dequeue(&self, d: u64, depth: u64) -> u64 {
        let c = &self.consumer;
        let now = self.now_ns();
        if d % SAMPLE_EVERY == 0 {
            self.hot.armed.store(true, Ordering::Relaxed);
        }
        let seen = self.hot.next_sample.load(Ordering::Acquire);
        let mut next = u64::MAX;
        for slot in &self.sender.slots {
            let seq = slot.seq.load(Ordering::Acquire);
            if seq == 0 || seq == u64::MAX {
                continue;
            }
            let s = seq - 1;
            // Take (or free a passed) sample; the sender may be taking it
            // back at the same time, so a CAS decides who records it.
            if s <= d
                && slot
                    .seq
                    .compare_exchange(seq, 0, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
                && s == d
            {
                let at = slot.at.load(Ordering::Relaxed);
                c.waiting.record(now.saturating_sub(at));
            } else if s > d {
                next = next.min(s);
            }
        }
        // Publish the next pending sample unless a sender lowered it
        // meanwhile (then its value stands: it is smaller or equal).
        let _ =
            self.hot
                .next_sample
                .compare_exchange(seen, next, Ordering::AcqRel, Ordering::Relaxed);
        if depth > c.depth_max.load(Ordering::Relaxed) {
            c.depth_max.store(depth, Ordering::Relaxed);
        }
        now
    }

    /// Records the service time of a timed message started at `start`.
    #[cold]
    #[inline(never)]
    pub(crate) fn after_handle(&self, start: u64) {
        self.consumer
            .service
            .record(self.now_ns().saturating_sub(start));
    }

    /// A send refused: mailbox full, or the actor stopped.
    #[cold]
    pub(crate) fn on_refused(&self, stopped: bool) {
        let c = if stopped {
            &self.sender.refused_stopped
        } else {
            &self.sender.refused_full
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// The actor stopped: `drained` messages were left in its mailbox and
    /// dropped; its mailbox evicted `evicted` in all.
    pub(crate) fn on_stop(&self, drained: u64, evicted: u64, panicked: bool) {
        self.drained.fetch_add(drained, Ordering::Relaxed);
        self.final_evicted.store(evicted, Ordering::Relaxed);
        if panicked {
            self.panics.fetch_add(1, Ordering::Relaxed);
        }
        self.stopped.store(true, Ordering::Release);
    }

    /// The figures now; `mailbox` is the live mailbox, `None` once the cell
    /// is gone.
    pub(crate) fn read(&self, mailbox: Option<&dyn MailboxProbe>) -> ActorReading {
        let c = &self.consumer;
        let handled = self.hot.dequeued.load(Ordering::Relaxed);
        let stopped = self.stopped.load(Ordering::Acquire);
        let (depth, evicted) = match mailbox {
            Some(m) if !stopped => (m.depth(), m.evicted()),
            _ => (0, self.final_evicted.load(Ordering::Relaxed)),
        };
        let drained = self.drained.load(Ordering::Relaxed);
        ActorReading {
            received: handled + depth + evicted + drained,
            handled,
            depth,
            depth_max: c.depth_max.load(Ordering::Relaxed).max(depth),
            dropped_overflow: self.sender.refused_full.load(Ordering::Relaxed) + evicted,
            dropped_stopped: self.sender.refused_stopped.load(Ordering::Relaxed) + drained,
            waiting: {
                let mut w = c.waiting.read();
                for (i, e) in self.sender.early.iter().enumerate() {
                    let n = e.load(Ordering::Relaxed);
                    w.buckets[i] += n;
                    w.count += n;
                    // Counted at half the bucket's bound (an upper bound itself).
                    w.sum_ns += n * BOUNDS_NS[i] / 2;
                }
                w
            },
            service: c.service.read(),
        }
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

/// A metered actor: its counters and a weak handle on its mailbox.
pub(crate) type MeteredActor = (Arc<ActorMetrics>, std::sync::Weak<dyn MailboxProbe>);

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
    pub(crate) actors: Mutex<Vec<MeteredActor>>,
    /// Channels whose counters the system exports.
    pub(crate) channels: Mutex<Vec<ChannelProbe>>,
    /// Per-actor counter samples for windowed rates, by actor id (read and
    /// written only when metrics are read).
    pub(crate) windows: Mutex<HashMap<u64, RateSamples>>,
}

impl MetricsSet {
    /// Enrols a new actor's metrics (once per spawn, never per message).
    pub(crate) fn add(&self, m: MeteredActor) {
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

    struct Fixed(u64);
    impl MailboxProbe for Fixed {
        fn depth(&self) -> u64 {
            self.0
        }
        fn evicted(&self) -> u64 {
            0
        }
    }

    #[test]
    fn waiting_sample_pairs_send_and_dequeue_numbers() {
        let m = ActorMetrics::new("T", 1, None, false);
        // Two messages waiting; the second's sender sampled it (a new
        // actor's sampler starts armed).
        m.on_send(|| 2);
        assert!(
            !m.hot.armed.load(Ordering::Relaxed),
            "one sample per arming"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
        let start = m.on_dequeue(|| 2).expect("dequeue 0 is timed");
        m.after_handle(start);
        assert_eq!(
            m.consumer.waiting.read().count,
            0,
            "message 0 was not sampled"
        );
        assert!(m.on_dequeue(|| 1).is_some(), "message 1 is the sampled one");
        let w = m.consumer.waiting.read();
        assert_eq!(w.count, 1);
        assert!(w.max_ns >= 2_000_000);
        let r = m.read(Some(&Fixed(0)));
        assert_eq!((r.received, r.handled, r.depth_max), (2, 2, 2));
        assert!(m.on_dequeue(|| 0).is_none());
    }

    #[test]
    fn short_type_names() {
        assert_eq!(short_type_name("a::b::Foo<c::Bar, u8>"), "Foo<Bar, u8>");
        assert_eq!(short_type_name("Foo"), "Foo");
    }
}
