//! The sample lines of `--json` and the interference window each sample
//! carries (see the program's docs).

use std::time::Instant;

/// One sample line of `--json` (see the module docs): `ops` operations in
/// `seconds`; `extra` holds further `,"key":value` fields.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sample_line(
    framework: &str,
    workload: &str,
    label: &str,
    params: &str,
    round: Option<usize>,
    (seconds, ops, unit): (f64, u64, &str),
    extra: &str,
) -> String {
    let round = round.map_or(String::new(), |r| format!(",\"round\":{r}"));
    format!(
        "{{\"framework\":\"{framework}\",\"workload\":\"{workload}\",\"label\":\"{label}\",\
         \"params\":{{{params}}}{round},\"seconds\":{seconds:.6},\"ops\":{ops},\"unit\":\"{unit}\"{extra}}}"
    )
}

/// The machine's CPU use over a sample, for the suite's interference
/// check: the busy CPU time of the whole machine (`/proc/stat`) less this
/// process's and the nats-server's (`/proc/<pid>/stat`), all in clock ticks
/// (100 a second) so that their rounding matches; 0 where unreadable.
pub(crate) struct Window {
    machine: u64,
    ours: u64,
    opened: Instant,
}

impl Window {
    /// Opens a window; `server` is the nats-server's pid, if this process
    /// started it.
    pub(crate) fn open(server: Option<u32>) -> Window {
        Window {
            machine: machine_ticks(),
            ours: process_ticks("self") + server.map_or(0, |p| process_ticks(&p.to_string())),
            opened: Instant::now(),
        }
    }

    /// `,"window_s":..,"other_cpu_s":..`: the window's wall seconds and the
    /// CPU seconds other processes used in it.
    pub(crate) fn close(&self, server: Option<u32>) -> String {
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
pub(crate) fn machine_ticks() -> u64 {
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
pub(crate) fn process_ticks(pid: &str) -> u64 {
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
