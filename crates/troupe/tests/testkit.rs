//! The test kit's own tests: deterministic stepping, the virtual clock
//! (a one-hour time limit and periodic timers in no real time), probes and
//! their failure messages, stop expectations.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;
use troupe::states::{Flow, StateMachine, StateTable, StateTimeout, Stateful};
use troupe::testkit::{expect_stopped, TestKit, TestProbe};
use troupe::{timer, Actor, ActorSystem, AskError, Context, Recipient, ReplyTo, StopReason};

/// The panic message of `f`, which must panic.
fn panic_text(f: impl FnOnce()) -> String {
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let err = catch_unwind(AssertUnwindSafe(f)).expect_err("expected a panic");
    std::panic::set_hook(prev);
    err.downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Shift {
    Working,
    Resting,
}

enum GuardMsg {
    Where(ReplyTo<Shift>),
    Limit(StateTimeout),
}

/// Works for one hour, then rests (a `time_limit`).
struct Guard {
    fsm: StateMachine<Guard>,
}

impl Stateful for Guard {
    type State = Shift;
    fn machine(&mut self) -> &mut StateMachine<Self> {
        &mut self.fsm
    }
    fn time_limit_msg(t: StateTimeout) -> GuardMsg {
        GuardMsg::Limit(t)
    }
}

impl Actor for Guard {
    type Msg = GuardMsg;
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        StateMachine::start(self, ctx);
    }
    fn handle(&mut self, msg: GuardMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            GuardMsg::Where(r) => {
                r.reply(self.fsm.current());
            }
            GuardMsg::Limit(t) => StateMachine::time_limit_expired(self, t, ctx),
        }
    }
}

fn guard_table() -> Arc<StateTable<Guard>> {
    StateTable::new(Shift::Working)
        .state(Shift::Working, |d| {
            d.time_limit(Duration::from_secs(3600), Shift::Resting)
                .handler(|_, m, _| Flow::Pass(m))
        })
        .state(Shift::Resting, |d| d)
        .build()
}

#[test]
fn a_one_hour_time_limit_runs_in_virtual_time() {
    let kit = TestKit::new();
    let g = kit.spawn(Guard {
        fsm: StateMachine::new(&guard_table()),
    });
    let start = kit.now();
    kit.advance(Duration::from_secs(3599));
    assert_eq!(kit.ask(&g, GuardMsg::Where), Ok(Shift::Working));
    kit.advance(Duration::from_secs(1));
    assert_eq!(kit.ask(&g, GuardMsg::Where), Ok(Shift::Resting));
    assert_eq!(kit.now() - start, Duration::from_secs(3600));
}

/// Counts ticks from a periodic timer it arms itself.
struct Ticker {
    ticks: u64,
    out: Recipient<u64>,
}

impl Actor for Ticker {
    type Msg = ();
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        timer::send_periodic(
            ctx.myself(),
            Duration::from_secs(1),
            Duration::from_secs(1),
            (),
        )
        .detach();
    }
    fn handle(&mut self, _: (), _ctx: &mut Context<'_, Self>) {
        self.ticks += 1;
        let _ = self.out.send(self.ticks);
    }
}

#[test]
fn periodic_timers_tick_exactly_on_the_virtual_clock() {
    let kit = TestKit::new();
    let probe = kit.probe::<u64>();
    kit.spawn(Ticker {
        ticks: 0,
        out: probe.recipient(),
    });
    kit.advance(Duration::from_millis(10_500));
    assert_eq!(probe.len(), 10);
    assert_eq!(
        probe.receive_n(10, Duration::ZERO),
        (1..=10).collect::<Vec<_>>()
    );
    probe.expect_no_msg(Duration::from_millis(499));
    probe.expect_msg(Duration::from_millis(1)).equals(11);
}

/// Forwards every number to `next` (or records it in `log` at the end).
struct Relay {
    name: &'static str,
    next: Option<troupe::ActorRef<Relay>>,
    log: Recipient<String>,
}

impl Actor for Relay {
    type Msg = u32;
    fn handle(&mut self, n: u32, _ctx: &mut Context<'_, Self>) {
        let _ = self.log.send(format!("{} {n}", self.name));
        if let Some(next) = &self.next {
            let _ = next.tell(n);
        }
    }
}

fn relay_trace() -> Vec<String> {
    let kit = TestKit::new();
    let probe = kit.probe::<String>();
    let c = kit.spawn(Relay {
        name: "c",
        next: None,
        log: probe.recipient(),
    });
    let b = kit.spawn(Relay {
        name: "b",
        next: Some(c),
        log: probe.recipient(),
    });
    let a = kit.spawn(Relay {
        name: "a",
        next: Some(b.clone()),
        log: probe.recipient(),
    });
    for n in 0..3 {
        a.tell(n).unwrap();
        b.tell(10 + n).unwrap();
    }
    kit.run_until_idle();
    probe.receive_n(probe.len(), Duration::ZERO)
}

#[test]
fn steps_run_in_the_same_order_every_time() {
    let first = relay_trace();
    assert_eq!(first.len(), 6 + 3 + 6); // a: 3; b: 3 own + 3 relayed; c: 6
    for _ in 0..20 {
        assert_eq!(relay_trace(), first);
    }
}

#[test]
fn nothing_runs_until_the_test_steps() {
    let kit = TestKit::new();
    let probe = kit.probe::<String>();
    let a = kit.spawn(Relay {
        name: "a",
        next: None,
        log: probe.recipient(),
    });
    a.tell(1).unwrap();
    a.tell(2).unwrap();
    assert_eq!(a.mailbox_len(), 2);
    assert!(kit.step()); // `started`, then message 1
    assert_eq!(a.mailbox_len(), 1);
    assert_eq!(probe.len(), 1);
    assert!(kit.step()); // message 2
    assert_eq!(a.mailbox_len(), 0);
    kit.run_until_idle(); // nothing more to handle
    assert!(!kit.step());
    assert_eq!(
        probe.receive_n(2, Duration::ZERO),
        vec!["a 1".to_string(), "a 2".to_string()]
    );
}

#[test]
fn probe_failures_say_what_arrived_instead() {
    let kit = TestKit::new();
    let probe = kit.probe::<u32>();
    probe.recipient().send(7).unwrap();
    let text = panic_text(|| {
        probe.expect_msg_where(Duration::from_secs(1), |n| *n > 10);
    });
    assert_eq!(
        text,
        "expect_msg_where: the next message did not match: got 7"
    );

    probe.recipient().send(8).unwrap();
    let text = panic_text(|| probe.expect_no_msg(Duration::from_secs(1)));
    assert_eq!(text, "expect_no_msg: got 8 within 1s");

    probe.recipient().send(9).unwrap();
    let text = panic_text(|| {
        probe.receive_n(3, Duration::from_secs(5));
    });
    assert_eq!(text, "receive_n: got 1 of 3 messages within 5s: [9]");

    let text = panic_text(|| {
        let _ = probe.expect_msg(Duration::from_millis(250));
    });
    assert_eq!(text, "expect_msg: no message within 250ms");

    probe.recipient().send(1).unwrap();
    let text = panic_text(|| {
        probe.expect_msg(Duration::ZERO).equals(2);
    });
    assert_eq!(text, "expect_msg: got 1, expected 2");
}

struct Quitter;

enum QuitMsg {
    Fail,
    Ignore(ReplyTo<()>),
}

impl Actor for Quitter {
    type Msg = QuitMsg;
    fn handle(&mut self, m: QuitMsg, ctx: &mut Context<'_, Self>) {
        match m {
            QuitMsg::Fail => ctx.stop_with(StopReason::Failed("disk full".into())),
            QuitMsg::Ignore(r) => std::mem::forget(r),
        }
    }
}

#[test]
fn expect_stopped_checks_the_reason_and_says_what_happened() {
    let kit = TestKit::new();
    let q = kit.spawn(Quitter);
    let text = panic_text(|| kit.expect_stopped(&q, StopReason::Normal));
    assert!(
        text.contains("is still running") && text.contains("expected it stopped with Normal"),
        "{text}"
    );
    q.tell(QuitMsg::Fail).unwrap();
    kit.expect_stopped(&q, StopReason::Failed("disk full".into()));
    let text = panic_text(|| kit.expect_stopped(&q, StopReason::Normal));
    assert!(
        text.contains("stopped with Failed(\"disk full\"), expected Normal"),
        "{text}"
    );
}

#[test]
fn an_ask_nobody_answers_fails_once_the_kit_is_idle() {
    let kit = TestKit::new();
    let q = kit.spawn(Quitter);
    assert_eq!(kit.ask(&q, QuitMsg::Ignore), Err(AskError::Timeout));
}

#[test]
fn a_probe_alone_waits_in_real_time_for_an_ordinary_system() {
    let system = ActorSystem::builder().threads(1).build();
    let probe = TestProbe::<String>::new();
    let a = system.spawn(Relay {
        name: "a",
        next: None,
        log: probe.recipient(),
    });
    a.tell(5).unwrap();
    assert_eq!(
        probe.expect_msg(Duration::from_secs(10)).into_inner(),
        "a 5"
    );
    probe.expect_no_msg(Duration::from_millis(20));
    let q = system.spawn(Quitter);
    q.tell(QuitMsg::Fail).unwrap();
    expect_stopped(
        &q,
        StopReason::Failed("disk full".into()),
        Duration::from_secs(10),
    );
    system.shutdown();
}
