//! Message limits: at most N pending per subscriber; drop, redirect and
//! reject, each counted exactly; slots come back when the message is handled
//! or dropped undelivered.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;
use troupe::channel::Channel;
use troupe::limits::{LimitPolicy, Limited, MessageLimit};
use troupe::mchain::{MChain, Receive};
use troupe::{Actor, ActorSystem, Context, ReplyTo, SendError};

const T: Duration = Duration::from_secs(10);

enum SlowMsg {
    Work(Limited<Arc<u64>>),
    Count(ReplyTo<(u64, usize)>),
}

impl From<Limited<Arc<u64>>> for SlowMsg {
    fn from(l: Limited<Arc<u64>>) -> Self {
        SlowMsg::Work(l)
    }
}

/// Blocks in its first message (it meets the test at `entered`, then waits
/// for `release`), so the rest pile up.
struct Slow {
    gate: Option<Gate>,
    handled: u64,
    max_seen_pending: Arc<AtomicUsize>,
    limit: MessageLimit<Arc<u64>>,
}

impl Actor for Slow {
    type Msg = SlowMsg;
    fn handle(&mut self, msg: SlowMsg, _ctx: &mut Context<'_, Self>) {
        match msg {
            SlowMsg::Work(w) => {
                if let Some(g) = self.gate.take() {
                    g.entered.wait();
                    g.release.wait();
                }
                self.max_seen_pending
                    .fetch_max(self.limit.stats().pending, Ordering::Relaxed);
                self.handled += 1;
                drop(w);
            }
            SlowMsg::Count(r) => {
                r.reply((self.handled, self.limit.stats().pending));
            }
        }
    }
}

#[derive(Clone)]
struct Gate {
    entered: Arc<Barrier>,
    release: Arc<Barrier>,
}

impl Gate {
    fn new() -> Self {
        Gate {
            entered: Arc::new(Barrier::new(2)),
            release: Arc::new(Barrier::new(2)),
        }
    }
}

#[test]
fn drop_policy_keeps_at_most_n_pending_and_counts_the_rest() {
    let system = ActorSystem::builder().threads(2).build();
    let channel: Channel<u64> = Channel::new();
    let limit = MessageLimit::new(10, LimitPolicy::Drop);
    let gate = Gate::new();
    let max_seen = Arc::new(AtomicUsize::new(0));
    let slow = system.spawn(Slow {
        gate: Some(gate.clone()),
        handled: 0,
        max_seen_pending: max_seen.clone(),
        limit: limit.clone(),
    });
    channel.subscribe(limit.wrap(slow.recipient_for::<Limited<Arc<u64>>>()));
    // While the actor is stuck on its first message, publish 1,000.
    for n in 0..1_000 {
        channel.publish(n);
    }
    let s = limit.stats();
    assert_eq!(s.pending, 10);
    assert_eq!(s.accepted, 10);
    assert_eq!(s.dropped, 990);
    assert_eq!(s.accepted + s.dropped, 1_000);
    gate.entered.wait();
    gate.release.wait();
    let (handled, pending) = slow.ask(SlowMsg::Count, T).unwrap();
    assert_eq!((handled, pending), (10, 0), "slots came back as handled");
    assert!(max_seen.load(Ordering::Relaxed) <= 10);
    // Room again.
    channel.publish(1_000);
    assert_eq!(limit.stats().accepted, 11);
}

#[test]
fn redirect_policy_sends_the_overflow_elsewhere() {
    let main = MChain::unbounded();
    let overflow = MChain::unbounded();
    let limit = MessageLimit::new(3, LimitPolicy::Redirect(overflow.recipient()));
    let r = limit.wrap(main.recipient());
    for n in 0..10u32 {
        r.send(n).unwrap();
    }
    let s = limit.stats();
    assert_eq!((s.accepted, s.redirected, s.pending), (3, 7, 3));
    let mut got = Vec::new();
    overflow.receive(Receive::new().no_wait(), |n| got.push(n));
    assert_eq!(got, (3..10).collect::<Vec<_>>());
    // Unwrapping gives the slot back.
    let first: Limited<u32> = main.try_recv().unwrap();
    assert_eq!(first.into_inner(), 0);
    assert_eq!(limit.stats().pending, 2);
}

#[test]
fn reject_policy_hands_the_message_back() {
    let main = MChain::unbounded();
    let limit = MessageLimit::new(2, LimitPolicy::Reject);
    let r = limit.wrap(main.recipient());
    r.send("a").unwrap();
    r.send("b").unwrap();
    assert!(matches!(r.send("c"), Err(SendError::Full("c"))));
    assert_eq!(limit.stats().rejected, 1);
    drop(main.try_recv());
    r.send("d").unwrap();
    assert_eq!(limit.stats().accepted, 3);
}

#[test]
fn undelivered_messages_give_their_slot_back() {
    let closed = MChain::unbounded();
    closed.close(troupe::mchain::Close::DropContent);
    let limit = MessageLimit::new(1, LimitPolicy::Reject);
    let r = limit.wrap(closed.recipient());
    assert!(matches!(r.send(5u8), Err(SendError::Closed(5))));
    assert_eq!(limit.stats().pending, 0);

    // Left in a stopped actor's mailbox: dropped, slot returned.
    let system = ActorSystem::builder().threads(1).build();
    let limit = MessageLimit::new(100, LimitPolicy::Reject);
    let gate = Gate::new();
    let slow = system.spawn(Slow {
        gate: Some(gate.clone()),
        handled: 0,
        max_seen_pending: Arc::new(AtomicUsize::new(0)),
        limit: limit.clone(),
    });
    let r = limit.wrap(slow.recipient_for::<Limited<Arc<u64>>>());
    for n in 0..50 {
        r.send(Arc::new(n)).unwrap();
    }
    gate.entered.wait();
    slow.kill();
    gate.release.wait();
    slow.join();
    assert_eq!(limit.stats().pending, 0);
}

#[test]
fn concurrent_senders_never_exceed_the_limit() {
    let sink = MChain::unbounded();
    let limit = MessageLimit::new(64, LimitPolicy::Drop);
    let r = limit.wrap(sink.recipient());
    const P: usize = 4;
    const N: u64 = 20_000;
    let max_len = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..P {
            let r = r.clone();
            s.spawn(move || {
                for n in 0..N {
                    let _ = r.send(n);
                }
            });
        }
        // A consumer that frees slots as it goes.
        let (sink, limit, max_len) = (&sink, &limit, &max_len);
        s.spawn(move || loop {
            max_len.fetch_max(limit.stats().pending, Ordering::Relaxed);
            let st = limit.stats();
            if st.accepted + st.dropped == P as u64 * N && st.pending == 0 {
                break;
            }
            while let Some(m) = sink.try_recv() {
                drop(m);
            }
            std::thread::yield_now();
        });
    });
    let s = limit.stats();
    assert_eq!(
        s.accepted + s.dropped,
        P as u64 * N,
        "every message counted once"
    );
    assert!(max_len.load(Ordering::Relaxed) <= 64);
}
