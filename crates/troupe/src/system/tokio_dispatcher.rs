//! Tokio dispatchers (feature `async`): actors whose turns run on a tokio
//! runtime's thread, beside the runtime's own tasks
//! (`engine::scheduler::tokio_driver` holds the protocol).
//!
//! The system keeps such a pool among its extra pools, with no thread to
//! join: shutdown drains its actors like any others, then tells its driver
//! task to end. If the runtime is gone before that (its driver task
//! dropped), the shutdown runs the pool's remaining turns on its own thread
//! (`wait_drained`), so the drain completes and the wait stays bounded.

use super::SystemInner;
use crate::actor::runtime::SystemHandle;
use crate::engine::deadline;
use crate::engine::dispatcher::{Dispatcher, DispatcherKind};
use crate::engine::scheduler::Pool;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long shutdown waits between two runs of orphaned pools' turns.
const ORPHAN_POLL: Duration = Duration::from_millis(2);

impl SystemHandle {
    /// A dispatcher whose actors run on `runtime`'s thread, as a task of
    /// that runtime: each actor's turn runs beside the runtime's other
    /// tasks (a connection's I/O), with no hand-over between threads.
    /// Handlers run inside the runtime's context (tokio timers, I/O and
    /// `tokio::spawn` reach it) and must not block: on a one-thread
    /// runtime a blocking handler stalls its I/O too. Sync and async actors
    /// alike. The driver yields to the runtime every few turns.
    ///
    /// Do not call [`ActorSystem::shutdown`](crate::ActorSystem::shutdown)
    /// from the runtime's own thread (it waits for actors that only that
    /// thread runs). If the runtime shuts down first, the system's shutdown
    /// runs the dispatcher's remaining turns itself.
    ///
    /// ```
    /// use troupe::{ActorSystem, Async, AsyncActor, AsyncContext, ReplyTo, SpawnOptions};
    /// use std::time::Duration;
    /// struct Sleeper;
    /// impl AsyncActor for Sleeper {
    ///     type Msg = ReplyTo<u32>;
    ///     async fn handle(&mut self, r: ReplyTo<u32>, _ctx: &mut AsyncContext<Self>) {
    ///         tokio::time::sleep(Duration::from_millis(1)).await; // this runtime's timer
    ///         r.reply(7);
    ///     }
    /// }
    /// let rt = tokio::runtime::Builder::new_multi_thread()
    ///     .worker_threads(1)
    ///     .enable_all()
    ///     .build()
    ///     .unwrap();
    /// let system = ActorSystem::new();
    /// let io = system.tokio_dispatcher("io", rt.handle().clone());
    /// let a = system.spawn_with(Async::new(Sleeper), SpawnOptions::new().dispatcher(&io));
    /// assert_eq!(a.ask(|r| r, Duration::from_secs(5)), Ok(7));
    /// system.shutdown();
    /// ```
    pub fn tokio_dispatcher(&self, name: &str, runtime: tokio::runtime::Handle) -> Dispatcher {
        let pool = Pool::start_on_tokio(self.rt.pool_config(name, 1), &runtime);
        let inner = self.inner();
        if inner.shut_down.load(Ordering::SeqCst) {
            // Too late to be stopped by a shutdown: let the driver end.
            pool.begin_shutdown();
        }
        inner.extra_pools.lock().push((pool.clone(), Vec::new()));
        Dispatcher::new(pool, DispatcherKind::Tokio, name)
    }
}

impl SystemInner {
    /// Tokio dispatchers' pools whose runtime dropped their driver.
    fn orphans(&self) -> Vec<Arc<Pool>> {
        self.extra_pools
            .lock()
            .iter()
            .filter(|(p, _)| p.is_orphaned())
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// [`wait_no_live`](Self::wait_no_live), running orphaned tokio
    /// dispatchers' turns on this thread meanwhile (nothing else will).
    pub(crate) fn wait_drained(&self, deadline: Option<Instant>) -> bool {
        let mut reported = false;
        loop {
            let orphans = self.orphans();
            if orphans.is_empty() {
                return self.wait_no_live(deadline);
            }
            if !reported {
                reported = true;
                tracing::warn!(
                    dispatchers = orphans.len(),
                    "shutdown runs the actors of tokio dispatchers whose runtime is gone"
                );
            }
            for p in &orphans {
                p.drive_orphan();
            }
            let slice = deadline::after(ORPHAN_POLL);
            let slice = match (slice, deadline) {
                (Some(s), Some(d)) => Some(s.min(d)),
                (s, None) => s,
                (None, d) => d,
            };
            if self.wait_no_live(slice) {
                return true;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return false;
            }
        }
    }

    /// After the pools are told to stop: drops the workers orphans left
    /// behind (each holds its pool).
    pub(crate) fn release_orphans(pools: &[(Arc<Pool>, Vec<std::thread::JoinHandle<()>>)]) {
        for (p, _) in pools {
            p.release_orphan();
        }
    }
}
