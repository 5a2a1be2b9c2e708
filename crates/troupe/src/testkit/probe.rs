//! [`TestProbe`]: a recipient that records what it receives, with
//! expectations that fail with what arrived instead.
//!
//! A probe made by a [`TestKit`] waits in virtual time: an expectation runs
//! the kit until idle, then advances its clock timer by timer until the
//! message comes or the allowance is used up. A probe made alone waits in
//! real time on a condvar (for tests of an ordinary system).

use super::kit::TestKit;
use crate::actor::{Actor, ActorRef, SendError, StopReason};
use crate::engine::deadline;
use crate::messaging::recipient::{Deliver, Recipient};
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

/// What a probe's queue holds; shared with the recipients it hands out.
struct Inbox<M> {
    queue: Mutex<VecDeque<M>>,
    arrived: Condvar,
}

impl<M: Send + 'static> Deliver<M> for Inbox<M> {
    fn deliver(&self, msg: M) -> Result<(), SendError<M>> {
        self.queue.lock().push_back(msg);
        self.arrived.notify_all();
        Ok(())
    }
}

/// A stand-in for an actor that records the messages sent to it. Hand it to
/// the code under test as a [`Recipient`] ([`recipient`](Self::recipient)),
/// then state what should have arrived.
///
/// ```should_panic
/// use std::time::Duration;
/// use troupe::testkit::TestProbe;
///
/// let probe = TestProbe::<u32>::new();
/// probe.recipient().send(7).unwrap();
/// // Fails with: "expect_msg_where: the next message did not match: got 7"
/// probe.expect_msg_where(Duration::from_millis(10), |n| *n > 10);
/// ```
pub struct TestProbe<'k, M> {
    inbox: Arc<Inbox<M>>,
    kit: Option<&'k TestKit>,
}

/// A message a probe received, to compare or take.
#[derive(Debug)]
#[must_use = "check the message (`equals`) or take it (`into_inner`)"]
pub struct Received<M>(M);

impl<M: Debug + PartialEq> Received<M> {
    /// Asserts the message equals `expected`.
    #[track_caller]
    pub fn equals(self, expected: M) -> M {
        assert!(
            self.0 == expected,
            "expect_msg: got {:?}, expected {:?}",
            self.0,
            expected
        );
        self.0
    }
}

impl<M> Received<M> {
    /// The message.
    pub fn into_inner(self) -> M {
        self.0
    }
}

impl<M: Send + 'static> Default for TestProbe<'static, M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M: Send + 'static> TestProbe<'static, M> {
    /// A probe that waits in real time.
    pub fn new() -> Self {
        TestProbe {
            inbox: Arc::new(Inbox {
                queue: Mutex::new(VecDeque::new()),
                arrived: Condvar::new(),
            }),
            kit: None,
        }
    }
}

impl<'k, M: Send + 'static> TestProbe<'k, M> {
    pub(super) fn with_kit(kit: &'k TestKit) -> Self {
        TestProbe {
            kit: Some(kit),
            ..TestProbe::new()
        }
    }

    /// The probe as a recipient: everything sent to it is recorded.
    pub fn recipient(&self) -> Recipient<M> {
        Recipient::new(ProbeTarget(self.inbox.clone()))
    }

    /// Messages received and not yet taken.
    pub fn len(&self) -> usize {
        self.inbox.queue.lock().len()
    }

    /// Whether no message is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes the next message, waiting up to `within` (virtual time with a
    /// kit, real time otherwise).
    fn next_within(&self, within: Duration) -> Option<M> {
        match self.kit {
            Some(kit) => {
                kit.run_until_idle();
                if let Some(m) = self.inbox.queue.lock().pop_front() {
                    return Some(m);
                }
                let Some(limit) = kit.now().checked_add(within) else {
                    while kit.advance_to_next_timer() {
                        if let Some(m) = self.inbox.queue.lock().pop_front() {
                            return Some(m);
                        }
                    }
                    return None;
                };
                loop {
                    let before = kit.now();
                    // Fire the next timer only if it is due within the limit.
                    let step = limit.saturating_duration_since(before);
                    if !fire_one_within(kit, step) {
                        kit.advance(step);
                        return self.inbox.queue.lock().pop_front();
                    }
                    if let Some(m) = self.inbox.queue.lock().pop_front() {
                        return Some(m);
                    }
                }
            }
            None => {
                let until = deadline::after(within);
                let mut q = self.inbox.queue.lock();
                deadline::wait_while(&self.inbox.arrived, &mut q, until, |q| q.is_empty());
                q.pop_front()
            }
        }
    }

    /// Expects a message within `within`; fails if none came.
    #[track_caller]
    pub fn expect_msg(&self, within: Duration) -> Received<M> {
        match self.next_within(within) {
            Some(m) => Received(m),
            None => panic!("expect_msg: no message within {within:?}"),
        }
    }

    /// Expects a message within `within` for which `matches` holds; fails
    /// with the message that came instead (or none).
    #[track_caller]
    pub fn expect_msg_where(&self, within: Duration, matches: impl FnOnce(&M) -> bool) -> M
    where
        M: Debug,
    {
        match self.next_within(within) {
            Some(m) if matches(&m) => m,
            Some(m) => panic!("expect_msg_where: the next message did not match: got {m:?}"),
            None => panic!("expect_msg_where: no message within {within:?}"),
        }
    }

    /// Expects nothing for `within`; fails with what came.
    #[track_caller]
    pub fn expect_no_msg(&self, within: Duration)
    where
        M: Debug,
    {
        if let Some(m) = self.next_within(within) {
            panic!("expect_no_msg: got {m:?} within {within:?}");
        }
    }

    /// Expects `n` messages within `within` (in all); fails with those that
    /// came.
    #[track_caller]
    pub fn receive_n(&self, n: usize, within: Duration) -> Vec<M>
    where
        M: Debug,
    {
        let start_kit = self.kit.map(|k| k.now());
        let until = deadline::after(within);
        let mut got = Vec::with_capacity(n);
        while got.len() < n {
            let left = match (self.kit, start_kit) {
                (Some(k), Some(s)) => within.saturating_sub(k.now().saturating_duration_since(s)),
                _ => until.map_or(Duration::MAX, |u| {
                    u.saturating_duration_since(std::time::Instant::now())
                }),
            };
            match self.next_within(left) {
                Some(m) => got.push(m),
                None => panic!(
                    "receive_n: got {} of {n} messages within {within:?}: {got:?}",
                    got.len()
                ),
            }
        }
        got
    }
}

/// Fires the kit's next timer if it is due within `step` from now, running
/// until idle; `false` if none is.
fn fire_one_within(kit: &TestKit, step: Duration) -> bool {
    let next = kit.next_timer();
    match (next, kit.now().checked_add(step)) {
        (Some(t), Some(limit)) if t <= limit => kit.advance_to_next_timer(),
        _ => false,
    }
}

/// The recipient side of a probe.
struct ProbeTarget<M>(Arc<Inbox<M>>);

impl<M: Send + 'static> Deliver<M> for ProbeTarget<M> {
    fn deliver(&self, msg: M) -> Result<(), SendError<M>> {
        self.0.deliver(msg)
    }
}

impl<M: Send + 'static> From<&TestProbe<'_, M>> for Recipient<M> {
    fn from(p: &TestProbe<'_, M>) -> Self {
        p.recipient()
    }
}

/// Waits (real time, at most `within`) for `actor` to stop and asserts its
/// reason; for tests of an ordinary system. With a kit use
/// [`TestKit::expect_stopped`].
#[track_caller]
pub fn expect_stopped<A: Actor>(actor: &ActorRef<A>, reason: StopReason, within: Duration) {
    match actor.join_timeout(within) {
        Some(r) if r == reason => {}
        Some(r) => panic!(
            "expect_stopped: actor {} stopped with {r:?}, expected {reason:?}",
            actor.id()
        ),
        None => panic!(
            "expect_stopped: actor {} still running after {within:?}, expected it stopped with {reason:?}",
            actor.id()
        ),
    }
}
