//! Chaos soak: random spawns, stops, kills, panics, tells, asks, bounded and
//! unbounded mailboxes, a restarting supervisor and registry churn, with an
//! invariant checker (see `soak/mod.rs`). Exits non-zero on a violation.
//!
//! Run: `cargo run --release -p troupe --example chaos -- --seconds 10 --threads 4`
//! (`--drivers N`, `--seed S` too).

#[path = "soak/mod.rs"]
mod soak;

use std::time::Duration;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let num = |name: &str, default: f64| -> f64 {
        arg(&args, name).map_or(default, |v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name} takes a number"))
        })
    };
    let seconds = num("--seconds", 10.0);
    let threads = num("--threads", 4.0) as usize;
    let cfg = soak::Config {
        duration: Duration::from_secs_f64(seconds),
        threads: threads.max(1),
        drivers: num("--drivers", 4.0) as usize,
        seed: num("--seed", 1.0) as u64,
    };
    // Injected panics are expected: one line each would drown the report.
    std::panic::set_hook(Box::new(|_| {}));
    match soak::chaos(&cfg) {
        Ok(report) => println!("chaos ok ({seconds} s): {report}"),
        Err(e) => {
            eprintln!("chaos FAILED: {e}");
            std::process::exit(1);
        }
    }
}
