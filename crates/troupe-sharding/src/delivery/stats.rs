//! What one producer did, counted: [`ProducerStats`], and the confirmation
//! latency as a log-linear histogram ([`Latency`]).
//!
//! Writers: the producer's driver task alone (one writer, relaxed
//! stores); `send` adds to `accepted`. Readers: [`Producer::stats`](crate::delivery::Producer::stats).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Sub-buckets per power of two: a bucket is at most 1/8 wide.
const SUB: u32 = 8;
const BUCKETS: usize = 64 * SUB as usize;

/// A snapshot of one producer's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProducerStats {
    /// Messages accepted by `send` (for a durable producer, stored).
    pub accepted: u64,
    /// Messages confirmed by their entity (handled, or stored by it).
    pub confirmed: u64,
    /// Of `confirmed`: answered `Stale` (confirmed in an older run, whose
    /// record the durable queue still held).
    pub stale: u64,
    /// Deliveries sent (asks; each carries up to the batch size).
    pub deliveries: u64,
    /// Messages sent again in a retried delivery.
    pub resent: u64,
    /// Deliveries that failed (timeout, refusal, store failure at the entity).
    pub failures: u64,
    /// Messages restored from the durable queue at start.
    pub restored: u64,
    /// Durable queue writes or deletes that failed.
    pub queue_errors: u64,
    /// Messages accepted and not yet confirmed.
    pub unconfirmed: u64,
    /// The time from acceptance to confirmation, over all confirmed
    /// messages.
    pub latency: Latency,
}

/// A histogram of durations in microseconds, log-linear (each power of
/// two split into 8 buckets, so a quantile is read to within 12.5%).
#[derive(Clone, PartialEq, Eq)]
pub struct Latency {
    counts: Vec<u64>,
}

impl Default for Latency {
    fn default() -> Self {
        Latency {
            counts: vec![0; BUCKETS],
        }
    }
}

impl std::fmt::Debug for Latency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Latency(n {}, p50 {:?}, p99 {:?})",
            self.count(),
            self.quantile(0.5),
            self.quantile(0.99)
        )
    }
}

fn bucket(us: u64) -> usize {
    if us < u64::from(SUB) {
        return us as usize;
    }
    let log = 63 - us.leading_zeros();
    let shift = log - SUB.trailing_zeros();
    let sub = (us >> shift) & u64::from(SUB - 1);
    ((log - SUB.trailing_zeros() + 1) * SUB) as usize + sub as usize
}

/// The largest value of bucket `i`.
fn upper(i: usize) -> u64 {
    let sub = SUB as usize;
    if i < sub {
        return i as u64;
    }
    let shift = (i / sub - 1) as u32;
    let base = (sub as u64 + (i % sub) as u64) << shift;
    base.saturating_add((1u64 << shift) - 1)
}

impl Latency {
    /// Values counted.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The `q`-quantile (0 to 1), to within a bucket (the bucket's upper
    /// bound); `None` if nothing was counted.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = ((n as f64 * q.clamp(0.0, 1.0)).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(Duration::from_micros(upper(i)));
            }
        }
        None
    }

    /// What was counted since `earlier` (a snapshot of the same counters).
    pub fn since(&self, earlier: &Latency) -> Latency {
        Latency {
            counts: self
                .counts
                .iter()
                .zip(&earlier.counts)
                .map(|(a, b)| a.saturating_sub(*b))
                .collect(),
        }
    }
}

/// The atomics behind [`ProducerStats`].
pub(crate) struct Counters {
    pub accepted: AtomicU64,
    pub confirmed: AtomicU64,
    pub stale: AtomicU64,
    pub deliveries: AtomicU64,
    pub resent: AtomicU64,
    pub failures: AtomicU64,
    pub restored: AtomicU64,
    pub queue_errors: AtomicU64,
    latency: Vec<AtomicU64>,
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            accepted: AtomicU64::new(0),
            confirmed: AtomicU64::new(0),
            stale: AtomicU64::new(0),
            deliveries: AtomicU64::new(0),
            resent: AtomicU64::new(0),
            failures: AtomicU64::new(0),
            restored: AtomicU64::new(0),
            queue_errors: AtomicU64::new(0),
            latency: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl Counters {
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn latency(&self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        if let Some(c) = self.latency.get(bucket(us)) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn snapshot(&self) -> ProducerStats {
        let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let accepted = l(&self.accepted);
        let confirmed = l(&self.confirmed);
        ProducerStats {
            accepted,
            confirmed,
            stale: l(&self.stale),
            deliveries: l(&self.deliveries),
            resent: l(&self.resent),
            failures: l(&self.failures),
            restored: l(&self.restored),
            queue_errors: l(&self.queue_errors),
            unconfirmed: (accepted + l(&self.restored)).saturating_sub(confirmed),
            latency: Latency {
                counts: self.latency.iter().map(l).collect(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_values_in_order_within_an_eighth() {
        let mut last = 0;
        for us in [
            0u64,
            1,
            7,
            8,
            9,
            15,
            16,
            100,
            1000,
            12_345,
            1 << 40,
            u64::MAX,
        ] {
            let b = bucket(us);
            assert!(b < BUCKETS, "{us}");
            assert!(b >= last, "{us}");
            last = b;
            assert!(upper(b) >= us, "{us}: upper {}", upper(b));
            assert!(upper(b) - us <= us / 8 + 1, "{us}: upper {}", upper(b));
        }
    }

    #[test]
    fn quantiles_read_the_counts() {
        let c = Counters::default();
        for us in 1..=100u64 {
            c.latency(Duration::from_micros(us * 10));
        }
        let s = c.snapshot().latency;
        assert_eq!(s.count(), 100);
        let p50 = s.quantile(0.5).expect("p50").as_micros() as u64;
        assert!((500..=570).contains(&p50), "{p50}");
        let p99 = s.quantile(0.99).expect("p99").as_micros() as u64;
        assert!((990..=1120).contains(&p99), "{p99}");
        assert_eq!(Latency::default().quantile(0.5), None);
    }
}
