//! The stress figure: `--messages` numbered messages (default 10^8) from
//! `--senders` threads (default 16) into one actor, which checks each
//! sender's sequence: 0 lost, 0 duplicated. Exits non-zero otherwise.
//!
//! Run: `cargo run --release -p troupe --example stress -- --messages 100000000 --senders 16 --threads 4`

#[path = "soak/mod.rs"]
mod soak;

use clap::Parser;

/// Numbered messages from many threads into one actor: none lost, none
/// duplicated.
#[derive(Parser)]
struct Args {
    /// Messages in all (split evenly among the senders).
    #[arg(long, default_value_t = 100_000_000)]
    messages: u64,
    /// Sending threads.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..))]
    senders: u64,
    /// Worker threads.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..))]
    threads: u64,
}

fn main() {
    let Args {
        messages,
        senders,
        threads,
    } = Args::parse();
    let threads = threads as usize;
    let per = messages / senders;
    let (received, lost, duplicated, secs) = soak::stress(senders as usize, per, threads);
    println!(
        "stress: {} messages from {senders} threads in {secs:.2} s ({:.1} M msg/s): \
         {received} received, {lost} lost, {duplicated} duplicated",
        per * senders,
        (per * senders) as f64 / secs / 1e6
    );
    if lost != 0 || duplicated != 0 || received != per * senders {
        std::process::exit(1);
    }
}
