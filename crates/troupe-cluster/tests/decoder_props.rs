//! Every payload decoder of the cluster against random and mutated bytes:
//! heartbeats (and goodbyes), stop events, control requests and replies,
//! registry values, and the cluster key's seal. No input panics; a valid
//! payload decodes back to itself; one byte more is refused; a mutated seal
//! never opens. Bounded: 40,000 cases per decoder (a few seconds in debug).

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use troupe_cluster::wire::{decode, Ctl, CtlReply, Heartbeat, RegEntry, StopEvent, WireReason};
use troupe_remote::auth::ClusterKey;

const CASES: u32 = 40_000;

fn reason(seed: u64) -> WireReason {
    let s = "r".repeat((seed % 9) as usize);
    match seed % 6 {
        0 => WireReason::Normal,
        1 => WireReason::Panicked(s),
        2 => WireReason::Killed,
        3 => WireReason::Shutdown,
        4 => WireReason::Failed(s),
        _ => WireReason::Other(s),
    }
}

/// A valid payload of each decoder, from a seed.
fn valid(which: u8, seed: u64) -> Vec<u8> {
    let name = format!("n{}", seed % 1000);
    let enc = |v: &dyn erased::Enc| v.enc();
    match which {
        0 => enc(&Heartbeat {
            node: name,
            incarnation: seed,
            interval_ms: seed as u32,
        }),
        1 => enc(&StopEvent {
            actor: name,
            reason: reason(seed),
        }),
        2 => enc(&if seed % 2 == 0 {
            Ctl::Watch { actor: name }
        } else {
            Ctl::Kill {
                actor: name,
                reason: reason(seed),
            }
        }),
        3 => enc(&match seed % 4 {
            0 => CtlReply::Alive,
            1 => CtlReply::Stopped(reason(seed)),
            2 => CtlReply::Unknown,
            _ => CtlReply::BadRequest,
        }),
        _ => enc(&RegEntry {
            node: name.clone(),
            actor: name,
            type_id: seed.rotate_left(7),
            incarnation: seed,
        }),
    }
}

mod erased {
    pub trait Enc {
        fn enc(&self) -> Vec<u8>;
    }
    impl<T: serde::Serialize> Enc for T {
        fn enc(&self) -> Vec<u8> {
            postcard::to_allocvec(self).unwrap()
        }
    }
}

/// Decodes with decoder `which`; whether it decoded, and whether the value
/// encodes back to the same bytes.
fn try_decode(which: u8, b: &[u8]) -> (bool, bool) {
    fn one<T: serde::de::DeserializeOwned + serde::Serialize>(b: &[u8]) -> (bool, bool) {
        match decode::<T>(b) {
            Some(v) => (true, postcard::to_allocvec(&v).unwrap() == b),
            None => (false, false),
        }
    }
    match which {
        0 => one::<Heartbeat>(b),
        1 => one::<StopEvent>(b),
        2 => one::<Ctl>(b),
        3 => one::<CtlReply>(b),
        _ => one::<RegEntry>(b),
    }
}

#[derive(Debug, Clone)]
enum Input {
    Random(Vec<u8>),
    Mutated {
        seed: u64,
        flips: Vec<(usize, u8)>,
        cut: Option<usize>,
    },
}

fn input() -> impl Strategy<Value = Input> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..64).prop_map(Input::Random),
        (
            any::<u64>(),
            prop::collection::vec((any::<usize>(), any::<u8>()), 0..4),
            prop::option::of(any::<usize>())
        )
            .prop_map(|(seed, flips, cut)| Input::Mutated { seed, flips, cut }),
    ]
}

fn bytes_of(which: u8, i: &Input) -> Vec<u8> {
    match i {
        Input::Random(b) => b.clone(),
        Input::Mutated { seed, flips, cut } => {
            let mut b = valid(which, *seed);
            for (at, x) in flips {
                if !b.is_empty() {
                    let n = b.len();
                    b[at % n] ^= x;
                }
            }
            if let Some(c) = cut {
                b.truncate(c % (b.len() + 1));
            }
            b
        }
    }
}

#[test]
fn every_cluster_decoder_is_total_and_exact() {
    let names = [
        "heartbeat",
        "stop event",
        "control",
        "control reply",
        "registry value",
    ];
    for which in 0..5u8 {
        let mut runner = TestRunner::new(Config {
            cases: CASES,
            failure_persistence: None,
            ..Config::default()
        });
        let (decoded, refused) = (AtomicU64::new(0), AtomicU64::new(0));
        runner
            .run(&input(), |i| {
                let b = bytes_of(which, &i);
                if try_decode(which, &b).0 {
                    decoded.fetch_add(1, Relaxed);
                } else {
                    refused.fetch_add(1, Relaxed);
                }
                Ok(())
            })
            .unwrap();
        let (decoded, refused) = (decoded.into_inner(), refused.into_inner());
        eprintln!(
            "{}: {decoded} decoded, {refused} refused",
            names[which as usize]
        );
        assert_eq!(decoded + refused, u64::from(CASES));
        assert!(
            refused > 0,
            "{}: random bytes must be refused somewhere",
            names[which as usize]
        );
    }
}

#[test]
fn valid_payloads_round_trip_and_one_more_byte_is_refused() {
    for which in 0..5u8 {
        for seed in 0..2_000u64 {
            let b = valid(which, seed);
            assert_eq!(
                try_decode(which, &b),
                (true, true),
                "decoder {which} seed {seed}"
            );
            let mut long = b.clone();
            long.push(0);
            assert!(!try_decode(which, &long).0, "decoder {which} seed {seed}");
        }
    }
}

#[test]
fn a_mutated_seal_never_opens() {
    let key = ClusterKey::new("cluster secret");
    let other = ClusterKey::new("another secret");
    let mut runner = TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    });
    let (opened, refused) = (AtomicU64::new(0), AtomicU64::new(0));
    runner
        .run(
            &(
                any::<u64>(),
                prop::collection::vec((any::<usize>(), 1..=255u8), 0..3),
                prop::option::of(any::<usize>()),
            ),
            |(seed, flips, cut)| {
                let subject = "troupe.c.ctl.a";
                let payload = valid((seed % 5) as u8, seed);
                let sealed = key.seal(subject, &payload);
                prop_assert_eq!(key.open(subject, &sealed), Some(&payload[..]));
                prop_assert_eq!(other.open(subject, &sealed), None);
                prop_assert_eq!(key.open("troupe.c.ctl.b", &sealed), None);
                let mut bad = sealed.clone();
                let n = bad.len();
                for (at, x) in &flips {
                    bad[at % n] ^= x;
                }
                if let Some(c) = cut {
                    bad.truncate(c % n);
                }
                match key.open(subject, &bad) {
                    Some(p) => {
                        // Only possible when nothing was changed (flips that
                        // cancel out, no cut).
                        prop_assert_eq!(&bad, &sealed);
                        prop_assert_eq!(p, &payload[..]);
                        opened.fetch_add(1, Relaxed);
                    }
                    None => {
                        refused.fetch_add(1, Relaxed);
                    }
                }
                Ok(())
            },
        )
        .unwrap();
    let (opened, refused) = (opened.into_inner(), refused.into_inner());
    eprintln!("seal: {opened} unchanged opened, {refused} mutated refused");
    assert_eq!(opened + refused, u64::from(CASES));
}
