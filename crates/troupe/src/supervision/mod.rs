//! Supervision: monitors, links, supervisors and stable references to
//! supervised children (Erlang/OTP's model on Troupe's typed actors).
//!
//! * **Monitors** ([`monitor`], the same monitor as
//!   [`Context::watch`](crate::Context::watch) and
//!   [`ActorRef::watch`](crate::ActorRef::watch)) are one-way: when the
//!   target stops, the watcher gets a message built from a [`Down`](crate::Down)
//!   carrying the [`StopReason`](crate::StopReason). All three hold only a weak reference to
//!   the watcher; `monitor` returns a [`MonitorHandle`] that can switch it off.
//! * **Links** ([`link`], [`link_trapping`]) are two-way: when one side stops
//!   *abnormally* (`Panicked`, `Failed` or `Killed`, see [`is_abnormal`])
//!   the other is killed, unless that side traps exits, in which case it
//!   gets a [`Down`](crate::Down) message instead (for every stop, normal ones included,
//!   as Erlang's `trap_exit` does). A stop by shutdown or a normal stop does
//!   not propagate. The killed side's reason is `Killed`.
//! * **Supervisors** ([`SupervisorSpec`]) start children from [`ChildSpec`]s
//!   (a factory building a fresh actor per start), restart them by
//!   [`Restart`] policy and [`Strategy`], and give up past a restart
//!   intensity (more than `max_restarts` within `period`): they then kill
//!   their children and stop with `StopReason::Failed("restart intensity
//!   exceeded: ...")` (`Context::stop_with`), which their own supervisor
//!   sees as a failure (trees).
//! * **Stable references** ([`SupervisedRef`]) follow a child across its
//!   restarts.
//!
//! # Protocol
//!
//! A supervisor starts its children in order, synchronously, when it is
//! spawned (so a [`SupervisedRef`] works as soon as `spawn` returns), and
//! monitors each one. Every exit reaches it as a message carrying the
//! instance's id; an exit of an instance it no longer tracks is ignored.
//! To restart a set of children (`OneForAll`, `RestForOne`) it kills the
//! running siblings and waits for each of their exits before starting
//! fresh instances, in spec order: old and new instances never overlap.
//! Restart intensity counts restarts of failed children (siblings killed
//! along with them do not count).
//!
//! When the supervisor stops (normally, killed or shut down) it asks its
//! children to stop, last started first; if it fails (panics, or gives up
//! on intensity) it kills them.
//!
//! # Messages during a restart
//!
//! Messages already in a failed instance's mailbox are dropped with it and
//! counted in the system's dropped-message count (asks among them fail at
//! once with `AskError::ActorStopped`), as in Erlang. A message sent through
//! a [`SupervisedRef`] while the child is down is **returned as an error**
//! ([`SendError::Stopped`](crate::SendError::Stopped) with the message inside), never silently lost;
//! [`SupervisedRef::tell_wait`] retries on the next instance for up to a
//! timeout instead (plain threads only).

//!
//! Files: `link` (monitors and links), `spec` (child and supervisor specs,
//! restart policies), `supervisor` (the supervisor actor and its handle),
//! `supervised_ref` (stable references). Everything here uses the actor
//! core's public API only (`on_stop`, `watch`, `demonitor`, `downgrade`,
//! `stop_with`).

mod link;
mod spec;
mod supervised_ref;
mod supervisor;

#[allow(deprecated)]
pub use link::Link;
pub use link::{is_abnormal, link, link_trapping, monitor, MonitorHandle};
pub use spec::{ChildSpec, Restart, Strategy, SupervisorSpec};
pub use supervised_ref::SupervisedRef;
pub use supervisor::{ChildInfo, Supervisor, SupervisorMsg, SupervisorRef};
