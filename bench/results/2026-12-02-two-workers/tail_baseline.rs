//! The physical floor of a many-to-one tail on this machine, without Troupe:
//! N messages pushed into one shared queue word (a `fetch_add` claim and a
//! 16-byte slot write, the shape of every MPSC list: tokio's, crossbeam's,
//! Troupe's), by one thread, then by two threads at once (N/2 each).
//! Also the pipeline: one thread pushes while another reads right behind.
//!
//!   rustc -O --edition 2021 tail_baseline.rs -o /tmp/tail_baseline
//!   taskset -c 0,1 /tmp/tail_baseline 20000000 5
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::Instant;

#[repr(C)]
struct Slot {
    msg: AtomicU64,
    state: AtomicU64,
}

fn slots(n: usize) -> Vec<Slot> {
    (0..n)
        .map(|_| Slot { msg: AtomicU64::new(0), state: AtomicU64::new(0) })
        .collect()
}

/// `producers` threads push n messages in all; ns per message.
fn push(n: usize, producers: usize, buf: &[Slot]) -> f64 {
    let tail = AtomicUsize::new(0);
    let go = Barrier::new(producers);
    let t = std::thread::scope(|s| {
        let hs: Vec<_> = (0..producers)
            .map(|_| {
                s.spawn(|| {
                    go.wait();
                    let t0 = Instant::now();
                    for k in 0..n / producers {
                        let i = tail.fetch_add(1, Ordering::AcqRel);
                        buf[i].msg.store(k as u64, Ordering::Relaxed);
                        buf[i].state.store(1, Ordering::Release);
                    }
                    t0.elapsed()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).max().unwrap()
    });
    t.as_nanos() as f64 / n as f64
}

/// One producer, one consumer reading right behind it; ns per message.
fn pipeline(n: usize, buf: &[Slot]) -> f64 {
    let tail = AtomicUsize::new(0);
    let t0 = Instant::now();
    std::thread::scope(|s| {
        s.spawn(|| {
            for k in 0..n {
                let i = tail.fetch_add(1, Ordering::AcqRel);
                buf[i].msg.store(k as u64, Ordering::Relaxed);
                buf[i].state.store(1, Ordering::Release);
            }
        });
        s.spawn(|| {
            let mut sum = 0u64;
            for slot in &buf[..n] {
                while slot.state.load(Ordering::Acquire) == 0 {
                    std::hint::spin_loop();
                }
                sum += slot.msg.load(Ordering::Relaxed);
            }
            std::hint::black_box(sum);
        });
    });
    t0.elapsed().as_nanos() as f64 / n as f64
}

/// Reading n written slots on one thread; ns per message.
fn pop(n: usize, buf: &[Slot]) -> f64 {
    let t0 = Instant::now();
    let mut sum = 0u64;
    for slot in &buf[..n] {
        if slot.state.load(Ordering::Acquire) != 0 {
            sum += slot.msg.load(Ordering::Relaxed);
        }
    }
    std::hint::black_box(sum);
    t0.elapsed().as_nanos() as f64 / n as f64
}

fn main() {
    let mut a = std::env::args().skip(1);
    let n: usize = a.next().map_or(20_000_000, |s| s.parse().unwrap());
    let rounds: usize = a.next().map_or(5, |s| s.parse().unwrap());
    for r in 0..rounds {
        let b = slots(n);
        let one = push(n, 1, &b);
        let read = pop(n, &b);
        let b = slots(n);
        let two = push(n, 2, &b);
        let b = slots(n);
        let pipe = pipeline(n, &b);
        println!(
            "round {r}: push 1 thread {one:.2} ns, 2 threads at once {two:.2} ns ({:.2}x the time), pop {read:.2} ns; \
             1 worker (push then pop) {:.2} ns; pipeline {pipe:.2} ns",
            two / one,
            one + read
        );
    }
}
