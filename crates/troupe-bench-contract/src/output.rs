//! The JSON lines a peer program prints, one per figure and sample, and the
//! rounds (warm-up, then samples) they come from.
//!
//! Every line has the fields of BENCHMARKS.md (`framework`, `workload`,
//! `params`, `seconds`, `rate`, `unit`, `rss_mb`, `threads`) plus
//! `other_cpu_s`, the CPU time other processes used during the sample, and
//! `window_s`, the wall time of the window it was measured over (the round
//! so far, setup included; see [`crate::probe::CpuWindow`]). Lines of a warm-up round are not printed.

use crate::probe::{peak_rss_mb, CpuWindow};
use std::fmt::Write as _;
use std::sync::Mutex;

/// A JSON object of parameters, built in order.
#[derive(Debug, Clone, Default)]
pub struct Params(String);

impl Params {
    /// An empty object.
    pub fn new() -> Params {
        Params(String::new())
    }

    /// An object from its JSON text (`{...}`).
    pub fn from_json(json: &str) -> Params {
        let inner = json.trim().trim_start_matches('{').trim_end_matches('}');
        Params(inner.to_string())
    }

    /// Adds an integer field.
    pub fn int(self, key: &str, value: u64) -> Params {
        self.raw(key, &value.to_string())
    }

    /// Adds a string field.
    pub fn str(self, key: &str, value: &str) -> Params {
        self.raw(key, &json_string(value))
    }

    /// Adds a field whose value is already JSON.
    pub fn raw(mut self, key: &str, json: &str) -> Params {
        if !self.0.is_empty() {
            self.0.push(',');
        }
        let _ = write!(self.0, "{}:{}", json_string(key), json);
        self
    }

    /// The object as JSON text.
    pub fn to_json(&self) -> String {
        format!("{{{}}}", self.0)
    }
}

/// `s` as a JSON string literal.
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_number(x: f64) -> String {
    if x.is_finite() {
        // `Display` on f64 never uses exponent notation, so this is always valid JSON.
        format!("{x}")
    } else {
        "null".to_string()
    }
}

/// The round in progress: whether it is a warm-up, and its CPU window.
static ROUND: Mutex<Option<(bool, CpuWindow)>> = Mutex::new(None);

/// The rounds of a run: `warmup` unprinted ones, then `samples` printed ones.
/// Each round opens a fresh [`CpuWindow`] when it starts.
#[derive(Debug)]
pub struct Rounds {
    next: usize,
    warmup: usize,
    total: usize,
}

impl Rounds {
    /// `warmup` warm-up rounds followed by `samples` measured ones.
    pub fn new(warmup: usize, samples: usize) -> Rounds {
        Rounds {
            next: 0,
            warmup,
            total: warmup + samples,
        }
    }
}

impl Iterator for Rounds {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if self.next == self.total {
            *ROUND.lock().unwrap_or_else(|e| e.into_inner()) = None;
            return None;
        }
        let i = self.next;
        self.next += 1;
        *ROUND.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((i < self.warmup, CpuWindow::open()));
        Some(i)
    }
}

/// Writes the JSON lines of one framework on stdout.
#[derive(Debug, Clone, Copy)]
pub struct Reporter {
    framework: &'static str,
    threads: usize,
}

impl Reporter {
    /// A reporter for `framework` configured with `threads` worker threads.
    pub fn new(framework: &'static str, threads: usize) -> Reporter {
        Reporter { framework, threads }
    }

    /// Prints one figure: the measured phase took `seconds`, at `rate` `unit`;
    /// nothing during a warm-up round.
    pub fn figure(
        &self,
        workload: &str,
        params: &Params,
        seconds: f64,
        rate: f64,
        unit: &str,
        extras: &[(&str, f64)],
    ) {
        let round = *ROUND.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((true, _)) = round {
            return;
        }
        let (other, window) = round.map_or((0.0, 0.0), |(_, w)| {
            (w.other_cpu_seconds(), w.wall_seconds())
        });
        let mut line = format!(
            "{{\"framework\":{},\"workload\":{},\"params\":{},\"seconds\":{},\"rate\":{},\"unit\":{},\"rss_mb\":{},\"threads\":{},\"other_cpu_s\":{},\"window_s\":{}",
            json_string(self.framework),
            json_string(workload),
            params.to_json(),
            json_number(seconds),
            json_number(rate),
            json_string(unit),
            json_number(peak_rss_mb()),
            self.threads,
            json_number(other),
            json_number(window),
        );
        for (key, value) in extras {
            let _ = write!(line, ",{}:{}", json_string(key), json_number(*value));
        }
        line.push('}');
        println!("{line}");
    }

    /// Prints that this framework cannot express `workload`, and why.
    pub fn unsupported(&self, workload: &str, reason: &str) {
        println!(
            "{{\"framework\":{},\"workload\":{},\"unsupported\":{}}}",
            json_string(self.framework),
            json_string(workload),
            json_string(reason)
        );
    }

    /// Prints that this framework cannot express one operation of `workload`, and why.
    pub fn unsupported_op(&self, workload: &str, params: &Params, reason: &str) {
        println!(
            "{{\"framework\":{},\"workload\":{},\"params\":{},\"unsupported\":{}}}",
            json_string(self.framework),
            json_string(workload),
            params.to_json(),
            json_string(reason)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_round_trip_and_escape() {
        let p = Params::new().int("size", 10).str("op", "fi\"nd");
        assert_eq!(p.to_json(), "{\"size\":10,\"op\":\"fi\\\"nd\"}");
        assert_eq!(Params::from_json(&p.to_json()).to_json(), p.to_json());
        assert_eq!(Params::from_json("{}").int("a", 1).to_json(), "{\"a\":1}");
    }

    #[test]
    fn rounds_mark_warm_up_first() {
        let seen: Vec<(usize, bool)> = Rounds::new(2, 3)
            .map(|i| (i, ROUND.lock().unwrap().map(|r| r.0).unwrap()))
            .collect();
        assert_eq!(
            seen,
            vec![(0, true), (1, true), (2, false), (3, false), (4, false)]
        );
        assert!(ROUND.lock().unwrap().is_none());
    }
}
