//! Channels: every subscriber gets every message (counted exactly), filters,
//! unsubscribe, pruning of stopped subscribers, subscribers on different
//! dispatchers, named lookup, and no copy of large messages.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use troupe::channel::Channel;
use troupe::mchain::{MChain, Receive, ReceiveStatus};
use troupe::{Actor, ActorSystem, Context, ReplyTo, SpawnOptions};

const T: Duration = Duration::from_secs(10);

/// A large message: if it were copied per subscriber, the address would differ.
struct Frame {
    seq: u64,
    pixels: Vec<u8>,
}

enum CounterMsg {
    Frame(Arc<Frame>),
    Get(ReplyTo<(u64, u64, u64)>),
}

impl From<Arc<Frame>> for CounterMsg {
    fn from(f: Arc<Frame>) -> Self {
        CounterMsg::Frame(f)
    }
}

/// Counts frames, checks they arrive in order, and sums their sequence numbers.
struct Counter {
    count: u64,
    sum: u64,
    next: u64,
    out_of_order: u64,
}

impl Counter {
    fn new() -> Self {
        Counter {
            count: 0,
            sum: 0,
            next: 0,
            out_of_order: 0,
        }
    }
}

impl Actor for Counter {
    type Msg = CounterMsg;
    fn handle(&mut self, msg: CounterMsg, _ctx: &mut Context<'_, Self>) {
        match msg {
            CounterMsg::Frame(f) => {
                self.count += 1;
                self.sum += f.seq;
                if f.seq != self.next {
                    self.out_of_order += 1;
                }
                self.next = f.seq + 1;
            }
            CounterMsg::Get(r) => {
                r.reply((self.count, self.sum, self.out_of_order));
            }
        }
    }
}

fn frame(seq: u64) -> Frame {
    Frame {
        seq,
        pixels: vec![0u8; 16],
    }
}

#[test]
fn every_subscriber_gets_every_message_in_order() {
    let system = ActorSystem::builder().threads(2).build();
    let channel: Channel<Frame> = Channel::new();
    let actors: Vec<_> = (0..10).map(|_| system.spawn(Counter::new())).collect();
    for a in &actors {
        channel.subscribe_actor(a);
    }
    assert_eq!(channel.subscribers(), 10);
    const N: u64 = 2_000;
    let mut delivered = 0;
    for seq in 0..N {
        delivered += channel.publish(frame(seq));
    }
    assert_eq!(delivered, 10 * N as usize);
    for a in &actors {
        let (count, sum, ooo) = a.ask(CounterMsg::Get, T).unwrap();
        assert_eq!(count, N);
        assert_eq!(sum, N * (N - 1) / 2);
        assert_eq!(ooo, 0, "per-subscriber order is publishing order");
    }
}

#[test]
fn concurrent_publishers_deliver_exactly_once_each() {
    let system = ActorSystem::builder().threads(2).build();
    let channel: Channel<Frame> = Channel::new();
    let chain = MChain::unbounded();
    let actor = system.spawn(Counter::new());
    channel.subscribe_actor(&actor);
    channel.subscribe(chain.recipient());
    const P: u64 = 4;
    const N: u64 = 5_000;
    std::thread::scope(|s| {
        for p in 0..P {
            let channel = channel.clone();
            s.spawn(move || {
                for i in 0..N {
                    channel.publish(frame(p * N + i));
                }
            });
        }
    });
    let total = P * N;
    let expected_sum = total * (total - 1) / 2;
    let (count, sum, _) = actor.ask(CounterMsg::Get, T).unwrap();
    assert_eq!((count, sum), (total, expected_sum));
    let mut chain_sum = 0;
    let r = chain.receive(
        Receive::new().extract_n(total as usize).total_time(T),
        |f| {
            chain_sum += f.seq;
        },
    );
    assert_eq!(r.extracted, total as usize);
    assert_eq!(chain_sum, expected_sum);
    assert!(chain.is_empty());
}

#[test]
fn large_messages_are_shared_not_copied() {
    let channel: Channel<Frame> = Channel::new();
    let chains: Vec<MChain<Arc<Frame>>> = (0..5).map(|_| MChain::unbounded()).collect();
    for c in &chains {
        channel.subscribe(c.recipient());
    }
    let big = Arc::new(Frame {
        seq: 7,
        pixels: vec![1u8; 1 << 20],
    });
    let addr = big.pixels.as_ptr();
    assert_eq!(channel.publish_arc(big.clone()), 5);
    // Five subscribers + our handle: one allocation, six references.
    assert_eq!(Arc::strong_count(&big), 6);
    for c in &chains {
        let got = c.try_recv().unwrap();
        assert_eq!(got.pixels.as_ptr(), addr);
    }
}

#[test]
fn filters_select_messages_per_subscriber() {
    let channel: Channel<u64> = Channel::new();
    let even = MChain::unbounded();
    let all = MChain::unbounded();
    let big = MChain::unbounded();
    channel.subscribe_filtered(even.recipient(), |n: &u64| n % 2 == 0);
    channel.subscribe(all.recipient());
    channel.subscribe_filtered(big.recipient(), |n: &u64| *n >= 90);
    for n in 0..100u64 {
        channel.publish(n);
    }
    let drain = |c: &MChain<Arc<u64>>| {
        let mut v = Vec::new();
        c.receive(Receive::new().no_wait(), |n| v.push(*n));
        v
    };
    assert_eq!(drain(&even), (0..100).step_by(2).collect::<Vec<_>>());
    assert_eq!(drain(&all), (0..100).collect::<Vec<_>>());
    assert_eq!(drain(&big), (90..100).collect::<Vec<_>>());
}

#[test]
fn unsubscribe_stops_delivery() {
    let channel: Channel<u32> = Channel::new();
    let a = MChain::unbounded();
    let b = MChain::unbounded();
    let sub_a = channel.subscribe(a.recipient());
    let _sub_b = channel.subscribe(b.recipient());
    channel.publish(1);
    assert!(sub_a.unsubscribe());
    assert!(!sub_a.unsubscribe(), "second unsubscribe is a no-op");
    channel.publish(2);
    assert_eq!(a.len(), 1);
    assert_eq!(b.len(), 2);
    assert_eq!(channel.subscribers(), 1);
}

#[test]
fn stopped_subscribers_are_pruned() {
    let system = ActorSystem::builder().threads(2).build();
    let channel: Channel<Frame> = Channel::new();
    let live = system.spawn(Counter::new());
    let doomed = system.spawn(Counter::new());
    channel.subscribe_actor(&live);
    channel.subscribe_actor(&doomed);
    doomed.stop();
    doomed.join();
    assert_eq!(channel.publish(frame(0)), 1);
    assert_eq!(channel.failed_deliveries(), 1);
    assert_eq!(channel.subscribers(), 1, "the stopped actor was removed");
    assert_eq!(channel.publish(frame(1)), 1);
    assert_eq!(channel.failed_deliveries(), 1);
}

#[test]
fn subscribers_on_different_dispatchers() {
    let system = ActorSystem::builder().threads(2).build();
    let other = ActorSystem::builder().threads(1).build();
    let group = system.one_thread("channel-group");
    let channel: Channel<Frame> = Channel::named("channels-test-dispatchers");
    let actors = vec![
        system.spawn(Counter::new()),
        system.spawn_with(Counter::new(), SpawnOptions::new().dedicated_thread()),
        system.spawn_with(Counter::new(), SpawnOptions::new().dispatcher(&group)),
        other.spawn(Counter::new()),
    ];
    for a in &actors {
        channel.subscribe_actor(a);
    }
    let chain = MChain::unbounded();
    channel.subscribe(chain.recipient());
    const N: u64 = 1_000;
    for seq in 0..N {
        assert_eq!(channel.publish(frame(seq)), actors.len() + 1);
    }
    for a in &actors {
        assert_eq!(a.ask(CounterMsg::Get, T).unwrap(), (N, N * (N - 1) / 2, 0));
    }
    let r = chain.receive(Receive::new().handle_n(N as usize).total_time(T), |_| ());
    assert_eq!(r.status, ReceiveStatus::HandledLimit);
}

#[test]
fn named_channels_are_per_name_and_type_and_forgotten_when_unused() {
    let a: Channel<u32> = Channel::named("channels-test-named");
    let b: Channel<u32> = Channel::named("channels-test-named");
    let other_type: Channel<String> = Channel::named("channels-test-named");
    assert_eq!(a, b);
    assert_eq!(a.name(), "channels-test-named");
    let chain = MChain::unbounded();
    b.subscribe(chain.recipient());
    assert_eq!(a.publish(5), 1);
    assert_eq!(other_type.publish("x".into()), 0);
    let anon: Channel<u32> = Channel::new();
    assert!(anon.name().starts_with("<channel:id="));
    drop((a, b));
    let fresh: Channel<u32> = Channel::named("channels-test-named");
    assert_eq!(
        fresh.subscribers(),
        0,
        "a new channel once the old one was dropped"
    );
}

#[test]
fn a_channel_is_a_recipient_and_can_chain() {
    let upstream: Channel<u64> = Channel::new();
    let downstream: Channel<u64> = Channel::new();
    upstream.subscribe(downstream.arc_recipient());
    let chain = MChain::unbounded();
    downstream.subscribe(chain.recipient());
    upstream.publish(9);
    // As a Recipient<u64> (a timer's or an actor's output target).
    let r = downstream.recipient();
    r.send(10).unwrap();
    let got: Vec<u64> = std::iter::from_fn(|| chain.try_recv().map(|a| *a)).collect();
    assert_eq!(got, vec![9, 10]);
}

#[test]
fn subscribing_while_publishing_is_safe() {
    let channel: Channel<u64> = Channel::new();
    let hits = Arc::new(AtomicU64::new(0));
    std::thread::scope(|s| {
        let c = channel.clone();
        s.spawn(move || {
            for n in 0..20_000 {
                c.publish(n);
            }
        });
        for _ in 0..200 {
            let hits = hits.clone();
            let sub = channel.subscribe(troupe::Recipient::from_fn(move |_n: Arc<u64>| {
                hits.fetch_add(1, Ordering::Relaxed);
            }));
            sub.unsubscribe();
        }
    });
    assert_eq!(channel.subscribers(), 0);
    assert_eq!(channel.published(), 20_000);
}
