//! The engine: the machinery that runs work, knowing nothing of actors.
//!
//! This is the lowest layer of the crate (see `docs/architecture.md`,
//! "Layers"). It holds:
//! * [`mailbox`]: the lock-free queues and the state word that decides who
//!   runs a queue's owner (`state`);
//! * `scheduler`: worker threads, their queues, stealing and parking;
//! * [`dispatcher`]: the handles users pick pools by;
//! * `timer`: the process-wide timer thread (deadlines and periodic calls);
//! * `deadline`: turning a user's `Duration` into a deadline that cannot
//!   overflow, and waiting on a condvar until one;
//! * `reply_slot`: a reusable one-value cell from a sender to its owner's
//!   receiver, with the receiver's waker (an async actor's asks);
//! * `lock`: the spin lock of the lifecycle's short critical sections;
//! * `shard`: which shard of a per-thread sharded structure a thread uses;
//! * `sync`: the one door to the atomics loom replaces.
//!
//! Rule: nothing under `engine/` imports from `actor/`, `system/` or any
//! feature above them. A task is a `dyn Runnable`; what it runs is the
//! business of the layers above.

pub(crate) mod deadline;
pub mod dispatcher;
pub(crate) mod lock;
pub mod mailbox;
pub(crate) mod reply_slot;
pub(crate) mod scheduler;
pub(crate) mod shard;
pub(crate) mod state_word;
pub(crate) mod sync;
pub(crate) mod timer_thread;
