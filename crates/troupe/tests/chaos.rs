//! The chaos soak and the stress count, bounded for CI (the examples
//! `chaos` and `stress` run them longer). See `examples/soak/mod.rs`.

#[path = "../examples/soak/mod.rs"]
mod soak;

use std::time::Duration;

/// Fails the test with `msg` on stderr first: the tests silence the panic
/// hook (the soak panics actors on purpose), which would swallow it.
fn fail(msg: String) -> ! {
    eprintln!("{msg}");
    panic!("{msg}")
}

#[test]
fn chaos_soak_keeps_every_invariant() {
    std::panic::set_hook(Box::new(|_| {}));
    for (threads, seed) in [(1, 11), (2, 12), (4, 13)] {
        let cfg = soak::Config {
            duration: Duration::from_millis(1500),
            threads,
            drivers: 4,
            seed,
        };
        match soak::chaos(&cfg) {
            Ok(r) => eprintln!("chaos ok: {r}"),
            Err(e) => fail(format!("chaos (threads {threads}, seed {seed}): {e}")),
        }
    }
}

/// The sanitizer soak CI runs (issue 24): 16 workers and 16 drivers on
/// the 2-core machine, for `TROUPE_SOAK_SECONDS` (default 2) under the
/// seeds `TROUPE_SOAK_SEEDS` (default "1"). Two cores hide races that 16
/// oversubscribed threads under ThreadSanitizer or AddressSanitizer show.
#[test]
fn chaos_soak_sixteen_threads_sixteen_drivers() {
    std::panic::set_hook(Box::new(|_| {}));
    let seconds: u64 = std::env::var("TROUPE_SOAK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let seeds = std::env::var("TROUPE_SOAK_SEEDS").unwrap_or_else(|_| "1".into());
    for seed in seeds.split(',').filter_map(|s| s.trim().parse().ok()) {
        let cfg = soak::Config {
            duration: Duration::from_secs(seconds),
            threads: 16,
            drivers: 16,
            seed,
        };
        match soak::chaos(&cfg) {
            Ok(r) => eprintln!("chaos 16x16 ok: {r}"),
            Err(e) => fail(format!("chaos (16 threads, 16 drivers, seed {seed}): {e}")),
        }
    }
}

#[test]
fn stress_16_senders_none_lost_none_duplicated() {
    let (received, lost, duplicated, _) = soak::stress(16, 20_000, 2);
    assert_eq!((received, lost, duplicated), (320_000, 0, 0));
}
