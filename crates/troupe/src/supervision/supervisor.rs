//! The supervisor actor: starts its children, restarts them by policy and
//! strategy, gives up past its restart intensity; and [`SupervisorRef`],
//! its handle. See the module docs of `supervision` for the protocol.

use super::spec::{Child, Restart, Strategy, SupervisorSpec};
use crate::actor::{
    Actor, ActorId, ActorRef, AskError, Context, ReplyTo, SpawnOptions, StopReason,
};
use crate::system::SystemHandle;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

enum ChildState {
    Running(Box<dyn Child>),
    /// Killed by the supervisor as part of a group restart; `restart` says
    /// whether it is started again once its exit arrives.
    Terminating(Box<dyn Child>, bool),
    /// Waiting to be started (once no sibling is terminating).
    Down,
    /// Not restarted: gone for good.
    Removed,
}

/// What [`SupervisorRef::children`] reports per child.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildInfo {
    /// The spec's name.
    pub name: String,
    /// The running instance, if any.
    pub id: Option<ActorId>,
    /// Its restart policy.
    pub restart: Restart,
}

/// The supervisor actor's messages (opaque: use [`SupervisorRef`]).
pub struct SupervisorMsg(Cmd);

impl SupervisorMsg {
    pub(super) fn exited(index: usize, id: ActorId, reason: StopReason) -> Self {
        SupervisorMsg(Cmd::Exited { index, id, reason })
    }
}

enum Cmd {
    Exited {
        index: usize,
        id: ActorId,
        reason: StopReason,
    },
    Children(ReplyTo<Vec<ChildInfo>>),
    Restarts(ReplyTo<u64>),
}

/// The supervisor actor; spawned by [`SupervisorSpec::spawn`].
pub struct Supervisor {
    spec: SupervisorSpec,
    children: Vec<ChildState>,
    /// Restart times within the intensity period.
    recent: VecDeque<Instant>,
    restarts: u64,
}

impl Supervisor {
    /// Starts the children (in order, before returning) and the supervisor.
    pub(super) fn spawn(
        spec: SupervisorSpec,
        system: &SystemHandle,
        options: SpawnOptions,
    ) -> SupervisorRef {
        let children = spec
            .children
            .iter()
            .map(|c| ChildState::Running((c.start)(system, &c.options)))
            .collect();
        let actor = system.spawn_with(
            Supervisor {
                spec,
                children,
                recent: VecDeque::new(),
                restarts: 0,
            },
            options,
        );
        SupervisorRef { actor }
    }

    fn start_child(&mut self, index: usize, ctx: &Context<'_, Self>) {
        let spec = &self.spec.children[index];
        let child = (spec.start)(&ctx.system(), &spec.options);
        child.watch(&ctx.myself(), index);
        self.children[index] = ChildState::Running(child);
    }

    /// Starts every `Down` child in order, once no sibling is terminating.
    fn start_down(&mut self, ctx: &Context<'_, Self>) {
        if self
            .children
            .iter()
            .any(|c| matches!(c, ChildState::Terminating(..)))
        {
            return;
        }
        for i in 0..self.children.len() {
            if matches!(self.children[i], ChildState::Down) {
                self.start_child(i, ctx);
            }
        }
    }

    fn terminate(&mut self, index: usize) {
        if let ChildState::Running(c) =
            std::mem::replace(&mut self.children[index], ChildState::Removed)
        {
            c.kill();
            let again = self.spec.children[index].restart != Restart::Temporary;
            if !again {
                self.spec.children[index].slot.close();
            }
            self.children[index] = ChildState::Terminating(c, again);
        }
    }

    fn remove(&mut self, index: usize) {
        self.children[index] = ChildState::Removed;
        self.spec.children[index].slot.close();
    }

    /// Kills every child and marks all removed.
    fn kill_all(&mut self) {
        for i in (0..self.children.len()).rev() {
            match std::mem::replace(&mut self.children[i], ChildState::Removed) {
                ChildState::Running(c) | ChildState::Terminating(c, _) => c.kill(),
                ChildState::Down | ChildState::Removed => {}
            }
            self.spec.children[i].slot.close();
        }
    }

    fn exited(
        &mut self,
        index: usize,
        id: ActorId,
        reason: StopReason,
        ctx: &mut Context<'_, Self>,
    ) {
        let (terminating, again) = match self.children.get(index) {
            Some(ChildState::Terminating(c, again)) if c.id() == id => (true, *again),
            Some(ChildState::Running(c)) if c.id() == id => (false, false),
            _ => return, // an instance we no longer track
        };
        if terminating {
            if again {
                self.children[index] = ChildState::Down;
            } else {
                self.remove(index);
            }
            self.start_down(ctx);
            return;
        }
        if !self.spec.children[index].restart.restarts_after(&reason) {
            self.remove(index);
            return;
        }
        let now = Instant::now();
        while self
            .recent
            .front()
            .is_some_and(|t| now.duration_since(*t) > self.spec.period)
        {
            self.recent.pop_front();
        }
        self.recent.push_back(now);
        if self.recent.len() > self.spec.max_restarts {
            let why = format!(
                "restart intensity exceeded: more than {} restarts within {:?} (last: child {:?} {})",
                self.spec.max_restarts, self.spec.period, self.spec.children[index].name, reason
            );
            self.kill_all();
            // A decision, not a bug: stop with a failure reason, which this
            // supervisor's own supervisor sees as abnormal.
            ctx.stop_with(StopReason::Failed(why));
            return;
        }
        self.restarts += 1;
        ctx.note_restart();
        tracing::debug!(
            supervisor = %ctx.myself().id(),
            child = ?self.spec.children[index].name,
            %reason,
            "restarting child"
        );
        self.children[index] = ChildState::Down;
        let siblings = match self.spec.strategy {
            Strategy::OneForOne => index..index,
            Strategy::OneForAll => 0..self.children.len(),
            Strategy::RestForOne => index + 1..self.children.len(),
        };
        for j in siblings.rev() {
            if j != index {
                self.terminate(j);
            }
        }
        self.start_down(ctx);
    }
}

impl Actor for Supervisor {
    type Msg = SupervisorMsg;

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        let me = ctx.myself();
        for (i, c) in self.children.iter().enumerate() {
            if let ChildState::Running(c) = c {
                c.watch(&me, i);
            }
        }
    }

    fn handle(&mut self, msg: SupervisorMsg, ctx: &mut Context<'_, Self>) {
        match msg.0 {
            Cmd::Exited { index, id, reason } => self.exited(index, id, reason, ctx),
            Cmd::Children(reply) => {
                let info = self
                    .spec
                    .children
                    .iter()
                    .zip(&self.children)
                    .map(|(spec, state)| ChildInfo {
                        name: spec.name.clone(),
                        id: match state {
                            ChildState::Running(c) => Some(c.id()),
                            _ => None,
                        },
                        restart: spec.restart,
                    })
                    .collect();
                reply.reply(info);
            }
            Cmd::Restarts(reply) => {
                reply.reply(self.restarts);
            }
        }
    }

    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {
        for i in (0..self.children.len()).rev() {
            match std::mem::replace(&mut self.children[i], ChildState::Removed) {
                ChildState::Running(c) => c.stop(),
                ChildState::Terminating(c, _) => c.kill(),
                ChildState::Down | ChildState::Removed => {}
            }
            self.spec.children[i].slot.close();
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        // After a panic `stopped` does not run: kill what is left.
        self.kill_all();
    }
}

/// A handle to a running supervisor.
#[derive(Clone, Debug)]
pub struct SupervisorRef {
    actor: ActorRef<Supervisor>,
}

impl SupervisorRef {
    /// The supervisor as an actor (to monitor, link or join it).
    pub fn actor(&self) -> &ActorRef<Supervisor> {
        &self.actor
    }

    /// The supervisor's id.
    pub fn id(&self) -> ActorId {
        self.actor.id()
    }

    /// Stops the supervisor; it asks its children to stop.
    pub fn stop(&self) {
        self.actor.stop();
    }

    /// Blocks until the supervisor has stopped; returns why.
    pub fn join(&self) -> StopReason {
        self.actor.join()
    }

    /// As [`join`](Self::join), giving up after `timeout`.
    pub fn join_timeout(&self, timeout: Duration) -> Option<StopReason> {
        self.actor.join_timeout(timeout)
    }

    /// The children, in spec order, with their running instance.
    pub fn children(&self, timeout: Duration) -> Result<Vec<ChildInfo>, AskError> {
        self.actor.ask(|r| SupervisorMsg(Cmd::Children(r)), timeout)
    }

    /// Restarts of failed children so far (siblings restarted with them by
    /// `OneForAll`/`RestForOne` not counted).
    pub fn restarts(&self, timeout: Duration) -> Result<u64, AskError> {
        self.actor.ask(|r| SupervisorMsg(Cmd::Restarts(r)), timeout)
    }
}
