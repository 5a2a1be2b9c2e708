//! What a side costs and how a figure is written: CPU time and context
//! switches per event, the interference window of a sample
//! (`troupe_test_nats::cpu::Window`), the JSON lines.

use std::io::Write;

pub(crate) use troupe_test_nats::cpu::Window;

/// CPU time (ns) and context switches of this process's threads so far,
/// from `/proc/self/task/*/{schedstat,status}` ((0, 0) where unreadable):
/// what a side costs the process per event, apart from the wall clock
/// that a loaded machine swings.
pub(crate) fn usage() -> (u64, u64) {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return (0, 0);
    };
    let (mut ns, mut switches) = (0, 0);
    for task in tasks.flatten() {
        let path = task.path();
        if let Ok(s) = std::fs::read_to_string(path.join("schedstat")) {
            ns += s
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        }
        if let Ok(s) = std::fs::read_to_string(path.join("status")) {
            switches += s
                .lines()
                .filter(|l| l.contains("ctxt_switches:"))
                .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum::<u64>();
        }
    }
    (ns, switches)
}

/// The nats-server this process started, if it did (its CPU is not
/// interference).
pub(crate) static SERVER_PID: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();

pub(crate) fn server_pid() -> Option<u32> {
    SERVER_PID.get().copied().flatten()
}

/// What [`measured`] gives: seconds, process CPU µs per event, context
/// switches per event, and the interference fields of a sample line.
pub(crate) type Measured = (f64, f64, f64, String);

/// Runs `f` (which returns seconds) and measures it.
pub(crate) fn measured(events: u64, f: impl FnOnce() -> f64) -> Measured {
    let window = Window::open(server_pid());
    let (ns0, sw0) = usage();
    let seconds = f();
    let (ns1, sw1) = usage();
    let per = events as f64;
    (
        seconds,
        ns1.saturating_sub(ns0) as f64 / 1e3 / per,
        sw1.saturating_sub(sw0) as f64 / per,
        window.close(server_pid()),
    )
}

pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    v[v.len() / 2]
}

/// One JSON line (BENCHMARKS.md's fields, plus `label` and extras).
pub(crate) fn line(
    framework: &str,
    workload: &str,
    label: &str,
    params: String,
    (seconds, rate, unit): (f64, f64, &str),
    extra: String,
) -> String {
    format!(
        "{{\"framework\":\"{framework}\",\"workload\":\"{workload}\",\"label\":\"{label}\",\
         \"params\":{params},\"seconds\":{seconds:.6},\"rate\":{rate:.1},\"unit\":\"{unit}\",\
         \"rss_mb\":{rss:.1},\"threads\":{threads}{extra}}}",
        rss = rss_mb(),
        threads = std::thread::available_parallelism().map_or(1, |n| n.get())
    )
}

/// One sample line of `--json-rounds` (see the module docs): `events`
/// events in `seconds`; `extra` holds further `,"key":value` fields.
pub(crate) fn sample_line(
    (framework, workload, label): (&str, &str, &str),
    params: &str,
    round: u32,
    seconds: f64,
    events: u64,
    extra: String,
) -> String {
    format!(
        "{{\"framework\":\"{framework}\",\"workload\":\"{workload}\",\"label\":\"{label}\",\
         \"params\":{params},\"round\":{round},\"seconds\":{seconds:.6},\"ops\":{events},\
         \"unit\":\"events/s\",\"rss_mb\":{:.1}{extra}}}",
        rss_mb()
    )
}

/// Writes `lines` to `to` (`-`: stdout), one a line.
pub(crate) fn write_lines(to: &str, lines: &[String]) {
    if to == "-" {
        for l in lines {
            println!("{l}");
        }
        return;
    }
    let written = std::fs::File::create(to).and_then(|mut f| {
        for l in lines {
            writeln!(f, "{l}")?;
        }
        Ok(())
    });
    if let Err(e) = written {
        eprintln!("troupe-persistence-bench: cannot write {to}: {e}");
        std::process::exit(2);
    }
}

/// The peak resident memory of the process so far, in MiB.
pub(crate) fn rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}
