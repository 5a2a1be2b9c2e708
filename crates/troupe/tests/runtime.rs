//! Behaviour of the core runtime under concurrency: counts are exact, orders
//! are checked message by message, errors carry the message back.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use troupe::{
    Actor, ActorSystem, AskError, Context, MailboxConfig, Overflow, ReplyTo, SendError,
    SpawnOptions, StopReason,
};

const T: Duration = Duration::from_secs(10);

/// Records (sender, seq) pairs and checks per-sender order.
struct Checker {
    next: Vec<u64>,
    received: u64,
    sum: u64,
    violations: u64,
}

enum CheckMsg {
    Item(usize, u64),
    Report(ReplyTo<(u64, u64, u64, Vec<u64>)>),
}

impl Actor for Checker {
    type Msg = CheckMsg;
    fn handle(&mut self, msg: CheckMsg, _ctx: &mut Context<'_, Self>) {
        match msg {
            CheckMsg::Item(sender, seq) => {
                if self.next[sender] != seq {
                    self.violations += 1;
                }
                self.next[sender] = seq + 1;
                self.received += 1;
                self.sum += seq;
            }
            CheckMsg::Report(r) => {
                r.reply((self.received, self.sum, self.violations, self.next.clone()));
            }
        }
    }
}

fn blast(threads: usize, per_thread: u64, workers: usize) {
    let system = ActorSystem::builder().threads(workers).build();
    let checker = system.spawn(Checker {
        next: vec![0; threads],
        received: 0,
        sum: 0,
        violations: 0,
    });
    let start = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let c = checker.clone();
            let start = start.clone();
            std::thread::spawn(move || {
                start.wait();
                for i in 0..per_thread {
                    c.tell(CheckMsg::Item(t, i)).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let (received, sum, violations, next) = checker.ask(CheckMsg::Report, T).unwrap();
    let total = threads as u64 * per_thread;
    assert_eq!(violations, 0, "FIFO per sender violated");
    assert_eq!(received, total, "lost or duplicated messages");
    assert_eq!(sum, threads as u64 * (per_thread * (per_thread - 1) / 2));
    assert!(next.iter().all(|&n| n == per_thread));
    assert_eq!(system.shutdown().messages_dropped, 0);
}

#[test]
fn exact_counts_8_threads_x_100k() {
    blast(8, 100_000, 2);
}

#[test]
fn fifo_per_pair_with_concurrent_senders_on_one_worker() {
    blast(4, 50_000, 1);
}

/// Actor-to-actor FIFO: several sender actors each send a sequence to one
/// receiver, while the scheduler moves them between workers.
#[test]
fn fifo_between_actors() {
    struct Sender {
        id: usize,
        n: u64,
        to: troupe::ActorRef<Checker>,
    }
    impl Actor for Sender {
        type Msg = ();
        fn handle(&mut self, _: (), ctx: &mut Context<'_, Self>) {
            // Send in slices and re-post ourselves, so other actors interleave.
            let start = self.n;
            while self.n < start + 100 && self.n < 20_000 {
                self.to.tell(CheckMsg::Item(self.id, self.n)).unwrap();
                self.n += 1;
            }
            if self.n < 20_000 {
                ctx.myself().tell(()).unwrap();
            } else {
                ctx.stop();
            }
        }
    }
    let system = ActorSystem::builder().threads(2).build();
    let checker = system.spawn(Checker {
        next: vec![0; 6],
        received: 0,
        sum: 0,
        violations: 0,
    });
    let senders: Vec<_> = (0..6)
        .map(|id| {
            system.spawn(Sender {
                id,
                n: 0,
                to: checker.clone(),
            })
        })
        .collect();
    for s in &senders {
        s.tell(()).unwrap();
    }
    for s in &senders {
        assert_eq!(s.join_timeout(T), Some(StopReason::Normal));
    }
    let (received, _, violations, _) = checker.ask(CheckMsg::Report, T).unwrap();
    assert_eq!((received, violations), (120_000, 0));
}

struct Echo;
enum EchoMsg {
    Echo(u64, ReplyTo<u64>),
    Ignore(ReplyTo<u64>),
    Hold(ReplyTo<u64>),
    StopNow,
    Sleep(Duration),
    Panic(&'static str),
}

impl Actor for Echo {
    type Msg = EchoMsg;
    fn handle(&mut self, msg: EchoMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            EchoMsg::Echo(x, r) => {
                r.reply(x);
            }
            EchoMsg::Ignore(r) => drop(r),
            EchoMsg::Hold(r) => std::mem::forget(r),
            EchoMsg::StopNow => ctx.stop(),
            EchoMsg::Sleep(d) => std::thread::sleep(d),
            EchoMsg::Panic(m) => panic!("{m}"),
        }
    }
}

#[test]
fn ask_replies_and_errors() {
    let system = ActorSystem::builder().threads(2).build();
    let echo = system.spawn(Echo);
    assert_eq!(echo.ask(|r| EchoMsg::Echo(7, r), T), Ok(7));
    assert_eq!(echo.ask(EchoMsg::Ignore, T), Err(AskError::NoReply));
    let t0 = Instant::now();
    assert_eq!(
        echo.ask(EchoMsg::Hold, Duration::from_millis(50)),
        Err(AskError::Timeout)
    );
    assert!(t0.elapsed() >= Duration::from_millis(50));
    echo.tell(EchoMsg::StopNow).unwrap();
    assert_eq!(echo.join_timeout(T), Some(StopReason::Normal));
    assert_eq!(
        echo.ask(|r| EchoMsg::Echo(1, r), T),
        Err(AskError::ActorStopped)
    );
    match echo.tell(EchoMsg::Sleep(Duration::ZERO)) {
        Err(SendError::Stopped(EchoMsg::Sleep(d))) => assert_eq!(d, Duration::ZERO),
        other => panic!("expected the message back, got {other:?}"),
    }
}

/// An ask queued behind a message that stops the actor fails at once, long
/// before its timeout.
#[test]
fn ask_fails_fast_when_actor_stops_before_replying() {
    let system = ActorSystem::builder().threads(2).build();
    let echo = system.spawn(Echo);
    echo.tell(EchoMsg::Sleep(Duration::from_millis(50)))
        .unwrap();
    echo.tell(EchoMsg::StopNow).unwrap();
    let t0 = Instant::now();
    let res = echo.ask(|r| EchoMsg::Echo(1, r), Duration::from_secs(30));
    assert_eq!(res, Err(AskError::ActorStopped));
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert!(system.dropped_messages() >= 1);
}

#[test]
fn ask_async_resolves() {
    let system = ActorSystem::builder().threads(1).build();
    let echo = system.spawn(Echo);
    let fut = echo.ask_async(|r| EchoMsg::Echo(9, r));
    assert_eq!(block_on(fut), Ok(9));
    let fut = echo.ask_async(EchoMsg::Hold);
    assert_eq!(
        fut.wait_timeout(Duration::from_millis(20)),
        Err(AskError::Timeout)
    );
}

fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        if let std::task::Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        // Long: a future that is never woken shows up as a slow test.
        std::thread::park_timeout(T);
    }
}

/// Blocks its worker until released, so tests can fill its mailbox.
struct Gate {
    release: crossbeam_channel::Receiver<()>,
    seen: Arc<AtomicUsize>,
}
impl Actor for Gate {
    type Msg = u64;
    fn handle(&mut self, msg: u64, _ctx: &mut Context<'_, Self>) {
        if msg == 0 {
            let _ = self.release.recv_timeout(T);
        }
        self.seen.fetch_add(1, Ordering::SeqCst);
    }
}

fn gate(
    system: &ActorSystem,
    mailbox: MailboxConfig,
) -> (
    troupe::ActorRef<Gate>,
    crossbeam_channel::Sender<()>,
    Arc<AtomicUsize>,
) {
    let (tx, rx) = crossbeam_channel::unbounded();
    let seen = Arc::new(AtomicUsize::new(0));
    let g = system.spawn_with(
        Gate {
            release: rx,
            seen: seen.clone(),
        },
        SpawnOptions::new().mailbox(mailbox),
    );
    g.tell(0).unwrap();
    // Wait until the gate message is being handled (mailbox empty again).
    let t0 = Instant::now();
    while g.mailbox_len() != 0 && t0.elapsed() < T {
        std::thread::yield_now();
    }
    std::thread::sleep(Duration::from_millis(10));
    (g, tx, seen)
}

#[test]
fn bounded_reject_returns_the_message() {
    let system = ActorSystem::builder().threads(2).build();
    let (g, open, seen) = gate(&system, MailboxConfig::bounded(4, Overflow::Reject));
    for i in 1..=4 {
        g.tell(i).unwrap();
    }
    assert_eq!(g.tell(99), Err(SendError::Full(99)));
    assert_eq!(g.mailbox_capacity(), Some(4));
    open.send(()).unwrap();
    drop(system);
    assert_eq!(seen.load(Ordering::SeqCst), 5);
}

#[test]
fn bounded_drop_oldest_counts_evictions() {
    let system = ActorSystem::builder().threads(2).build();
    let (g, open, seen) = gate(&system, MailboxConfig::bounded(4, Overflow::DropOldest));
    for i in 1..=10 {
        g.tell(i).unwrap();
    }
    assert_eq!(g.mailbox_evicted(), 6);
    assert_eq!(g.mailbox_len(), 4);
    open.send(()).unwrap();
    let report = system.shutdown();
    assert_eq!(seen.load(Ordering::SeqCst), 5);
    assert_eq!(report.messages_dropped, 6);
}

#[test]
fn bounded_block_waits_on_threads_and_refuses_on_workers() {
    let system = ActorSystem::builder().threads(2).build();
    let (g, open, seen) = gate(&system, MailboxConfig::bounded(2, Overflow::Block));
    g.tell(1).unwrap();
    g.tell(2).unwrap();
    // A plain thread blocks until the gate opens.
    let g2 = g.clone();
    let blocked = std::thread::spawn(move || {
        let t0 = Instant::now();
        g2.tell(3).unwrap();
        t0.elapsed()
    });
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        !blocked.is_finished(),
        "sender should be blocked on a full mailbox"
    );
    // `try_tell` never blocks, even from a plain thread.
    assert!(matches!(g.try_tell(9), Err(SendError::Full(9))));

    // An actor sending to the full mailbox gets Full instead of blocking.
    struct Probe(troupe::ActorRef<Gate>);
    enum P {
        Go(ReplyTo<bool>),
    }
    impl Actor for Probe {
        type Msg = P;
        fn handle(&mut self, P::Go(r): P, _ctx: &mut Context<'_, Self>) {
            r.reply(matches!(self.0.tell(4), Err(SendError::Full(4))));
        }
    }
    let probe = system.spawn(Probe(g.clone()));
    assert_eq!(probe.ask(P::Go, T), Ok(true));

    open.send(()).unwrap();
    let waited = blocked.join().unwrap();
    assert!(waited >= Duration::from_millis(90));
    drop(system);
    assert_eq!(seen.load(Ordering::SeqCst), 4);
}

#[test]
fn panic_stops_only_that_actor_and_fails_pending_asks() {
    let system = ActorSystem::builder().threads(2).build();
    let bad = system.spawn(Echo);
    let good = system.spawn(Echo);
    bad.tell(EchoMsg::Sleep(Duration::from_millis(30))).unwrap();
    bad.tell(EchoMsg::Panic("boom")).unwrap();
    let pending = bad.ask_async(|r| EchoMsg::Echo(1, r));
    assert_eq!(
        bad.join_timeout(T),
        Some(StopReason::Panicked("boom".into()))
    );
    assert_eq!(pending.wait_timeout(T), Err(AskError::ActorStopped));
    assert!(matches!(
        bad.tell(EchoMsg::StopNow),
        Err(SendError::Stopped(_))
    ));
    for i in 0..100 {
        assert_eq!(good.ask(|r| EchoMsg::Echo(i, r), T), Ok(i));
    }
}

#[test]
fn panic_in_started_hook_is_reported() {
    struct BadStart;
    impl Actor for BadStart {
        type Msg = ();
        fn started(&mut self, _ctx: &mut Context<'_, Self>) {
            panic!("cannot start");
        }
        fn handle(&mut self, _: (), _ctx: &mut Context<'_, Self>) {}
    }
    let system = ActorSystem::builder().threads(1).build();
    let a = system.spawn(BadStart);
    assert_eq!(
        a.join_timeout(T),
        Some(StopReason::Panicked("cannot start".into()))
    );
}

/// With one worker and a budget of 8 messages per turn, an actor flooded with
/// 10,000 messages must let another actor run long before it is done.
#[test]
fn flooded_actor_does_not_starve_others() {
    struct Flooded {
        processed: Arc<AtomicUsize>,
        release: crossbeam_channel::Receiver<()>,
    }
    impl Actor for Flooded {
        type Msg = u32;
        fn handle(&mut self, msg: u32, _ctx: &mut Context<'_, Self>) {
            if msg == 0 {
                let _ = self.release.recv_timeout(T);
            }
            self.processed.fetch_add(1, Ordering::SeqCst);
        }
    }
    struct Witness {
        processed: Arc<AtomicUsize>,
        saw: Arc<AtomicUsize>,
    }
    impl Actor for Witness {
        type Msg = ();
        fn handle(&mut self, _: (), ctx: &mut Context<'_, Self>) {
            self.saw
                .store(self.processed.load(Ordering::SeqCst), Ordering::SeqCst);
            ctx.stop();
        }
    }
    let system = ActorSystem::builder().threads(1).throughput(8).build();
    let processed = Arc::new(AtomicUsize::new(0));
    let saw = Arc::new(AtomicUsize::new(usize::MAX));
    let (tx, rx) = crossbeam_channel::unbounded();
    let flooded = system.spawn(Flooded {
        processed: processed.clone(),
        release: rx,
    });
    let witness = system.spawn(Witness {
        processed: processed.clone(),
        saw: saw.clone(),
    });
    flooded.tell(0).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    for i in 1..10_000 {
        flooded.tell(i).unwrap();
    }
    witness.tell(()).unwrap();
    tx.send(()).unwrap();
    witness.join_timeout(T).unwrap();
    let at = saw.load(Ordering::SeqCst);
    assert!(
        at < 100,
        "witness ran only after {at} of the flood's messages"
    );
    drop(system);
    assert_eq!(processed.load(Ordering::SeqCst), 10_000);
}

#[test]
fn shutdown_drains_mailboxes_and_refuses_new_messages() {
    struct Slow(Arc<AtomicUsize>);
    impl Actor for Slow {
        type Msg = u32;
        fn handle(&mut self, _: u32, _ctx: &mut Context<'_, Self>) {
            std::thread::sleep(Duration::from_micros(20));
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let system = ActorSystem::builder().threads(2).build();
    let handled = Arc::new(AtomicUsize::new(0));
    let actors: Vec<_> = (0..4)
        .map(|_| system.spawn(Slow(handled.clone())))
        .collect();
    for a in &actors {
        for i in 0..500 {
            a.tell(i).unwrap();
        }
    }
    let report = system.shutdown();
    assert_eq!(
        handled.load(Ordering::SeqCst),
        2000,
        "shutdown must drain queued messages"
    );
    assert_eq!(report.messages_dropped, 0);
    assert_eq!(report.actors_stopped, 4);
    assert!(!report.deadline_passed);
    for a in &actors {
        assert_eq!(a.stop_reason(), Some(StopReason::Shutdown));
        assert_eq!(a.tell(1), Err(SendError::Stopped(1)));
    }
    assert_eq!(system.live_actors(), 0);
}

#[test]
fn shutdown_past_deadline_kills_and_reports_drops() {
    let system = ActorSystem::builder().threads(1).build();
    let echo = system.spawn(Echo);
    for _ in 0..20 {
        echo.tell(EchoMsg::Sleep(Duration::from_millis(20)))
            .unwrap();
    }
    let report = system.shutdown_timeout(Duration::from_millis(50));
    assert!(report.deadline_passed);
    assert!(report.messages_dropped > 0, "{report}");
    assert_eq!(report.actors_unresponsive, 0);
}

#[test]
fn stop_and_kill_and_watch() {
    enum W {
        Down(#[allow(dead_code)] troupe::ActorId, StopReason),
        Get(ReplyTo<Vec<StopReason>>),
    }
    struct Watcher(Vec<StopReason>);
    impl Actor for Watcher {
        type Msg = W;
        fn handle(&mut self, msg: W, _ctx: &mut Context<'_, Self>) {
            match msg {
                W::Down(_, r) => self.0.push(r),
                W::Get(r) => {
                    r.reply(self.0.clone());
                }
            }
        }
    }
    struct Parent;
    impl Actor for Parent {
        type Msg = ReplyTo<(troupe::ActorRef<Echo>, troupe::ActorRef<Echo>)>;
        fn handle(&mut self, r: Self::Msg, ctx: &mut Context<'_, Self>) {
            let a = ctx.spawn(Echo);
            let b = ctx.spawn(Echo);
            r.reply((a, b));
        }
    }
    let system = ActorSystem::builder().threads(2).build();
    let watcher = system.spawn(Watcher(Vec::new()));
    let parent = system.spawn(Parent);
    let (a, b) = parent.ask(|r| r, T).unwrap();
    let _ = &parent;
    let w = watcher.clone();
    // Monitor from a plain thread, delivering to the watcher actor.
    for x in [&a, &b] {
        let w = w.clone();
        x.on_stop(move |id, r| {
            let _ = w.tell(W::Down(id, r.clone()));
        });
    }
    for _ in 0..10 {
        a.tell(EchoMsg::Sleep(Duration::from_millis(1))).unwrap();
    }
    a.stop(); // drains the 10 sleeps first
    b.tell(EchoMsg::Sleep(Duration::from_millis(30))).unwrap();
    b.tell(EchoMsg::Sleep(Duration::from_millis(30))).unwrap();
    std::thread::sleep(Duration::from_millis(5));
    b.kill();
    assert_eq!(a.join_timeout(T), Some(StopReason::Normal));
    assert_eq!(b.join_timeout(T), Some(StopReason::Killed));
    assert_eq!(a.mailbox_len(), 0);
    std::thread::sleep(Duration::from_millis(20));
    let mut got = watcher.ask(W::Get, T).unwrap();
    got.sort_by_key(|r| format!("{r}"));
    assert_eq!(got, vec![StopReason::Killed, StopReason::Normal]);
    assert!(
        system.dropped_messages() >= 1,
        "kill drops the queued sleep"
    );
}

/// `Context::ask`: replies come back as messages, errors too.
#[test]
fn actor_side_ask_delivers_reply_as_message() {
    enum C {
        Start(troupe::ActorRef<Echo>, ReplyTo<Vec<Result<u64, AskError>>>),
        Reply(Result<u64, AskError>),
    }
    impl From<Result<u64, AskError>> for C {
        fn from(r: Result<u64, AskError>) -> Self {
            C::Reply(r)
        }
    }
    struct Client(
        Vec<Result<u64, AskError>>,
        Option<ReplyTo<Vec<Result<u64, AskError>>>>,
    );
    impl Actor for Client {
        type Msg = C;
        fn handle(&mut self, msg: C, ctx: &mut Context<'_, Self>) {
            match msg {
                C::Start(echo, done) => {
                    self.1 = Some(done);
                    for i in 0..10 {
                        ctx.ask(&echo, |r| EchoMsg::Echo(i, r)).unwrap();
                    }
                    ctx.ask(&echo, EchoMsg::Ignore).unwrap();
                }
                C::Reply(r) => {
                    self.0.push(r);
                    if self.0.len() == 11 {
                        self.1.take().unwrap().reply(std::mem::take(&mut self.0));
                    }
                }
            }
        }
    }
    let system = ActorSystem::builder().threads(2).build();
    let echo = system.spawn(Echo);
    let client = system.spawn(Client(Vec::new(), None));
    let got = client.ask(|r| C::Start(echo.clone(), r), T).unwrap();
    let mut expected: Vec<Result<u64, AskError>> = (0..10).map(Ok).collect();
    expected.push(Err(AskError::NoReply));
    assert_eq!(got, expected);
}

#[test]
fn many_actors_spawned_and_stopped() {
    struct Once(Arc<AtomicUsize>);
    impl Actor for Once {
        type Msg = ();
        fn handle(&mut self, _: (), ctx: &mut Context<'_, Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
            ctx.stop();
        }
    }
    let system = ActorSystem::builder().threads(2).build();
    let count = Arc::new(AtomicUsize::new(0));
    let refs: Vec<_> = (0..50_000)
        .map(|_| system.spawn(Once(count.clone())))
        .collect();
    for r in &refs {
        r.tell(()).unwrap();
    }
    let report = system
        .join_timeout(T)
        .expect("all actors stop by themselves");
    assert_eq!(count.load(Ordering::Relaxed), 50_000);
    assert_eq!(report.actors_stopped, 50_000);
    assert_eq!(report.messages_dropped, 0);
}

/// `Context::spawn_monitored`: the parent gets one `Down` per child with
/// the child's id and reason (normal, panicked, killed, failed); the
/// returned watch id cancels the watch; the watch holds only a weak
/// reference to the parent.
#[test]
fn spawn_monitored_tells_the_parent_each_childs_stop() {
    enum Kid {
        Stop,
        Panic,
        Fail,
        Wait,
    }
    impl Actor for Kid {
        type Msg = ();
        fn started(&mut self, ctx: &mut Context<'_, Self>) {
            match self {
                Kid::Stop => ctx.stop(),
                Kid::Panic => panic!("kid fails"),
                Kid::Fail => ctx.stop_with(StopReason::Failed("no".into())),
                Kid::Wait => {}
            }
        }
        fn handle(&mut self, _: (), _: &mut Context<'_, Self>) {}
    }
    enum P {
        Go,
        Down(troupe::Down),
        Get(ReplyTo<Vec<(troupe::ActorId, StopReason)>>),
        TakeWaiting(ReplyTo<Vec<troupe::ActorRef<Kid>>>),
    }
    #[derive(Default)]
    struct Parent {
        downs: Vec<(troupe::ActorId, StopReason)>,
        kids: Vec<troupe::ActorId>,
        waiting: Vec<troupe::ActorRef<Kid>>,
    }
    impl Actor for Parent {
        type Msg = P;
        fn handle(&mut self, msg: P, ctx: &mut Context<'_, Self>) {
            match msg {
                P::Go => {
                    for kid in [Kid::Stop, Kid::Panic, Kid::Fail] {
                        let (k, _) = ctx.spawn_monitored(kid, P::Down);
                        self.kids.push(k.id());
                    }
                    // Killed later, still watched.
                    let (k, _) = ctx.spawn_monitored(Kid::Wait, P::Down);
                    self.kids.push(k.id());
                    k.kill();
                    // Watched, then the watch cancelled: no Down.
                    let (k, watch) = ctx.spawn_monitored(Kid::Wait, P::Down);
                    assert!(k.demonitor(watch));
                    self.waiting.push(k);
                }
                P::Down(d) => self.downs.push((d.id, d.reason)),
                P::TakeWaiting(r) => {
                    r.reply(std::mem::take(&mut self.waiting));
                }
                P::Get(r) => {
                    let mut downs = self.downs.clone();
                    downs.sort_by_key(|(id, _)| self.kids.iter().position(|k| k == id));
                    r.reply(downs);
                }
            }
        }
    }
    let system = ActorSystem::builder().threads(2).build();
    let parent = system.spawn(Parent::default());
    parent.tell(P::Go).unwrap();
    let deadline = Instant::now() + T;
    let downs = loop {
        let downs = parent.ask(P::Get, T).unwrap();
        if downs.len() >= 4 || Instant::now() > deadline {
            break downs;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let reasons: Vec<_> = downs.iter().map(|(_, r)| r.clone()).collect();
    assert_eq!(
        reasons,
        vec![
            StopReason::Normal,
            StopReason::Panicked("kid fails".into()),
            StopReason::Failed("no".into()),
            StopReason::Killed,
        ]
    );
    // The cancelled watch stays silent even after its child stopped.
    let waiting = parent.ask(P::TakeWaiting, T).unwrap();
    assert_eq!(waiting.len(), 1);
    for k in waiting {
        k.stop();
        assert_eq!(k.join_timeout(T), Some(StopReason::Normal));
    }
    std::thread::sleep(Duration::from_millis(10));
    assert_eq!(parent.ask(P::Get, T).unwrap().len(), 4);

    // A child that outlives its parent: the watch does not keep the parent
    // alive, and its stop delivers nothing (and breaks nothing).
    struct Spawner(std::sync::mpsc::Sender<troupe::ActorRef<Kid>>);
    impl Actor for Spawner {
        type Msg = ();
        fn started(&mut self, ctx: &mut Context<'_, Self>) {
            let (k, _) = ctx.spawn_monitored(Kid::Wait, |_| ());
            self.0.send(k).unwrap();
            ctx.stop();
        }
        fn handle(&mut self, _: (), _: &mut Context<'_, Self>) {}
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let spawner = system.spawn(Spawner(tx));
    let kid = rx.recv_timeout(T).unwrap();
    assert_eq!(spawner.join_timeout(T), Some(StopReason::Normal));
    let weak = spawner.downgrade();
    drop(spawner);
    // The table lets go of the stopped parent just after `join` returns.
    let until = Instant::now() + Duration::from_secs(2);
    while weak.upgrade().is_some() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(weak.upgrade().is_none(), "the watch kept its parent alive");
    kid.stop();
    assert_eq!(kid.join_timeout(T), Some(StopReason::Normal));
    system.shutdown();
}
