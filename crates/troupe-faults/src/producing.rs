//! The at-least-once producer's workload: one producer per node process
//! (its id the node's name, so each incarnation is a new producer) sends
//! `Item(1)`, `Item(2)`, ... to every tally (`t0..`), in rounds, and
//! records in the history what it knows was confirmed and what the
//! tallies say they handled. The checker (`faults/checker`, producer.go)
//! counts exactly from these lines:
//!
//! - `{"k":"confirmed", "producer", "upto", "keys", "t"}`: written after
//!   a `flush` returned `Ok`: every message `1..=upto` to each of the
//!   `keys` tallies is confirmed (handled and its event stored);
//! - `{"k":"tally", "key", "call", "ok", "seen", "err", "t"}`: a read of
//!   one tally, called at `call`, answered at `t`: per producer, the
//!   messages it handled, the last one's number and how many came out of
//!   order ([`crate::tally::Seen`]).
//!
//! A correct run: in every read, for every producer, `count == last` and
//! `out_of_order == 0` (once each, in order, none skipped); and in each
//! tally's last read called in the final quiet interval, every producer's
//! `count` is at least its `upto` confirmed before that read was called
//! (no confirmed message lost).

use std::time::Duration;

use serde::Serialize;
use troupe_sharding::delivery::{Producer, ProducerError};
use troupe_sharding::Sharding;

use crate::clock;
use crate::history::History;
use crate::tally::{Item, ReadTally, Seen, TallyEntity};

#[derive(Serialize)]
struct Confirmed<'a> {
    k: &'static str,
    producer: &'a str,
    upto: u64,
    keys: u64,
    t: u64,
}

#[derive(Serialize)]
struct TallyRead<'a> {
    k: &'static str,
    key: &'a str,
    call: u64,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    seen: Option<&'a [Seen]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    err: Option<String>,
    t: u64,
}

/// How the producer's loop runs.
pub struct Settings {
    /// Tallies `t0..t{keys-1}`.
    pub keys: u64,
    /// Pause between rounds.
    pub pause: Duration,
    /// A tally read's timeout.
    pub ask: Duration,
    /// A flush's bound.
    pub flush: Duration,
}

/// Runs the producer's rounds until its driver stops (never returns
/// otherwise: the node process is killed at the end of the run).
pub fn run(
    producer: &Producer<Item>,
    tallies: &Sharding<TallyEntity>,
    history: &History,
    s: &Settings,
) {
    let keys: Vec<String> = (0..s.keys).map(|k| format!("t{k}")).collect();
    let mut n = 0u64;
    loop {
        n += 1;
        for key in &keys {
            match producer.send_blocking(key, Item(n)) {
                Ok(()) => {}
                Err(ProducerError::Stopped(_)) => return,
                Err(e) => {
                    // Not accepted: the tally would see a gap, which the
                    // checker reports; so stop here, loudly.
                    eprintln!("producer: {e}; stopping the producer's workload");
                    return;
                }
            }
        }
        if n.is_multiple_of(5) && producer.flush_blocking(s.flush).is_ok() {
            history.record(&Confirmed {
                k: "confirmed",
                producer: producer.id(),
                upto: n,
                keys: s.keys,
                t: clock::now(),
            });
        }
        if n.is_multiple_of(10) {
            for key in &keys {
                let call = clock::now();
                let r = tallies.entity(key).ask(ReadTally, s.ask);
                let (seen, err) = match r {
                    Ok(Ok(seen)) => (Some(seen), None),
                    Ok(Err(e)) => (None, Some(e)),
                    Err(e) => (None, Some(format!("{e:?}"))),
                };
                history.record(&TallyRead {
                    k: "tally",
                    key,
                    call,
                    ok: seen.is_some(),
                    seen: seen.as_deref(),
                    err,
                    t: clock::now(),
                });
            }
        }
        std::thread::sleep(s.pause);
    }
}
