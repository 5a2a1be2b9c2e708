//! The confirmed-tell workload (`--only confirmed`): `tell` and
//! `tell_confirmed` throughput to one sink, in alternating samples of one
//! run, and `tell_confirmed`'s latency (one at a time) beside an ask of
//! the same size, in interleaved rounds.

use std::collections::VecDeque;

use troupe_remote::Delivered;

use super::*;

pub(crate) struct ConfirmedRun {
    pub(crate) tell_rates: Vec<f64>,
    pub(crate) confirmed_rates: Vec<f64>,
    pub(crate) confirmed_latency: Vec<Duration>,
    pub(crate) ask_latency: Vec<Duration>,
}

fn tell_all(blob: &troupe_remote::RemoteRef<Blob>, payload: &[u8], count: u64) {
    for _ in 0..count {
        let mut msg = Blob(payload.to_vec());
        loop {
            match blob.tell(msg) {
                Ok(()) => break,
                Err(SendError::Full(m)) => {
                    msg = m;
                    std::thread::sleep(Duration::from_micros(50));
                }
                Err(e) => panic!("tell failed: {e}"),
            }
        }
    }
}

fn confirm_all(blob: &troupe_remote::RemoteRef<Blob>, payload: &[u8], count: u64, window: usize) {
    let mut open = VecDeque::with_capacity(window);
    for _ in 0..count {
        if open.len() >= window {
            let r: troupe_remote::Receipt = open.pop_front().expect("non-empty");
            assert_eq!(r.wait(), Ok(Delivered));
        }
        let mut msg = Blob(payload.to_vec());
        loop {
            match blob.tell_confirmed(msg, Duration::from_secs(30)) {
                Ok(r) => {
                    open.push_back(r);
                    break;
                }
                Err(SendError::Full(m)) => {
                    msg = m;
                    std::thread::sleep(Duration::from_micros(50));
                }
                Err(e) => panic!("tell_confirmed failed: {e}"),
            }
        }
    }
    for r in open {
        assert_eq!(r.wait(), Ok(Delivered));
    }
}

pub(crate) fn confirmed_run(
    url: &str,
    size: usize,
    n: u64,
    samples: u64,
    window: usize,
    k: u64,
) -> ConfirmedRun {
    let _sink = ChildRole::start("tell-sink", url, &[]);
    let node = Node::builder(url, "source")
        .insecure()
        .connect()
        .expect("node");
    let blob = node.lookup::<Blob>("sink@sink").expect("lookup");
    let wait = blob.retype::<WaitFor>().expect("retype");
    let payload = vec![0xa5u8; size];
    let mut run = ConfirmedRun {
        tell_rates: Vec::new(),
        confirmed_rates: Vec::new(),
        confirmed_latency: Vec::new(),
        ask_latency: Vec::new(),
    };
    let mut total = 0u64;
    let mut settle = |count: u64| {
        total += count;
        let got = wait
            .ask(WaitFor(total), Duration::from_secs(120))
            .expect("the sink confirms");
        assert_eq!(got, total, "the sink counted a different number");
    };
    for sample in 0..=samples {
        let count = if sample == 0 { n / 10 } else { n };
        let start = Instant::now();
        tell_all(&blob, &payload, count);
        settle(count);
        let plain = start.elapsed().as_secs_f64();
        let start = Instant::now();
        confirm_all(&blob, &payload, count, window);
        settle(count);
        let confirmed = start.elapsed().as_secs_f64();
        if sample > 0 {
            run.tell_rates.push(count as f64 / plain);
            run.confirmed_rates.push(count as f64 / confirmed);
        }
    }
    // An 8-byte body each way: `Blob` of 8 bytes (9 encoded) against
    // `WaitFor(0)` (a varint, 1 byte, its reply up to 9).
    let small = vec![0xa5u8; 8];
    let rounds = 10;
    let per = (k / rounds).max(1);
    for round in 0..=rounds {
        let keep = round > 0;
        for _ in 0..per {
            let start = Instant::now();
            let r = blob
                .tell_confirmed(Blob(small.clone()), Duration::from_secs(5))
                .expect("sent");
            assert_eq!(r.wait(), Ok(Delivered));
            if keep {
                run.confirmed_latency.push(start.elapsed());
            }
        }
        for _ in 0..per {
            let start = Instant::now();
            wait.ask(WaitFor(0), Duration::from_secs(5)).expect("reply");
            if keep {
                run.ask_latency.push(start.elapsed());
            }
        }
    }
    let s = node.stats();
    assert_eq!(
        s.receipts_lost + s.receipts_unknown + s.receipts_refused,
        0,
        "{s:?}"
    );
    run
}
