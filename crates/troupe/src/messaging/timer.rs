//! Message timers: deliver a message after a delay ([`send_delayed`]), at
//! an instant ([`send_at`]) or every period ([`send_periodic`]) to any
//! [`Recipient`]: an actor, a channel, an mchain.
//!
//! They run on the engine's timer thread (one per process, started on first
//! use; an idle process pays nothing). Dropping the returned [`TimerHandle`]
//! cancels the timer; [`TimerHandle::detach`] lets it run unowned. A delay
//! too long for the clock (`Duration::MAX`) means "never": the timer stays
//! pending until cancelled. A periodic timer stops by itself once its target
//! is closed (a stopped actor, a closed chain). Inside a
//! [`TestKit`](crate::testkit::TestKit) timers run on its virtual clock.
//!
//! ```
//! use std::time::Duration;
//! use troupe::timer;
//! use troupe::mchain::MChain;
//!
//! let chain = MChain::unbounded();
//! let _t = timer::send_delayed(&chain, Duration::from_millis(5), "ding");
//! assert_eq!(chain.recv_timeout(Duration::from_secs(5)), Ok("ding"));
//!
//! let tick = timer::send_periodic(&chain, Duration::ZERO, Duration::from_millis(2), "tick");
//! assert_eq!(chain.recv_timeout(Duration::from_secs(5)), Ok("tick"));
//! assert_eq!(chain.recv_timeout(Duration::from_secs(5)), Ok("tick"));
//! drop(tick); // cancels
//! ```

use crate::actor::envelope::Follow;
use crate::engine::timer_thread::{call_after, call_at, call_periodic};
use crate::messaging::recipient::Recipient;
use parking_lot::Mutex;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::{Duration, Instant};

pub use crate::engine::timer_thread::{stats, TimerHandle, TimerStats};

/// The timer clock's now: `Instant::now()`, or inside a
/// [`TestKit`](crate::testkit::TestKit) its virtual clock. Code that
/// measures time against timers (as state time limits do) reads this.
pub fn now() -> Instant {
    crate::engine::timer_thread::now()
}

/// Sends `msg` to `to` once, after `delay` (never, if `delay` is beyond the
/// clock's range).
pub fn send_delayed<M: Send + 'static>(
    to: impl Into<Recipient<M>>,
    delay: Duration,
    msg: M,
) -> TimerHandle {
    let to = to.into();
    let cx = Follow::here();
    call_after(delay, move || {
        let _in = cx.enter();
        let _ = to.send(msg);
    })
}

/// Sends `msg` to `to` once, at `deadline` (now, if it has passed).
pub fn send_at<M: Send + 'static>(
    to: impl Into<Recipient<M>>,
    deadline: Instant,
    msg: M,
) -> TimerHandle {
    let to = to.into();
    let cx = Follow::here();
    call_at(Some(deadline), move || {
        let _in = cx.enter();
        let _ = to.send(msg);
    })
}

/// Sends a clone of `msg` to `to` after `initial_delay`, then every
/// `period` (at least 1 µs), until cancelled or until `to` closes.
pub fn send_periodic<M: Clone + Send + 'static>(
    to: impl Into<Recipient<M>>,
    initial_delay: Duration,
    period: Duration,
    msg: M,
) -> TimerHandle {
    let to = to.into();
    let cx = Follow::here();
    call_periodic(initial_delay, period, move || {
        let _in = cx.enter();
        match to.send(msg.clone()) {
            Err(e) => !e.is_closed(),
            Ok(()) => true,
        }
    })
}

/// A future that completes after `delay`, kept by the timer thread: it
/// needs no async runtime (an [`AsyncActor`](crate::AsyncActor)'s handler
/// can await it on any system), and inside a
/// [`TestKit`](crate::testkit::TestKit) it follows the virtual clock.
///
/// See [`AsyncActor`](crate::AsyncActor) for an example.
pub fn sleep(delay: Duration) -> Sleep {
    Sleep {
        deadline: now().checked_add(delay),
        armed: None,
    }
}

/// The future of [`sleep`]. Dropping it cancels its timer.
#[must_use = "a sleep does nothing unless awaited"]
pub struct Sleep {
    /// `None`: beyond the clock's range (never completes).
    deadline: Option<Instant>,
    armed: Option<(Arc<SleepShared>, TimerHandle)>,
}

#[derive(Default)]
struct SleepShared {
    fired: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Future for Sleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.armed.is_none() {
            let shared = Arc::new(SleepShared::default());
            let s = shared.clone();
            let timer = call_at(this.deadline, move || {
                s.fired.store(true, Ordering::Release);
                if let Some(w) = s.waker.lock().take() {
                    w.wake();
                }
            });
            this.armed = Some((shared, timer));
        }
        let (shared, _) = this.armed.as_ref().expect("armed above");
        if shared.fired.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        *shared.waker.lock() = Some(cx.waker().clone());
        // Checked after the waker is stored: a timer firing in between
        // either finds the waker or is seen here.
        if shared.fired.load(Ordering::Acquire) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}
