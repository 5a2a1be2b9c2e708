//! Message chains: receive limits, timeouts, close modes, overflow policies,
//! select, and an actor's output observed through a chain (seed 000's
//! frequency_calculator).

use std::time::{Duration, Instant};
use troupe::mchain::{case, select, Close, MChain, Receive, ReceiveStatus, RecvError};
use troupe::{Actor, ActorSystem, Context, Overflow, Recipient, SendError};

const T: Duration = Duration::from_secs(10);

#[test]
fn handle_n_takes_exactly_n_in_order() {
    let chain = MChain::unbounded();
    for n in 0..10u32 {
        chain.send(n).unwrap();
    }
    let mut got = Vec::new();
    let r = chain.receive(Receive::new().handle_n(4), |n| got.push(n));
    assert_eq!(
        (r.extracted, r.handled, r.status),
        (4, 4, ReceiveStatus::HandledLimit)
    );
    assert_eq!(got, vec![0, 1, 2, 3]);
    assert_eq!(chain.len(), 6);
}

#[test]
fn extract_limit_counts_unhandled_messages_too() {
    let chain = MChain::unbounded();
    for n in 0..10u32 {
        chain.send(n).unwrap();
    }
    // Handle only even numbers; stop after 5 extracted.
    let r = chain.receive(Receive::new().extract_n(5).handle_n(100), |n| n % 2 == 0);
    assert_eq!(
        (r.extracted, r.handled, r.status),
        (5, 3, ReceiveStatus::ExtractLimit)
    );
}

#[test]
fn empty_timeout_and_total_time() {
    let chain: MChain<u32> = MChain::unbounded();
    let t0 = Instant::now();
    let r = chain.receive(
        Receive::new().empty_timeout(Duration::from_millis(30)),
        |_| (),
    );
    assert_eq!(r.status, ReceiveStatus::EmptyTimeout);
    assert!(t0.elapsed() >= Duration::from_millis(30));
    assert_eq!(
        chain.recv_timeout(Duration::from_millis(5)),
        Err(RecvError::Timeout)
    );

    // Messages keep coming, but the total time runs out.
    let sender = chain.clone();
    let feeder = std::thread::spawn(move || {
        for n in 0..400 {
            if sender.send(n).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    let t0 = Instant::now();
    let r = chain.receive(
        Receive::new()
            .empty_timeout(Duration::from_secs(5))
            .total_time(Duration::from_millis(60)),
        |_| (),
    );
    assert_eq!(r.status, ReceiveStatus::TotalTime);
    assert!(t0.elapsed() < Duration::from_secs(4));
    chain.close(Close::DropContent);
    feeder.join().unwrap();
}

#[test]
fn handle_all_runs_until_closed_retaining_content() {
    let chain = MChain::unbounded();
    let sender = chain.clone();
    let producer = std::thread::spawn(move || {
        for n in 0..10_000u64 {
            sender.send(n).unwrap();
        }
        sender.close(Close::RetainContent);
        assert!(matches!(sender.send(0), Err(SendError::Closed(0))));
    });
    let mut sum = 0;
    let r = chain.receive(Receive::new().handle_all(), |n| sum += n);
    producer.join().unwrap();
    assert_eq!(r.status, ReceiveStatus::Closed);
    assert_eq!(r.handled, 10_000);
    assert_eq!(sum, 10_000 * 9_999 / 2);
}

#[test]
fn close_drop_content_discards_pending() {
    let chain = MChain::unbounded();
    for n in 0..5u32 {
        chain.send(n).unwrap();
    }
    chain.close(Close::DropContent);
    assert!(chain.is_empty());
    let r = chain.receive(Receive::new(), |_| ());
    assert_eq!((r.extracted, r.status), (0, ReceiveStatus::Closed));
    assert_eq!(chain.recv_timeout(T), Err(RecvError::Closed));
}

#[test]
fn close_wakes_a_blocked_receiver() {
    let chain: MChain<u32> = MChain::unbounded();
    let c = chain.clone();
    let waiter = std::thread::spawn(move || c.receive(Receive::new(), |_| ()));
    std::thread::sleep(Duration::from_millis(20));
    chain.close(Close::RetainContent);
    let r = waiter.join().unwrap();
    assert_eq!(r.status, ReceiveStatus::Closed);
}

#[test]
fn bounded_overflow_policies() {
    let reject = MChain::bounded(2, Overflow::Reject);
    reject.send(1).unwrap();
    reject.send(2).unwrap();
    assert!(matches!(reject.send(3), Err(SendError::Full(3))));

    let newest = MChain::bounded(2, Overflow::DropNewest);
    for n in 1..=4 {
        newest.send(n).unwrap();
    }
    assert_eq!(newest.dropped(), 2);
    assert_eq!((newest.try_recv(), newest.try_recv()), (Some(1), Some(2)));

    let oldest = MChain::bounded(2, Overflow::DropOldest);
    for n in 1..=4 {
        oldest.send(n).unwrap();
    }
    assert_eq!(oldest.dropped(), 2);
    assert_eq!((oldest.try_recv(), oldest.try_recv()), (Some(3), Some(4)));

    // Block: the sender waits for room, then times out.
    let block = MChain::bounded(1, Overflow::BlockFor(Duration::from_millis(20)));
    block.send(1).unwrap();
    assert!(matches!(block.send(2), Err(SendError::Full(2))));
    let slow = MChain::bounded(1, Overflow::BlockFor(T));
    slow.send(0u64).unwrap();
    let s2 = slow.clone();
    let producer = std::thread::spawn(move || {
        for n in 1..=1000u64 {
            s2.send(n).unwrap();
        }
    });
    let mut got = Vec::new();
    slow.receive(Receive::new().handle_n(1001).total_time(T), |n| got.push(n));
    producer.join().unwrap();
    assert_eq!(
        got,
        (0..=1000).collect::<Vec<_>>(),
        "blocked sends lose nothing"
    );
}

#[test]
fn select_over_chains_of_different_types() {
    let numbers: MChain<u64> = MChain::unbounded();
    let words: MChain<String> = MChain::unbounded();
    let (n2, w2) = (numbers.clone(), words.clone());
    let producer = std::thread::spawn(move || {
        for i in 0..1_000u64 {
            n2.send(i).unwrap();
            if i % 10 == 0 {
                w2.send(format!("w{i}")).unwrap();
            }
        }
        n2.close(Close::RetainContent);
        w2.close(Close::RetainContent);
    });
    let (mut sum, mut words_seen) = (0u64, 0usize);
    let r = select(
        Receive::new().total_time(T),
        &mut [
            &mut case(&numbers, |n| sum += n),
            &mut case(&words, |_w| words_seen += 1),
        ],
    );
    producer.join().unwrap();
    assert_eq!(r.status, ReceiveStatus::Closed);
    assert_eq!(r.handled, 1_100);
    assert_eq!((sum, words_seen), (1_000 * 999 / 2, 100));
}

#[test]
fn select_times_out_when_all_empty() {
    let a: MChain<u8> = MChain::unbounded();
    let b: MChain<u8> = MChain::unbounded();
    let r = select(
        Receive::new().empty_timeout(Duration::from_millis(20)),
        &mut [&mut case(&a, |_| ()), &mut case(&b, |_| ())],
    );
    assert_eq!((r.extracted, r.status), (0, ReceiveStatus::EmptyTimeout));
    // A message arriving later wakes the select.
    let b2 = b.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        b2.send(1).unwrap();
    });
    let r = select(
        Receive::new().handle_n(1).empty_timeout(T),
        &mut [&mut case(&a, |_| ()), &mut case(&b, |_| ())],
    );
    t.join().unwrap();
    assert_eq!((r.handled, r.status), (1, ReceiveStatus::HandledLimit));
}

/// Seed 000's image_resizer shape: input in, output to any recipient.
struct Resizer {
    factor: u32,
    output: Recipient<u32>,
}

impl Actor for Resizer {
    type Msg = u32;
    fn handle(&mut self, size: u32, _ctx: &mut Context<'_, Self>) {
        let _ = self.output.send(size * self.factor);
    }
}

/// Seed 000's frequency_calculator: first message starts the clock, the
/// last stops it.
fn frequency(count: usize, output: &MChain<u32>) -> f64 {
    let mut tic = Instant::now();
    output.receive(Receive::new().handle_n(1).total_time(T), |_| {
        tic = Instant::now()
    });
    output.receive(Receive::new().handle_n(count - 2).total_time(T), |_| ());
    let mut freq = 0.0;
    output.receive(Receive::new().handle_n(1).total_time(T), |_| {
        freq = count as f64 / tic.elapsed().as_secs_f64();
    });
    freq
}

#[test]
fn actor_output_observed_through_an_mchain() {
    let system = ActorSystem::builder().threads(2).build();
    let output = MChain::unbounded();
    let resizer = system.spawn(Resizer {
        factor: 4,
        output: output.recipient(),
    });
    const N: usize = 1_000;
    let out = output.clone();
    let calc = std::thread::spawn(move || frequency(N, &out));
    for i in 0..N as u32 {
        resizer.tell(i).unwrap();
    }
    let f = calc.join().unwrap();
    assert!(f > 0.0 && f.is_finite(), "frequency {f}");
    assert!(output.is_empty(), "exactly N outputs were consumed");
    // And the values, checked one by one.
    for i in 0..10u32 {
        resizer.tell(i).unwrap();
    }
    for i in 0..10u32 {
        assert_eq!(output.recv_timeout(T), Ok(i * 4));
    }
}

#[test]
fn many_senders_many_receivers_count_exactly() {
    let chain = MChain::bounded(64, Overflow::BlockFor(T));
    const P: u64 = 3;
    const N: u64 = 10_000;
    let total = std::sync::atomic::AtomicU64::new(0);
    let count = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for p in 0..P {
            let c = chain.clone();
            s.spawn(move || {
                for i in 0..N {
                    c.send(p * N + i).unwrap();
                }
            });
        }
        for _ in 0..2 {
            let c = chain.clone();
            let (total, count) = (&total, &count);
            s.spawn(move || {
                c.receive(Receive::new(), |v| {
                    total.fetch_add(v, std::sync::atomic::Ordering::Relaxed);
                    count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                });
            });
        }
        // Close (retaining) once everything was received.
        let c = chain.clone();
        let count = &count;
        s.spawn(move || {
            let deadline = Instant::now() + T;
            while count.load(std::sync::atomic::Ordering::Relaxed) < P * N
                && Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_millis(1));
            }
            c.close(Close::RetainContent);
        });
    });
    let all = P * N;
    assert_eq!(count.into_inner(), all);
    assert_eq!(total.into_inner(), all * (all - 1) / 2);
}
