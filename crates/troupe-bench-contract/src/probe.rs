//! What a sample measures besides time, read from `/proc` the same way for
//! every framework (the CAF and Erlang peers read the same files the same way):
//!
//! - memory: [`RssBaseline`] settles (and trims the C heap), reads `VmRSS` and resets the peak
//!   watermark (`/proc/self/clear_refs` 5); its [`RssBaseline::growth`] is
//!   `VmHWM` minus that baseline, the RSS growth of the measured phase;
//! - interference: [`CpuWindow`] reads the machine's busy CPU time
//!   (`/proc/stat`) and this process's (`/proc/self/stat`) at both ends of a
//!   sample; the difference is the CPU time other processes used meanwhile.
//!   A sample is *disturbed* when that exceeds [`DISTURBED_SHARE`] of the
//!   window's wall time (the window spans the whole sample, setup included).

use std::time::{Duration, Instant};

/// Other processes' CPU time, as a share of one sample's wall time, above
/// which the sample counts as disturbed.
pub const DISTURBED_SHARE: f64 = 0.10;

fn status_kb(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|line| {
        line.strip_prefix(field)?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()
    })
}

/// Peak resident memory of the process (VmHWM) in MB (10^6 bytes).
pub fn peak_rss_mb() -> f64 {
    peak_rss_bytes() as f64 / 1e6
}

/// Peak resident memory of the process (VmHWM) in bytes.
pub fn peak_rss_bytes() -> u64 {
    status_kb("VmHWM:").unwrap_or(0) * 1024
}

/// Current resident memory of the process (VmRSS) in bytes.
pub fn current_rss_bytes() -> u64 {
    status_kb("VmRSS:").unwrap_or(0) * 1024
}

/// The resident memory before a measured phase, with the peak reset to it.
#[derive(Debug, Clone, Copy)]
pub struct RssBaseline {
    bytes: u64,
}

impl RssBaseline {
    /// Waits briefly for memory freed by the previous sample to settle, gives
    /// the allocator's free memory back to the system (so that a sample after
    /// a warm-up grows as much as the first one), then takes `VmRSS` as the
    /// baseline and resets `VmHWM` to it.
    pub fn settle() -> RssBaseline {
        std::thread::sleep(Duration::from_millis(50));
        trim_heap();
        let _ = std::fs::write("/proc/self/clear_refs", "5");
        RssBaseline {
            bytes: current_rss_bytes(),
        }
    }

    /// The baseline in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The peak resident memory since [`RssBaseline::settle`], minus the baseline.
    pub fn growth(&self) -> u64 {
        peak_rss_bytes().saturating_sub(self.bytes)
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim_heap() {
    extern "C" {
        fn malloc_trim(pad: usize) -> i32;
    }
    // SAFETY: glibc's `malloc_trim` takes a plain integer, only walks the
    // allocator's own free lists under its locks and returns a status.
    unsafe {
        malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim_heap() {}

/// Busy CPU time of the whole machine and of this process, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CpuTicks {
    machine: u64,
    own: u64,
}

/// Clock ticks per second of `/proc` times (`sysconf(_SC_CLK_TCK)`, 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;

fn cpu_ticks() -> CpuTicks {
    let machine = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| {
            let line = s.lines().next()?.strip_prefix("cpu ")?.to_string();
            let v: Vec<u64> = line
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            // user nice system idle iowait irq softirq steal: busy = all but idle, iowait.
            Some(v.iter().take(8).sum::<u64>() - v.get(3)? - v.get(4)?)
        })
        .unwrap_or(0);
    CpuTicks {
        machine,
        own: own_ticks(),
    }
}

fn own_ticks() -> u64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // Fields after the parenthesised command name; utime and stime are 14 and 15.
            let rest = &s[s.rfind(')')? + 2..];
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
        })
        .unwrap_or(0)
}

/// One sample's window on the machine's CPU use.
#[derive(Debug, Clone, Copy)]
pub struct CpuWindow {
    start: CpuTicks,
    opened: Instant,
}

impl CpuWindow {
    /// Opens the window now.
    pub fn open() -> CpuWindow {
        CpuWindow {
            start: cpu_ticks(),
            opened: Instant::now(),
        }
    }

    /// Wall seconds since [`CpuWindow::open`] (the time a disturbance is judged against).
    pub fn wall_seconds(&self) -> f64 {
        self.opened.elapsed().as_secs_f64()
    }

    /// CPU seconds that processes other than this one used since [`CpuWindow::open`].
    pub fn other_cpu_seconds(&self) -> f64 {
        others(self.start, cpu_ticks())
    }
}

/// Other processes' CPU seconds between two readings.
fn others(start: CpuTicks, end: CpuTicks) -> f64 {
    let machine = end.machine.saturating_sub(start.machine);
    let own = end.own.saturating_sub(start.own);
    machine.saturating_sub(own) as f64 / TICKS_PER_SECOND
}

/// Whether a sample of `seconds` wall time, during which other processes used
/// `other_cpu_seconds`, counts as disturbed.
pub fn is_disturbed(seconds: f64, other_cpu_seconds: f64) -> bool {
    // Ticks are 10 ms: anything under two ticks is rounding, not load.
    other_cpu_seconds > 0.02 && other_cpu_seconds > DISTURBED_SHARE * seconds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_cpu_is_read_and_subtracted() {
        let before = own_ticks();
        let t0 = std::time::Instant::now();
        let mut x = 0u64;
        while t0.elapsed() < Duration::from_millis(300) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        // 300 ms of spinning is about 30 ticks of our own CPU time.
        assert!(own_ticks() >= before + 15, "own CPU time not read");
        let a = CpuTicks {
            machine: 1000,
            own: 10,
        };
        let b = CpuTicks {
            machine: 1300,
            own: 260,
        };
        assert!((others(a, b) - 0.5).abs() < 1e-9);
        assert_eq!(others(b, a), 0.0);
    }

    #[test]
    fn disturbed_threshold() {
        assert!(!is_disturbed(1.0, 0.01));
        assert!(!is_disturbed(1.0, 0.09));
        assert!(is_disturbed(1.0, 0.2));
        assert!(!is_disturbed(0.05, 0.01));
    }

    #[test]
    fn rss_growth_sees_a_new_allocation() {
        let base = RssBaseline::settle();
        let v = vec![1u8; 64 << 20];
        std::hint::black_box(&v);
        assert!(base.growth() >= 32 << 20, "growth {}", base.growth());
    }
}
