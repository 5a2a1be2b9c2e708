//! The async actor's unsafe parts (`actor::async_actor`: the actor's
//! state behind a raw pointer, the future slot, the counted and borrowed
//! wakers) on the test kit's manual pool: deterministic, so Miri (Tree
//! Borrows, in CI) runs them. They live beside the test kit because the
//! actor layer may not import it (`.ci/layers.py`).

use crate::testkit::TestKit;
use crate::{Async, AsyncActor, AsyncContext, StopReason};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

/// Pending once (it wakes itself first), then ready.
struct YieldOnce(bool);
impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        // Through a clone: the counted waker's clone, wake and release.
        let counted = cx.waker().clone();
        counted.wake_by_ref();
        drop(counted);
        Poll::Pending
    }
}

struct Recorder {
    seen: Arc<parking_lot::Mutex<Vec<u32>>>,
    stopped: Arc<AtomicU32>,
}

impl AsyncActor for Recorder {
    type Msg = u32;
    async fn handle(&mut self, n: u32, _ctx: &mut AsyncContext<Self>) {
        YieldOnce(false).await;
        self.seen.lock().push(n);
    }
    async fn stopped(&mut self, _ctx: &mut AsyncContext<Self>) {
        YieldOnce(false).await;
        self.stopped.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn suspended_handlers_run_in_order_and_stop_runs_the_async_hook() {
    let kit = TestKit::new();
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let stopped = Arc::new(AtomicU32::new(0));
    let a = kit.spawn(Async::new(Recorder {
        seen: seen.clone(),
        stopped: stopped.clone(),
    }));
    for n in 0..5 {
        a.tell(n).unwrap();
    }
    kit.run_until_idle();
    assert_eq!(*seen.lock(), vec![0, 1, 2, 3, 4]);
    a.stop();
    kit.run_until_idle();
    assert_eq!(stopped.load(Ordering::SeqCst), 1);
    assert_eq!(a.stop_reason(), Some(StopReason::Normal));
}

#[test]
fn a_kill_drops_the_pending_future() {
    let kit = TestKit::new();
    struct Never;
    impl AsyncActor for Never {
        type Msg = ();
        async fn handle(&mut self, _: (), _ctx: &mut AsyncContext<Self>) {
            std::future::pending::<()>().await;
        }
    }
    let a = kit.spawn(Async::new(Never));
    a.tell(()).unwrap();
    a.tell(()).unwrap();
    kit.run_until_idle();
    assert!(a.is_alive(), "suspended, not stopped");
    a.kill();
    kit.run_until_idle();
    assert_eq!(a.stop_reason(), Some(StopReason::Killed));
}
