//! Issue 13, item 1: every public call that takes a `Duration` accepts
//! `Duration::ZERO` and `Duration::MAX` (an overflowing deadline means "no
//! deadline", through `engine::deadline::after`); none panics.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use troupe::mchain::{self, MChain, Receive};
use troupe::parallel::{Fifo, SharedActor};
use troupe::supervision::{ChildSpec, Strategy, SupervisorSpec};
use troupe::{
    Actor, ActorSystem, AskError, Context, MailboxConfig, Overflow, ReplyTo, SpawnOptions,
};

const EXTREMES: [Duration; 2] = [Duration::ZERO, Duration::MAX];

struct Echo;
impl Actor for Echo {
    type Msg = ReplyTo<u32>;
    fn handle(&mut self, r: ReplyTo<u32>, _ctx: &mut Context<'_, Self>) {
        r.reply(7);
    }
}

struct Sink(Arc<AtomicU64>);
impl Actor for Sink {
    type Msg = u32;
    fn handle(&mut self, _: u32, _ctx: &mut Context<'_, Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

struct Shared;
impl SharedActor for Shared {
    type Msg = ();
    fn is_thread_safe(_: &()) -> bool {
        true
    }
    fn handle_shared(&self, _: ()) {}
    fn handle_exclusive(&mut self, _: ()) {}
}

#[test]
fn every_duration_taking_call_accepts_zero_and_max() {
    let system = ActorSystem::builder().threads(2).build();
    let h = system.handle();
    for d in EXTREMES {
        // ActorRef::ask, AskFuture::with_timeout / wait_timeout.
        let echo = system.spawn(Echo);
        let r = echo.ask(|r| r, d);
        assert!(
            r == Ok(7) || (d.is_zero() && r == Err(AskError::Timeout)),
            "{d:?}: {r:?}"
        );
        let r = echo
            .ask_async(|r| r)
            .with_timeout(d)
            .wait_timeout(Duration::MAX);
        assert!(
            r == Ok(7) || (d.is_zero() && r == Err(AskError::Timeout)),
            "{d:?}: {r:?}"
        );
        let r = echo.ask_async(|r| r).wait_timeout(d);
        assert!(
            r == Ok(7) || (d.is_zero() && r == Err(AskError::Timeout)),
            "{d:?}: {r:?}"
        );
        // ActorRef::join_timeout, running and stopped.
        assert_eq!(echo.join_timeout(Duration::ZERO), None);
        echo.stop();
        assert!(echo.join_timeout(d).is_some() || d.is_zero());
        assert!(echo.join_timeout(Duration::MAX).is_some());

        // Timers: send_delayed, send_periodic (cancelled at once).
        let n = Arc::new(AtomicU64::new(0));
        let sink = system.spawn(Sink(n.clone()));
        let t1 = troupe::timer::send_delayed(&sink, d, 1);
        let t2 = troupe::timer::send_periodic(&sink, d, d.max(Duration::from_millis(1)), 2);
        let t3 = troupe::timer::send_periodic(&sink, Duration::ZERO, Duration::MAX, 3);
        std::thread::sleep(Duration::from_millis(20));
        drop((t1, t2, t3));

        // Bounded mailboxes that block for at most `d` (from a plain thread).
        let block = system.spawn_with(
            Sink(n.clone()),
            SpawnOptions::new().mailbox(MailboxConfig::bounded(4, Overflow::BlockFor(d))),
        );
        assert!(block.tell(1).is_ok());

        // MChain: recv_timeout, receive and select timeouts, BlockFor.
        let chain: MChain<u32> = MChain::bounded(1, Overflow::BlockFor(d));
        assert!(chain.recv_timeout(Duration::ZERO).is_err());
        chain.send(1).unwrap();
        if d.is_zero() {
            assert!(chain.send(2).is_err(), "full chain, no wait");
        }
        assert_eq!(chain.recv_timeout(d), Ok(1));
        chain.send(3).unwrap();
        let params = Receive::new().handle_n(1).empty_timeout(d).total_time(d);
        let _ = chain.receive(params, |_| ());
        // A zero total time may return before handling: empty the chain.
        while chain.try_recv().is_some() {}
        chain.send(4).unwrap();
        let params = Receive::new().handle_n(1).empty_timeout(d).total_time(d);
        let _ = mchain::select(params, &mut [&mut mchain::case(&chain, |_| ())]);

        // Supervision: intensity, join_timeout, children, restarts,
        // SupervisedRef::tell_wait / wait_generation.
        let child = ChildSpec::new("sink", {
            let n = n.clone();
            move || Sink(n.clone())
        });
        let sref = child.supervised_ref::<Sink>().unwrap();
        let sup = SupervisorSpec::new(Strategy::OneForOne)
            .intensity(3, d)
            .child(child)
            .spawn(&h);
        assert!(sup.children(d).is_ok() || d.is_zero());
        assert!(sup.restarts(d).is_ok() || d.is_zero());
        assert!(sref.tell_wait(5, d).is_ok());
        let g = sref.generation();
        assert!(sref.wait_generation(g - 1, d).is_some());
        if d.is_zero() {
            assert!(sref.wait_generation(g, d).is_none());
        }
        assert_eq!(sup.join_timeout(Duration::ZERO), None);
        sup.stop();
        assert!(sup.join_timeout(d).is_some() || d.is_zero());
        assert!(sup.join_timeout(Duration::MAX).is_some());
        // Closed now: even an unbounded wait for a restart returns.
        assert!(sref.wait_generation(g, d).is_none());

        // Parallel actors: SharedRef::join_timeout.
        let pool = h.work_stealing_pool("shared", 1);
        let shared = h.spawn_shared(Shared, &pool, Fifo::PerActor);
        shared.stop();
        assert!(shared.join_timeout(d).is_some() || d.is_zero());
        assert!(shared.join_timeout(Duration::MAX).is_some());
    }
    // System: join_timeout before shutdown, shutdown_timeout.
    assert!(system.join_timeout(Duration::ZERO).is_none());
    let report = system.shutdown_timeout(Duration::MAX);
    assert_eq!(report.actors_unresponsive, 0);
    assert!(system.join_timeout(Duration::MAX).is_some());
    let other = ActorSystem::new();
    let report = other.shutdown_timeout(Duration::ZERO);
    assert_eq!(report.actors_unresponsive, 0);
}
