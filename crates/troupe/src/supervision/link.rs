//! Monitors and links: how an actor learns that another stopped, and how a
//! failure spreads between linked actors.

use crate::actor::{Actor, ActorRef, Down, StopReason, WatchId};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Whether a stop propagates over a link: a panic, a failure
/// (`StopReason::Failed`) or a kill. Normal stops and system shutdown do
/// not.
pub fn is_abnormal(reason: &StopReason) -> bool {
    matches!(
        reason,
        StopReason::Panicked(_) | StopReason::Failed(_) | StopReason::Killed
    )
}

/// The old name of [`MonitorHandle`].
#[deprecated(
    since = "0.1.0",
    note = "renamed MonitorHandle: the handle of a monitor or link"
)]
pub type Link = MonitorHandle;

/// Removes one watcher from the actor it watches (if that actor still exists).
type Cancel = Box<dyn FnOnce() + Send>;

/// The handle of a monitor ([`monitor`]) or a link ([`link`],
/// [`link_trapping`]): [`cancel`](Self::cancel) switches it off; dropping
/// the handle leaves it on.
#[derive(Clone)]
pub struct MonitorHandle {
    active: Arc<AtomicBool>,
    /// The watchers it installed, removed again by `cancel` so that a
    /// long-lived actor monitored and unmonitored many times does not
    /// collect dead watchers.
    cancels: Arc<parking_lot::Mutex<Vec<Cancel>>>,
}

impl fmt::Debug for MonitorHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MonitorHandle")
            .field("active", &self.is_active())
            .finish()
    }
}

impl MonitorHandle {
    fn new() -> Self {
        MonitorHandle {
            active: Arc::new(AtomicBool::new(true)),
            cancels: Arc::default(),
        }
    }

    /// Notes the watcher `watch` on `target`, for `cancel` to remove.
    fn installed<B: Actor>(&self, target: &ActorRef<B>, watch: WatchId) {
        let target = target.downgrade();
        self.cancels.lock().push(Box::new(move || {
            if let Some(target) = target.upgrade() {
                target.demonitor(watch);
            }
        }));
    }

    /// Switches it off: no message or kill comes from it from now on, and
    /// its watchers leave the actors they were on.
    pub fn cancel(&self) {
        self.active.store(false, Ordering::Release);
        let cancels = std::mem::take(&mut *self.cancels.lock());
        for cancel in cancels {
            cancel();
        }
    }

    /// The same as [`cancel`](Self::cancel), named for links.
    pub fn unlink(&self) {
        self.cancel();
    }

    /// Whether it is still on (it turns off by itself once it has fired).
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }
}

/// Monitors `target` on behalf of `watcher`, returning the handle that
/// switches the monitor off (usable from plain code; inside
/// a handler [`Context::watch`](crate::Context::watch) is the same monitor,
/// without the [`MonitorHandle`] to switch it off): when
/// `target` stops, `watcher` receives `to_msg(Down)`, at once if it already
/// has. One-way: nothing happens to `target` when `watcher` stops. The
/// monitor holds only a weak reference to the watcher.
///
/// ```
/// use troupe::{Actor, ActorSystem, Context, StopReason};
/// use troupe::supervision::monitor;
/// use troupe::Down;
///
/// struct Worker;
/// impl Actor for Worker {
///     type Msg = ();
///     fn handle(&mut self, _: (), _: &mut Context<'_, Self>) { panic!("boom") }
/// }
/// struct Watcher(std::sync::mpsc::Sender<Down>);
/// impl Actor for Watcher {
///     type Msg = Down;
///     fn handle(&mut self, d: Down, _: &mut Context<'_, Self>) { self.0.send(d).unwrap(); }
/// }
///
/// let system = ActorSystem::builder().threads(2).build();
/// let (tx, rx) = std::sync::mpsc::channel();
/// let watcher = system.spawn(Watcher(tx));
/// let worker = system.spawn(Worker);
/// monitor(&watcher, &worker, |down| down);
/// worker.tell(()).unwrap();
/// let down = rx.recv().unwrap();
/// assert_eq!(down.reason, StopReason::Panicked("boom".into()));
/// # system.shutdown();
/// ```
pub fn monitor<A: Actor, B: Actor>(
    watcher: &ActorRef<A>,
    target: &ActorRef<B>,
    to_msg: impl FnOnce(Down) -> A::Msg + Send + 'static,
) -> MonitorHandle {
    let link = MonitorHandle::new();
    down_on_stop(watcher, target, to_msg, &link);
    link
}

/// Sends `watcher` `to_msg(Down)` when `target` stops, unless `link` was
/// switched off (or has fired) by then.
fn down_on_stop<A: Actor, B: Actor>(
    watcher: &ActorRef<A>,
    target: &ActorRef<B>,
    to_msg: impl FnOnce(Down) -> A::Msg + Send + 'static,
    link: &MonitorHandle,
) {
    let active = link.active.clone();
    let w = watcher.downgrade();
    let watch = target.on_stop(move |id, reason| {
        if active.swap(false, Ordering::AcqRel) {
            if let Some(w) = w.upgrade() {
                let _ = w.tell(to_msg(Down {
                    id,
                    reason: reason.clone(),
                }));
            }
        }
    });
    link.installed(target, watch);
}

/// Kills `other` when `on` stops abnormally, as part of `link`.
fn kill_on_abnormal<A: Actor, B: Actor>(
    on: &ActorRef<A>,
    other: &ActorRef<B>,
    link: &MonitorHandle,
) {
    let w = other.downgrade();
    let active = link.active.clone();
    let watch = on.on_stop(move |_, reason| {
        if is_abnormal(reason) && active.swap(false, Ordering::AcqRel) {
            if let Some(o) = w.upgrade() {
                o.kill();
            }
        }
    });
    link.installed(on, watch);
}

/// Links `a` and `b` both ways: if either stops abnormally (panic or kill),
/// the other is killed. Neither traps. Holds only weak references.
///
/// ```
/// use troupe::{Actor, ActorSystem, Context, StopReason};
/// struct Idle;
/// impl Actor for Idle {
///     type Msg = ();
///     fn handle(&mut self, _: (), _: &mut Context<'_, Self>) { panic!("crash") }
/// }
/// let system = ActorSystem::builder().threads(2).build();
/// let a = system.spawn(Idle);
/// let b = system.spawn(Idle);
/// troupe::supervision::link(&a, &b);
/// a.tell(()).unwrap();
/// assert_eq!(b.join(), StopReason::Killed);
/// # system.shutdown();
/// ```
pub fn link<A: Actor, B: Actor>(a: &ActorRef<A>, b: &ActorRef<B>) -> MonitorHandle {
    let link = MonitorHandle::new();
    kill_on_abnormal(a, b, &link);
    kill_on_abnormal(b, a, &link);
    link
}

/// Links `trapper` and `other`, with `trapper` trapping exits: when `other`
/// stops (for any reason) `trapper` receives `to_msg(Down)` instead of being
/// killed; when `trapper` stops abnormally, `other` is killed.
pub fn link_trapping<A: Actor, B: Actor>(
    trapper: &ActorRef<A>,
    other: &ActorRef<B>,
    to_msg: impl FnOnce(Down) -> A::Msg + Send + 'static,
) -> MonitorHandle {
    let link = MonitorHandle::new();
    kill_on_abnormal(trapper, other, &link);
    down_on_stop(trapper, other, to_msg, &link);
    link
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actor::Context;
    use crate::ActorSystem;

    struct Idle;
    impl Actor for Idle {
        type Msg = Down;
        fn handle(&mut self, _: Down, _: &mut Context<'_, Self>) {}
    }

    /// Monitoring and linking a long-lived actor over and over, unlinking
    /// each time, leaves no watcher behind on either side.
    #[test]
    fn unlink_removes_its_watchers() {
        let system = ActorSystem::builder().threads(1).build();
        let a = system.spawn(Idle);
        let b = system.spawn(Idle);
        for _ in 0..1_000 {
            monitor(&a, &b, |d| d).cancel();
            link(&a, &b).unlink();
            link_trapping(&a, &b, |d| d).unlink();
        }
        assert_eq!(a.watcher_count(), 0);
        assert_eq!(b.watcher_count(), 0);
        // A link left on keeps its watchers (one on each side for `link`).
        let kept = link(&a, &b);
        assert!(kept.is_active());
        assert_eq!((a.watcher_count(), b.watcher_count()), (1, 1));
        a.stop();
        b.stop();
        system.shutdown();
    }

    /// The old name still names the handle (deprecated for one release).
    #[test]
    #[allow(deprecated)]
    fn the_old_name_is_the_monitor_handle() {
        let system = ActorSystem::builder().threads(1).build();
        let a = system.spawn(Idle);
        let b = system.spawn(Idle);
        let old: Link = monitor(&a, &b, |d| d);
        let new: MonitorHandle = old.clone();
        new.cancel();
        assert!(!old.is_active());
        system.shutdown();
    }
}
