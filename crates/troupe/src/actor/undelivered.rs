//! [`Undelivered`]: what a stopped actor left in its mailbox, handed to the
//! actor's owner instead of dropped.
//!
//! An actor spawned with an undelivered hook
//! ([`SystemHandle::spawn_with_undelivered`](crate::SystemHandle::spawn_with_undelivered))
//! gives its hook, once, when it is finalized (after its `stopped` hook
//! and the drop of the actor value, before its watchers run and before
//! `join` returns), every message its mailbox still held: those it did not
//! handle because it stopped itself (`Context::stop`), panicked, or was
//! killed. Without a hook they are dropped and counted in the system's
//! `dropped_messages`, as before. An owner that restarts the actor (a
//! sharding region activating the entity again) can then hand them to the
//! next instance, in their order, ahead of anything newer.
//!
//! Invariants:
//! * The hook runs once per actor life, on the finalizing worker, with the
//!   mailbox closed and emptied (the drain waits for slots claimed before
//!   the close, `Mailbox::pop_final`): no message accepted by this actor is
//!   left behind, and none arrives later. It runs under the runtime's
//!   guard: a panic in it is caught and counted.
//! * Nothing is added to the per-message path: the hook sits in the actor
//!   slot, which only the task holder touches, and is read once, at the
//!   end. Without a hook the finalizer does what it always did.
//! * Every message is handed over or dropped exactly once: what the owner
//!   does not take out ([`Undelivered::take`]) is dropped when the
//!   `Undelivered` is, counted in the system's `dropped_messages`, and an
//!   ask among them fails with `AskError::ActorStopped`, as it would have
//!   in the mailbox.

use super::ask::while_dropping;
use super::error::{AskError, StopReason};
use super::lifecycle::guard;
use super::runtime_ref::RuntimeRef;

/// What a stopped actor did not handle, with why it stopped; see the module
/// docs. Dropping it drops (and counts) the messages not taken.
///
/// ```
/// use std::sync::mpsc;
/// use troupe::{Actor, ActorSystem, Context, SpawnOptions, Undelivered};
///
/// /// Stops itself on 0, once told to go on.
/// struct Quitter(mpsc::Receiver<()>);
/// impl Actor for Quitter {
///     type Msg = u32;
///     fn handle(&mut self, n: u32, ctx: &mut Context<'_, Self>) {
///         if n == 0 {
///             self.0.recv().unwrap();
///             ctx.stop();
///         }
///     }
/// }
///
/// let system = ActorSystem::builder().threads(1).build();
/// let (go, wait) = mpsc::channel();
/// let (tx, rx) = mpsc::channel();
/// let hook = move |mut left: Undelivered<u32>| {
///     tx.send((left.handled(), left.take())).unwrap();
/// };
/// let a = system
///     .handle()
///     .spawn_with_undelivered(Quitter(wait), SpawnOptions::new(), hook);
/// for n in [0, 1, 2] {
///     a.tell(n).unwrap();
/// }
/// go.send(()).unwrap();
/// a.join();
/// // It handled 0 and stopped: 1 and 2 come back, in order.
/// assert_eq!(rx.recv().unwrap(), (1, vec![1, 2]));
/// system.shutdown();
/// ```
pub struct Undelivered<M: Send + 'static> {
    messages: Vec<M>,
    handled: u64,
    reason: StopReason,
    /// Counts what is dropped here in the system's `dropped_messages`.
    rt: RuntimeRef,
}

impl<M: Send + 'static> Undelivered<M> {
    pub(crate) fn new(messages: Vec<M>, handled: u64, reason: StopReason, rt: RuntimeRef) -> Self {
        Undelivered {
            messages,
            handled,
            reason,
            rt,
        }
    }

    /// How many messages the actor handled in its life (the one that
    /// panicked included): 0 for an actor that stopped before its first.
    pub fn handled(&self) -> u64 {
        self.handled
    }

    /// Why the actor stopped.
    pub fn reason(&self) -> &StopReason {
        &self.reason
    }

    /// How many messages are still held here.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether no message is held here.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// Takes the messages, in the order the mailbox held them (its FIFO);
    /// from here they are the caller's (not counted as dropped).
    pub fn take(&mut self) -> Vec<M> {
        std::mem::take(&mut self.messages)
    }

    /// Holds `msg` again (one taken out that the owner could not hand
    /// on), to be dropped and counted with the rest.
    pub fn push(&mut self, msg: M) {
        self.messages.push(msg);
    }
}

impl<M: Send + 'static> Drop for Undelivered<M> {
    fn drop(&mut self) {
        if self.messages.is_empty() {
            return;
        }
        let messages = std::mem::take(&mut self.messages);
        // Counted before dropped: dropping a request's `ReplyTo` wakes its
        // asker, who may read the counter at once.
        self.rt.count_dropped(messages.len() as u64);
        while_dropping(AskError::ActorStopped, || {
            for m in messages {
                if let Err(r) = guard(move || drop(m)) {
                    self.rt.caught_panic("dropping an undelivered message", &r);
                }
            }
        });
    }
}

impl<M: Send + 'static> std::fmt::Debug for Undelivered<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Undelivered")
            .field("len", &self.messages.len())
            .field("handled", &self.handled)
            .field("reason", &self.reason)
            .finish()
    }
}

/// The hook an actor spawned with
/// [`spawn_with_undelivered`](crate::SystemHandle::spawn_with_undelivered)
/// gives what it did not handle to. Kept in the actor's exit record (as
/// `Any`, the record being untyped), not in the cell: an actor without one
/// pays nothing for it.
pub(crate) type Hook<M> = Box<dyn FnOnce(Undelivered<M>) + Send>;
