//! CPU time of this process and of a nats-server it started, beside the
//! whole machine's, for a benchmark's interference check: a *window*
//! opened before a sample and closed after it says how much CPU the
//! other processes of the machine used meanwhile (what troupe-bench's
//! suite uses to drop disturbed samples). Linux only (`/proc`); elsewhere
//! every reading is 0, and so is every window's "other" time.
//!
//! Used by the benchmark programs of troupe-sharding and
//! troupe-persistence (one copy for both: they are separate published
//! crates that both depend on this one).

use std::time::Instant;

/// The machine's CPU use over a sample, for the suite's interference
/// check: the busy CPU time of the whole machine (`/proc/stat`) less this
/// process's and the nats-server's (`/proc/<pid>/stat`), all in clock ticks
/// (100 a second) so that their rounding matches; 0 where unreadable.
pub struct Window {
    machine: u64,
    ours: u64,
    opened: Instant,
}

impl Window {
    /// Opens a window; `server` is the nats-server's pid, if this process
    /// started it.
    pub fn open(server: Option<u32>) -> Window {
        Window {
            machine: machine_ticks(),
            ours: process_ticks("self") + server.map_or(0, |p| process_ticks(&p.to_string())),
            opened: Instant::now(),
        }
    }

    /// `,"window_s":..,"other_cpu_s":..`: the window's wall seconds and the
    /// CPU seconds other processes used in it.
    pub fn close(&self, server: Option<u32>) -> String {
        let ours = process_ticks("self") + server.map_or(0, |p| process_ticks(&p.to_string()));
        let machine = machine_ticks().saturating_sub(self.machine);
        let other = machine.saturating_sub(ours.saturating_sub(self.ours));
        format!(
            ",\"window_s\":{:.6},\"other_cpu_s\":{:.2}",
            self.opened.elapsed().as_secs_f64(),
            other as f64 / 100.0
        )
    }
}

/// Busy clock ticks of the whole machine so far: all but idle and iowait.
pub fn machine_ticks() -> u64 {
    std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| {
            let v: Vec<u64> = s
                .lines()
                .next()?
                .strip_prefix("cpu ")?
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            let busy = v.iter().take(8).sum::<u64>();
            busy.checked_sub(v.get(3)? + v.get(4)?)
        })
        .unwrap_or(0)
}

/// User and system clock ticks of process `pid` (`self` for this one).
pub fn process_ticks(pid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            // After the parenthesised command name: utime and stime are
            // fields 14 and 15.
            let f: Vec<&str> = s.get(s.rfind(')')? + 2..)?.split_whitespace().collect();
            Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_gives_its_wall_time_and_others_cpu() {
        let w = Window::open(None);
        std::thread::sleep(std::time::Duration::from_millis(30));
        let fields = w.close(None);
        let value = |key: &str| -> f64 {
            let at = fields.find(key).expect(key) + key.len();
            fields[at..]
                .split(',')
                .next()
                .and_then(|v| v.parse().ok())
                .expect("a number")
        };
        assert!(fields.starts_with(",\"window_s\":"), "{fields}");
        assert!(value("\"window_s\":") >= 0.03, "{fields}");
        assert!(value("\"other_cpu_s\":") >= 0.0, "{fields}");
        if cfg!(target_os = "linux") {
            assert!(machine_ticks() > 0);
            assert!(machine_ticks() >= process_ticks("self"));
        }
    }
}
