//! Link and ack frames (the delivery accounting, see `envelope.rs`) through
//! the decoder: valid ones round-trip; random and mutated ones never panic
//! and end decoded or refused, never in between. Bounded: a few seconds in
//! debug.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use troupe_remote::envelope::{
    decode_body, decode_frame, encode_link, Frame, Frames, Kind, LinkAck, HEADER_LEN,
};

const MAX_BODY: usize = 1 << 16;
const CASES: u32 = 20_000;

fn name() -> impl Strategy<Value = String> {
    "[A-Za-z0-9_-]{1,40}"
}

fn ack() -> impl Strategy<Value = LinkAck> {
    (
        any::<u64>(),
        any::<u64>(),
        name(),
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
    )
        .prop_map(|(epoch, upto, receiver, base, received, dropped)| LinkAck {
            epoch,
            upto,
            receiver,
            base,
            received,
            dropped,
        })
}

fn link_bytes(epoch: u64, first: u64, name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    encode_link(&mut out, epoch, first, name);
    out
}

fn ack_bytes(a: &LinkAck) -> Vec<u8> {
    let mut out = Vec::new();
    a.encode(&mut out);
    out
}

/// A frame read as what its kind says: `Ok` if its body decodes.
fn read(frame: &Frame<'_>) -> Result<(), postcard::Error> {
    match frame.kind {
        Kind::Link => decode_body::<&str>(frame.body).map(drop),
        Kind::Ack => LinkAck::decode(frame).map(drop),
        _ => Ok(()),
    }
}

/// Walks a batch: every frame decoded or refused, the walk stopping at the
/// first framing error. Returns (frames, bodies refused, framing errors).
fn walk(batch: &[u8]) -> (usize, usize, usize) {
    let (mut frames, mut refused, mut errors) = (0, 0, 0);
    for f in Frames::new(batch, MAX_BODY) {
        match f {
            Ok(frame) => {
                frames += 1;
                if read(&frame).is_err() {
                    refused += 1;
                }
            }
            Err(_) => errors += 1,
        }
    }
    (frames, refused, errors)
}

proptest! {
    #![proptest_config(Config { cases: CASES, failure_persistence: None, ..Config::default() })]

    #[test]
    fn a_link_frame_round_trips(epoch: u64, first: u64, name in name()) {
        let bytes = link_bytes(epoch, first, &name);
        let (frame, rest) = decode_frame(&bytes, MAX_BODY).unwrap();
        prop_assert!(rest.is_empty());
        prop_assert_eq!(frame.kind, Kind::Link);
        prop_assert_eq!((frame.type_id, frame.correlation), (epoch, first));
        prop_assert_eq!(decode_body::<&str>(frame.body), Ok(name.as_str()));
    }

    #[test]
    fn an_ack_frame_round_trips(a in ack()) {
        let bytes = ack_bytes(&a);
        let (frame, rest) = decode_frame(&bytes, MAX_BODY).unwrap();
        prop_assert!(rest.is_empty());
        prop_assert_eq!(frame.kind, Kind::Ack);
        prop_assert_eq!(LinkAck::decode(&frame), Ok(a));
    }

    /// A batch of links and acks, then byte flips, a cut and a body length
    /// overwritten: no panic, and every frame decoded or refused.
    #[test]
    fn mutated_link_and_ack_batches_are_decoded_or_refused(
        links in prop::collection::vec((any::<u64>(), any::<u64>(), name()), 0..4),
        acks in prop::collection::vec(ack(), 0..4),
        flips in prop::collection::vec((any::<usize>(), 1u8..=255), 0..6),
        cut in any::<Option<usize>>(),
        len in any::<Option<(usize, u32)>>(),
    ) {
        let mut batch = Vec::new();
        let mut starts = Vec::new();
        for (e, f, n) in &links {
            starts.push(batch.len());
            batch.extend(link_bytes(*e, *f, n));
        }
        for a in &acks {
            starts.push(batch.len());
            batch.extend(ack_bytes(a));
        }
        let count = starts.len();
        prop_assert_eq!(walk(&batch), (count, 0, 0));
        if let (Some((which, l)), false) = (len, starts.is_empty()) {
            let at = starts[which % starts.len()] + 4;
            batch[at..at + 4].copy_from_slice(&l.to_le_bytes());
        }
        if !batch.is_empty() {
            for (at, x) in &flips {
                let n = batch.len();
                batch[at % n] ^= x;
            }
        }
        if let Some(c) = cut {
            let n = batch.len();
            batch.truncate(c % (n + 1));
        }
        let (frames, refused, errors) = walk(&batch);
        prop_assert!(errors <= 1, "the walk stops at the first error");
        prop_assert!(refused <= frames);
        prop_assert!(frames <= batch.len() / HEADER_LEN);
    }

    /// Random bodies behind a well-formed link or ack header.
    #[test]
    fn random_bodies_behind_link_and_ack_headers(
        ack_kind: bool,
        body in prop::collection::vec(any::<u8>(), 0..80),
        epoch: u64,
        number: u64,
    ) {
        let mut bytes = link_bytes(epoch, number, "n");
        bytes.truncate(HEADER_LEN);
        if ack_kind {
            bytes[1] = Kind::Ack as u8;
        }
        bytes[4..8].copy_from_slice(&(body.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&body);
        let (frame, rest) = decode_frame(&bytes, MAX_BODY).unwrap();
        prop_assert!(rest.is_empty());
        match read(&frame) {
            // What decodes re-encodes to a frame that decodes the same.
            Ok(()) if ack_kind => {
                let a = LinkAck::decode(&frame).unwrap();
                let again = ack_bytes(&a);
                let (f2, _) = decode_frame(&again, MAX_BODY).unwrap();
                prop_assert_eq!(LinkAck::decode(&f2), Ok(a));
            }
            Ok(()) => {
                let n = decode_body::<&str>(frame.body).unwrap();
                let again = link_bytes(epoch, number, n);
                let (f2, _) = decode_frame(&again, MAX_BODY).unwrap();
                prop_assert_eq!(decode_body::<&str>(f2.body), Ok(n));
            }
            Err(_) => {}
        }
    }
}

#[test]
fn random_batches_never_panic() {
    let mut runner = TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&prop::collection::vec(any::<u8>(), 0..256), |bytes| {
            let (frames, refused, errors) = walk(&bytes);
            prop_assert!(errors <= 1 && refused <= frames);
            Ok(())
        })
        .unwrap();
}
