//! The chaos soak and the stress count, bounded for CI (the examples
//! `chaos` and `stress` run them longer). See `examples/soak/mod.rs`.

#[path = "../examples/soak/mod.rs"]
mod soak;

use std::time::Duration;

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
            Err(e) => panic!("chaos (threads {threads}, seed {seed}): {e}"),
        }
    }
}

#[test]
fn stress_16_senders_none_lost_none_duplicated() {
    let (received, lost, duplicated, _) = soak::stress(16, 20_000, 2);
    assert_eq!((received, lost, duplicated), (320_000, 0, 0));
}
