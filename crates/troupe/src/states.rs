//! Agent states (SObjectizer's `state_t`): an actor declares states with a
//! handler each, `on_enter`/`on_exit` hooks, transfers of messages to another
//! state, time limits, and nesting with fallback to the parent's handler.
//!
//! The pieces: a [`StateTable`] (built once, shared by every actor of the
//! type) describes the states; a [`StateMachine`] embedded in the actor holds
//! the active path (root state .. current state) and its timers; the actor
//! implements [`Stateful`] to say where its machine is and how a time-limit
//! expiry becomes one of its messages, and routes messages with
//! [`StateMachine::dispatch`].
//!
//! Protocol and invariants:
//! - Dispatch offers a message to the current state, then to each ancestor
//!   in turn, until a handler returns [`Flow::Handled`]. A state's transfer
//!   rules are checked before its handler: a matching message switches state
//!   and is dispatched again in the new state (at most 16 hops).
//! - A switch leaves the states not on the new path, deepest first (running
//!   `on_exit` while the machine is still in that state, then cancelling its
//!   time limit), and enters the new ones outermost first (`on_enter` after
//!   the state is active and its time limit armed). Switching to the current
//!   state does nothing.
//! - [`StateMachine::switch_to`] called from a handler or hook is applied
//!   right after that handler or hook returns, so hooks never nest.
//! - A time limit is a timer sending [`StateTimeout`] to the actor; each
//!   entered state has a fresh generation number, so an expiry that raced
//!   with a switch is recognised as stale and ignored. A limit counts from
//!   entering the state or from the last [`StateMachine::reset_time_limit`];
//!   an *idle* limit ([`StateDef::idle_limit`]) is reset by every message
//!   the state (or a child state) handles. Resets cost a clock read, not a
//!   timer operation: an expiry that finds the limit was reset re-arms for
//!   the remainder.
//!
//! ```
//! use std::time::Duration;
//! use troupe::states::{Flow, StateMachine, StateTable, StateTimeout, Stateful};
//! use troupe::{Actor, ActorSystem, Context, Recipient};
//! use troupe::mchain::MChain;
//!
//! #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
//! enum St { StreamDown, Streaming }
//!
//! enum Msg { Frame, TimeLimit(StateTimeout) }
//!
//! struct Watcher { fsm: StateMachine<Watcher>, log: Recipient<&'static str> }
//!
//! impl Stateful for Watcher {
//!     type State = St;
//!     fn machine(&mut self) -> &mut StateMachine<Self> { &mut self.fsm }
//!     fn time_limit_msg(t: StateTimeout) -> Msg { Msg::TimeLimit(t) }
//! }
//!
//! impl Actor for Watcher {
//!     type Msg = Msg;
//!     fn started(&mut self, ctx: &mut Context<'_, Self>) { StateMachine::start(self, ctx); }
//!     fn handle(&mut self, msg: Msg, ctx: &mut Context<'_, Self>) {
//!         match msg {
//!             Msg::TimeLimit(t) => StateMachine::time_limit_expired(self, t, ctx),
//!             msg => { let _ = StateMachine::dispatch(self, msg, ctx); }
//!         }
//!     }
//! }
//!
//! let table = StateTable::<Watcher>::new(St::StreamDown)
//!     // A frame while the stream is down switches to Streaming, which handles it.
//!     .state(St::StreamDown, |s| s.transfer_to(|m| matches!(m, Msg::Frame), St::Streaming))
//!     .state(St::Streaming, |s| s
//!         .on_enter(|a: &mut Watcher, _| { let _ = a.log.send("up"); })
//!         .on_exit(|a: &mut Watcher, _| { let _ = a.log.send("down"); })
//!         // No frame for 50 ms: back to StreamDown.
//!         .idle_limit(Duration::from_millis(50), St::StreamDown)
//!         .handler(|_a, msg, _ctx| match msg { Msg::Frame => Flow::Handled, m => Flow::Pass(m) }))
//!     .build();
//!
//! let system = ActorSystem::builder().threads(1).build();
//! let log = MChain::unbounded();
//! let w = system.spawn(Watcher { fsm: StateMachine::new(&table), log: log.recipient() });
//! w.tell(Msg::Frame).unwrap();
//! let t = Duration::from_secs(5);
//! assert_eq!(log.recv_timeout(t), Ok("up"));
//! assert_eq!(log.recv_timeout(t), Ok("down")); // after 50 ms without frames
//! ```

use crate::actor::{Actor, Context};
use crate::messaging::timer::{self, TimerHandle};
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Transfers after which a message is given up (a transfer loop).
const MAX_HOPS: usize = 16;
/// Switches requested by hooks in a row after which we give up (a loop).
const MAX_CHAINED_SWITCHES: usize = 64;

/// An actor with a [`StateMachine`].
pub trait Stateful: Actor {
    /// The state names, usually a fieldless enum.
    type State: Copy + Eq + Hash + fmt::Debug + Send + Sync + 'static;

    /// The machine embedded in the actor.
    fn machine(&mut self) -> &mut StateMachine<Self>;

    /// Wraps a time-limit expiry as a message to this actor; its handler
    /// passes it to [`StateMachine::time_limit_expired`].
    fn time_limit_msg(t: StateTimeout) -> Self::Msg;
}

/// A time limit ran out (sent to the actor by the timer; hand it to
/// [`StateMachine::time_limit_expired`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateTimeout {
    generation: u64,
}

/// A state handler's answer.
pub enum Flow<M> {
    /// Handled here.
    Handled,
    /// Not for this state: offer it to the parent state (and, past the root,
    /// return it from [`StateMachine::dispatch`]).
    Pass(M),
}

impl<M> fmt::Debug for Flow<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Flow::Handled => "Handled",
            Flow::Pass(_) => "Pass(..)",
        })
    }
}

type Hook<A> = Box<dyn Fn(&mut A, &mut Context<'_, A>) + Send + Sync>;
type Handler<A> = Box<
    dyn Fn(&mut A, <A as Actor>::Msg, &mut Context<'_, A>) -> Flow<<A as Actor>::Msg> + Send + Sync,
>;
type Pred<A> = Box<dyn Fn(&<A as Actor>::Msg) -> bool + Send + Sync>;

struct TimeLimit<S> {
    after: Duration,
    to: S,
    idle: bool,
}

/// One state's definition, built in [`StateTable::state`].
pub struct StateDef<A: Stateful> {
    parent: Option<A::State>,
    on_enter: Vec<Hook<A>>,
    on_exit: Vec<Hook<A>>,
    handler: Option<Handler<A>>,
    transfers: Vec<(Pred<A>, A::State)>,
    limit: Option<TimeLimit<A::State>>,
}

impl<A: Stateful> StateDef<A> {
    fn new() -> Self {
        StateDef {
            parent: None,
            on_enter: Vec::new(),
            on_exit: Vec::new(),
            handler: None,
            transfers: Vec::new(),
            limit: None,
        }
    }

    /// Makes this a child of `parent`: messages it passes go to the parent's
    /// handler, and being in it means being in the parent too.
    pub fn parent(mut self, parent: A::State) -> Self {
        self.parent = Some(parent);
        self
    }

    /// Runs when the state is entered (several hooks run in order).
    pub fn on_enter(
        mut self,
        f: impl Fn(&mut A, &mut Context<'_, A>) + Send + Sync + 'static,
    ) -> Self {
        self.on_enter.push(Box::new(f));
        self
    }

    /// Runs when the state is left.
    pub fn on_exit(
        mut self,
        f: impl Fn(&mut A, &mut Context<'_, A>) + Send + Sync + 'static,
    ) -> Self {
        self.on_exit.push(Box::new(f));
        self
    }

    /// The state's message handler.
    pub fn handler(
        mut self,
        f: impl Fn(&mut A, A::Msg, &mut Context<'_, A>) -> Flow<A::Msg> + Send + Sync + 'static,
    ) -> Self {
        self.handler = Some(Box::new(f));
        self
    }

    /// Messages matching `pred` switch the machine to `to`, where they are
    /// handled (SObjectizer's `transfer_to_state`).
    pub fn transfer_to(
        mut self,
        pred: impl Fn(&A::Msg) -> bool + Send + Sync + 'static,
        to: A::State,
    ) -> Self {
        self.transfers.push((Box::new(pred), to));
        self
    }

    /// Switches to `to` once `after` has passed since entering the state
    /// (or since the last [`StateMachine::reset_time_limit`]).
    pub fn time_limit(mut self, after: Duration, to: A::State) -> Self {
        self.limit = Some(TimeLimit {
            after,
            to,
            idle: false,
        });
        self
    }

    /// Switches to `to` once `after` has passed without a message handled
    /// in this state or its children (the fps_estimator's `st_stream_down`).
    pub fn idle_limit(mut self, after: Duration, to: A::State) -> Self {
        self.limit = Some(TimeLimit {
            after,
            to,
            idle: true,
        });
        self
    }
}

/// The states of an actor type. Build it once and share it (`Arc`).
pub struct StateTable<A: Stateful> {
    states: HashMap<A::State, StateDef<A>>,
    initial: A::State,
}

impl<A: Stateful> StateTable<A> {
    /// A table whose machines start in `initial`.
    pub fn new(initial: A::State) -> Self {
        StateTable {
            states: HashMap::new(),
            initial,
        }
    }

    /// Defines `state` (a state never defined has no handler and no hooks).
    pub fn state(
        mut self,
        state: A::State,
        define: impl FnOnce(StateDef<A>) -> StateDef<A>,
    ) -> Self {
        let def = self.states.remove(&state).unwrap_or_else(StateDef::new);
        self.states.insert(state, define(def));
        self
    }

    /// Checks the parent links (no cycles) and freezes the table.
    ///
    /// # Panics
    /// If the parent links form a cycle: a programming error in the table.
    pub fn build(self) -> Arc<Self> {
        for &s in self.states.keys() {
            let _ = self.path(s);
        }
        Arc::new(self)
    }

    /// Root .. `s`.
    fn path(&self, s: A::State) -> Vec<A::State> {
        let mut path = vec![s];
        let mut cur = s;
        while let Some(p) = self.states.get(&cur).and_then(|d| d.parent) {
            assert!(
                !path.contains(&p) && path.len() < 1024,
                "state {p:?} is its own ancestor"
            );
            path.push(p);
            cur = p;
        }
        path.reverse();
        path
    }

    fn def(&self, s: A::State) -> Option<&StateDef<A>> {
        self.states.get(&s)
    }
}

struct Level<S> {
    state: S,
    generation: u64,
    timer: Option<TimerHandle>,
    since: Instant,
}

/// The state of one actor's machine: embed it in the actor.
pub struct StateMachine<A: Stateful> {
    table: Arc<StateTable<A>>,
    /// Root .. current; empty before `start`.
    active: Vec<Level<A::State>>,
    pending: Option<A::State>,
    next_generation: u64,
}

impl<A: Stateful> fmt::Debug for StateMachine<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path: Vec<_> = self.active.iter().map(|l| l.state).collect();
        write!(f, "StateMachine({path:?})")
    }
}

impl<A: Stateful> StateMachine<A> {
    /// A machine over `table`, not started: call [`start`](Self::start)
    /// from the actor's `started` hook.
    pub fn new(table: &Arc<StateTable<A>>) -> Self {
        StateMachine {
            table: table.clone(),
            active: Vec::new(),
            pending: None,
            next_generation: 1,
        }
    }

    /// The current (innermost) state; the initial one before `start`.
    pub fn current(&self) -> A::State {
        self.active
            .last()
            .map(|l| l.state)
            .unwrap_or(self.table.initial)
    }

    /// Whether `s` is the current state or one of its ancestors.
    pub fn is_in(&self, s: A::State) -> bool {
        self.active.iter().any(|l| l.state == s)
    }

    /// Asks to switch to `to` once the running handler or hook returns.
    pub fn switch_to(&mut self, to: A::State) {
        self.pending = Some(to);
    }

    /// Restarts the countdown of `s`'s time limit (if `s` is active and has
    /// one), as SObjectizer's re-calling `time_limit` does.
    pub fn reset_time_limit(&mut self, s: A::State) {
        if let Some(l) = self.active.iter_mut().find(|l| l.state == s) {
            l.since = timer::now();
        }
    }

    /// Enters the initial state (running its and its ancestors' `on_enter`).
    pub fn start(this: &mut A, ctx: &mut Context<'_, A>) {
        let initial = this.machine().table.initial;
        Self::switch_now(this, initial, ctx);
    }

    /// Switches to `to` now, running the exit and enter hooks; then any
    /// switch those hooks requested.
    ///
    /// # Panics
    /// If hooks keep requesting switches (more than 64 in a row).
    pub fn switch_now(this: &mut A, to: A::State, ctx: &mut Context<'_, A>) {
        let table = this.machine().table.clone();
        let mut to = to;
        for _ in 0..MAX_CHAINED_SWITCHES {
            Self::apply(this, &table, to, ctx);
            match this.machine().pending.take() {
                Some(next) => to = next,
                None => return,
            }
        }
        panic!("state machine: on_enter/on_exit hooks keep switching states (last: {to:?})");
    }

    fn apply(this: &mut A, table: &StateTable<A>, to: A::State, ctx: &mut Context<'_, A>) {
        let path = table.path(to);
        let m = this.machine();
        let common = m
            .active
            .iter()
            .zip(path.iter())
            .take_while(|(l, s)| l.state == **s)
            .count();
        if common == path.len() && common == m.active.len() {
            return;
        }
        while this.machine().active.len() > common {
            let state = this.machine().active.last().map(|l| l.state);
            if let Some(def) = state.and_then(|s| table.def(s)) {
                for hook in &def.on_exit {
                    hook(this, ctx);
                }
            }
            // Dropping the level cancels its timer.
            this.machine().active.pop();
        }
        for &s in &path[common..] {
            let def = table.def(s);
            let m = this.machine();
            let generation = m.next_generation;
            m.next_generation += 1;
            let timer = def
                .and_then(|d| d.limit.as_ref())
                .map(|l| arm::<A>(ctx, l.after, generation));
            m.active.push(Level {
                state: s,
                generation,
                timer,
                since: timer::now(),
            });
            if let Some(def) = def {
                for hook in &def.on_enter {
                    hook(this, ctx);
                }
            }
        }
    }

    /// Offers `msg` to the current state and then its ancestors; returns it
    /// if none handled it. Applies the switches handlers requested.
    pub fn dispatch(this: &mut A, msg: A::Msg, ctx: &mut Context<'_, A>) -> Flow<A::Msg> {
        let table = this.machine().table.clone();
        let mut msg = msg;
        'hop: for _ in 0..MAX_HOPS {
            let depth = this.machine().active.len();
            for i in (0..depth).rev() {
                let Some(state) = this.machine().active.get(i).map(|l| l.state) else {
                    continue;
                };
                let Some(def) = table.def(state) else {
                    continue;
                };
                if let Some(&(_, to)) = def.transfers.iter().find(|(p, _)| p(&msg)) {
                    Self::switch_now(this, to, ctx);
                    continue 'hop;
                }
                if let Some(handler) = &def.handler {
                    match handler(this, msg, ctx) {
                        Flow::Handled => {
                            let now = timer::now();
                            for l in this.machine().active.iter_mut().take(i + 1) {
                                if table
                                    .def(l.state)
                                    .and_then(|d| d.limit.as_ref())
                                    .is_some_and(|lim| lim.idle)
                                {
                                    l.since = now;
                                }
                            }
                            if let Some(to) = this.machine().pending.take() {
                                Self::switch_now(this, to, ctx);
                            }
                            return Flow::Handled;
                        }
                        Flow::Pass(m) => msg = m,
                    }
                }
            }
            if let Some(to) = this.machine().pending.take() {
                Self::switch_now(this, to, ctx);
            }
            return Flow::Pass(msg);
        }
        tracing::warn!("state machine: message transferred {MAX_HOPS} times; dropped");
        Flow::Handled
    }

    /// Handles a time-limit expiry: switches to the limit's target state,
    /// unless the state was left since (stale) or its countdown was reset
    /// (then the timer is re-armed for what is left).
    pub fn time_limit_expired(this: &mut A, t: StateTimeout, ctx: &mut Context<'_, A>) {
        let table = this.machine().table.clone();
        let m = this.machine();
        let Some(level) = m.active.iter_mut().find(|l| l.generation == t.generation) else {
            return; // stale: that state was left
        };
        let Some(limit) = table.def(level.state).and_then(|d| d.limit.as_ref()) else {
            return;
        };
        // A limit beyond the clock's range never expires.
        let Some(due) = level.since.checked_add(limit.after) else {
            return;
        };
        let now = timer::now();
        if now < due {
            level.timer = Some(arm::<A>(ctx, due - now, t.generation));
            return;
        }
        Self::switch_now(this, limit.to, ctx);
    }
}

fn arm<A: Stateful>(ctx: &Context<'_, A>, after: Duration, generation: u64) -> TimerHandle {
    let me = ctx.myself().recipient_map(A::time_limit_msg);
    timer::send_delayed(me, after, StateTimeout { generation })
}
