//! Agent states: handlers per state with fallback to the parent, hook order
//! on nested switches, transfers, time limits (from entry and idle), stale
//! expiries, switches requested from handlers and hooks.

use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe::mchain::{MChain, Receive};
use troupe::states::{Flow, StateMachine, StateTable, StateTimeout, Stateful};
use troupe::testkit::TestKit;
use troupe::{Actor, ActorRef, ActorSystem, Context, ReplyTo};

const T: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum St {
    Root,
    Child,
    Sibling,
    Other,
    Timed,
    Idle,
}

enum Msg {
    /// Handled by Child only.
    A,
    /// Handled by Root only (reaches it by fallback from its children).
    B,
    /// Handled by nobody.
    C,
    /// Transferred from Other to Child.
    Wake,
    Go(St),
    Ping,
    Where(ReplyTo<St>),
    TimeLimit(StateTimeout),
}

struct Probe {
    fsm: StateMachine<Probe>,
    log: MChain<String>,
    unhandled: u32,
}

impl Probe {
    fn log(&self, s: impl Into<String>) {
        let _ = self.log.send(s.into());
    }
}

impl Stateful for Probe {
    type State = St;
    fn machine(&mut self) -> &mut StateMachine<Self> {
        &mut self.fsm
    }
    fn time_limit_msg(t: StateTimeout) -> Msg {
        Msg::TimeLimit(t)
    }
}

impl Actor for Probe {
    type Msg = Msg;
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        StateMachine::start(self, ctx);
    }
    fn handle(&mut self, msg: Msg, ctx: &mut Context<'_, Self>) {
        match msg {
            Msg::TimeLimit(t) => StateMachine::time_limit_expired(self, t, ctx),
            Msg::Go(s) => StateMachine::switch_now(self, s, ctx),
            Msg::Where(r) => {
                r.reply(self.fsm.current());
            }
            msg => {
                if let Flow::Pass(_) = StateMachine::dispatch(self, msg, ctx) {
                    self.unhandled += 1;
                    self.log("unhandled");
                }
            }
        }
    }
}

fn hooks(s: St) -> impl FnOnce(troupe::states::StateDef<Probe>) -> troupe::states::StateDef<Probe> {
    move |d| {
        d.on_enter(move |p: &mut Probe, _| p.log(format!("enter {s:?}")))
            .on_exit(move |p: &mut Probe, _| p.log(format!("exit {s:?}")))
    }
}

fn table(initial: St) -> Arc<StateTable<Probe>> {
    StateTable::new(initial)
        .state(St::Root, |d| {
            hooks(St::Root)(d).handler(|p, msg, _| match msg {
                Msg::B => {
                    p.log("Root handled B");
                    Flow::Handled
                }
                m => Flow::Pass(m),
            })
        })
        .state(St::Child, |d| {
            hooks(St::Child)(d)
                .parent(St::Root)
                .handler(|p, msg, _| match msg {
                    Msg::A => {
                        p.log("Child handled A");
                        Flow::Handled
                    }
                    Msg::Wake => {
                        p.log("Child handled Wake");
                        Flow::Handled
                    }
                    Msg::Ping => {
                        // Requested from a handler: applied once it returns.
                        p.fsm.switch_to(St::Sibling);
                        p.log("Child asked for Sibling");
                        Flow::Handled
                    }
                    m => Flow::Pass(m),
                })
        })
        .state(St::Sibling, |d| hooks(St::Sibling)(d).parent(St::Root))
        .state(St::Other, |d| {
            hooks(St::Other)(d).transfer_to(|m| matches!(m, Msg::Wake), St::Child)
        })
        .state(St::Timed, |d| {
            hooks(St::Timed)(d).time_limit(Duration::from_millis(40), St::Other)
        })
        .state(St::Idle, |d| {
            hooks(St::Idle)(d)
                .idle_limit(Duration::from_millis(300), St::Other)
                .handler(|_, msg, _| match msg {
                    Msg::Ping => Flow::Handled,
                    m => Flow::Pass(m),
                })
        })
        .build()
}

fn spawn(system: &ActorSystem, initial: St) -> (ActorRef<Probe>, MChain<String>) {
    let log = MChain::unbounded();
    let probe = system.spawn(Probe {
        fsm: StateMachine::new(&table(initial)),
        log: log.clone(),
        unhandled: 0,
    });
    (probe, log)
}

/// Waits until the actor handled everything sent so far, then drains the log.
fn settle(p: &ActorRef<Probe>, log: &MChain<String>) -> Vec<String> {
    p.ask(Msg::Where, T).unwrap();
    let mut v = Vec::new();
    log.receive(Receive::new().no_wait(), |s| v.push(s));
    v
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn nested_states_fall_back_to_the_parent() {
    let system = ActorSystem::builder().threads(1).build();
    let (p, log) = spawn(&system, St::Child);
    p.tell(Msg::A).unwrap();
    p.tell(Msg::B).unwrap();
    p.tell(Msg::C).unwrap();
    assert_eq!(
        settle(&p, &log),
        strs(&[
            "enter Root",
            "enter Child",
            "Child handled A",
            "Root handled B",
            "unhandled"
        ])
    );
    // In Sibling (no handler of its own), B still reaches Root; A does not.
    p.tell(Msg::Go(St::Sibling)).unwrap();
    p.tell(Msg::A).unwrap();
    p.tell(Msg::B).unwrap();
    assert_eq!(
        settle(&p, &log),
        strs(&["exit Child", "enter Sibling", "unhandled", "Root handled B"])
    );
}

#[test]
fn hooks_run_in_order_along_the_state_paths() {
    let system = ActorSystem::builder().threads(1).build();
    let (p, log) = spawn(&system, St::Sibling);
    p.tell(Msg::Go(St::Sibling)).unwrap(); // no-op: already there
    p.tell(Msg::Go(St::Child)).unwrap(); // sibling to sibling: Root stays
    p.tell(Msg::Go(St::Other)).unwrap(); // leaves the whole Root subtree
    p.tell(Msg::Go(St::Root)).unwrap();
    assert_eq!(
        settle(&p, &log),
        strs(&[
            "enter Root",
            "enter Sibling",
            "exit Sibling",
            "enter Child",
            "exit Child",
            "exit Root",
            "enter Other",
            "exit Other",
            "enter Root",
        ])
    );
    assert_eq!(p.ask(Msg::Where, T).unwrap(), St::Root);
}

#[test]
fn switch_requested_by_a_handler_applies_after_it() {
    let system = ActorSystem::builder().threads(1).build();
    let (p, log) = spawn(&system, St::Child);
    p.tell(Msg::Ping).unwrap();
    assert_eq!(
        settle(&p, &log),
        strs(&[
            "enter Root",
            "enter Child",
            "Child asked for Sibling",
            "exit Child",
            "enter Sibling"
        ])
    );
    assert_eq!(p.ask(Msg::Where, T).unwrap(), St::Sibling);
}

#[test]
fn transfer_switches_state_and_handles_there() {
    let system = ActorSystem::builder().threads(1).build();
    let (p, log) = spawn(&system, St::Other);
    p.tell(Msg::A).unwrap(); // Other has no handler: unhandled
    p.tell(Msg::Wake).unwrap();
    assert_eq!(
        settle(&p, &log),
        strs(&[
            "enter Other",
            "unhandled",
            "exit Other",
            "enter Root",
            "enter Child",
            "Child handled Wake"
        ])
    );
    assert_eq!(p.ask(Msg::Where, T).unwrap(), St::Child);
}

#[test]
fn time_limit_switches_after_the_period() {
    let system = ActorSystem::builder().threads(1).build();
    let t0 = Instant::now();
    let (p, log) = spawn(&system, St::Timed);
    assert_eq!(log.recv_timeout(T).unwrap(), "enter Timed");
    assert_eq!(log.recv_timeout(T).unwrap(), "exit Timed");
    assert!(t0.elapsed() >= Duration::from_millis(40));
    assert_eq!(log.recv_timeout(T).unwrap(), "enter Other");
    assert_eq!(p.ask(Msg::Where, T).unwrap(), St::Other);
}

/// On the test kit: deterministic, and no real waiting.
fn spawn_on(kit: &TestKit, initial: St) -> (ActorRef<Probe>, MChain<String>) {
    let log = MChain::unbounded();
    let probe = kit.spawn(Probe {
        fsm: StateMachine::new(&table(initial)),
        log: log.clone(),
        unhandled: 0,
    });
    (probe, log)
}

/// Runs the kit until idle, then drains the log.
fn settle_on(kit: &TestKit, p: &ActorRef<Probe>, log: &MChain<String>) -> Vec<String> {
    kit.ask(p, Msg::Where).unwrap();
    let mut v = Vec::new();
    log.receive(Receive::new().no_wait(), |s| v.push(s));
    v
}

#[test]
fn a_state_left_before_its_limit_is_not_switched_by_the_stale_expiry() {
    let kit = TestKit::new();
    let (p, log) = spawn_on(&kit, St::Timed);
    p.tell(Msg::Go(St::Sibling)).unwrap();
    // Well past Timed's 40 ms limit (virtual time).
    kit.advance(Duration::from_millis(120));
    assert_eq!(kit.ask(&p, Msg::Where).unwrap(), St::Sibling);
    assert_eq!(
        settle_on(&kit, &p, &log),
        strs(&["enter Timed", "exit Timed", "enter Root", "enter Sibling"])
    );
}

#[test]
fn idle_limit_waits_for_silence() {
    let kit = TestKit::new();
    let (p, log) = spawn_on(&kit, St::Idle);
    // Keep it busy for three limits: a ping every 10 ms (virtual).
    for _ in 0..90 {
        p.tell(Msg::Ping).unwrap();
        kit.advance(Duration::from_millis(10));
    }
    assert_eq!(
        kit.ask(&p, Msg::Where).unwrap(),
        St::Idle,
        "messages kept the idle limit from expiring"
    );
    // Silence: it gives up exactly one limit after the last ping.
    kit.advance(Duration::from_millis(289));
    assert_eq!(kit.ask(&p, Msg::Where).unwrap(), St::Idle);
    kit.advance(Duration::from_millis(1));
    assert_eq!(kit.ask(&p, Msg::Where).unwrap(), St::Other);
    assert_eq!(
        settle_on(&kit, &p, &log),
        strs(&["enter Idle", "exit Idle", "enter Other"])
    );
}
