//! Tokio dispatchers: actors whose turns run on a tokio runtime's thread.
//! Exact counts, FIFO per sender, async handlers on the runtime's timers
//! and I/O, panics, and shutdown, with the runtime alive and gone.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use troupe::dispatcher::DispatcherKind;
use troupe::{
    Actor, ActorRef, ActorSystem, AskError, Async, AsyncActor, AsyncContext, Context, ReplyTo,
    SpawnOptions,
};

const T: Duration = Duration::from_secs(20);

fn runtime(threads: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("test-io")
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Counts what reached it and checks FIFO per (hop, sender): `next[k]` is
/// the sequence number expected next from key `k`.
struct Sink {
    next: Vec<u64>,
    got: u64,
    out_of_order: u64,
}

enum SinkMsg {
    Item { key: usize, seq: u64 },
    Totals(ReplyTo<(u64, u64)>),
}

impl Actor for Sink {
    type Msg = SinkMsg;
    fn handle(&mut self, msg: SinkMsg, _ctx: &mut Context<'_, Self>) {
        match msg {
            SinkMsg::Item { key, seq } => {
                if self.next[key] != seq {
                    self.out_of_order += 1;
                }
                self.next[key] = seq + 1;
                self.got += 1;
            }
            SinkMsg::Totals(r) => {
                r.reply((self.got, self.out_of_order));
            }
        }
    }
}

/// On the tokio dispatcher: checks FIFO per sender, then forwards each
/// message through `relay` (same dispatcher) to the sink (default pool).
struct Receiver {
    index: usize,
    senders: usize,
    next: Vec<u64>,
    out_of_order: Arc<AtomicU64>,
    relay: ActorRef<Relay>,
    on_runtime: Arc<AtomicU64>,
}

impl Actor for Receiver {
    type Msg = (usize, u64);
    fn handle(&mut self, (sender, seq): (usize, u64), _ctx: &mut Context<'_, Self>) {
        if self.next[sender] != seq {
            self.out_of_order.fetch_add(1, Ordering::Relaxed);
        }
        self.next[sender] = seq + 1;
        if tokio::runtime::Handle::try_current().is_ok() {
            self.on_runtime.fetch_add(1, Ordering::Relaxed);
        }
        let key = self.index * self.senders + sender;
        self.relay.tell((key, seq)).expect("relay alive");
    }
}

struct Relay {
    sink: ActorRef<Sink>,
}

impl Actor for Relay {
    type Msg = (usize, u64);
    fn handle(&mut self, (key, seq): (usize, u64), _ctx: &mut Context<'_, Self>) {
        self.sink
            .tell(SinkMsg::Item { key, seq })
            .unwrap_or_else(|_| panic!("sink alive"));
    }
}

/// A default-pool actor that sends its share when told to.
struct PoolSender {
    id: usize,
    per: u64,
    to: Vec<ActorRef<Receiver>>,
}

impl Actor for PoolSender {
    type Msg = ();
    fn handle(&mut self, _: (), _ctx: &mut Context<'_, Self>) {
        for seq in 0..self.per {
            for r in &self.to {
                r.tell((self.id, seq)).expect("receiver alive");
            }
        }
    }
}

/// Plain threads, default-pool actors and tokio tasks (on the dispatcher's
/// own runtime, so some sends come from its thread outside a turn) send
/// to four receivers on a tokio dispatcher, which forward through a relay
/// on it to a sink on the default pool: every message arrives once, in
/// order per sender, at both hops.
#[test]
fn every_sender_reaches_a_tokio_dispatcher_once_and_in_order() {
    every_sender_reaches_a_dispatcher_on(1);
}

/// The same on a runtime of three workers: the driver task may move from
/// thread to thread between its batches.
#[test]
fn every_sender_reaches_a_dispatcher_on_a_multi_worker_runtime() {
    every_sender_reaches_a_dispatcher_on(3);
}

fn every_sender_reaches_a_dispatcher_on(runtime_threads: usize) {
    const PER: u64 = 1_500;
    const RECEIVERS: usize = 4;
    let (threads, actors, tasks) = (3, 2, 2);
    let senders = threads + actors + tasks;
    let rt = runtime(runtime_threads);
    let system = ActorSystem::builder().threads(2).build();
    let io = system.tokio_dispatcher("io", rt.handle().clone());
    assert_eq!(io.kind(), &DispatcherKind::Tokio);
    assert_eq!(io.threads(), 1);
    let on_io = || SpawnOptions::new().dispatcher(&io);
    let sink = system.spawn(Sink {
        next: vec![0; RECEIVERS * senders],
        got: 0,
        out_of_order: 0,
    });
    let relay = system.spawn_with(Relay { sink: sink.clone() }, on_io());
    let out_of_order = Arc::new(AtomicU64::new(0));
    let on_runtime = Arc::new(AtomicU64::new(0));
    let receivers: Vec<_> = (0..RECEIVERS)
        .map(|index| {
            system.spawn_with(
                Receiver {
                    index,
                    senders,
                    next: vec![0; senders],
                    out_of_order: out_of_order.clone(),
                    relay: relay.clone(),
                    on_runtime: on_runtime.clone(),
                },
                on_io(),
            )
        })
        .collect();
    let pool_senders: Vec<_> = (0..actors)
        .map(|k| {
            system.spawn(PoolSender {
                id: threads + k,
                per: PER,
                to: receivers.clone(),
            })
        })
        .collect();
    let handles: Vec<_> = (0..tasks)
        .map(|k| {
            let to = receivers.clone();
            let id = threads + actors + k;
            rt.spawn(async move {
                for seq in 0..PER {
                    for r in &to {
                        r.tell((id, seq)).expect("receiver alive");
                    }
                    if seq % 64 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    for p in &pool_senders {
        p.tell(()).unwrap();
    }
    std::thread::scope(|s| {
        for id in 0..threads {
            let to = &receivers;
            s.spawn(move || {
                for seq in 0..PER {
                    for r in to {
                        r.tell((id, seq)).expect("receiver alive");
                    }
                }
            });
        }
    });
    for h in handles {
        rt.block_on(h).expect("sender task");
    }
    let want = PER * senders as u64 * RECEIVERS as u64;
    let deadline = std::time::Instant::now() + T;
    let (got, late) = loop {
        let (got, late) = sink.ask(SinkMsg::Totals, T).expect("sink answers");
        if got >= want || std::time::Instant::now() > deadline {
            break (got, late);
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(got, want, "every message once at the sink");
    assert_eq!(late, 0, "FIFO per sender through the relay");
    assert_eq!(out_of_order.load(Ordering::Relaxed), 0, "FIFO per sender");
    assert_eq!(
        on_runtime.load(Ordering::Relaxed),
        want,
        "inside the runtime"
    );
    let report = system.shutdown();
    assert_eq!(report.messages_dropped, 0);
    assert_eq!(report.panics, 0);
    assert!(!report.deadline_passed);
}

/// Awaits the runtime's timer and a UDP round trip on loopback, and says
/// which thread and runtime it ran on.
struct Pinger {
    socket: Option<tokio::net::UdpSocket>,
}

impl AsyncActor for Pinger {
    type Msg = (u32, ReplyTo<(u32, String, tokio::runtime::Id)>);
    async fn handle(&mut self, (n, r): Self::Msg, _ctx: &mut AsyncContext<Self>) {
        tokio::time::sleep(Duration::from_micros(200)).await;
        if self.socket.is_none() {
            self.socket = Some(
                tokio::net::UdpSocket::bind("127.0.0.1:0")
                    .await
                    .expect("bind"),
            );
        }
        let socket = self.socket.as_ref().expect("bound");
        let me = socket.local_addr().expect("address");
        socket.send_to(&n.to_be_bytes(), me).await.expect("send");
        let mut buf = [0u8; 4];
        let (len, _) = socket.recv_from(&mut buf).await.expect("receive");
        assert_eq!(len, 4);
        r.reply((
            u32::from_be_bytes(buf),
            std::thread::current().name().unwrap_or("").to_string(),
            tokio::runtime::Handle::current().id(),
        ));
    }
}

#[test]
fn an_async_actor_awaits_the_runtimes_timers_and_io() {
    let rt = runtime(1);
    let system = ActorSystem::builder().threads(1).build();
    let io = system.tokio_dispatcher("io", rt.handle().clone());
    let pingers: Vec<_> = (0..3)
        .map(|_| {
            system.spawn_with(
                Async::new(Pinger { socket: None }),
                SpawnOptions::new().dispatcher(&io),
            )
        })
        .collect();
    let mut asks = Vec::new();
    for n in 0..300u32 {
        asks.push((n, pingers[n as usize % 3].ask_async(move |r| (n, r))));
    }
    for (n, ask) in asks {
        let (echo, thread, runtime) = ask.wait_timeout(T).expect("a reply");
        assert_eq!(echo, n);
        assert_eq!(thread, "test-io", "on the runtime's thread");
        assert_eq!(runtime, rt.handle().id(), "in the runtime's context");
    }
    let report = system.shutdown();
    assert_eq!((report.messages_dropped, report.panics), (0, 0));
}

/// Counts what it handled and whether its `stopped` hook ran.
struct Counter {
    handled: Arc<AtomicU64>,
    stopped: Arc<AtomicU64>,
}

impl Actor for Counter {
    type Msg = u64;
    fn handle(&mut self, _: u64, _ctx: &mut Context<'_, Self>) {
        self.handled.fetch_add(1, Ordering::Relaxed);
    }
    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {
        self.stopped.fetch_add(1, Ordering::Relaxed);
    }
}

fn counters(
    system: &ActorSystem,
    io: &troupe::dispatcher::Dispatcher,
    n: usize,
) -> (Vec<ActorRef<Counter>>, Arc<AtomicU64>, Arc<AtomicU64>) {
    let handled = Arc::new(AtomicU64::new(0));
    let stopped = Arc::new(AtomicU64::new(0));
    let actors = (0..n)
        .map(|_| {
            system.spawn_with(
                Counter {
                    handled: handled.clone(),
                    stopped: stopped.clone(),
                },
                SpawnOptions::new().dispatcher(io),
            )
        })
        .collect();
    (actors, handled, stopped)
}

/// Messages still queued when shutdown starts are all handled, and every
/// actor's `stopped` hook runs.
#[test]
fn shutdown_drains_every_actor_on_a_tokio_dispatcher() {
    const EACH: u64 = 20_000;
    let rt = runtime(1);
    let system = ActorSystem::builder().threads(1).build();
    let io = system.tokio_dispatcher("io", rt.handle().clone());
    let (actors, handled, stopped) = counters(&system, &io, 8);
    for n in 0..EACH {
        for a in &actors {
            a.tell(n).unwrap();
        }
    }
    let report = system.shutdown_timeout(T);
    assert_eq!(handled.load(Ordering::Relaxed), EACH * 8, "drained");
    assert_eq!(stopped.load(Ordering::Relaxed), 8);
    assert_eq!(report.messages_dropped, 0);
    assert!(!report.deadline_passed);
    assert_eq!(report.actors_unresponsive, 0);
    for a in &actors {
        assert!(!a.is_alive());
    }
}

/// The runtime shuts down while actors on it hold queued messages, and
/// more arrive after: the system's shutdown runs them itself, in time,
/// and drops nothing.
#[test]
fn a_runtime_shut_down_first_does_not_hang_the_system_shutdown() {
    let rt = runtime(1);
    let system = ActorSystem::builder().threads(1).build();
    let io = system.tokio_dispatcher("io", rt.handle().clone());
    let (actors, handled, stopped) = counters(&system, &io, 4);
    for n in 0..5_000 {
        for a in &actors {
            a.tell(n).unwrap();
        }
    }
    rt.shutdown_timeout(T);
    for n in 0..1_000 {
        for a in &actors {
            a.tell(n).unwrap();
        }
    }
    let report = system.shutdown_timeout(T);
    assert!(!report.deadline_passed, "{report}");
    assert_eq!(report.actors_unresponsive, 0);
    assert_eq!(handled.load(Ordering::Relaxed), 6_000 * 4, "drained");
    assert_eq!(stopped.load(Ordering::Relaxed), 4);
    assert_eq!(report.messages_dropped, 0);
}

/// A dispatcher made on a runtime already shut down still drains.
#[test]
fn a_dispatcher_on_a_runtime_already_gone_drains_at_shutdown() {
    let rt = runtime(1);
    let handle = rt.handle().clone();
    drop(rt);
    let system = ActorSystem::builder().threads(1).build();
    let io = system.tokio_dispatcher("io", handle);
    let (actors, handled, stopped) = counters(&system, &io, 2);
    for n in 0..100 {
        actors[n as usize % 2].tell(n).unwrap();
    }
    let report = system.shutdown_timeout(T);
    assert!(!report.deadline_passed, "{report}");
    assert_eq!(handled.load(Ordering::Relaxed), 100);
    assert_eq!(stopped.load(Ordering::Relaxed), 2);
}

struct Fragile;

impl Actor for Fragile {
    type Msg = ReplyTo<u8>;
    fn handle(&mut self, r: ReplyTo<u8>, _ctx: &mut Context<'_, Self>) {
        if std::thread::current().name() == Some("test-io") {
            panic!("on purpose");
        }
        r.reply(0);
    }
}

/// A blocking ask from a handler on the dispatcher.
struct Blocker {
    target: ActorRef<Counter>,
}

impl Actor for Blocker {
    type Msg = ReplyTo<Result<(), AskError>>;
    fn handle(&mut self, r: Self::Msg, _ctx: &mut Context<'_, Self>) {
        // Refused before it is sent: waiting here would stall the
        // runtime's thread.
        let refused = self
            .target
            .ask(|_r: ReplyTo<()>| 1, Duration::from_secs(5))
            .map(|_| ());
        r.reply(refused);
    }
}

/// A panic stops only its actor; a handler there may not block.
#[test]
fn a_panic_stops_only_its_actor_and_handlers_may_not_block() {
    let rt = runtime(1);
    let system = ActorSystem::builder().threads(1).build();
    let io = system.tokio_dispatcher("io", rt.handle().clone());
    let fragile = system.spawn_with(Fragile, SpawnOptions::new().dispatcher(&io));
    let (actors, handled, _) = counters(&system, &io, 1);
    let blocker = system.spawn_with(
        Blocker {
            target: actors[0].clone(),
        },
        SpawnOptions::new().dispatcher(&io),
    );
    assert!(fragile.ask(|r| r, T).is_err());
    assert!(
        matches!(
            fragile.join_timeout(T),
            Some(troupe::StopReason::Panicked(_))
        ),
        "stopped by its panic"
    );
    for n in 0..100 {
        actors[0].tell(n).unwrap();
    }
    assert_eq!(
        blocker.ask(|r| r, T).expect("blocker answers"),
        Err(AskError::WouldBlockWorker)
    );
    let report = system.shutdown_timeout(T);
    assert_eq!(handled.load(Ordering::Relaxed), 100);
    assert_eq!(report.panics, 1);
    assert!(!report.deadline_passed);
}

struct Echo;

impl Actor for Echo {
    type Msg = (u64, ReplyTo<u64>);
    fn handle(&mut self, (n, r): Self::Msg, _ctx: &mut Context<'_, Self>) {
        r.reply(n);
    }
}

/// Round trips, one at a time, so the driver runs out of work and sleeps
/// before nearly every message: a lost wake-up leaves an ask unanswered.
/// Plain threads and tasks on the runtime itself ask at once.
#[test]
fn one_at_a_time_round_trips_are_each_woken() {
    const TRIPS: u64 = 4_000;
    let rt = runtime(1);
    let system = ActorSystem::builder().threads(1).build();
    let io = system.tokio_dispatcher("io", rt.handle().clone());
    let echoes: Vec<_> = (0..3)
        .map(|_| system.spawn_with(Echo, SpawnOptions::new().dispatcher(&io)))
        .collect();
    let tasks: Vec<_> = (0..2)
        .map(|k| {
            let echo = echoes[k].clone();
            rt.spawn(async move {
                for n in 0..TRIPS {
                    let reply = echo.ask_async(|r| (n, r));
                    // Waited off the runtime: the reply comes from its thread.
                    let got = tokio::task::spawn_blocking(move || reply.wait_timeout(T))
                        .await
                        .expect("waiter");
                    assert_eq!(got, Ok(n));
                }
            })
        })
        .collect();
    std::thread::scope(|s| {
        for k in 0..2 {
            let echo = &echoes[2 - k];
            s.spawn(move || {
                for n in 0..TRIPS {
                    assert_eq!(echo.ask(|r| (n, r), T), Ok(n), "round trip {n}");
                }
            });
        }
    });
    for t in tasks {
        rt.block_on(t).expect("task");
    }
    let report = system.shutdown();
    assert_eq!((report.messages_dropped, report.panics), (0, 0));
}

/// Suspended on the runtime's timer when the runtime goes.
struct Napper;

impl AsyncActor for Napper {
    type Msg = ReplyTo<()>;
    async fn handle(&mut self, r: ReplyTo<()>, _ctx: &mut AsyncContext<Self>) {
        r.reply(());
        tokio::time::sleep(Duration::from_secs(3_600)).await;
    }
}

/// An async actor suspended on the runtime's timer when the runtime shuts
/// down: the system's shutdown still ends within its deadline, and says
/// what happened to the actor.
#[test]
fn an_actor_suspended_on_a_runtime_that_goes_does_not_hang_shutdown() {
    let rt = runtime(1);
    let system = ActorSystem::builder().threads(1).build();
    let io = system.tokio_dispatcher("io", rt.handle().clone());
    let napper = system.spawn_with(Async::new(Napper), SpawnOptions::new().dispatcher(&io));
    napper.ask(|r| r, T).expect("started its nap");
    rt.shutdown_timeout(T);
    let report = system.shutdown_timeout(Duration::from_secs(2));
    assert!(!report.deadline_passed, "{report}");
    assert_eq!(report.actors_unresponsive, 0, "{report}");
    // Its timer fired at the runtime's shutdown; polled again (on the
    // shutdown's thread), it panics: tokio's timers are gone.
    assert!(
        matches!(
            napper.join_timeout(T),
            Some(troupe::StopReason::Panicked(_))
        ),
        "stopped, and said so"
    );
    assert_eq!(report.panics, 1);
}
