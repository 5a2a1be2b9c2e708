//! Per-actor counters and timings (a queueing model of each actor): what the
//! cell records when an actor is spawned with metrics on, and nothing when
//! it is not.
//!
//! The cell holds a [`MetricsRef`]: a word that is 0 when metrics are off,
//! so the hot path gains one predictable branch and no atomic, no clock
//! read; when on, a pointer to the actor's `ActorMetrics` with two flag
//! bits (`ARMED`, `PENDING`) that the per-message checks read, so that a
//! message touches no metrics memory unless it is sampled. The system's [`MetricsSet`] holds every metered
//! actor's `Arc`, with a weak handle on its mailbox, so the observability
//! layer (`observability/`) can read them.
//!
//! With metrics on, an unsampled message costs no atomic read-modify-write,
//! no clock read and no load outside the cell and its mailbox:
//! * **handled** is the mailbox's own count of pops (the unbounded
//!   mailbox's head index, a consumer-written counter in the bounded one),
//!   less what the stop drained;
//! * **arrivals** are derived when read, as `popped + mailbox length +
//!   evicted` (the mailbox knows all three). The reader keeps the figure
//!   monotonic (its loads race with the consumer).
//! * refused sends (`Full`, `Stopped`), panics, restarts: rare paths.
//!
//! Timings sample about one message in [`SAMPLE_EVERY`] (1,024; the
//! counts stay exact). A sampled message costs a few clock reads
//! (`Instant::now`, ~20 ns each) and a handful of atomic operations, a few
//! hundred nanoseconds against a hop of ~20 ns: at 1 in 256 that was ~15%
//! on the ring workload (`metrics_overhead --sample-every`,
//! `bench/results/2026-11-26-short-lock/`), at 1 in 1,024 it is a few
//! percent. An actor handling 1,000 messages a second still gets a timing
//! sample about every second; `SystemBuilder::metrics_sample_every` trades
//! the other way:
//! A dequeue is *periodic* when `(d + phase) % period == 0`, `d` its
//! number, `period` the sampling period (default `SAMPLE_EVERY`, carried in
//! the metrics word's spare bits) and `phase` a hash of the cell's address,
//! so that actors with few messages are not all timed at their first one.
//! * **service time**: every periodic dequeued message (and each
//!   message whose wait is sampled), the task holder reads the clock before
//!   and after `handle`.
//! * **waiting time**: every periodic dequeue the task holder sets
//!   the `ARMED` flag in the cell's metrics word (see [`MetricsRef`]); each
//!   send reads that word anyway, and the first sender to find the flag set
//!   clears it and samples: it reads the clock, computes its message's
//!   arrival number `s = popped + mailbox length - 1`, publishes `(s, t)` in
//!   slot `s % SLOTS` if that slot is free (8 slots), lowers `next_sample`
//!   to `s` (a CAS loop) and sets the `PENDING` flag. While `PENDING` is set
//!   the task holder compares each dequeue number `d` with `next_sample`; on
//!   a match (and at every periodic dequeue) it scans the slots,
//!   records `now - t` for the sample of `d`, frees those it has passed,
//!   sets `next_sample` to the smallest still pending and clears `PENDING`
//!   when none is. The arrival number is exact unless another sender or the
//!   consumer moves the queue between the push and the two loads; such a
//!   sample is attributed to a neighbouring message (an error of that
//!   race's width). A sample can be published after the consumer has passed
//!   its message (dequeued before its sender finished sampling): the sender
//!   notices (the pop count passed `s`), takes the sample back with a CAS
//!   (the consumer takes samples with a CAS too, so each is recorded once)
//!   and records the time since it sent as an upper bound, in the buckets
//!   up to 10 µs (a longer bound, e.g. a preempted sender, is discarded).
//!   Samples are taken only while messages are sent: a backlog drained
//!   after its senders stopped yields no waiting samples.
//! * **mailbox depth**: the mailbox's length, read when the metrics are read;
//!   `depth_max` is the largest length seen at sampled dequeues or reads
//!   (so a burst between two samples may be missed).
//!
//! Invariants: only the task holder writes the histograms, `depth_max` and
//! raises `next_sample`; senders write only the slots, the refusal
//! counters (on a cache line of their own) and lower `next_sample`; the
//! flags change by atomic `or`/`and` only. Readers see each counter
//! monotonic, not a consistent cut across counters.

use crossbeam_utils::CachePadded;
use parking_lot::Mutex;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// By default one message in this many has its waiting and service times
/// measured (`SystemBuilder::metrics_sample_every` changes it per system).
pub const SAMPLE_EVERY: u64 = 1024;

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

/// What only the task holder writes (and `next_sample`, which senders
/// lower).
struct ConsumerSide {
    /// Arrival number of the smallest pending waiting sample, `u64::MAX`
    /// if none.
    next_sample: AtomicU64,
    depth_max: AtomicU64,
    waiting: Histogram,
    service: Histogram,
    /// The clock reading before a sampled handler that suspended (an async
    /// actor), 0 if none: its service time is recorded when it completes,
    /// so that it covers the awaits. Written by the task holder only.
    suspended_start: AtomicU64,
}

/// The cell's pointer to its actor's metrics, with two flags in its low
/// bits so that the per-message checks read only this word, which senders
/// and the task holder load anyway: 0 when metrics are off.
///
/// * `ARMED`: the next sender samples its send (set by the task holder every
///   `SAMPLE_EVERY` dequeues, cleared by the sender that takes it);
/// * `PENDING`: a waiting sample is published and not yet taken (set by the
///   sender after publishing, cleared by the task holder when none is left).
pub(crate) struct MetricsRef(AtomicUsize);

pub(crate) const ARMED: usize = 1;
pub(crate) const PENDING: usize = 2;
/// Trace every handled message (`SpawnOptions::trace_messages`).
pub(crate) const TRACE: usize = 4;
/// Bits 3..7: log2 of the sampling period, so the per-message test needs
/// nothing but this word and the pop count.
const SHIFT_AT: u32 = 3;
const SHIFT_BITS: usize = 0b1111 << SHIFT_AT;
/// Everything that is not the pointer (`ActorMetrics` is aligned to 128).
const TAGS: usize = ARMED | PENDING | TRACE | SHIFT_BITS;

/// The sampling mask encoded in `flags` (from [`MetricsRef::get`]):
/// message `d` is timed when `d & mask == 0`.
#[inline]
pub(crate) fn sample_mask(flags: usize) -> u64 {
    (1u64 << ((flags & SHIFT_BITS) >> SHIFT_AT)) - 1
}

impl MetricsRef {
    /// Metrics off.
    pub(crate) fn off() -> Self {
        MetricsRef(AtomicUsize::new(0))
    }

    /// Metrics on, recorded in `m` (not armed: the first periodic dequeue
    /// arms the sampler);
    /// `trace`: a span per handled message.
    /// `sample_mask + 1` is the sampling period (a power of two, at most
    /// 2^15).
    pub(crate) fn new(m: Arc<ActorMetrics>, trace: bool, sample_mask: u64) -> Self {
        let ptr = Arc::into_raw(m) as usize;
        debug_assert_eq!(ptr & TAGS, 0, "ActorMetrics is aligned to 128");
        let trace = if trace { TRACE } else { 0 };
        let shift = ((sample_mask + 1).trailing_zeros() as usize).min(15) << SHIFT_AT;
        MetricsRef(AtomicUsize::new(ptr | trace | shift))
    }

    /// Whether a sender should sample its send: one load and one bit test,
    /// the whole cost of metrics on the send path when they are off (the
    /// bit is never set then).
    #[inline(always)]
    pub(crate) fn armed(&self) -> bool {
        self.0.load(Ordering::Relaxed) & ARMED != 0
    }

    /// The flag bits alone (metrics on).
    #[inline(always)]
    pub(crate) fn flags(&self) -> usize {
        self.0.load(Ordering::Relaxed) & TAGS
    }

    /// The metrics and the flags, if on.
    #[inline]
    pub(crate) fn get(&self) -> Option<(&ActorMetrics, usize)> {
        let w = self.0.load(Ordering::Relaxed);
        let ptr = (w & !TAGS) as *const ActorMetrics;
        if ptr.is_null() {
            return None;
        }
        // SAFETY: a non-null pointer came from `Arc::into_raw` in `new` and
        // is released only in `drop`, which needs `&mut self`; so the
        // `ActorMetrics` lives at least as long as this borrow.
        Some((unsafe { &*ptr }, w & TAGS))
    }

    /// A strong reference to the metrics, if on.
    pub(crate) fn arc(&self) -> Option<Arc<ActorMetrics>> {
        let (m, _) = self.get()?;
        let ptr: *const ActorMetrics = m;
        // SAFETY: `ptr` came from `Arc::into_raw` and our reference keeps
        // the count at least one (see `get`).
        unsafe {
            Arc::increment_strong_count(ptr);
            Some(Arc::from_raw(ptr))
        }
    }

    #[inline]
    fn set(&self, tag: usize) {
        self.0.fetch_or(tag, Ordering::AcqRel);
    }

    /// Clears `tag`; whether it was set.
    #[inline]
    fn take(&self, tag: usize) -> bool {
        self.0.fetch_and(!tag, Ordering::AcqRel) & tag != 0
    }
}

impl Drop for MetricsRef {
    fn drop(&mut self) {
        let ptr = (*self.0.get_mut() & !TAGS) as *const ActorMetrics;
        if !ptr.is_null() {
            // SAFETY: the pointer came from `Arc::into_raw` in `new`; this is
            // its one release.
            drop(unsafe { Arc::from_raw(ptr) });
        }
    }
}

/// An actor's counters; see the module docs for who writes what.
pub(crate) struct ActorMetrics {
    /// `std::any::type_name` of the actor, for labels and aggregation.
    pub(crate) type_name: &'static str,
    pub(crate) id: u64,
    pub(crate) name: Option<Arc<String>>,
    pub(crate) spawned_at: Instant,
    consumer: CachePadded<ConsumerSide>,
    sender: CachePadded<SenderSide>,
    /// Figures copied at the stop (the mailbox goes with the cell).
    final_popped: AtomicU64,
    final_evicted: AtomicU64,
    /// Messages left in the mailbox and dropped at the stop.
    drained: AtomicU64,
    pub(crate) panics: AtomicU64,
    pub(crate) restarts: AtomicU64,
    pub(crate) stopped: AtomicBool,
}

/// The actor's mailbox as the metrics see it (implemented by the cell).
pub(crate) trait MailboxProbe: Send + Sync {
    /// Messages popped so far.
    fn popped(&self) -> u64;
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
    pub(crate) fn new(type_name: &'static str, id: u64, name: Option<Arc<String>>) -> Self {
        ActorMetrics {
            type_name,
            id,
            name,
            spawned_at: Instant::now(),
            consumer: CachePadded::new(ConsumerSide {
                next_sample: AtomicU64::new(u64::MAX),
                depth_max: AtomicU64::new(0),
                suspended_start: AtomicU64::new(0),
                waiting: Histogram::new(),
                service: Histogram::new(),
            }),
            sender: CachePadded::default(),
            final_popped: AtomicU64::new(0),
            final_evicted: AtomicU64::new(0),
            drained: AtomicU64::new(0),
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

    /// A sender's accepted push, when `flags` (from [`MetricsRef::get`])
    /// say the sampler is armed; `probe` reads the mailbox.
    #[cold]
    #[inline(never)]
    pub(crate) fn sample_send(&self, cell: &MetricsRef, probe: &dyn MailboxProbe) {
        if !cell.take(ARMED) {
            return; // another sender took this sample
        }
        let sent = self.now_ns();
        // Popped first: a pop between the two loads then makes `s` smaller,
        // never counts a message twice.
        let popped = probe.popped();
        let Some(s) = (popped + probe.depth()).checked_sub(1) else {
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
        let next = &self.consumer.next_sample;
        let mut cur = next.load(Ordering::Relaxed);
        while s < cur {
            match next.compare_exchange_weak(cur, s, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => break,
                Err(c) => cur = c,
            }
        }
        cell.set(PENDING);
        // Was the message dequeued before we published? Then the task holder
        // missed the slot, and the message waited less than the time since
        // `sent`: take the sample back and record that bound, if short.
        if probe.popped() > s
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

    /// The task holder took message number `d` out of the mailbox and the
    /// flags say a sample may be due, or `periodic`: `d` is a multiple of
    /// the sampling period. Returns a start time if its handler is to be timed
    /// (then call [`after_handle`](Self::after_handle)).
    #[cold]
    #[inline(never)]
    pub(crate) fn sample_dequeue(
        &self,
        cell: &MetricsRef,
        d: u64,
        periodic: bool,
        depth: u64,
    ) -> Option<u64> {
        let c = &self.consumer;
        let seen = c.next_sample.load(Ordering::Acquire);
        if !periodic && d != seen {
            if seen < d {
                // A sample we passed before its notice arrived: free it.
                self.scan(cell, d, 0, seen);
            }
            return None;
        }
        let now = self.now_ns();
        if periodic {
            cell.set(ARMED);
        }
        self.scan(cell, d, now, seen);
        if depth > c.depth_max.load(Ordering::Relaxed) {
            c.depth_max.store(depth, Ordering::Relaxed);
        }
        Some(now)
    }

    /// Takes the sample of `d` (recording `now - t`), frees passed ones,
    /// and publishes the next pending one.
    fn scan(&self, cell: &MetricsRef, d: u64, now: u64, seen: u64) {
        let c = &self.consumer;
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
                && now != 0
            {
                let at = slot.at.load(Ordering::Relaxed);
                c.waiting.record(now.saturating_sub(at));
            } else if s > d {
                next = next.min(s);
            }
        }
        // Publish the next pending sample unless a sender lowered it
        // meanwhile (then its value stands: it is smaller or equal).
        let _ = c
            .next_sample
            .compare_exchange(seen, next, Ordering::AcqRel, Ordering::Relaxed);
        if next == u64::MAX {
            cell.take(PENDING);
            // A sender may have published between our scan and the clear:
            // it lowered `next_sample` before setting the flag, so look.
            if c.next_sample.load(Ordering::Acquire) != u64::MAX {
                cell.set(PENDING);
            }
        }
    }

    /// Records the service time of a timed message started at `start`.
    #[cold]
    #[inline(never)]
    /// A sampled handler suspended: its service time is taken when it
    /// completes (`after_resume`).
    pub(crate) fn suspend_handle(&self, start: u64) {
        self.consumer
            .suspended_start
            .store(start.max(1), Ordering::Relaxed);
    }

    /// A suspended handler completed: records its service time, awaits
    /// included, if it was sampled.
    pub(crate) fn after_resume(&self) {
        let start = self.consumer.suspended_start.swap(0, Ordering::Relaxed);
        if start != 0 {
            self.after_handle(start);
        }
    }

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
    /// dropped (popped, not handled); `mailbox` as it is now.
    pub(crate) fn on_stop(&self, drained: u64, mailbox: &dyn MailboxProbe, panicked: bool) {
        self.drained.fetch_add(drained, Ordering::Relaxed);
        self.final_popped.store(mailbox.popped(), Ordering::Relaxed);
        self.final_evicted
            .store(mailbox.evicted(), Ordering::Relaxed);
        if panicked {
            self.panics.fetch_add(1, Ordering::Relaxed);
        }
        self.stopped.store(true, Ordering::Release);
    }

    /// The figures now; `mailbox` is the live mailbox, `None` once the cell
    /// is gone.
    pub(crate) fn read(&self, mailbox: Option<&dyn MailboxProbe>) -> ActorReading {
        let c = &self.consumer;
        let stopped = self.stopped.load(Ordering::Acquire);
        let drained = self.drained.load(Ordering::Relaxed);
        // Popped first, then the length: a pop in between is then missed,
        // never counted twice (the reader keeps arrivals monotonic).
        let (popped, depth, evicted) = match mailbox {
            Some(m) if !stopped => (m.popped(), m.depth(), m.evicted()),
            _ => (
                self.final_popped.load(Ordering::Relaxed),
                0,
                self.final_evicted.load(Ordering::Relaxed),
            ),
        };
        // The drain pops what it drops: those were not handled.
        let handled = popped.saturating_sub(drained);
        ActorReading {
            received: popped + depth + evicted,
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
pub(crate) struct MetricsSet {
    /// Metrics on for every actor unless its options say otherwise.
    pub(crate) default_on: bool,
    /// Sampling period minus one (a power of two minus one): message `d` is
    /// timed when `d & sample_mask == 0`.
    pub(crate) sample_mask: u64,
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

    /// A mailbox with `popped` taken and `depth` waiting.
    struct Fixed(std::cell::Cell<(u64, u64)>);
    // SAFETY-free test double: used from one thread only.
    unsafe impl Sync for Fixed {}
    impl MailboxProbe for Fixed {
        fn popped(&self) -> u64 {
            self.0.get().0
        }
        fn depth(&self) -> u64 {
            self.0.get().1
        }
        fn evicted(&self) -> u64 {
            0
        }
    }

    #[test]
    fn waiting_sample_pairs_send_and_dequeue_numbers() {
        let m = Arc::new(ActorMetrics::new("T", 1, None));
        let cell = MetricsRef::new(m.clone(), false, 15);
        let mb = Fixed(std::cell::Cell::new((0, 2)));
        // Two messages waiting; the second's sender sampled it (armed by
        // an earlier periodic dequeue).
        assert_eq!(cell.get().unwrap().1 & !SHIFT_BITS, 0, "not armed at first");
        cell.set(ARMED);
        assert_eq!(sample_mask(cell.get().unwrap().1), 15);
        m.sample_send(&cell, &mb);
        assert_eq!(
            cell.get().unwrap().1 & !SHIFT_BITS,
            PENDING,
            "disarmed, sample pending"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
        mb.0.set((1, 1));
        let start = m
            .sample_dequeue(&cell, 0, true, 1)
            .expect("dequeue 0 is timed");
        m.after_handle(start);
        assert_eq!(
            m.consumer.waiting.read().count,
            0,
            "message 0 was not sampled"
        );
        assert_eq!(cell.get().unwrap().1 & !SHIFT_BITS, ARMED | PENDING);
        mb.0.set((2, 0));
        assert!(
            m.sample_dequeue(&cell, 1, false, 0).is_some(),
            "message 1 is the sampled one"
        );
        let w = m.consumer.waiting.read();
        assert_eq!(w.count, 1);
        assert!(w.max_ns >= 2_000_000);
        assert_eq!(
            cell.get().unwrap().1 & !SHIFT_BITS,
            ARMED,
            "nothing pending"
        );
        let r = m.read(Some(&mb));
        assert_eq!((r.received, r.handled, r.depth_max), (2, 2, 1));
        assert!(m.sample_dequeue(&cell, 2, false, 0).is_none());
        drop(cell);
        assert_eq!(Arc::strong_count(&m), 1, "the cell's reference is released");
    }

    #[test]
    fn short_type_names() {
        assert_eq!(short_type_name("a::b::Foo<c::Bar, u8>"), "Foo<Bar, u8>");
        assert_eq!(short_type_name("Foo"), "Foo");
    }
}
