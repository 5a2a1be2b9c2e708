//! Actors whose thread-safe handlers run in parallel (SObjectizer's
//! adv_thread_pool with thread_safe handlers).
//!
//! A [`SharedActor`] classifies each message: thread-safe ones are handled by
//! `handle_shared(&self)` and may run at the same time on several workers of
//! the actor's dispatcher; the others by `handle_exclusive(&mut self)`, alone.
//!
//! Ordering is kept by a *coordinator*: a FIFO queue of pending messages and,
//! per actor, how many shared handlers and whether an exclusive one runs. A
//! message starts only when every message before it in the queue has started
//! and its actor allows it (a shared one: no exclusive handler running; an
//! exclusive one: nothing running). So a run of thread-safe messages fans out
//! over the workers, an exclusive message waits for them to finish, and
//! messages behind it wait for it. With [`Fifo::PerActor`] each actor has its
//! own coordinator; with [`Fifo::Group`] several actors share one and are
//! treated as one for these rules, as SObjectizer's fifo::cooperation does:
//! their messages start in one global order, and an exclusive handler of any
//! member runs alone in the whole group.
//!
//! Invariants: `handle_exclusive` never overlaps any other handler of the
//! same actor; `handle_shared` calls overlap only each other; messages from
//! one sender start in the order sent. A panic stops that actor only: it is
//! refused new messages, its queued messages are dropped and counted, and
//! other actors on the coordinator go on.
//!
//! A shared actor is the runtime's second actor kind (`actor/parallel.rs`:
//! its own cell and a task per message, since several handlers run at
//! once), with the same lifecycle as any actor (`actor::lifecycle`):
//! it can be joined (also `join_async`), watched ([`Watchable`](crate::actor::Watchable)), linked,
//! supervised by a monitor, listened to by a registry, and used as a
//! [`Recipient`].

pub use crate::actor::parallel::{Coordinator, Fifo, SharedActor, SharedRef};

use crate::actor::parallel::spawn_shared_cell;
use crate::actor::SendError;
use crate::engine::dispatcher::Dispatcher;
use crate::messaging::recipient::{Deliver, Recipient};
use crate::system::SystemHandle;

impl<A: SharedActor> SharedRef<A> {
    /// This actor as a [`Recipient`] of its message type.
    pub fn recipient(&self) -> Recipient<A::Msg> {
        Recipient::new(self.clone())
    }
}

impl<A: SharedActor> Deliver<A::Msg> for SharedRef<A> {
    fn deliver(&self, msg: A::Msg) -> Result<(), SendError<A::Msg>> {
        self.tell(msg)
    }

    fn is_closed(&self) -> bool {
        !self.is_alive()
    }
}

impl SystemHandle {
    /// Spawns a [`SharedActor`] on `dispatcher`: its thread-safe handlers
    /// run in parallel on the dispatcher's workers.
    pub fn spawn_shared<A: SharedActor>(
        &self,
        actor: A,
        dispatcher: &Dispatcher,
        fifo: Fifo,
    ) -> SharedRef<A> {
        spawn_shared_cell(&self.rt, actor, dispatcher, fifo)
    }
}
