//! Timers: delayed and periodic sends to actors, channels and mchains;
//! cancellation by handle and by drop; 100,000 pending timers in bounded
//! memory, fired in deadline order; cancelled timers do not pile up.
//!
//! The timer thread is process-wide and this binary measures the heap, so
//! the tests here run one at a time (`serial()`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use troupe::channel::Channel;
use troupe::mchain::{MChain, Receive, ReceiveStatus, RecvError};
use troupe::timer::{self, send_at, send_delayed, send_periodic};
use troupe::{Actor, ActorSystem, Context};

/// Counts live heap bytes.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

const T: Duration = Duration::from_secs(10);

struct Sink {
    out: MChain<u32>,
}

impl Actor for Sink {
    type Msg = u32;
    fn handle(&mut self, n: u32, _ctx: &mut Context<'_, Self>) {
        let _ = self.out.send(n);
    }
}

#[test]
fn delayed_send_to_actor_channel_and_chain() {
    let _g = serial();
    let system = ActorSystem::builder().threads(1).build();
    let out = MChain::unbounded();
    let actor = system.spawn(Sink { out: out.clone() });
    let channel: Channel<u32> = Channel::new();
    let from_channel = MChain::unbounded();
    channel.subscribe(from_channel.recipient());

    let t0 = Instant::now();
    let d = Duration::from_millis(30);
    let _a = send_delayed(&actor, d, 1);
    let _c = send_delayed(&channel, d, 2);
    let _m = send_delayed(&out, d, 3);
    let mut got = vec![out.recv_timeout(T).unwrap(), out.recv_timeout(T).unwrap()];
    got.sort();
    assert_eq!(got, vec![1, 3]);
    assert_eq!(*from_channel.recv_timeout(T).unwrap(), 2);
    assert!(t0.elapsed() >= d, "fired early: {:?}", t0.elapsed());
    assert_eq!(
        out.recv_timeout(Duration::from_millis(50)),
        Err(RecvError::Timeout)
    );
}

#[test]
fn cancel_and_drop_prevent_firing() {
    let _g = serial();
    let out = MChain::unbounded();
    let cancelled = send_delayed(&out, Duration::from_millis(20), 1u32);
    assert!(cancelled.is_active());
    assert!(cancelled.cancel());
    assert!(!cancelled.cancel(), "already cancelled");
    assert!(!cancelled.is_active());
    drop(send_delayed(&out, Duration::from_millis(20), 2u32));
    let kept = send_delayed(&out, Duration::from_millis(20), 3u32);
    send_delayed(&out, Duration::from_millis(20), 4u32).detach();
    let mut got = vec![out.recv_timeout(T).unwrap(), out.recv_timeout(T).unwrap()];
    got.sort();
    assert_eq!(got, vec![3, 4]);
    assert!(!kept.cancel(), "a fired one-shot cannot be cancelled");
    assert_eq!(
        out.recv_timeout(Duration::from_millis(60)),
        Err(RecvError::Timeout)
    );
}

#[test]
fn periodic_ticks_on_a_fixed_grid_until_cancelled() {
    let _g = serial();
    let out = MChain::unbounded();
    let period = Duration::from_millis(10);
    let t0 = Instant::now();
    let handle = send_periodic(&out, period, period, ());
    const TICKS: u32 = 30;
    for k in 1..=TICKS {
        out.recv_timeout(T).unwrap();
        // Never early: tick k is due at t0 + k * period at the soonest.
        assert!(t0.elapsed() >= period * k, "tick {k} early");
    }
    // No drift: a re-arm from "now" would add the firing latency every
    // tick; the grid keeps 30 ticks within 30 periods plus one latency.
    // (Generous bound for a loaded 2-core machine.)
    assert!(t0.elapsed() < period * TICKS + Duration::from_secs(2));
    drop(handle);
    let r = out.receive(
        Receive::new().empty_timeout(Duration::from_millis(50)),
        |_| (),
    );
    assert!(
        r.extracted <= 1,
        "at most a tick in flight at cancel: {}",
        r.extracted
    );
    assert_eq!(r.status, ReceiveStatus::EmptyTimeout);
}

#[test]
fn periodic_stops_when_the_target_stops() {
    let _g = serial();
    let system = ActorSystem::builder().threads(1).build();
    let out = MChain::unbounded();
    let actor = system.spawn(Sink { out: out.clone() });
    let handle = send_periodic(&actor, Duration::ZERO, Duration::from_millis(2), 7u32);
    assert_eq!(out.recv_timeout(T), Ok(7));
    actor.stop();
    actor.join();
    let deadline = Instant::now() + T;
    while handle.is_active() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(!handle.is_active(), "the timer noticed its target stopped");
}

#[test]
fn hundred_thousand_pending_timers_cost_bounded_memory_and_fire_in_order() {
    let _g = serial();
    const N: u32 = 100_000;
    let out: MChain<u32> = MChain::unbounded();
    // Deadlines spread over 400 ms, in a scrambled order, with many ties.
    let offsets: Vec<u64> = (0..N as u64)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 7) % 400)
        .collect();
    let recipient: troupe::Recipient<u32> = out.recipient();
    // How far ahead to put the deadlines so that all N are scheduled before
    // the first fires (memory is measured then): 600 ms, or more where
    // scheduling is slow (a sanitizer, a loaded machine), from the time
    // 1,000 already-due timers take to schedule here.
    let probe: MChain<u32> = MChain::unbounded();
    let probe_to: troupe::Recipient<u32> = probe.recipient();
    let t0 = Instant::now();
    for i in 0..1_000 {
        send_at(&probe_to, Instant::now(), i).detach();
    }
    let lead = Duration::from_millis(600).max(t0.elapsed() * (N / 1_000) * 4);
    let r = probe.receive(Receive::new().handle_n(1_000).total_time(T), |_| {});
    assert_eq!(r.status, ReceiveStatus::HandledLimit);
    let before = LIVE.load(Ordering::Relaxed);
    let base = Instant::now() + lead;
    let handles: Vec<_> = (0..N)
        .map(|i| {
            send_at(
                &recipient,
                base + Duration::from_millis(offsets[i as usize]),
                i,
            )
        })
        .collect();
    let scheduled_in = base.saturating_duration_since(Instant::now());
    let bytes = LIVE.load(Ordering::Relaxed) - before;
    let handles_bytes =
        (handles.capacity() * std::mem::size_of::<troupe::timer::TimerHandle>()) as isize;
    let per_timer = (bytes - handles_bytes) as f64 / N as f64;
    println!("{per_timer:.0} bytes per pending timer");
    assert!(
        scheduled_in > Duration::ZERO,
        "scheduling took too long to measure memory before firing"
    );
    assert!(per_timer < 320.0, "{per_timer:.0} bytes per pending timer");
    for h in handles {
        h.detach();
    }

    let mut got = Vec::with_capacity(N as usize);
    // Firing waits out the lead and the 400 ms spread; a sanitizer slows
    // delivery of the 100,000 as much as it slowed scheduling, so the wait
    // grows with the measured lead.
    let wait = T + lead * 4;
    let r = out.receive(Receive::new().handle_n(N as usize).total_time(wait), |i| {
        got.push(i)
    });
    assert_eq!(r.status, ReceiveStatus::HandledLimit);
    // Deadline order; equal deadlines in creation order.
    let mut expected: Vec<u32> = (0..N).collect();
    expected.sort_by_key(|&i| (offsets[i as usize], i));
    assert!(got == expected, "timers fired out of order");
    // The heap is empty again and its memory mostly returned.
    let deadline = Instant::now() + T;
    while timer::stats().queued > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(timer::stats().queued, 0);
}

#[test]
fn cancelled_timers_do_not_pile_up() {
    let _g = serial();
    let out: MChain<u32> = MChain::unbounded();
    let r: troupe::Recipient<u32> = out.recipient();
    // The state-machine pattern at its worst: re-arm a one-hour timeout
    // again and again. Only one is live; the heap must not keep the rest.
    let mut live = send_delayed(&r, Duration::from_secs(3600), 0);
    let mut max_queued = 0;
    for i in 0..200_000u32 {
        live = send_delayed(&r, Duration::from_secs(3600), i);
        if i % 1000 == 0 {
            max_queued = max_queued.max(timer::stats().queued);
        }
    }
    drop(live);
    assert!(max_queued <= 4096, "queued entries grew to {max_queued}");
    assert!(out.is_empty());
}

#[test]
fn timers_scheduled_from_many_threads_all_fire() {
    let _g = serial();
    let out: MChain<u32> = MChain::unbounded();
    let fired = Arc::new(std::sync::atomic::AtomicU32::new(0));
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let out = out.clone();
            s.spawn(move || {
                for i in 0..2_500u32 {
                    send_delayed(&out, Duration::from_millis((i % 20) as u64), t * 2_500 + i)
                        .detach();
                }
            });
        }
    });
    let mut sum = 0u64;
    let r = out.receive(Receive::new().handle_n(10_000).total_time(T), |i| {
        sum += i as u64;
        fired.fetch_add(1, Ordering::Relaxed);
    });
    assert_eq!(r.handled, 10_000);
    assert_eq!(sum, 10_000 * 9_999 / 2);
}

#[test]
fn a_panicking_delivery_does_not_stop_the_timer_thread() {
    let _g = serial();
    let bomb = troupe::Recipient::from_fn(|_: u8| panic!("deliberate panic in a timer"));
    send_at(bomb, Instant::now(), 0u8).detach();
    let out = MChain::unbounded();
    let _t = send_delayed(&out, Duration::from_millis(10), 1u8);
    assert_eq!(out.recv_timeout(T), Ok(1));
}
