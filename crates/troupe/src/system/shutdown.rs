//! Shutting a system down, and the report of what it did.
//!
//! Shutdown, step by step ([`ActorSystem::shutdown_timeout`](crate::ActorSystem::shutdown_timeout)):
//! 1. `closing` is set: actors spawned from now on are asked to stop at once.
//! 2. Every live actor (from the actor table) gets a drain request: its
//!    mailbox refuses new messages (senders get them back), it handles what
//!    is already queued, runs `stopped`, and leaves the table.
//! 3. The caller waits for the live count to reach zero. Past the deadline the
//!    remaining actors are killed (their queued messages dropped and counted).
//! 4. The workers are told to exit and joined; `shut_down` is set, so a
//!    later spawn gets an actor that is stopped at once instead of one that
//!    no worker will ever run.
//!
//! The report says how many actors stopped and how many messages were dropped
//! (queued past the deadline, evicted by an overflow policy, or sent in the
//! instant an actor stopped).

use super::SystemInner;
use crate::actor::lifecycle::StopRequest;
use crate::actor::runtime::Runtime;
use crate::engine::deadline;
use crate::engine::scheduler::is_worker_thread;
use std::fmt;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

impl SystemInner {
    /// Shutdown steps 1 and 2: refuse new actors, ask every live one to drain
    /// and stop.
    pub(crate) fn begin_closing(&self) {
        self.closing.store(true, Ordering::SeqCst);
        self.request_all(StopRequest::Shutdown);
    }

    fn request_all(&self, kind: StopRequest) {
        for actor in self.table.snapshot() {
            actor.request_stop(kind);
        }
    }

    /// Waits until no actor is alive; `false` if the deadline passed first.
    pub(crate) fn wait_no_live(&self, deadline: Option<Instant>) -> bool {
        let mut g = self.live_lock.lock();
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let none = deadline::wait_while(&self.live_cv, &mut g, deadline, |_| self.table.live() > 0);
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        none
    }

    /// Without tokio dispatchers, nothing but the wait.
    #[cfg(not(feature = "async"))]
    fn wait_drained(&self, deadline: Option<Instant>) -> bool {
        self.wait_no_live(deadline)
    }

    pub(crate) fn shutdown(&self, rt: &Runtime, timeout: Duration) -> ShutdownReport {
        let mut report_slot = self.report.lock();
        if let Some(r) = report_slot.as_ref() {
            return r.clone();
        }
        let started = Instant::now();
        self.begin_closing();
        if is_worker_thread() {
            // A worker cannot wait for the pool it runs on: the stops are
            // requested; the owner's `join`/drop completes the shutdown.
            return ShutdownReport::pending(self, rt);
        }
        let mut timed_out = false;
        if !self.wait_drained(deadline::after(timeout)) {
            timed_out = true;
            self.request_all(StopRequest::ShutdownNow);
            self.wait_drained(deadline::after(timeout));
        }
        let unresponsive = self.table.live();
        self.shut_down.store(true, Ordering::SeqCst);
        rt.pool.begin_shutdown();
        let extra: Vec<_> = self.extra_pools.lock().drain(..).collect();
        for (p, _) in &extra {
            p.begin_shutdown();
        }
        #[cfg(feature = "async")]
        Self::release_orphans(&extra);
        if unresponsive == 0 {
            for h in self.workers.lock().drain(..) {
                let _ = h.join();
            }
            for (_, hs) in extra {
                for h in hs {
                    let _ = h.join();
                }
            }
        }
        #[cfg(feature = "async")]
        self.bridge.lock().shutdown();
        let report = ShutdownReport {
            actors_stopped: self.table.stopped(),
            messages_dropped: rt.dropped.load(Ordering::Relaxed),
            panics: rt.panics.load(Ordering::Relaxed),
            deadline_passed: timed_out,
            actors_unresponsive: unresponsive,
            elapsed: started.elapsed(),
        };
        if report.messages_dropped > 0 || timed_out {
            tracing::warn!(%report, "actor system shut down");
        }
        *report_slot = Some(report.clone());
        report
    }
}

/// What a shutdown did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Actors that stopped over the system's whole life.
    pub actors_stopped: u64,
    /// Messages dropped undelivered over the system's life: left in a mailbox
    /// when its actor stopped or was killed, evicted by an overflow policy,
    /// or sent in the instant the actor stopped.
    pub messages_dropped: u64,
    /// Panics caught in user code over the system's life (handlers, hooks,
    /// actor and message drops, watchers); none took a worker down.
    pub panics: u64,
    /// Whether draining took longer than the timeout (the rest were killed).
    pub deadline_passed: bool,
    /// Actors still running a handler when shutdown gave up (their workers
    /// were left to finish and exit on their own).
    pub actors_unresponsive: usize,
    /// Time the shutdown took.
    pub elapsed: Duration,
}

impl ShutdownReport {
    fn pending(inner: &SystemInner, rt: &Runtime) -> Self {
        ShutdownReport {
            actors_stopped: inner.table.stopped(),
            messages_dropped: rt.dropped.load(Ordering::Relaxed),
            panics: rt.panics.load(Ordering::Relaxed),
            deadline_passed: false,
            actors_unresponsive: inner.table.live(),
            elapsed: Duration::ZERO,
        }
    }
}

impl fmt::Display for ShutdownReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} actors stopped, {} messages dropped, {} panics caught{}{} in {:?}",
            self.actors_stopped,
            self.messages_dropped,
            self.panics,
            if self.deadline_passed {
                ", deadline passed"
            } else {
                ""
            },
            if self.actors_unresponsive > 0 {
                format!(", {} unresponsive", self.actors_unresponsive)
            } else {
                String::new()
            },
            self.elapsed
        )
    }
}
