//! Chaos soak: random spawns, stops, kills, panics, tells, asks, bounded and
//! unbounded mailboxes, a restarting supervisor and registry churn, with an
//! invariant checker (see `soak/mod.rs`). Exits non-zero on a violation.
//!
//! Run: `cargo run --release -p troupe --example chaos -- --seconds 10 --threads 4`
//! (`--drivers N`, `--seed S` too).

#[path = "soak/mod.rs"]
mod soak;

use std::time::Duration;

/// The chaos soak: random actor churn under an invariant checker.
#[derive(clap::Parser)]
struct Args {
    /// How long to run, seconds.
    #[arg(long, default_value_t = 10.0, value_parser = non_negative)]
    seconds: f64,
    /// Worker threads.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..))]
    threads: u64,
    /// Threads driving the chaos.
    #[arg(long, default_value_t = 4)]
    drivers: usize,
    /// Seed of the random choices.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// A finite number, zero or more.
fn non_negative(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("{s:?} is not a number of 0 or more")),
    }
}

fn main() {
    let args = <Args as clap::Parser>::parse();
    let seconds = args.seconds;
    let cfg = soak::Config {
        duration: Duration::from_secs_f64(seconds),
        threads: args.threads as usize,
        drivers: args.drivers,
        seed: args.seed,
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
