//! Plain-Rust baselines measured in the same run as Troupe: two OS threads
//! ping-ponging over crossbeam channels, and a single-thread push/pop loop
//! over crossbeam's `SegQueue`.

use super::{params, verify, RunCfg};
use crate::stats::{Figure, Sample};
use serde_json::json;
use std::hint::black_box;
use std::time::Instant;

/// Two OS threads bounce an integer over two crossbeam channels.
pub fn thread_pingpong(cfg: &RunCfg, round_trips: u64) -> Result<Figure, String> {
    cfg.measure(
        "baseline",
        "pingpong",
        format!("crossbeam threads {round_trips}"),
        params(&[("round_trips", json!(round_trips))]),
        "round-trips/s",
        || {
            let (to_b, b_rx) = crossbeam_channel::bounded::<u64>(1);
            let (to_a, a_rx) = crossbeam_channel::bounded::<u64>(1);
            let b = std::thread::spawn(move || {
                while let Ok(n) = b_rx.recv() {
                    if to_a.send(n).is_err() {
                        break;
                    }
                }
            });
            let t0 = Instant::now();
            let mut last = 0;
            for i in 1..=round_trips {
                to_b.send(i).map_err(|e| e.to_string())?;
                last = a_rx.recv().map_err(|e| e.to_string())?;
            }
            let seconds = t0.elapsed().as_secs_f64();
            drop(to_b);
            let _ = b.join();
            verify(last == round_trips, || {
                "baseline pingpong lost a message".into()
            })?;
            Ok(Sample::new(seconds, round_trips as f64)
                .with("ns_per_op", seconds * 1e9 / round_trips as f64))
        },
    )
}

/// One thread pushes then pops `n` integers through a `SegQueue`, in rounds
/// of 1,000 (a queue's cost without any cross-thread traffic).
pub fn segqueue_push_pop(cfg: &RunCfg, n: u64) -> Result<Figure, String> {
    cfg.measure(
        "baseline",
        "mailbox_performance",
        format!("SegQueue push+pop {n}"),
        params(&[("messages", json!(n))]),
        "msgs/s",
        || {
            let q = crossbeam_queue::SegQueue::new();
            let t0 = Instant::now();
            let mut sum = 0u64;
            let mut i = 0u64;
            while i < n {
                let end = (i + 1000).min(n);
                for v in i..end {
                    q.push(black_box(v));
                }
                while let Some(v) = q.pop() {
                    sum += v;
                }
                i = end;
            }
            let seconds = t0.elapsed().as_secs_f64();
            verify(sum == n * (n - 1) / 2, || {
                "baseline SegQueue lost a value".into()
            })?;
            Ok(Sample::new(seconds, n as f64))
        },
    )
}
