//! The decoder against a million random and mutated frames: no panic, and
//! every input ends in a counted outcome. Bounded: about a second in release,
//! a few in debug.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::sync::atomic::{AtomicU64, Ordering};
use troupe_remote::envelope::{decode_body, encode_frame, Frames, Header, Kind};

#[troupe_remote::remote("fuzz.Order")]
#[derive(serde::Serialize, serde::Deserialize, Debug, PartialEq)]
struct Order {
    id: u64,
    item: String,
    qty: u32,
    tags: Vec<String>,
    price: Option<f64>,
}

const MAX_BODY: usize = 1 << 16;
const CASES: u32 = 10_000;
const FRAMES_PER_CASE: usize = 100;

/// Frames one batch: returns (good frames, errors, bodies that decoded).
fn walk(batch: &[u8]) -> (u64, u64, u64) {
    let (mut good, mut bad, mut decoded) = (0, 0, 0);
    for f in Frames::new(batch, MAX_BODY) {
        match f {
            Ok(frame) => {
                good += 1;
                if decode_body::<Order>(frame.body).is_ok() {
                    decoded += 1;
                }
            }
            Err(_) => bad += 1,
        }
    }
    assert!(bad <= 1, "the walk must stop at the first error");
    (good, bad, decoded)
}

fn valid_frame(seed: u64) -> Vec<u8> {
    let order = Order {
        id: seed,
        item: "x".repeat((seed % 17) as usize),
        qty: seed as u32,
        tags: (0..seed % 4).map(|i| format!("t{i}")).collect(),
        price: (seed % 2 == 0).then_some(seed as f64 / 3.0),
    };
    let mut out = Vec::new();
    let h = Header::new(Kind::Tell, 1, 2, 0);
    encode_frame(&mut out, h, &order, MAX_BODY).unwrap();
    out
}

#[derive(Debug, Clone)]
enum Input {
    Random(Vec<u8>),
    /// A valid frame with byte flips, a cut, and a length overwrite.
    Mutated {
        seed: u64,
        flips: Vec<(usize, u8)>,
        cut: Option<usize>,
        len: Option<u32>,
    },
}

fn input() -> impl Strategy<Value = Input> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..96).prop_map(Input::Random),
        // Random bytes behind a plausible header prefix reach deeper paths.
        prop::collection::vec(any::<u8>(), 0..96).prop_map(|mut v| {
            let mut h = vec![1u8, 1, 0, 0];
            h.extend_from_slice(&((v.len() as u32).saturating_sub(28)).to_le_bytes());
            h.append(&mut v);
            Input::Random(h)
        }),
        (
            any::<u64>(),
            prop::collection::vec((any::<usize>(), any::<u8>()), 0..4),
            any::<Option<usize>>(),
            any::<Option<u32>>()
        )
            .prop_map(|(seed, flips, cut, len)| Input::Mutated {
                seed,
                flips,
                cut,
                len
            }),
    ]
}

fn bytes_of(i: &Input) -> Vec<u8> {
    match i {
        Input::Random(v) => v.clone(),
        Input::Mutated {
            seed,
            flips,
            cut,
            len,
        } => {
            let mut f = valid_frame(*seed);
            for (at, x) in flips {
                let n = f.len();
                f[at % n] ^= x;
            }
            if let Some(l) = len {
                f[4..8].copy_from_slice(&l.to_le_bytes());
            }
            if let Some(c) = cut {
                let n = f.len();
                f.truncate(c % (n + 1));
            }
            f
        }
    }
}

#[test]
fn a_million_random_and_mutated_frames_never_panic() {
    let frames = AtomicU64::new(0);
    let outcomes = AtomicU64::new(0);
    let mut runner = TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&prop::collection::vec(input(), FRAMES_PER_CASE), |inputs| {
            // Each input alone, then all of them as one batch.
            let mut batch = Vec::new();
            for i in &inputs {
                let b = bytes_of(i);
                let (good, bad, _) = walk(&b);
                // A frame is at least a header: no more outcomes than that allows.
                prop_assert!(good + bad <= (b.len() / 32 + 1) as u64);
                batch.extend_from_slice(&b);
                frames.fetch_add(1, Ordering::Relaxed);
                outcomes.fetch_add(good + bad, Ordering::Relaxed);
            }
            walk(&batch);
            Ok(())
        })
        .unwrap();
    let n = frames.load(Ordering::Relaxed);
    assert!(n >= 1_000_000, "only {n} frames were fed");
    // Non-empty inputs always produce an outcome (a frame or an error).
    assert!(outcomes.load(Ordering::Relaxed) > n / 2);
}

#[test]
fn unmutated_frames_decode_back() {
    for seed in 0..1000 {
        let f = valid_frame(seed);
        let (good, bad, decoded) = walk(&f);
        assert_eq!((good, bad, decoded), (1, 0, 1));
    }
}
