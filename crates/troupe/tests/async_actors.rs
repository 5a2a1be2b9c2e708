//! Async actors (issue 27): handlers that await, one message at a time.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};
use troupe::{
    ActorRef, ActorSystem, AskError, Async, AsyncActor, AsyncContext, ReplyTo, StopReason,
};

const T: Duration = Duration::from_secs(10);

/// Pending once (it wakes itself first), then ready: a suspension that
/// needs no timer.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

fn yield_now() -> YieldOnce {
    YieldOnce(false)
}

/// Checks per-sender FIFO and that no two handlers overlap.
struct Orderly {
    next: Vec<u64>,
    inside: Arc<AtomicBool>,
    handled: Arc<AtomicU64>,
}

enum OrderMsg {
    Item { sender: usize, seq: u64, pause: u8 },
    Count(ReplyTo<u64>),
}

impl AsyncActor for Orderly {
    type Msg = OrderMsg;
    async fn handle(&mut self, msg: OrderMsg, _ctx: &mut AsyncContext<Self>) {
        match msg {
            OrderMsg::Item { sender, seq, pause } => {
                assert!(
                    !self.inside.swap(true, Ordering::SeqCst),
                    "two handlers of one actor overlapped"
                );
                assert_eq!(self.next[sender], seq, "FIFO per sender broken");
                match pause {
                    0 => {}
                    1..=3 => yield_now().await,
                    4 => troupe::timer::sleep(Duration::from_micros(50)).await,
                    _ => tokio::time::sleep(Duration::from_micros(50)).await,
                }
                self.next[sender] = seq + 1;
                self.inside.store(false, Ordering::SeqCst);
                self.handled.fetch_add(1, Ordering::Relaxed);
            }
            OrderMsg::Count(r) => {
                r.reply(self.handled.load(Ordering::Relaxed));
            }
        }
    }
}

#[test]
fn ordering_is_kept_under_suspension() {
    const SENDERS: usize = 100;
    let per: u64 = if cfg!(debug_assertions) {
        2_000
    } else {
        10_000
    };
    let system = ActorSystem::builder().threads(2).build();
    let handled = Arc::new(AtomicU64::new(0));
    let a = system.spawn(Async::new(Orderly {
        next: vec![0; SENDERS],
        inside: Arc::new(AtomicBool::new(false)),
        handled: handled.clone(),
    }));
    let senders: Vec<_> = (0..SENDERS)
        .map(|s| {
            let a = a.clone();
            std::thread::spawn(move || {
                let mut x = (s as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                for seq in 0..per {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    // Mostly no await; some yields, a few timer sleeps.
                    let pause = match x % 1000 {
                        0..=799 => 0,
                        800..=995 => 1,
                        996 | 997 => 4,
                        _ => 5,
                    };
                    a.tell(OrderMsg::Item {
                        sender: s,
                        seq,
                        pause,
                    })
                    .unwrap();
                }
            })
        })
        .collect();
    for s in senders {
        s.join().unwrap();
    }
    // Timer sleeps dominate (each is at least a timer tick): wait on the
    // count, with a deadline for a stuck actor, then ask it once.
    let total = SENDERS as u64 * per;
    let deadline = Instant::now() + Duration::from_secs(120);
    while handled.load(Ordering::Relaxed) < total {
        assert!(
            Instant::now() < deadline,
            "handled {} of {total}",
            handled.load(Ordering::Relaxed)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(a.ask(OrderMsg::Count, T), Ok(total));
    let report = system.shutdown();
    assert_eq!(report.panics, 0);
}

/// Sets its flag when dropped: tells whether a pending future was dropped.
struct DropFlag(Arc<AtomicBool>);
impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

struct Sleeper {
    finished: Arc<AtomicU64>,
    dropped: Arc<AtomicBool>,
    stopped_ran: Arc<AtomicBool>,
    started_ran: Arc<AtomicBool>,
}

enum SleepMsg {
    Nap(Duration),
    Panic,
    Ping(ReplyTo<()>),
}

impl AsyncActor for Sleeper {
    type Msg = SleepMsg;
    async fn started(&mut self, _ctx: &mut AsyncContext<Self>) {
        troupe::timer::sleep(Duration::from_millis(1)).await;
        self.started_ran.store(true, Ordering::SeqCst);
    }
    async fn handle(&mut self, msg: SleepMsg, _ctx: &mut AsyncContext<Self>) {
        let _guard = DropFlag(self.dropped.clone());
        match msg {
            SleepMsg::Nap(d) => {
                troupe::timer::sleep(d).await;
                self.finished.fetch_add(1, Ordering::SeqCst);
            }
            SleepMsg::Panic => {
                yield_now().await;
                panic!("after an await");
            }
            SleepMsg::Ping(r) => {
                r.reply(());
            }
        }
    }
    async fn stopped(&mut self, _ctx: &mut AsyncContext<Self>) {
        // The stop hook awaits too.
        troupe::timer::sleep(Duration::from_millis(1)).await;
        self.stopped_ran.store(true, Ordering::SeqCst);
    }
}

fn sleeper(
    system: &ActorSystem,
) -> (
    ActorRef<Async<Sleeper>>,
    [Arc<AtomicBool>; 3],
    Arc<AtomicU64>,
) {
    let finished = Arc::new(AtomicU64::new(0));
    let flags = [
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    ];
    let a = system.spawn(Async::new(Sleeper {
        finished: finished.clone(),
        dropped: flags[0].clone(),
        stopped_ran: flags[1].clone(),
        started_ran: flags[2].clone(),
    }));
    (a, flags, finished)
}

#[test]
fn stop_during_an_await_lets_the_handler_finish() {
    let system = ActorSystem::builder().threads(2).build();
    let (a, [_, stopped_ran, started_ran], finished) = sleeper(&system);
    a.tell(SleepMsg::Nap(Duration::from_millis(50))).unwrap();
    a.tell(SleepMsg::Nap(Duration::from_millis(1))).unwrap();
    std::thread::sleep(Duration::from_millis(10));
    a.stop();
    assert!(
        a.tell(SleepMsg::Nap(Duration::ZERO)).is_err(),
        "closed to new ones"
    );
    assert_eq!(a.join_timeout(T), Some(StopReason::Normal));
    assert!(started_ran.load(Ordering::SeqCst));
    assert_eq!(
        finished.load(Ordering::SeqCst),
        2,
        "both queued handlers ran to the end"
    );
    assert!(
        stopped_ran.load(Ordering::SeqCst),
        "the async stopped hook ran"
    );
    system.shutdown();
}

#[test]
fn kill_during_an_await_drops_the_future_at_once() {
    let system = ActorSystem::builder().threads(2).build();
    let (a, [dropped, _, _], finished) = sleeper(&system);
    a.tell(SleepMsg::Nap(Duration::from_secs(30))).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let ask = a.ask_async(SleepMsg::Ping);
    let t0 = Instant::now();
    a.kill();
    assert_eq!(a.join_timeout(T), Some(StopReason::Killed));
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "the kill did not wait for the sleep"
    );
    assert!(
        dropped.load(Ordering::SeqCst),
        "the pending future was dropped"
    );
    assert_eq!(finished.load(Ordering::SeqCst), 0);
    assert_eq!(
        ask.wait_timeout(T),
        Err(AskError::ActorStopped),
        "an ask queued behind it fails at once"
    );
    system.shutdown();
}

#[test]
fn a_panic_after_an_await_stops_the_actor_and_fails_its_asks() {
    let system = ActorSystem::builder().threads(2).build();
    let (a, [_, stopped_ran, _], _) = sleeper(&system);
    std::panic::set_hook(Box::new(|_| {}));
    a.tell(SleepMsg::Panic).unwrap();
    let queued = a.ask_async(SleepMsg::Ping);
    assert!(matches!(a.join_timeout(T), Some(StopReason::Panicked(_))));
    let _ = std::panic::take_hook();
    assert_eq!(queued.wait_timeout(T), Err(AskError::ActorStopped));
    assert!(
        !stopped_ran.load(Ordering::SeqCst),
        "no stopped hook after a panic"
    );
    assert_eq!(system.shutdown().panics, 1);
}

/// Asks `next` inside its handler and adds one: a chain of awaits.
struct Link {
    next: Option<ActorRef<Async<Link>>>,
}

enum LinkMsg {
    Depth(ReplyTo<u32>),
}

impl AsyncActor for Link {
    type Msg = LinkMsg;
    async fn handle(&mut self, msg: LinkMsg, ctx: &mut AsyncContext<Self>) {
        let LinkMsg::Depth(reply) = msg;
        let below = match &self.next {
            Some(next) => ctx.ask(next, LinkMsg::Depth).await.unwrap(),
            None => 0,
        };
        reply.reply(below + 1);
    }
}

#[test]
fn a_chain_of_actors_asks_with_await() {
    let system = ActorSystem::builder().threads(2).build();
    let mut next = None;
    for _ in 0..10 {
        next = Some(system.spawn(Async::new(Link { next })));
    }
    let head = next.unwrap();
    for _ in 0..1000 {
        assert_eq!(head.ask(LinkMsg::Depth, T), Ok(10));
    }
    system.shutdown();
}

#[test]
fn a_supervisor_restarts_an_async_actor() {
    use troupe::supervision::{ChildSpec, Strategy, SupervisorSpec};
    let system = ActorSystem::builder().threads(2).build();
    let starts = Arc::new(AtomicUsize::new(0));
    let finished = Arc::new(AtomicU64::new(0));
    let (s, f) = (starts.clone(), finished.clone());
    let spec = ChildSpec::new("sleeper", move || {
        s.fetch_add(1, Ordering::SeqCst);
        let flag = || Arc::new(AtomicBool::new(false));
        Async::new(Sleeper {
            finished: f.clone(),
            dropped: flag(),
            stopped_ran: flag(),
            started_ran: flag(),
        })
    });
    let child = spec.supervised_ref::<Async<Sleeper>>().unwrap();
    let sup = SupervisorSpec::new(Strategy::OneForOne)
        .intensity(10, Duration::from_secs(60))
        .child(spec)
        .spawn(&system);
    std::panic::set_hook(Box::new(|_| {}));
    child.tell(SleepMsg::Panic).unwrap();
    let second = child.wait_generation(1, T).expect("restarted");
    let _ = std::panic::take_hook();
    assert_eq!(starts.load(Ordering::SeqCst), 2);
    // The new instance handles (and awaits) as the first did.
    second
        .tell(SleepMsg::Nap(Duration::from_millis(1)))
        .unwrap();
    let deadline = Instant::now() + T;
    while finished.load(Ordering::SeqCst) == 0 {
        assert!(
            Instant::now() < deadline,
            "the restarted actor never handled"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(sup.restarts(T), Ok(1));
    sup.stop();
    assert_eq!(sup.join_timeout(T), Some(StopReason::Normal));
    system.shutdown();
}

/// tokio timers work inside a handler (feature `async`): the poll runs
/// inside the system's runtime context.
struct TokioUser;
impl AsyncActor for TokioUser {
    type Msg = ReplyTo<u64>;
    async fn handle(&mut self, r: ReplyTo<u64>, _ctx: &mut AsyncContext<Self>) {
        let t0 = tokio::time::Instant::now();
        tokio::time::sleep(Duration::from_millis(5)).await;
        r.reply(t0.elapsed().as_millis() as u64);
    }
}

#[test]
fn tokio_timers_work_inside_a_handler() {
    let system = ActorSystem::builder().threads(2).build();
    let a = system.spawn(Async::new(TokioUser));
    let waited = a.ask(|r| r, T).unwrap();
    assert!(waited >= 5, "slept {waited} ms");
    system.shutdown();
}

/// Awaits an hour on the timer thread's clock, then reports.
struct Patient {
    out: troupe::Recipient<&'static str>,
}

impl AsyncActor for Patient {
    type Msg = ();
    async fn handle(&mut self, _: (), _ctx: &mut AsyncContext<Self>) {
        troupe::timer::sleep(Duration::from_secs(3600)).await;
        let _ = self.out.send("an hour later");
    }
}

/// The test kit's virtual clock drives an async handler's sleep: an hour
/// passes in no time, and nothing happens a second early.
#[test]
fn the_test_kit_virtual_clock_drives_async_sleeps() {
    use troupe::testkit::TestKit;
    let kit = TestKit::new();
    let probe = kit.probe::<&'static str>();
    let a = kit.spawn(Async::new(Patient {
        out: probe.recipient(),
    }));
    a.tell(()).unwrap();
    let t0 = Instant::now();
    probe.expect_no_msg(Duration::from_secs(3599));
    probe
        .expect_msg(Duration::from_secs(2))
        .equals("an hour later");
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "virtual, not real, time"
    );
}

/// Awaits 20 ms per message.
struct Slow;
impl AsyncActor for Slow {
    type Msg = ReplyTo<()>;
    async fn handle(&mut self, r: ReplyTo<()>, _ctx: &mut AsyncContext<Self>) {
        troupe::timer::sleep(Duration::from_millis(20)).await;
        r.reply(());
    }
}

/// An async handler's sampled service time covers its awaits: what a
/// caller waits for, not the microseconds of its polls.
#[test]
fn service_time_includes_the_awaits() {
    let system = ActorSystem::builder()
        .threads(2)
        .metrics(true)
        .metrics_sample_every(1)
        .build();
    let a = system.spawn(Async::new(Slow));
    for _ in 0..5 {
        a.ask(|r| r, T).unwrap();
    }
    // The reply goes out before the handler returns, so the fifth sample
    // may land just after the fifth ask does.
    let deadline = Instant::now() + T;
    let s = loop {
        let m = system.handle().metrics();
        let s = m
            .actors
            .iter()
            .find(|s| s.type_name.contains("Slow"))
            .expect("metered")
            .service;
        if s.samples >= 5 || Instant::now() > deadline {
            break s;
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    assert!(s.samples >= 5, "{s:?}");
    assert!(
        s.p50 >= Duration::from_millis(15),
        "service p50 {:?}",
        s.p50
    );
    system.shutdown();
}

// ---- asks through the asking actor's reply slot ----

/// Holds, answers, or drops the requests it gets; counts late replies that
/// found their asker gone.
struct Keeper {
    held: Vec<(u64, ReplyTo<u64>)>,
    refused: Arc<AtomicUsize>,
}

enum KeepMsg {
    Ask(u64, ReplyTo<u64>),
    Hold(u64, ReplyTo<u64>),
    Release,
    Big(ReplyTo<[u64; 16]>),
    Forget(ReplyTo<u64>),
    Held(ReplyTo<usize>),
}

impl troupe::Actor for Keeper {
    type Msg = KeepMsg;
    fn handle(&mut self, msg: KeepMsg, _ctx: &mut troupe::Context<'_, Self>) {
        match msg {
            KeepMsg::Ask(i, r) => {
                r.reply(i + 1);
            }
            KeepMsg::Hold(i, r) => self.held.push((i, r)),
            KeepMsg::Release => {
                for (i, r) in self.held.drain(..) {
                    if !r.reply(i + 1) {
                        self.refused.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }
            KeepMsg::Big(r) => {
                r.reply([7; 16]);
            }
            KeepMsg::Forget(r) => drop(r),
            KeepMsg::Held(r) => {
                r.reply(self.held.len());
            }
        }
    }
}

/// Polls two futures to completion side by side.
struct Join2<A: Future, B: Future> {
    a: Pin<Box<A>>,
    b: Pin<Box<B>>,
    ra: Option<A::Output>,
    rb: Option<B::Output>,
}

impl<A: Future, B: Future> Future for Join2<A, B>
where
    A::Output: Unpin,
    B::Output: Unpin,
{
    type Output = (A::Output, B::Output);
    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if this.ra.is_none() {
            if let Poll::Ready(v) = this.a.as_mut().poll(cx) {
                this.ra = Some(v);
            }
        }
        if this.rb.is_none() {
            if let Poll::Ready(v) = this.b.as_mut().poll(cx) {
                this.rb = Some(v);
            }
        }
        match (this.ra.take(), this.rb.take()) {
            (Some(a), Some(b)) => Poll::Ready((a, b)),
            (a, b) => {
                this.ra = a;
                this.rb = b;
                Poll::Pending
            }
        }
    }
}

/// Runs the scenarios of the slot's edge cases against a keeper and a
/// stopped actor, one message each, and reports what each ask returned.
struct SlotAsker {
    keeper: ActorRef<Keeper>,
    gone: ActorRef<Keeper>,
}

enum Scenario {
    Joined,
    Big,
    TimedOut,
    Forgotten,
    Stopped,
    Plain(u64),
    HoldForever,
}

type Report = std::sync::mpsc::Sender<Vec<Result<u64, AskError>>>;

impl AsyncActor for SlotAsker {
    type Msg = (Scenario, Report);
    async fn handle(&mut self, (s, out): (Scenario, Report), ctx: &mut AsyncContext<Self>) {
        let k = &self.keeper;
        let got = match s {
            Scenario::Joined => {
                let (a, b) = Join2 {
                    a: Box::pin(ctx.ask(k, |r| KeepMsg::Ask(1, r))),
                    b: Box::pin(ctx.ask(k, |r| KeepMsg::Ask(2, r))),
                    ra: None,
                    rb: None,
                }
                .await;
                vec![a, b]
            }
            Scenario::Big => vec![ctx.ask(k, KeepMsg::Big).await.map(|v| v.iter().sum())],
            Scenario::TimedOut => {
                let late = ctx
                    .ask(k, |r| KeepMsg::Hold(10, r))
                    .with_timeout(Duration::from_millis(20))
                    .await;
                // The late reply lands in the abandoned slot and is dropped.
                let _ = k.tell(KeepMsg::Release);
                let next = ctx.ask(k, |r| KeepMsg::Ask(20, r)).await;
                vec![late, next]
            }
            Scenario::Forgotten => vec![ctx.ask(k, KeepMsg::Forget).await],
            Scenario::Stopped => {
                let stopped = ctx.ask(&self.gone, |r| KeepMsg::Ask(1, r)).await;
                let next = ctx.ask(k, |r| KeepMsg::Ask(30, r)).await;
                vec![stopped, next]
            }
            Scenario::Plain(i) => vec![ctx.ask(k, |r| KeepMsg::Ask(i, r)).await],
            Scenario::HoldForever => vec![ctx.ask(k, |r| KeepMsg::Hold(40, r)).await],
        };
        let _ = out.send(got);
    }
}

#[test]
fn asks_through_the_reply_slot_cover_its_edge_cases() {
    let system = ActorSystem::builder().threads(2).build();
    let refused = Arc::new(AtomicUsize::new(0));
    let keeper = system.spawn(Keeper {
        held: Vec::new(),
        refused: refused.clone(),
    });
    let gone = system.spawn(Keeper {
        held: Vec::new(),
        refused: refused.clone(),
    });
    gone.stop();
    gone.join_timeout(T).unwrap();
    let asker = system.spawn(Async::new(SlotAsker {
        keeper: keeper.clone(),
        gone,
    }));
    let run = |s: Scenario| {
        let (tx, rx) = std::sync::mpsc::channel();
        asker.tell((s, tx)).unwrap();
        rx.recv_timeout(T).unwrap()
    };
    // Two asks pending at once: the second has a channel of its own.
    assert_eq!(run(Scenario::Joined), vec![Ok(2), Ok(3)]);
    // A reply too large for the slot.
    assert_eq!(run(Scenario::Big), vec![Ok(7 * 16)]);
    // A timed-out ask's late reply is dropped; the slot serves the next.
    assert_eq!(
        run(Scenario::TimedOut),
        vec![Err(AskError::Timeout), Ok(21)]
    );
    assert_eq!(
        refused.load(Ordering::SeqCst),
        1,
        "the late reply found no asker"
    );
    // A request dropped unanswered, an actor that is gone.
    assert_eq!(run(Scenario::Forgotten), vec![Err(AskError::NoReply)]);
    assert_eq!(
        run(Scenario::Stopped),
        vec![Err(AskError::ActorStopped), Ok(31)]
    );
    for i in 0..1000 {
        assert_eq!(run(Scenario::Plain(i)), vec![Ok(i + 1)]);
    }
    // Killed while its ask is held: the reply, sent after the asker is
    // gone, frees the slot the asker left behind.
    let (tx, _rx) = std::sync::mpsc::channel();
    asker.tell((Scenario::HoldForever, tx)).unwrap();
    while keeper.ask(KeepMsg::Held, T) != Ok(1) {
        std::thread::yield_now();
    }
    asker.kill();
    assert_eq!(asker.join_timeout(T), Some(StopReason::Killed));
    drop(asker);
    keeper.tell(KeepMsg::Release).unwrap();
    assert_eq!(keeper.ask(|r| KeepMsg::Ask(0, r), T), Ok(1));
    assert_eq!(
        refused.load(Ordering::SeqCst),
        2,
        "the last reply found no asker"
    );
    system.shutdown();
}

/// Answers a request, holds it until the next one (then answers it 0), or
/// drops it, at random.
struct Moody {
    held: Option<ReplyTo<u64>>,
    rng: u64,
}

impl troupe::Actor for Moody {
    type Msg = (u64, ReplyTo<u64>);
    fn handle(&mut self, (i, r): (u64, ReplyTo<u64>), _ctx: &mut troupe::Context<'_, Self>) {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        match self.rng % 4 {
            0 | 1 => {
                r.reply(i + 1);
            }
            2 => {
                if let Some(old) = self.held.replace(r) {
                    old.reply(0);
                }
            }
            _ => drop(r),
        }
    }
}

/// Asks moody actors in turn, each ask with a short deadline; reports
/// how many asks ended (and fails on a wrong answer).
struct Pester {
    targets: Vec<ActorRef<Moody>>,
    progress: Arc<AtomicUsize>,
}

impl AsyncActor for Pester {
    type Msg = (u64, std::sync::mpsc::Sender<u64>);
    async fn handle(
        &mut self,
        (rounds, out): (u64, std::sync::mpsc::Sender<u64>),
        ctx: &mut AsyncContext<Self>,
    ) {
        let mut ended = 0;
        for i in 0..rounds {
            let t = &self.targets[i as usize % self.targets.len()];
            match ctx
                .ask(t, |r| (i, r))
                .with_timeout(Duration::from_millis(2))
                .await
            {
                Ok(v) => assert!(v == i + 1 || v == 0, "ask {i} answered {v}"),
                Err(AskError::Timeout | AskError::NoReply) => {}
                Err(e) => panic!("ask {i}: {e}"),
            }
            ended += 1;
            self.progress.fetch_add(1, Ordering::Relaxed);
        }
        let _ = out.send(ended);
    }
}

/// Oversubscribed: 16 workers, 16 askers whose replies come late, never or
/// on time from another thread, and a quarter of the askers killed
/// mid-ask; the survivors' asks all end. Under TSan (CI) this is the reply
/// slot's race check with real threads.
#[test]
fn reply_slots_survive_late_replies_and_kills_under_oversubscription() {
    let system = ActorSystem::builder().threads(16).build();
    let targets: Vec<_> = (0..4)
        .map(|k| {
            system.spawn(Moody {
                held: None,
                rng: 0x9E37_79B9_7F4A_7C15 ^ (k + 1),
            })
        })
        .collect();
    let progress = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = std::sync::mpsc::channel();
    let rounds = 300;
    let askers: Vec<_> = (0..16)
        .map(|_| {
            let a = system.spawn(Async::new(Pester {
                targets: targets.clone(),
                progress: progress.clone(),
            }));
            a.tell((rounds, tx.clone())).unwrap();
            a
        })
        .collect();
    drop(tx);
    while progress.load(Ordering::Relaxed) < 16 * 20 {
        std::thread::yield_now();
    }
    for a in &askers[..4] {
        a.kill();
    }
    for a in &askers[..4] {
        assert!(a.join_timeout(T).is_some());
    }
    let mut finished = 0;
    while let Ok(ended) = rx.recv_timeout(T) {
        if ended == rounds {
            finished += 1;
        }
        if finished == 12 {
            break;
        }
    }
    assert!(finished >= 12, "only {finished} askers finished");
    drop(askers);
    system.shutdown();
}
