//! The benchmark workload contract, shared by `troupe-bench` and the Rust peer
//! programs (`peer-actix`, `peer-xtra`, `peer-ractor`, `peer-kameo`), so that
//! both sides read the same parameters and measure the same way:
//!
//! - [`spec`]: every workload's parameters declared once (flag, default,
//!   quick value), resolved into checked [`spec::Args`];
//! - [`async_actors`]: the checks and figures of the async actor workloads
//!   (issue 27), keyed as Troupe's own;
//! - [`cli`]: a peer's command line (`<peer> <workload> [--threads N]
//!   [--samples K] [--warmup W] [params]`);
//! - [`output`]: the JSON lines, and the warm-up/sample rounds behind them;
//! - [`probe`]: memory (RSS growth from a settled baseline) and interference
//!   (other processes' CPU time during a sample), read from `/proc`;
//! - [`customers`]: the `reader_db` table and its one row type;
//! - [`savina`]: the Savina micro and concurrency workloads the peers run,
//!   their protocols, shared random numbers and checks;
//! - with the `tokio` feature, the tokio-based peers' bootstrap
//!   ([`tokio_main`]) and the end of a `ring` run ([`ring_finish`]).
//!
//! The workloads themselves are written in each framework's own crate, in its own idiom.

#![warn(missing_docs)]

pub mod async_actors;
pub mod cli;
pub mod customers;
pub mod output;
pub mod probe;
pub mod savina;
pub mod spec;

pub use cli::{Cli, Workload};
pub use output::{Params, Reporter};
pub use probe::{current_rss_bytes, peak_rss_bytes, peak_rss_mb, RssBaseline};
pub use spec::Args;

/// Reports a wrong result on stderr and exits with status 1.
pub fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("FAILED: {msg}");
    std::process::exit(1);
}

/// The seconds since `start`, as f64.
pub fn seconds_since(start: std::time::Instant) -> f64 {
    start.elapsed().as_secs_f64()
}

/// Splits `total` into `parts` shares that differ by at most one.
pub fn shares(total: usize, parts: usize) -> Vec<usize> {
    (0..parts)
        .map(|i| total / parts + usize::from(i < total % parts))
        .collect()
}

/// The sum `mailbox_performance`'s receiver must count: each of `senders`
/// sends the payloads `1..=messages`.
pub fn payload_sum(senders: usize, messages: usize) -> u64 {
    let m = messages as u64;
    senders as u64 * (m * (m + 1) / 2)
}

/// The end of a `pingpong` run: checks that the last ball counted `n ==
/// round_trips` and writes the figure (round-trips/s over `secs`, with `ns_per_op`).
pub fn pingpong_finish(rep: &Reporter, params: &Params, n: u64, round_trips: usize, secs: f64) {
    if n != round_trips as u64 {
        fail(format!("pingpong: {n} round trips, expected {round_trips}"));
    }
    rep.figure(
        "pingpong",
        params,
        secs,
        round_trips as f64 / secs,
        "round-trips/s",
        &[("ns_per_op", secs * 1e9 / round_trips as f64)],
    );
}

/// Runs `run` as the driver task on a multi-threaded tokio runtime with `--threads`
/// workers (not on the `block_on` thread), as the tokio-based peers do; fails the
/// process if the driver task panics.
#[cfg(feature = "tokio")]
pub fn tokio_main<F, Fut>(framework: &'static str, run: F)
where
    F: FnOnce(Cli, Reporter) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let cli = Cli::from_env();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cli.threads)
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(format!("cannot build the tokio runtime: {e}")));
    let rep = Reporter::new(framework, cli.threads);
    let driver = run(cli, rep);
    rt.block_on(async move {
        if let Err(e) = tokio::spawn(driver).await {
            fail(format!("driver task failed: {e}"));
        }
    });
}

/// The end of a `ring` run: waits for each ring's `(ring, node)` report, checks that
/// every token ended at the right node of its ring and each ring reported once, and
/// writes the figure (hops/s since `start`, with `creation_seconds`).
#[cfg(feature = "tokio")]
pub async fn ring_finish(
    rep: &Reporter,
    w: &Args,
    done_rx: &mut tokio::sync::mpsc::UnboundedReceiver<(usize, usize)>,
    (rings, actors, laps): (usize, usize, usize),
    start: std::time::Instant,
    creation: f64,
) {
    let mut finished = vec![false; rings];
    for _ in 0..rings {
        let (r, index) = done_rx
            .recv()
            .await
            .unwrap_or_else(|| fail("ring done channel closed"));
        if index != (actors * laps) % actors || finished[r] {
            fail(format!("ring {r}: token ended at node {index}"));
        }
        finished[r] = true;
    }
    let secs = seconds_since(start);
    let total = (rings * actors * laps) as f64;
    rep.figure(
        w.name(),
        &w.params(),
        secs,
        total / secs,
        "hops/s",
        &[("creation_seconds", creation)],
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up() {
        assert_eq!(shares(10, 3), vec![4, 3, 3]);
        assert_eq!(shares(10, 3).iter().sum::<usize>(), 10);
    }

    #[test]
    fn payload_sum_counts_each_sender() {
        assert_eq!(payload_sum(2, 3), 12);
        assert_eq!(payload_sum(1, 1), 1);
    }
}
