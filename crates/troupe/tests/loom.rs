//! Loom models of the lock-free parts: the unbounded mailbox, and the actor's
//! state word together with the mailbox (the no-lost-wake-up, one-consumer
//! protocol of `state.rs`). Run with:
//!
//! `RUSTFLAGS="--cfg loom" cargo test -p troupe --test loom --release`
//!
//! Under `cfg(loom)` the mailbox blocks hold 2 slots, so these small models
//! cross block boundaries and exercise block installation and recycling.
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use troupe::loom_exports::{ActorState, Unbounded};

/// Bounded preemptions keep each model to seconds while still covering the
/// interleavings that matter (every known bug class in such queues shows up
/// within two preemptions).
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(2);
    }
    b.max_branches = 20_000;
    b.check(f);
}

#[test]
fn mailbox_two_producers_fifo_and_exact() {
    model(|| {
        let q = Arc::new(Unbounded::new());
        let producers: Vec<_> = (0..2)
            .map(|p| {
                let q = q.clone();
                thread::spawn(move || {
                    for i in 0..2 {
                        q.push((p, i));
                    }
                })
            })
            .collect();
        let mut next = [0usize; 2];
        let mut got = 0;
        let mut take = |v: Option<(usize, usize)>| {
            if let Some((p, i)) = v {
                assert_eq!(next[p], i, "FIFO per producer");
                next[p] += 1;
                got += 1;
            }
        };
        // Pop concurrently with the pushes (a bounded number of tries: loom
        // cannot explore an unbounded spin), then drain after the joins.
        for _ in 0..3 {
            // SAFETY: this thread is the only consumer.
            take(unsafe { q.pop() });
        }
        for p in producers {
            p.join().unwrap();
        }
        // SAFETY: as above.
        while let Some(v) = unsafe { q.pop() } {
            take(Some(v));
        }
        assert_eq!(got, 4, "lost or duplicated");
        assert!(q.is_empty());
    });
}

/// Mirrors a worker's turn: pop everything, release, re-check, reacquire.
fn drain(q: &Unbounded<u32>, state: &ActorState, running: &AtomicBool, seen: &AtomicUsize) {
    loop {
        assert!(
            !running.swap(true, Ordering::SeqCst),
            "two consumers at once"
        );
        // SAFETY: we own the task (SCHEDULED bit), asserted above.
        while unsafe { q.pop() }.is_some() {
            seen.fetch_add(1, Ordering::SeqCst);
        }
        running.store(false, Ordering::SeqCst);
        state.release();
        if q.is_empty() || !state.reacquire() {
            return;
        }
        // Re-owned: a sender's push is in flight (claimed, maybe not yet
        // written). The worker re-queues itself here; in the model, yield.
        thread::yield_now();
    }
}

#[test]
fn state_word_never_loses_a_wakeup_nor_runs_twice() {
    model(|| {
        let q = Arc::new(Unbounded::new());
        let state = Arc::new(ActorState::new_scheduled());
        let running = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(AtomicUsize::new(0));
        let senders: Vec<_> = (0..2)
            .map(|_| {
                let (q, state, running, seen) =
                    (q.clone(), state.clone(), running.clone(), seen.clone());
                thread::spawn(move || {
                    q.push(1);
                    // A sender that wins the task runs the actor itself here,
                    // as a worker would after taking it from a queue.
                    if state.notify() {
                        drain(&q, &state, &running, &seen);
                    }
                })
            })
            .collect();
        // The spawner holds the first task.
        drain(&q, &state, &running, &seen);
        for s in senders {
            s.join().unwrap();
        }
        // Every message was consumed by whoever held the task last.
        assert_eq!(seen.load(Ordering::SeqCst), 2, "a message was stranded");
    });
}
