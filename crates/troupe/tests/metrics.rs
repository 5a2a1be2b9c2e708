//! Per-actor, per-worker and per-channel metrics against known load: an
//! actor fed a paced stream shows that arrival rate and its handler's
//! service time; one fed faster than it serves shows waiting time and depth
//! growing; counts are exact; metrics off records nothing.

use std::time::{Duration, Instant};
use troupe::channel::Channel;
use troupe::observability::ActorSnapshot;
use troupe::{Actor, ActorSystem, Context, MailboxConfig, Overflow, SpawnOptions};

/// Sleeps for its message's microseconds.
struct Sleeper;

impl Actor for Sleeper {
    type Msg = u64;
    fn handle(&mut self, us: u64, _: &mut Context<'_, Self>) {
        std::thread::sleep(Duration::from_micros(us));
    }
}

/// Sends `n` messages at `per_sec`, paced against absolute deadlines.
fn feed(to: &troupe::ActorRef<Sleeper>, n: u64, per_sec: f64, us: u64) {
    let start = Instant::now();
    for i in 0..n {
        let due = start + Duration::from_secs_f64(i as f64 / per_sec);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        to.tell(us).unwrap();
    }
}

fn find<'a>(all: &'a [ActorSnapshot], name: &str) -> &'a ActorSnapshot {
    all.iter()
        .find(|a| a.name == name)
        .unwrap_or_else(|| panic!("no actor {name} in {all:?}"))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[test]
fn paced_load_shows_its_arrival_rate_and_service_time() {
    let system = ActorSystem::builder()
        .threads(2)
        .metrics_sample_every(16)
        .build();
    let a = system.spawn_with(Sleeper, SpawnOptions::new().name("paced").metrics(true));
    // 500 msgs/s for 1 s, 1 ms of service each: the actor keeps up.
    feed(&a, 500, 500.0, 1000);
    let m = system.metrics();
    let s = find(&m.actors, "paced");
    assert_eq!(s.received, 500);
    assert!(
        (400.0..=560.0).contains(&s.arrival_rate),
        "arrival {}",
        s.arrival_rate
    );
    assert!(
        s.throughput > 350.0 && s.throughput <= s.arrival_rate * 1.01,
        "throughput {}",
        s.throughput
    );
    assert!(s.service.samples >= 25, "500/16 timed: {:?}", s.service);
    let p50 = ms(s.service.p50);
    assert!((0.9..3.0).contains(&p50), "service p50 {p50} ms");
    assert!(
        ms(s.service.mean) >= 1.0,
        "service mean {:?}",
        s.service.mean
    );
    // It keeps up: messages wait far less than the stream lasts.
    assert!(ms(s.waiting.p50) < 20.0, "waiting {:?}", s.waiting);
    system.shutdown();
    let s = find(&system.metrics().actors, "paced").clone();
    assert_eq!((s.received, s.handled, s.mailbox_depth), (500, 500, 0));
    assert!(s.stopped);
    assert!(
        system.metrics().actors.is_empty(),
        "stopped actors are reported once"
    );
}

#[test]
fn waiting_time_and_depth_grow_when_fed_faster_than_served() {
    let system = ActorSystem::builder()
        .threads(2)
        .metrics(true)
        .metrics_sample_every(16)
        .build();
    let a = system.spawn_with(Sleeper, SpawnOptions::new().name("slow"));
    // 20,000 msgs/s for 0.25 s into an actor that serves under 10,000/s
    // (each handler sleeps 100 µs).
    feed(&a, 5000, 20_000.0, 100);
    let mid = find(&system.metrics().actors, "slow").clone();
    assert!(mid.is_buffering(), "{mid:?}");
    assert!(mid.mailbox_depth > 1000, "depth {}", mid.mailbox_depth);
    assert!(mid.arrival_rate > 1.5 * mid.throughput, "{mid:?}");
    // Waiting grew while the stream lasted: samples are taken as the
    // consumer passes them, so the early ones are short and the late long.
    assert!(mid.waiting.samples >= 5, "{:?}", mid.waiting);
    assert!(ms(mid.waiting.max) > 40.0, "waiting {:?}", mid.waiting);
    assert!(
        mid.waiting.max > mid.waiting.p50 + Duration::from_millis(10),
        "{:?}",
        mid.waiting
    );
    assert!(mid.waiting.p99 > 10 * mid.service.p99, "{mid:?}");
    system.shutdown();
    let end = find(&system.metrics().actors, "slow").clone();
    assert_eq!((end.received, end.handled), (5000, 5000));
    assert!(
        end.mailbox_depth_max > 1000,
        "max depth {}",
        end.mailbox_depth_max
    );
    assert!(end.latency.p99 >= end.waiting.p99);
}

#[test]
fn counts_are_exact_under_concurrent_senders() {
    let system = ActorSystem::builder()
        .threads(2)
        .metrics(true)
        .metrics_sample_every(64)
        .build();
    let a = system.spawn(Sleeper);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..5000 {
                    a.tell(0).unwrap();
                }
            });
        }
    });
    system.shutdown();
    let m = system.metrics();
    let s = &m.actors[0];
    assert!(s.name.starts_with("Sleeper#"), "{}", s.name);
    assert_eq!(s.type_name, "Sleeper");
    assert_eq!((s.received, s.handled), (20_000, 20_000));
    // About one in 64 timed: every 64th dequeue (312 or 313, by the
    // actor's phase), plus the messages whose wait was sampled.
    assert!((312..=700).contains(&s.service.samples), "{:?}", s.service);
    // Waits are sampled only while senders send (the senders may finish
    // before the actor first arms its sampler), at most one per period.
    assert!(s.waiting.samples <= 313, "{:?}", s.waiting);
    let tasks: u64 = m.workers.iter().map(|w| w.tasks).sum();
    assert!(tasks > 0, "{:?}", m.workers);
    assert_eq!(m.workers.len(), 2);
    assert!(m.workers.iter().all(|w| w.pool == "troupe-worker"));
}

#[test]
fn metrics_off_records_nothing_and_options_override_the_default() {
    let system = ActorSystem::builder().threads(1).build();
    let off = system.spawn(Sleeper);
    off.tell(0).unwrap();
    let sys_on = ActorSystem::builder().threads(1).metrics(true).build();
    let opted_out = sys_on.spawn_with(Sleeper, SpawnOptions::new().metrics(false));
    opted_out.tell(0).unwrap();
    system.shutdown();
    sys_on.shutdown();
    assert!(system.metrics().actors.is_empty());
    assert!(sys_on.metrics().actors.is_empty());
    assert_eq!(
        system.metrics().workers[0].tasks,
        0,
        "workers count only when on"
    );
    assert!(sys_on.metrics().workers[0].tasks > 0);
}

/// Panics on 0.
struct Fragile;

impl Actor for Fragile {
    type Msg = u32;
    fn handle(&mut self, n: u32, _: &mut Context<'_, Self>) {
        assert!(n != 0, "zero");
    }
}

#[test]
fn drops_and_panics_are_counted() {
    let system = ActorSystem::builder().threads(1).build();
    let gate = system.spawn_with(
        Sleeper,
        SpawnOptions::new()
            .name("full")
            .metrics(true)
            .mailbox(MailboxConfig::bounded(4, Overflow::Reject)),
    );
    gate.tell(200_000).unwrap(); // busy for 200 ms
    std::thread::sleep(Duration::from_millis(50));
    let mut refused = 0;
    for _ in 0..10 {
        if gate.tell(0).is_err() {
            refused += 1;
        }
    }
    assert!(refused >= 6, "refused {refused}");
    let fragile = system.spawn_with(Fragile, SpawnOptions::new().name("fragile").metrics(true));
    fragile.tell(1).unwrap();
    fragile.tell(0).unwrap();
    fragile.tell(2).unwrap();
    system.shutdown();
    let m = system.metrics();
    let full = find(&m.actors, "full");
    assert_eq!(full.dropped_overflow, refused);
    assert_eq!(full.received, 11 - refused);
    let f = find(&m.actors, "fragile");
    assert_eq!(f.panics, 1);
    assert_eq!(f.handled, 2);
    assert_eq!(f.dropped_stopped, 1, "the message after the panic");
}

#[test]
fn watched_channels_count_publishes_and_deliveries() {
    let system = ActorSystem::builder().threads(1).build();
    let frames = Channel::<u64>::named("metrics-test-frames");
    system.watch_channel(&frames);
    struct Sink;
    impl Actor for Sink {
        type Msg = std::sync::Arc<u64>;
        fn handle(&mut self, _: std::sync::Arc<u64>, _: &mut Context<'_, Self>) {}
    }
    let _s1 = frames.subscribe_actor(&system.spawn(Sink));
    let _s2 = frames.subscribe_actor(&system.spawn(Sink));
    for i in 0..10 {
        frames.publish(i);
    }
    let c = &system.metrics().channels[0];
    assert_eq!(c.name, "metrics-test-frames");
    assert_eq!((c.published, c.delivered, c.subscribers), (10, 20, 2));
    drop(frames);
    assert!(
        system.metrics().channels.is_empty(),
        "forgotten once dropped"
    );
}
