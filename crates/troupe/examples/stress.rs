//! The stress figure: `--messages` numbered messages (default 10^8) from
//! `--senders` threads (default 16) into one actor, which checks each
//! sender's sequence: 0 lost, 0 duplicated. Exits non-zero otherwise.
//!
//! Run: `cargo run --release -p troupe --example stress -- --messages 100000000 --senders 16 --threads 4`

#[path = "soak/mod.rs"]
mod soak;

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map_or(default, |v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name} takes a number"))
        })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let messages = arg(&args, "--messages", 100_000_000);
    let senders = arg(&args, "--senders", 16).max(1);
    let threads = arg(&args, "--threads", 4).max(1) as usize;
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
