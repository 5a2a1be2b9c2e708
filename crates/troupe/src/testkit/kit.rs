//! [`TestKit`]: a deterministic actor system on a virtual clock.
//!
//! Invariants:
//! * The kit's default pool has no thread. Its one worker is driven by the
//!   thread that made the kit: [`TestKit::step`] runs one task (one turn,
//!   which handles at most `throughput` messages, 1 by default) and nothing
//!   runs between calls. The order is the scheduler's own, deterministic
//!   with one worker: a message sent from a handler to an idle actor runs
//!   next (the LIFO slot); one sent from the test goes to the back of the
//!   queue.
//! * The virtual clock is installed on that thread for the kit's life: every
//!   timer armed there (by the test or by a handler) is a virtual timer, and
//!   [`timer::now`](crate::timer::now) reads the virtual now. Time moves only
//!   in [`TestKit::advance`], which fires due timers in (deadline, creation)
//!   order and runs the actors until idle after each, so cascades happen at
//!   the virtual instant they were due.
//! * Dropping the kit stops every actor (draining their mailboxes on this
//!   thread) before the system shuts down.
//! * Ask-cycle detection is on (`actor::ask_cycle`): an ask that makes
//!   actors wait on each other's replies fails the test, with a panic
//!   naming the cycle's members, from the step that made it (unless the
//!   kit was built with [`TestKitBuilder::fail_on_ask_cycle`]`(false)`).
//!   Its members are killed first, so that the kit's drop finds no handler
//!   waiting for a reply that will never come.

use super::probe::TestProbe;
use crate::actor::{Actor, ActorRef, AskError, ReplyTo, SpawnOptions, StopReason};
use crate::engine::scheduler::WorkerLocal;
use crate::engine::timer_thread::{VirtualClock, VirtualGuard};
use crate::system::{ActorSystem, SystemBuilder, SystemHandle};
use std::cell::Cell;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::pin;
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::{Duration, Instant};

/// A deterministic actor system for tests: see the module docs.
///
/// ```
/// use std::time::Duration;
/// use troupe::testkit::TestKit;
/// use troupe::{Actor, Context, ReplyTo};
///
/// struct Counter(u64);
/// enum Msg { Add(u64), Get(ReplyTo<u64>) }
/// impl Actor for Counter {
///     type Msg = Msg;
///     fn handle(&mut self, m: Msg, _ctx: &mut Context<'_, Self>) {
///         match m {
///             Msg::Add(n) => self.0 += n,
///             Msg::Get(r) => { r.reply(self.0); }
///         }
///     }
/// }
///
/// let kit = TestKit::new();
/// let c = kit.spawn(Counter(0));
/// c.tell(Msg::Add(2)).unwrap();
/// c.tell(Msg::Add(3)).unwrap();
/// assert_eq!(c.mailbox_len(), 2); // nothing ran yet
/// assert!(kit.step()); // `started` and Add(2): an actor's first turn
/// assert_eq!(c.mailbox_len(), 1);
/// assert_eq!(kit.ask(&c, Msg::Get), Ok(5)); // runs what it takes
/// ```
pub struct TestKit {
    system: ManuallyDrop<ActorSystem>,
    worker: ManuallyDrop<WorkerLocal>,
    clock: ManuallyDrop<VirtualGuard>,
    /// Ask cycles seen so far; `None`: cycles do not fail the test.
    cycles_seen: Option<Cell<u64>>,
}

/// Configures a [`TestKit`].
#[derive(Debug, Clone)]
pub struct TestKitBuilder {
    throughput: usize,
    fail_on_ask_cycle: bool,
}

impl Default for TestKitBuilder {
    fn default() -> Self {
        TestKitBuilder {
            throughput: 1,
            fail_on_ask_cycle: true,
        }
    }
}

impl TestKitBuilder {
    /// Messages one step handles for one actor (default 1: a step is one
    /// message; 0 is raised to 1).
    pub fn throughput(mut self, n: usize) -> Self {
        self.throughput = n.max(1);
        self
    }

    /// Whether an ask cycle fails the test (default `true`; see the
    /// module docs). Off, cycles are still detected and reported, and
    /// [`SystemHandle::ask_cycles`] lists them.
    pub fn fail_on_ask_cycle(mut self, on: bool) -> Self {
        self.fail_on_ask_cycle = on;
        self
    }

    /// Makes the kit on this thread (which then runs its actors). Panics if
    /// this thread already has a kit.
    pub fn build(self) -> TestKit {
        let clock = VirtualClock::install();
        let (system, worker) = SystemBuilder::default()
            .threads(1)
            .throughput(self.throughput)
            .name("troupe-testkit")
            .detect_ask_cycles(true)
            .build_manual();
        TestKit {
            system: ManuallyDrop::new(system),
            worker: ManuallyDrop::new(worker),
            clock: ManuallyDrop::new(clock),
            cycles_seen: self.fail_on_ask_cycle.then(|| Cell::new(0)),
        }
    }
}

impl Default for TestKit {
    fn default() -> Self {
        Self::new()
    }
}

impl TestKit {
    /// A kit with the default settings (one message per step).
    pub fn new() -> Self {
        TestKitBuilder::default().build()
    }

    /// A builder for the kit's settings.
    pub fn builder() -> TestKitBuilder {
        TestKitBuilder::default()
    }

    /// The kit's system (to spawn with options, make dispatchers, read
    /// counters). Actors on other dispatchers run on real threads.
    pub fn system(&self) -> &SystemHandle {
        &self.system
    }

    /// Spawns an actor on the kit (it starts at the next step).
    pub fn spawn<A: Actor>(&self, actor: A) -> ActorRef<A> {
        self.system.spawn(actor)
    }

    /// Spawns with options.
    pub fn spawn_with<A: Actor>(&self, actor: A, options: SpawnOptions) -> ActorRef<A> {
        self.system.spawn_with(actor, options)
    }

    /// Runs one actor turn: up to `throughput` messages (an actor's first
    /// turn runs its `started` hook, then its first messages), or its stop;
    /// `false` if nothing was ready.
    pub fn step(&self) -> bool {
        let ran = self.worker.run_one();
        if let Some(seen) = &self.cycles_seen {
            let detected = self.system.ask_cycles_detected();
            if detected > seen.get() {
                seen.set(detected);
                self.fail_on_cycle();
            }
        }
        ran
    }

    /// An ask cycle was detected: kill its members (their handlers wait for
    /// replies that will never come), then fail the test.
    #[cold]
    #[track_caller]
    fn fail_on_cycle(&self) {
        let cycles = self.system.ask_cycles();
        let Some(cycle) = cycles.last() else { return };
        self.system.kill_members(cycle);
        if !std::thread::panicking() {
            panic!("ask cycle in the test kit: {cycle} (each waits on the next one's reply)");
        }
    }

    /// Runs until no actor has anything to do; returns the turns run.
    pub fn run_until_idle(&self) -> usize {
        let mut turns = 0;
        while self.step() {
            turns += 1;
        }
        turns
    }

    /// The virtual now.
    pub fn now(&self) -> Instant {
        self.clock.clock().now()
    }

    /// Runs until idle, then moves the virtual clock forward by `d`, firing
    /// every timer due on the way in order and running until idle after
    /// each (see the module docs). Takes no real time.
    pub fn advance(&self, d: Duration) {
        self.run_until_idle();
        let clock = self.clock.clock();
        let Some(target) = clock.now().checked_add(d) else {
            // "Forever": fire everything pending, however far.
            while let Some(t) = clock.next_deadline() {
                clock.fire_next(t);
                self.run_until_idle();
            }
            return;
        };
        while clock.fire_next(target) {
            self.run_until_idle();
        }
        clock.set_now(target);
    }

    /// Moves the virtual clock to the next pending timer and fires it (and
    /// what is due with it), running until idle; `false` if none is pending.
    pub fn advance_to_next_timer(&self) -> bool {
        self.run_until_idle();
        let clock = self.clock.clock();
        match clock.next_deadline() {
            Some(t) => {
                while clock.fire_next(t) {
                    self.run_until_idle();
                }
                true
            }
            None => false,
        }
    }

    /// When the next virtual timer is due, if any.
    pub fn next_timer(&self) -> Option<Instant> {
        self.clock.clock().next_deadline()
    }

    /// Asks `actor` and runs the kit until the reply comes. If the kit goes
    /// idle without one, the ask fails with `AskError::Timeout` (nothing
    /// else can happen without the test advancing the clock).
    pub fn ask<A: Actor, R: Send + 'static>(
        &self,
        actor: &ActorRef<A>,
        make: impl FnOnce(ReplyTo<R>) -> A::Msg,
    ) -> Result<R, AskError> {
        let mut fut = pin!(actor.ask_async(make));
        let mut cx = TaskContext::from_waker(Waker::noop());
        loop {
            if let Poll::Ready(r) = fut.as_mut().poll(&mut cx) {
                return r;
            }
            if !self.step() {
                // One more look: the last step may have replied.
                return match fut.as_mut().poll(&mut cx) {
                    Poll::Ready(r) => r,
                    Poll::Pending => Err(AskError::Timeout),
                };
            }
        }
    }

    /// A probe that waits in this kit's virtual time.
    pub fn probe<M: Send + 'static>(&self) -> TestProbe<'_, M> {
        TestProbe::with_kit(self)
    }

    /// Runs until idle and asserts that `actor` has stopped with `reason`;
    /// the failure says how it stopped instead, or that it still runs.
    #[track_caller]
    pub fn expect_stopped<A: Actor>(&self, actor: &ActorRef<A>, reason: StopReason) {
        self.run_until_idle();
        match actor.stop_reason() {
            Some(r) if r == reason => {}
            Some(r) => panic!(
                "expect_stopped: actor {} stopped with {r:?}, expected {reason:?}",
                actor.id()
            ),
            None => panic!(
                "expect_stopped: actor {} is still running (mailbox: {} messages), expected it stopped with {reason:?}",
                actor.id(),
                actor.mailbox_len()
            ),
        }
    }
}

impl Drop for TestKit {
    fn drop(&mut self) {
        self.system.request_shutdown();
        self.run_until_idle();
        // Order matters: the system first (its shutdown finds no live actor
        // on the manual pool), then the worker (its queues are empty), then
        // the clock (uninstalled last, so timers the actors dropped were
        // virtual ones).
        // SAFETY: each field is dropped exactly once, here, and never used
        // again.
        unsafe {
            ManuallyDrop::drop(&mut self.system);
            ManuallyDrop::drop(&mut self.worker);
            ManuallyDrop::drop(&mut self.clock);
        }
    }
}
