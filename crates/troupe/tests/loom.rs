//! Loom models of the lock-free parts: the unbounded mailbox, whose tail word
//! also holds the actor's state bits, and the protocol built on it (a push
//! that finds the actor idle schedules it; the worker releases the actor only
//! when nothing was claimed since it looked): no lost wake-up, never two
//! consumers, no message stranded, none accepted after close. Run with:
//!
//! `RUSTFLAGS="--cfg loom" cargo test -p troupe --test loom --release`
//!
//! Under `cfg(loom)` the mailbox blocks hold 2 slots, so these small models
//! cross block boundaries and exercise block installation, the walk of a
//! sender whose claim lies past `block_tail`, and recycling.
//!
//! Each protocol step of the unbounded mailbox has a model and a deliberate
//! mutation of that step (`Mutation`, compiled only under `cfg(loom)`) that
//! the model must catch:
//! * the claim across a block boundary: `NoWalkBack`;
//! * a walker appending the block it lost a link race with: `AppendByStore`;
//! * recycling a drained block: `RecycleEarly`;
//! * close against send: `CloseIndexFromLoad`;
//! * the idle-to-scheduled decision: `ScheduleWithoutRace` (against a
//!   send, and against a stop request), `ReleaseKeepsEpoch` (a release
//!   that fails against a claim).
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use troupe::loom_exports::{Idle, Mutation, ParkMutation, Release, Unbounded, Unpark, STOP_DRAIN};

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

/// Two producers of two messages each (four slots: two blocks) against a
/// consumer that pops while they push: the second claim of either producer
/// lies past the first block, so one of them walks, links the next block
/// and moves `block_tail`, while the other may not have found the first
/// block yet: it then finds `block_tail` past its block and walks back.
fn two_producers_fifo_and_exact(mutation: Mutation) {
    model(move || {
        let q = Arc::new(Unbounded::with_mutation(mutation));
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

#[test]
fn mailbox_two_producers_fifo_and_exact() {
    two_producers_fifo_and_exact(Mutation::None);
}

#[test]
#[should_panic(expected = "passed its block")]
fn mutation_a_sender_not_walking_back_to_its_block_is_caught() {
    two_producers_fifo_and_exact(Mutation::NoWalkBack);
}

/// A link race at two blocks at once: block 0 is full (slots 0 and 1),
/// one producer claims a slot in block 1 and the other two slots, the
/// second in block 2. Both may find block 0's `next` null and grow; the
/// loser appends its block further down, walking with loads, while the
/// winner (or the other producer) links block 2 on the same `next`. The
/// appended block must not push out a block that holds a claimed slot:
/// `AppendByStore` links with a store and loses a message.
fn append_against_a_grow(mutation: Mutation) {
    model(move || {
        let q = Arc::new(Unbounded::with_mutation(mutation));
        q.push((2, 0)).unwrap();
        q.push((2, 1)).unwrap();
        let producers: Vec<_> = [1usize, 2]
            .into_iter()
            .enumerate()
            .map(|(p, n)| {
                let q = q.clone();
                thread::spawn(move || {
                    for i in 0..n {
                        q.push((p, i)).unwrap();
                    }
                })
            })
            .collect();
        for p in producers {
            p.join().unwrap();
        }
        let mut next = [0usize; 3];
        let mut got = 0;
        // SAFETY: this thread is the only consumer.
        while let Some((p, i)) = unsafe { q.pop() } {
            assert_eq!(next[p], i, "FIFO per producer");
            next[p] += 1;
            got += 1;
        }
        assert_eq!(got, 5, "lost or duplicated");
        assert!(q.is_empty());
    });
}

#[test]
fn an_append_never_unlinks_a_block() {
    append_against_a_grow(Mutation::None);
}

#[test]
#[should_panic(expected = "lost or duplicated")]
fn mutation_an_append_by_store_is_caught() {
    append_against_a_grow(Mutation::AppendByStore);
}

/// Recycling: a producer claims slot 2 (the second block) and loads
/// `block_tail` (the first block) while the other producer fills the first
/// block (slots 0 and 1), claims slot 3, links the second block and moves
/// `block_tail`;
/// the consumer drains the first block and recycles it. It may do so only
/// once the sender still walking from it has written its slot (the
/// released index). `RecycleEarly` recycles as soon as the block is
/// released: loom sees the walker read the block's `start` while the
/// consumer rewrites it.
fn recycle_while_a_sender_walks(mutation: Mutation) {
    model(move || {
        let q = Arc::new(Unbounded::with_mutation(mutation));
        let first = {
            let q = q.clone();
            thread::spawn(move || {
                for i in 0..3u32 {
                    q.push(i).unwrap();
                }
            })
        };
        let walker = {
            let q = q.clone();
            thread::spawn(move || {
                q.push(2u32).unwrap();
            })
        };
        let mut got = 0;
        for _ in 0..3 {
            // SAFETY: this thread is the only consumer.
            if unsafe { q.pop() }.is_some() {
                got += 1;
            }
        }
        first.join().unwrap();
        walker.join().unwrap();
        // SAFETY: as above.
        while unsafe { q.pop() }.is_some() {
            got += 1;
        }
        // A fourth message runs into whatever the recycle left linked.
        q.push(3).unwrap();
        // SAFETY: as above.
        while unsafe { q.pop() }.is_some() {
            got += 1;
        }
        assert_eq!(got, 5, "lost or duplicated");
    });
}

#[test]
fn mailbox_recycles_only_blocks_no_sender_walks() {
    recycle_while_a_sender_walks(Mutation::None);
}

#[test]
#[should_panic(expected = "Causality violation")]
fn mutation_recycling_a_block_a_sender_still_walks_is_caught() {
    recycle_while_a_sender_walks(Mutation::RecycleEarly);
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

/// The idle-to-scheduled decision: the spawner's task releases the actor
/// while two senders claim; each that finds the actor idle races for the
/// task, and exactly one wins. `ScheduleWithoutRace` lets every sender
/// that claimed while idle schedule: two consumers at once.
fn never_loses_a_wakeup_nor_runs_twice(mutation: Mutation) {
    model(move || {
        let q = Arc::new(Unbounded::with_mutation(mutation));
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
fn state_word_never_loses_a_wakeup_nor_runs_twice() {
    never_loses_a_wakeup_nor_runs_twice(Mutation::None);
}

#[test]
#[should_panic(expected = "two consumers at once")]
fn mutation_scheduling_without_the_race_is_caught() {
    never_loses_a_wakeup_nor_runs_twice(Mutation::ScheduleWithoutRace);
}

/// A release that fails because a claim came first: the spawner releases,
/// sender A's claim takes the task (so `SCHEDULED` stays clear through its
/// busy period), A drains and tries to release while sender B claims. B
/// must not take the task A still holds. `ReleaseKeepsEpoch` releases
/// without flipping the epoch: B's word then matches the `released_at` of
/// A's failed attempt, and B runs beside A.
fn a_failed_release_hands_out_no_second_task(mutation: Mutation) {
    /// A turn that checks, when its release fails (it still holds the
    /// task), that no send took a task meanwhile.
    fn turn(q: &Unbounded<u32>, seen: &AtomicUsize, takes: &AtomicUsize) {
        loop {
            // SAFETY: we hold the task (the model's claim).
            while unsafe { q.pop() }.is_some() {
                seen.fetch_add(1, Ordering::SeqCst);
            }
            // An RMW: it reads the latest count.
            let before = takes.fetch_add(0, Ordering::SeqCst);
            // SAFETY: as above.
            match unsafe { q.try_release() } {
                Release::Released => return,
                Release::NotEmpty => {
                    assert_eq!(
                        takes.fetch_add(0, Ordering::SeqCst),
                        before,
                        "two consumers at once: a send took the task a failed release kept"
                    );
                    thread::yield_now();
                }
                Release::Stop(_) => unreachable!("no stop requested in this model"),
            }
        }
    }
    model(move || {
        let q = Arc::new(Unbounded::with_mutation(mutation));
        let seen = Arc::new(AtomicUsize::new(0));
        let takes = Arc::new(AtomicUsize::new(0));
        // The spawner's task, released before anyone sends.
        turn(&q, &seen, &takes);
        let senders: Vec<_> = (0..2)
            .map(|_| {
                let (q, seen, takes) = (q.clone(), seen.clone(), takes.clone());
                thread::spawn(move || {
                    if q.push(1).unwrap() {
                        takes.fetch_add(1, Ordering::SeqCst);
                        turn(&q, &seen, &takes);
                    }
                })
            })
            .collect();
        for s in senders {
            s.join().unwrap();
        }
        assert_eq!(seen.load(Ordering::SeqCst), 2, "a message was stranded");
        assert!(q.is_empty());
    });
}

#[test]
fn a_release_that_loses_to_a_claim_keeps_its_task() {
    a_failed_release_hands_out_no_second_task(Mutation::None);
}

#[test]
#[should_panic(expected = "two consumers at once")]
fn mutation_a_release_that_keeps_the_epoch_is_caught() {
    a_failed_release_hands_out_no_second_task(Mutation::ReleaseKeepsEpoch);
}

/// A worker's turn with stops: as `drain`, and on a stop request the final
/// drain. Returns whether this turn finalized.
fn turn_with_stop(q: &Unbounded<u32>, running: &AtomicBool, seen: &AtomicUsize) -> bool {
    loop {
        assert!(
            !running.swap(true, Ordering::SeqCst),
            "two consumers at once"
        );
        // SAFETY: we own the task, asserted above.
        while unsafe { q.pop() }.is_some() {
            seen.fetch_add(1, Ordering::SeqCst);
        }
        // Before the release: once it succeeds, another thread may hold
        // the task at once.
        running.store(false, Ordering::SeqCst);
        // SAFETY: as above.
        match unsafe { q.try_release() } {
            Release::Released => return false,
            Release::NotEmpty => thread::yield_now(),
            Release::Stop(_) => {
                assert!(
                    !running.swap(true, Ordering::SeqCst),
                    "two consumers at once"
                );
                // SAFETY: as above.
                while unsafe { q.pop_final() }.is_some() {
                    seen.fetch_add(1, Ordering::SeqCst);
                }
                q.mark_stopped();
                running.store(false, Ordering::SeqCst);
                return true;
            }
        }
    }
}

/// A stop request against a waking send, on an idle actor: the request's
/// `fetch_or` decides from `released_at` as a claim does. Exactly one of
/// them takes the task (or the send is refused), the actor is finalized
/// once, and an accepted message is drained. `ScheduleWithoutRace` lets
/// both take it.
fn stop_against_a_waking_send(mutation: Mutation) {
    model(move || {
        let q = Arc::new(Unbounded::with_mutation(mutation));
        let running = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(AtomicUsize::new(0));
        let finalized = Arc::new(AtomicUsize::new(0));
        assert!(!turn_with_stop(&q, &running, &seen), "spawner released");
        let sender = {
            let (q, running, seen, fin) =
                (q.clone(), running.clone(), seen.clone(), finalized.clone());
            thread::spawn(move || match q.push(1) {
                Ok(true) => {
                    if turn_with_stop(&q, &running, &seen) {
                        fin.fetch_add(1, Ordering::SeqCst);
                    }
                    1
                }
                Ok(false) => 1,
                Err(_) => 0,
            })
        };
        if q.request_stop(STOP_DRAIN) && turn_with_stop(&q, &running, &seen) {
            finalized.fetch_add(1, Ordering::SeqCst);
        }
        let accepted = sender.join().unwrap();
        let fin = finalized.load(Ordering::SeqCst);
        assert!(fin <= 1, "two consumers at once: finalized {fin} times");
        assert_eq!(fin, 1, "finalized once");
        assert_eq!(
            seen.load(Ordering::SeqCst),
            accepted,
            "a message was stranded"
        );
    });
}

#[test]
fn a_stop_and_a_waking_send_take_one_task() {
    stop_against_a_waking_send(Mutation::None);
}

#[test]
#[should_panic(expected = "two consumers at once")]
fn mutation_a_stop_and_a_send_both_taking_the_task_is_caught() {
    stop_against_a_waking_send(Mutation::ScheduleWithoutRace);
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
///
/// The same model carries the close mutation: `CloseIndexFromLoad` takes
/// `closed_at` from a load before the closing `fetch_or`, so a claim
/// between the two is accepted but left out of the drain.
fn kill_with_half_written_slot(
    mutation: Mutation,
    drain: unsafe fn(&Unbounded<u32>) -> Option<u32>,
) {
    model(move || {
        let q = Arc::new(Unbounded::with_mutation(mutation));
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
    kill_with_half_written_slot(Mutation::None, |q| unsafe { q.pop_final() });
}

#[test]
#[should_panic(expected = "stranded")]
fn mutation_close_index_read_before_the_close_is_caught() {
    // SAFETY: as above.
    kill_with_half_written_slot(Mutation::CloseIndexFromLoad, |q| unsafe { q.pop_final() });
}

#[test]
#[should_panic(expected = "stranded")]
fn mutation_drain_that_stops_at_a_half_written_slot_is_caught() {
    // SAFETY: as above, only the task holder pops; the mutation is which
    // pop the drain uses, not who calls it.
    kill_with_half_written_slot(Mutation::None, |q| unsafe { q.pop() });
}

/// The bounded mailbox's push against its actor's final drain (issues 13
/// and 24), with the real state word. The ring (crossbeam's `ArrayQueue`)
/// does not run under loom, so a locked queue stands in for it: only its
/// linearizable MPMC push/pop matter to the protocol. Sender: open the push
/// window (refused if closed), push, close the window. Finalizer:
/// `mark_stopped`, then drain until the ring is empty and no window is open.
/// Every send that was accepted must have been drained by then, with
/// nothing left for the sender to do. `wait_for_windows: false` is a drain
/// that stops at the first empty pop, and must fail.
fn bounded_push_vs_final_drain(wait_for_windows: bool) {
    use loom::sync::Mutex;
    use std::collections::VecDeque;
    use troupe::loom_exports::ActorState;
    model(move || {
        let st = Arc::new(ActorState::new_scheduled());
        let ring = Arc::new(Mutex::new(VecDeque::new()));
        let sender = {
            let (st, ring) = (st.clone(), ring.clone());
            thread::spawn(move || {
                if !st.begin_push() {
                    return 0;
                }
                ring.lock().unwrap().push_back(1u32);
                assert!(!st.end_push(), "a finalized actor is never scheduled");
                1
            })
        };
        // The spawner holds the task and finalizes the actor.
        st.mark_stopped();
        let mut drained = 0;
        loop {
            if ring.lock().unwrap().pop_front().is_some() {
                drained += 1;
                continue;
            }
            if !wait_for_windows || !st.sends_in_flight() {
                drained += ring.lock().unwrap().drain(..).count();
                break;
            }
            thread::yield_now();
        }
        let accepted = sender.join().unwrap();
        assert_eq!(
            drained, accepted,
            "an accepted message was stranded in the bounded ring"
        );
    });
}

#[test]
fn bounded_push_racing_the_final_drain_is_counted() {
    bounded_push_vs_final_drain(true);
}

#[test]
#[should_panic(expected = "stranded")]
fn mutation_bounded_drain_not_waiting_for_windows_is_caught() {
    bounded_push_vs_final_drain(false);
}

/// One turn of the bounded model's actor: pop what is there, then release
/// (or look again).
fn bounded_turn(
    st: &troupe::loom_exports::ActorState,
    ring: &loom::sync::Mutex<std::collections::VecDeque<u32>>,
    holders: &AtomicUsize,
    handled: &AtomicUsize,
    empty_first: bool,
) {
    loop {
        while ring.lock().unwrap().pop_front().is_some() {
            handled.fetch_add(1, Ordering::SeqCst);
        }
        let empty = || ring.lock().unwrap().is_empty();
        // Counted out before the release (a send may take the task the
        // instant it succeeds), back in if it fails (the task is still
        // ours: `SCHEDULED` stayed set, so no send can take it).
        holders.fetch_sub(1, Ordering::SeqCst);
        let released = if empty_first {
            st.try_release_mutation_empty_first(empty)
        } else {
            st.try_release(empty)
        };
        if released.is_ok() {
            return;
        }
        assert_eq!(
            holders.fetch_add(1, Ordering::SeqCst),
            0,
            "two tasks at once"
        );
        thread::yield_now();
    }
}

/// The bounded mailbox's release against a send (issue 24): the worker
/// holds the task and releases it when the ring looks empty; the send
/// pushes and schedules the actor if it finds it idle. Exactly one of them
/// ends up handling the message, never both holding the task, and the
/// worker reads nothing after its release. `empty_first` is the mutation
/// that checks the ring before it reads the word, and must lose a wake-up.
fn bounded_release_vs_send(empty_first: bool) {
    use loom::sync::Mutex;
    use std::collections::VecDeque;
    use troupe::loom_exports::ActorState;
    model(move || {
        let st = Arc::new(ActorState::new_scheduled());
        let ring = Arc::new(Mutex::new(VecDeque::new()));
        let holders = Arc::new(AtomicUsize::new(1)); // the worker's task
        let handled = Arc::new(AtomicUsize::new(0));
        let sender = {
            let (st, ring, holders, handled) =
                (st.clone(), ring.clone(), holders.clone(), handled.clone());
            thread::spawn(move || {
                assert!(st.begin_push());
                ring.lock().unwrap().push_back(1u32);
                if st.end_push() {
                    assert_eq!(
                        holders.fetch_add(1, Ordering::SeqCst),
                        0,
                        "two tasks at once"
                    );
                    bounded_turn(&st, &ring, &holders, &handled, empty_first);
                }
            })
        };
        bounded_turn(&st, &ring, &holders, &handled, empty_first);
        sender.join().unwrap();
        assert_eq!(
            handled.load(Ordering::SeqCst),
            1,
            "a wake-up was lost: the message stranded"
        );
    });
}

#[test]
fn bounded_release_never_loses_a_wakeup() {
    bounded_release_vs_send(false);
}

#[test]
#[should_panic(expected = "stranded")]
fn mutation_bounded_release_checking_the_ring_first_is_caught() {
    bounded_release_vs_send(true);
}

/// Parking (`engine/scheduler/park.rs`), with the real `Idle`: a worker
/// that found no work (after a search, if `searching`) registers as a
/// sleeper and re-checks the queue; if that finds nothing it parks (here:
/// returns, and the model counts the wake-ups sent to it). A pusher pushes
/// a stealable task and calls `notify_one`. Either the re-check sees the
/// task or the pusher sees the sleeper and wakes it: a worker that parked
/// with the task unseen and got no wake-up is a lost wake-up. The queue is
/// one flag (`swap` takes the task). (A model that blocks on a loom
/// `Notify` instead turns a lost wake-up into loom's deadlock report, whose
/// unwinding aborts the test binary.)
fn a_parking_worker_gets_the_push(mutation: ParkMutation, searching: bool) {
    model(move || {
        let idle = Arc::new(Idle::with_mutation(2, mutation));
        let woken = std::sync::Arc::new(AtomicUsize::new(0));
        let unparkers = Arc::new(vec![Unpark::Model(woken.clone())]);
        let task = Arc::new(AtomicBool::new(false));
        let worker = {
            let (idle, unparkers, task) = (idle.clone(), unparkers.clone(), task.clone());
            thread::spawn(move || {
                let searching = searching && idle.try_start_searching(2);
                // The search (or the look at the local queue) found nothing...
                if task.swap(false, Ordering::SeqCst) {
                    if searching {
                        idle.found_work(&unparkers);
                    }
                    return true;
                }
                // ...so register, re-check, and park if still nothing.
                idle.prepare_sleep(0, searching);
                if task.swap(false, Ordering::SeqCst) {
                    if idle.cancel_sleep(0) {
                        idle.found_work(&unparkers);
                    }
                    return true;
                }
                false
            })
        };
        // The push. crossbeam's deque publishes with a Release store; here
        // it is a Release swap (an RMW), because with a plain store loom
        // 0.7 reports a lost wake-up for the protocol as written, which
        // the C++ fence rules exclude (two SeqCst fences order either the
        // push before the worker's re-check or its registration before the
        // read of `sleeping`): loom's SeqCst-fence model is weaker than
        // the standard's there. Without the pusher's fence the model still
        // loses the wake-up (the mutation below).
        task.swap(true, Ordering::Release);
        idle.notify_one(&unparkers);
        let found = worker.join().unwrap();
        assert!(
            found || woken.load(Ordering::SeqCst) == 1,
            "lost wake-up: the worker parked with the task unseen and was not woken"
        );
    });
}

#[test]
fn a_parking_worker_never_misses_a_push() {
    a_parking_worker_gets_the_push(ParkMutation::None, false);
}

#[test]
fn a_searcher_that_parks_never_misses_a_push() {
    a_parking_worker_gets_the_push(ParkMutation::None, true);
}

#[test]
#[should_panic(expected = "lost wake-up")]
fn mutation_a_notify_without_the_fence_is_caught() {
    a_parking_worker_gets_the_push(ParkMutation::NotifyWithoutFence, false);
}

/// Pushes that skip their wake-up because a worker searches: worker 0
/// searches while worker 1 sleeps; the pusher pushes two tasks, calling
/// `notify_one` after each. Worker 0 takes at most one task (then runs a
/// handler that does not return within the model: a blocking actor), by
/// its search or by its re-check. Every task must be taken or worker 1
/// woken. The bug this pins (found by the 16x16 chaos soak): a searcher
/// that took its task in the re-check woke nobody, and the second task
/// waited for as long as worker 0's handler ran.
fn skipped_wake_ups_are_made_up(mutation: ParkMutation) {
    model(move || {
        let idle = Arc::new(Idle::with_mutation(2, mutation));
        let woken: Vec<_> = (0..2)
            .map(|_| std::sync::Arc::new(AtomicUsize::new(0)))
            .collect();
        let unparkers = Arc::new(
            woken
                .iter()
                .map(|w| Unpark::Model(w.clone()))
                .collect::<Vec<_>>(),
        );
        // Worker 1 found nothing and parked before the model starts.
        idle.prepare_sleep(1, false);
        let tasks = Arc::new(AtomicUsize::new(0));
        let take = |tasks: &AtomicUsize| {
            let mut n = tasks.load(Ordering::SeqCst);
            while n > 0 {
                match tasks.compare_exchange(n, n - 1, Ordering::SeqCst, Ordering::SeqCst) {
                    Ok(_) => return true,
                    Err(now) => n = now,
                }
            }
            false
        };
        let worker = {
            let (idle, unparkers, tasks) = (idle.clone(), unparkers.clone(), tasks.clone());
            thread::spawn(move || {
                let searching = idle.try_start_searching(2);
                if take(&tasks) {
                    if searching {
                        idle.found_work(&unparkers);
                    }
                    return true;
                }
                idle.prepare_sleep(0, searching);
                if take(&tasks) {
                    if idle.cancel_sleep(0) {
                        idle.found_work(&unparkers);
                    } else {
                        idle.took_work_after_recheck(&unparkers);
                    }
                    return true;
                }
                // Parked: a wake-up sent to it starts the same search over.
                false
            })
        };
        for _ in 0..2 {
            tasks.fetch_add(1, Ordering::Release);
            idle.notify_one(&unparkers);
        }
        let took = worker.join().unwrap();
        let left = tasks.load(Ordering::SeqCst);
        let woke = |i: usize| woken[i].load(Ordering::SeqCst) > 0;
        assert!(
            left == 0 || woke(1) || (!took && woke(0)),
            "stranded: {left} task(s) wait while no idle worker was woken"
        );
    });
}

#[test]
fn skipped_wake_ups_are_made_up_by_the_recheck() {
    skipped_wake_ups_are_made_up(ParkMutation::None);
}

#[test]
#[should_panic(expected = "stranded")]
fn mutation_no_wake_after_the_recheck_is_caught() {
    skipped_wake_ups_are_made_up(ParkMutation::NoWakeAfterRecheck);
}
