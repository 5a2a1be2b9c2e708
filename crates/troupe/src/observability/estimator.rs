//! Helpers for actors that measure a stream themselves:
//! [`ThroughputEstimator`] (the `fps_estimator`: count messages, report
//! messages per second once per window) and [`FrequencyCalculator`] (the
//! `frequency_calculator`: time how long a known number of messages takes).
//!
//! Both take the clock explicitly (`*_at(.., now)`) so they can be tested
//! deterministically; the plain methods use `Instant::now()`. Neither is
//! shared between threads: an actor owns one and feeds it from its handler.

use std::time::{Duration, Instant};

/// One window's estimate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Messages counted in the window.
    pub messages: u64,
    /// Length of the window in seconds.
    pub seconds: f64,
    /// `messages / seconds`.
    pub rate: f64,
}

/// Counts messages and estimates their rate once per `window`.
///
/// ```
/// use std::time::{Duration, Instant};
/// use troupe::observability::ThroughputEstimator;
/// let t = Instant::now();
/// let mut est = ThroughputEstimator::new("frames", Duration::from_secs(5));
/// est.start_at(t);
/// assert!(est.record_at(149, t + Duration::from_secs(4)).is_none());
/// let e = est.record_at(1, t + Duration::from_secs(5)).unwrap();
/// assert_eq!(e.messages, 150);
/// assert!((e.rate - 30.0).abs() < 1e-9);
/// assert_eq!(est.report_line(&e), "Estimated rate @frames=~30.00 msgs/s (150 messages in ~5.000s)");
/// ```
#[derive(Clone, Debug)]
pub struct ThroughputEstimator {
    name: String,
    window: Duration,
    window_start: Option<Instant>,
    count: u64,
    total: u64,
    estimates: Vec<Estimate>,
}

impl ThroughputEstimator {
    /// An estimator reporting every `window`; its first window starts at the
    /// first `record` (or at `start_at`).
    pub fn new(name: impl Into<String>, window: Duration) -> Self {
        ThroughputEstimator {
            name: name.into(),
            window,
            window_start: None,
            count: 0,
            total: 0,
            estimates: Vec::new(),
        }
    }

    /// Starts the first window at `now` (like `so_evt_start` in the seed).
    pub fn start_at(&mut self, now: Instant) {
        self.window_start = Some(now);
        self.count = 0;
    }

    /// Counts `n` messages seen now; returns the window's estimate when a
    /// window has just closed.
    pub fn record(&mut self, n: u64) -> Option<Estimate> {
        self.record_at(n, Instant::now())
    }

    /// Counts `n` messages seen at `now`.
    pub fn record_at(&mut self, n: u64, now: Instant) -> Option<Estimate> {
        let start = *self.window_start.get_or_insert(now);
        self.count += n;
        self.total += n;
        let elapsed = now.saturating_duration_since(start);
        if elapsed >= self.window && !elapsed.is_zero() {
            Some(self.close(now, elapsed))
        } else {
            None
        }
    }

    /// Closes the current (partial) window at `now`, if it counted anything.
    pub fn flush_at(&mut self, now: Instant) -> Option<Estimate> {
        let start = self.window_start?;
        let elapsed = now.saturating_duration_since(start);
        if self.count == 0 || elapsed.is_zero() {
            return None;
        }
        Some(self.close(now, elapsed))
    }

    fn close(&mut self, now: Instant, elapsed: Duration) -> Estimate {
        let seconds = elapsed.as_secs_f64();
        let e = Estimate {
            messages: self.count,
            seconds,
            rate: self.count as f64 / seconds,
        };
        self.estimates.push(e);
        self.window_start = Some(now);
        self.count = 0;
        e
    }

    /// Every closed window's estimate so far.
    pub fn estimates(&self) -> &[Estimate] {
        &self.estimates
    }

    /// Messages counted since the start.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The mean rate over the closed windows, weighted by their length.
    pub fn mean_rate(&self) -> Option<f64> {
        let secs: f64 = self.estimates.iter().map(|e| e.seconds).sum();
        let msgs: u64 = self.estimates.iter().map(|e| e.messages).sum();
        (secs > 0.0).then(|| msgs as f64 / secs)
    }

    /// The seed's log line: `Estimated rate @name=~R msgs/s (N messages in ~Ts)`.
    pub fn report_line(&self, e: &Estimate) -> String {
        format!(
            "Estimated rate @{}=~{:.2} msgs/s ({} messages in ~{:.3}s)",
            self.name, e.rate, e.messages, e.seconds
        )
    }
}

/// Measures the frequency of a stream by timing a known number of messages
/// (a frequency calculator): the first message starts the clock,
/// the next `expected` messages are counted, and when the last of them
/// arrives the frequency is `expected / elapsed`.
///
/// ```
/// use std::time::{Duration, Instant};
/// use troupe::observability::FrequencyCalculator;
/// let t = Instant::now();
/// let mut f = FrequencyCalculator::new(100);
/// assert_eq!(f.record_at(t), None); // starts the clock
/// for i in 1..100 {
///     assert_eq!(f.record_at(t + Duration::from_millis(i * 10)), None);
/// }
/// let hz = f.record_at(t + Duration::from_secs(1)).unwrap();
/// assert!((hz - 100.0).abs() < 1e-9);
/// assert_eq!(f.frequency(), Some(hz));
/// ```
#[derive(Clone, Debug)]
pub struct FrequencyCalculator {
    expected: u64,
    seen: u64,
    started: Option<Instant>,
    frequency: Option<f64>,
}

impl FrequencyCalculator {
    /// A calculator that times `expected` messages after the first (at
    /// least 1).
    pub fn new(expected: u64) -> Self {
        FrequencyCalculator {
            expected: expected.max(1),
            seen: 0,
            started: None,
            frequency: None,
        }
    }

    /// Counts one message now; returns the frequency (per second) when it
    /// was the last expected one.
    pub fn record(&mut self) -> Option<f64> {
        self.record_at(Instant::now())
    }

    /// Counts one message seen at `now`. Messages after the result are
    /// ignored.
    pub fn record_at(&mut self, now: Instant) -> Option<f64> {
        if self.frequency.is_some() {
            return None;
        }
        let Some(start) = self.started else {
            self.started = Some(now);
            return None;
        };
        self.seen += 1;
        if self.seen < self.expected {
            return None;
        }
        let secs = now.saturating_duration_since(start).as_secs_f64();
        let hz = if secs > 0.0 {
            self.expected as f64 / secs
        } else {
            f64::INFINITY
        };
        self.frequency = Some(hz);
        Some(hz)
    }

    /// The result, once `expected` messages have been timed.
    pub fn frequency(&self) -> Option<f64> {
        self.frequency
    }

    /// Messages counted after the first.
    pub fn counted(&self) -> u64 {
        self.seen
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn ms(base: Instant, n: u64) -> Instant {
        base + Duration::from_millis(n)
    }

    #[test]
    fn reports_once_per_window() {
        let t = Instant::now();
        let mut est = ThroughputEstimator::new("out", Duration::from_millis(100));
        est.start_at(t);
        // 10 messages every 10 ms: the window closes at 100 ms with 100 messages.
        let mut reports = Vec::new();
        for i in 1..=25 {
            if let Some(e) = est.record_at(10, ms(t, i * 10)) {
                reports.push(e);
            }
        }
        assert_eq!(reports.len(), 2);
        assert_eq!(reports[0].messages, 100);
        assert!((reports[0].seconds - 0.1).abs() < 1e-12);
        assert!((reports[0].rate - 1000.0).abs() < 1e-6);
        assert_eq!(reports[1].messages, 100);
        assert_eq!(est.total(), 250);
        // The 50 messages of the open window come out on flush.
        let last = est.flush_at(ms(t, 250)).expect("partial window");
        assert_eq!(last.messages, 50);
        assert!((last.rate - 1000.0).abs() < 1e-6);
        assert_eq!(est.estimates().len(), 3);
        assert!((est.mean_rate().unwrap() - 1000.0).abs() < 1e-6);
        assert!(est.flush_at(ms(t, 300)).is_none(), "nothing counted since");
    }

    #[test]
    fn first_record_starts_the_clock_and_rates_follow_the_load() {
        let t = Instant::now();
        let mut est = ThroughputEstimator::new("in", Duration::from_secs(1));
        assert!(est.record_at(1, t).is_none());
        assert!(est.record_at(499, ms(t, 500)).is_none());
        let e = est.record_at(500, ms(t, 1000)).unwrap();
        assert_eq!(e.messages, 1000);
        assert!((e.rate - 1000.0).abs() < 1e-9);
        // A slower second window.
        let e2 = est.record_at(200, ms(t, 2000)).unwrap();
        assert!((e2.rate - 200.0).abs() < 1e-9);
        assert!((est.mean_rate().unwrap() - 600.0).abs() < 1e-9);
        assert!(est
            .report_line(&e2)
            .starts_with("Estimated rate @in=~200.00 msgs/s"));
    }

    #[test]
    fn empty_estimator_has_no_rate() {
        let est = ThroughputEstimator::new("x", Duration::from_secs(5));
        assert!(est.mean_rate().is_none());
        assert!(est.estimates().is_empty());
    }

    #[test]
    fn frequency_is_counted_after_the_first_message() {
        let t = Instant::now();
        let mut f = FrequencyCalculator::new(4);
        assert!(f.record_at(t).is_none());
        for i in 1..4 {
            assert!(f.record_at(ms(t, i * 250)).is_none());
        }
        assert_eq!(f.counted(), 3);
        let hz = f.record_at(ms(t, 2000)).unwrap();
        assert!((hz - 2.0).abs() < 1e-9, "{hz}");
        assert!(
            f.record_at(ms(t, 3000)).is_none(),
            "done: later messages ignored"
        );
        assert_eq!(f.frequency(), Some(hz));
    }
}
