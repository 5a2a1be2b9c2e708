//! Loom models of the lock-free parts: the unbounded mailbox, whose tail word
//! also holds the actor's state bits, and the protocol built on it (a push
//! that finds the actor idle schedules it; the worker releases the actor only
//! when nothing was claimed since it looked): no lost wake-up, never two
//! consumers, no message stranded, none accepted after close. Run with:
//!
//! `RUSTFLAGS="--cfg loom" cargo test -p troupe --test loom --release`
//!
//! Under `cfg(loom)` the mailbox blocks hold 2 slots, so these small models
//! cross block boundaries and exercise block installation and recycling.
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use troupe::loom_exports::{Release, Unbounded, STOP_DRAIN};

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
                        q.push((p, i)).unwrap();
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

/// Mirrors a worker's turn: pop everything, then try to release the actor.
fn drain(q: &Unbounded<u32>, running: &AtomicBool, seen: &AtomicUsize) {
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
        // SAFETY: as above (we still hold the task until Released).
        match unsafe { q.try_release() } {
            Release::Released => return,
            // A sender's slot is claimed but maybe not written: the worker
            // re-queues itself; in the model, yield.
            Release::NotEmpty => thread::yield_now(),
            Release::Stop(_) => unreachable!("no stop requested in this model"),
        }
    }
}

#[test]
fn state_word_never_loses_a_wakeup_nor_runs_twice() {
    model(|| {
        let q = Arc::new(Unbounded::new());
        let running = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(AtomicUsize::new(0));
        let senders: Vec<_> = (0..2)
            .map(|_| {
                let (q, running, seen) = (q.clone(), running.clone(), seen.clone());
                thread::spawn(move || {
                    // A sender that finds the actor idle runs it itself here,
                    // as a worker would after taking the task from a queue.
                    if q.push(1).unwrap() {
                        drain(&q, &running, &seen);
                    }
                })
            })
            .collect();
        // The spawner holds the first task.
        drain(&q, &running, &seen);
        for s in senders {
            s.join().unwrap();
        }
        // Every message was consumed by whoever held the task last.
        assert_eq!(seen.load(Ordering::SeqCst), 2, "a message was stranded");
    });
}

#[test]
fn close_refuses_and_keeps_every_accepted_message() {
    model(|| {
        let q = Arc::new(Unbounded::new());
        let sender = {
            let q = q.clone();
            thread::spawn(move || {
                let mut accepted = 0;
                for i in 0..2u32 {
                    match q.push(i) {
                        Ok(_) => accepted += 1,
                        Err(v) => assert_eq!(v, i, "a refused push hands the message back"),
                    }
                }
                accepted
            })
        };
        // A stop request closes the mailbox; the spawner still holds the task.
        q.request_stop(STOP_DRAIN);
        let accepted = sender.join().unwrap();
        let mut got = 0;
        // SAFETY: this thread holds the task.
        while unsafe { q.pop() }.is_some() {
            got += 1;
        }
        assert_eq!(got, accepted, "accepted messages are all in the mailbox");
        // SAFETY: as above.
        assert!(matches!(unsafe { q.try_release() }, Release::Stop(_)));
    });
}

/// A kill while a sender is between claiming its slot and writing it: the
/// final drain (what `finalize` runs before `join` returns) must take every
/// accepted message out, waiting for the half-written slot. `drain` is the
/// pop the drain uses; the mutation below passes the plain `pop`, which stops
/// at the half-written slot (the code before issue 13's fix), and must fail.
fn kill_with_half_written_slot(drain: unsafe fn(&Unbounded<u32>) -> Option<u32>) {
    model(move || {
        let q = Arc::new(Unbounded::new());
        let sender = {
            let q = q.clone();
            thread::spawn(move || {
                let mut accepted = 0;
                for i in 0..2u32 {
                    if q.push(i).is_ok() {
                        accepted += 1;
                    }
                }
                accepted
            })
        };
        // The spawner holds the task: kill (closes the mailbox), then the
        // final drain, all before the sender is joined.
        q.request_stop(troupe::loom_exports::STOP_NOW);
        let mut drained = 0;
        // SAFETY: this thread holds the task.
        while unsafe { drain(&q) }.is_some() {
            drained += 1;
        }
        // `join` would return here: everything accepted must be accounted.
        let accepted = sender.join().unwrap();
        assert_eq!(
            drained, accepted,
            "a claimed slot was stranded by the drain"
        );
    });
}

#[test]
fn kill_drains_half_written_slots() {
    // SAFETY: the model calls the drain only from the task holder's thread.
    kill_with_half_written_slot(|q| unsafe { q.pop_final() });
}

#[test]
#[should_panic(expected = "stranded")]
fn mutation_drain_that_stops_at_a_half_written_slot_is_caught() {
    // SAFETY: as above, only the task holder pops; the mutation is which
    // pop the drain uses, not who calls it.
    kill_with_half_written_slot(|q| unsafe { q.pop() });
}

/// The bounded mailbox's push against its actor's final drain (issue 13,
/// defect 3), with the real state word. The ring (crossbeam's `ArrayQueue`)
/// does not run under loom, so a locked queue stands in for it: only its
/// linearizable MPMC push/pop matter to the protocol. Sender: check `CLOSED`,
/// push, `notify_bits`; if it saw `STOPPED`, empty the ring itself, counting.
/// Finalizer: `mark_stopped`, then drain, counting. Once the sender has
/// returned, every accepted message must be counted and the ring empty.
/// `recheck: false` is the code before the fix, and must fail.
fn bounded_push_vs_final_drain(recheck: bool) {
    use loom::sync::Mutex;
    use std::collections::VecDeque;
    use troupe::loom_exports::{ActorState, CLOSED, STOPPED};
    model(move || {
        let st = Arc::new(ActorState::new_scheduled());
        let ring = Arc::new(Mutex::new(VecDeque::new()));
        let dropped = Arc::new(AtomicUsize::new(0));
        let sender = {
            let (st, ring, dropped) = (st.clone(), ring.clone(), dropped.clone());
            thread::spawn(move || {
                if st.load() & CLOSED != 0 {
                    return 0;
                }
                ring.lock().unwrap().push_back(1u32);
                let prev = st.notify_bits();
                if recheck && prev & STOPPED != 0 {
                    while ring.lock().unwrap().pop_front().is_some() {
                        dropped.fetch_add(1, Ordering::SeqCst);
                    }
                }
                1
            })
        };
        // The spawner holds the task and finalizes the actor.
        st.mark_stopped();
        while ring.lock().unwrap().pop_front().is_some() {
            dropped.fetch_add(1, Ordering::SeqCst);
        }
        let accepted = sender.join().unwrap();
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            accepted,
            "an accepted message was stranded in the bounded ring"
        );
        assert!(ring.lock().unwrap().is_empty());
    });
}

#[test]
fn bounded_push_racing_the_final_drain_is_counted() {
    bounded_push_vs_final_drain(true);
}

#[test]
#[should_panic(expected = "stranded")]
fn mutation_bounded_push_without_recheck_is_caught() {
    bounded_push_vs_final_drain(false);
}
