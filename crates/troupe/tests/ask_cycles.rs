//! Ask cycles (issue 41, item 3): actors that wait on each other's
//! replies are reported with the cycle's members, in the test kit (where
//! a cycle fails the test) and on a running system (async handlers
//! awaiting `AsyncContext::ask`, and blocking `ActorRef::ask` from
//! dedicated threads); a chain that ends is not a cycle.

use std::time::Duration;
use troupe::testkit::TestKit;
use troupe::{
    Actor, ActorId, ActorRef, ActorSystem, AskError, Async, AsyncActor, AsyncContext, Context,
    ReplyTo, SpawnOptions,
};

const T: Duration = Duration::from_secs(10);

/// Passes a request on to `next`, awaiting its reply, `hops` times; the
/// last one (or one with no `next`) answers 0.
struct Hop {
    next: Option<ActorRef<Async<Hop>>>,
    timeout: Duration,
}

enum HopMsg {
    Link(ActorRef<Async<Hop>>),
    Ask(u32, ReplyTo<Result<u32, AskError>>),
}

impl AsyncActor for Hop {
    type Msg = HopMsg;
    async fn handle(&mut self, m: HopMsg, ctx: &mut AsyncContext<Self>) {
        match m {
            HopMsg::Link(next) => self.next = Some(next),
            HopMsg::Ask(hops, r) => match (&self.next, hops) {
                (Some(next), 1..) => {
                    let next = next.clone();
                    let got = ctx
                        .ask(&next, |rr| HopMsg::Ask(hops - 1, rr))
                        .with_timeout(self.timeout)
                        .await;
                    r.reply(got.and_then(|v| v.map(|v| v + 1)));
                }
                _ => {
                    r.reply(Ok(0));
                }
            },
        }
    }
}

/// `n` hops spawned by `spawn`, each linked to the next; the last one
/// links to the first if `ring`.
fn hops(
    n: usize,
    ring: bool,
    timeout: Duration,
    spawn: impl Fn(Hop, SpawnOptions) -> ActorRef<Async<Hop>>,
) -> Vec<ActorRef<Async<Hop>>> {
    let all: Vec<_> = (0..n)
        .map(|i| {
            spawn(
                Hop {
                    next: None,
                    timeout,
                },
                SpawnOptions::new().name(format!("hop-{i}")),
            )
        })
        .collect();
    for i in 0..n {
        if i + 1 < n || ring {
            all[i].tell(HopMsg::Link(all[(i + 1) % n].clone())).unwrap();
        }
    }
    all
}

fn ids(refs: &[ActorRef<Async<Hop>>]) -> Vec<ActorId> {
    refs.iter().map(|r| r.id()).collect()
}

#[test]
#[should_panic(expected = "ask cycle in the test kit: hop-1")]
fn in_the_test_kit_a_cycle_of_two_fails_the_test() {
    let kit = TestKit::new();
    let ring = hops(2, true, T, |a, o| kit.spawn_with(Async::new(a), o));
    let _ = kit.ask(&ring[0], |r| HopMsg::Ask(2, r));
}

#[test]
fn in_the_test_kit_cycles_of_two_and_three_name_their_members() {
    for n in [2, 3] {
        let kit = TestKit::builder().fail_on_ask_cycle(false).build();
        let ring = hops(n, true, T, |a, o| kit.spawn_with(Async::new(a), o));
        // Idle with no reply: every hop waits on the next one. (With more
        // hops than actors, the first hop, once its ask times out, would
        // take the last one's request and ask again: a new cycle.)
        assert_eq!(
            kit.ask(&ring[0], |r| HopMsg::Ask(n as u32, r)),
            Err(AskError::Timeout)
        );
        let cycles = kit.system().ask_cycles();
        assert_eq!(cycles.len(), 1, "{cycles:?}");
        // The last hop's ask closed it: it comes first, then the one it
        // waits on, and so on round.
        let mut want = ids(&ring);
        want.rotate_left(n - 1);
        let got: Vec<_> = cycles[0].members.iter().map(|m| m.id).collect();
        assert_eq!(got, want, "{}", cycles[0]);
        assert_eq!(
            cycles[0].members[0].name.as_deref(),
            Some(format!("hop-{}", n - 1).as_str())
        );
        assert!(cycles[0].members[0].type_name.contains("Hop"));
        // The hops time out in virtual time, one after the other.
        kit.advance(T * n as u32);
        assert_eq!(kit.system().ask_cycles_detected(), 1);
        assert_eq!(kit.system().metrics().ask_cycles, 1);
    }
}

#[test]
fn in_the_test_kit_a_chain_that_ends_is_no_cycle() {
    let kit = TestKit::new();
    let chain = hops(3, false, T, |a, o| kit.spawn_with(Async::new(a), o));
    assert_eq!(kit.ask(&chain[0], |r| HopMsg::Ask(10, r)), Ok(Ok(2)));
    // Two asks to the same actor, one after the other, are no cycle either.
    assert_eq!(kit.ask(&chain[1], |r| HopMsg::Ask(10, r)), Ok(Ok(1)));
    assert_eq!(kit.system().ask_cycles_detected(), 0);
}

#[test]
fn on_a_running_system_a_cycle_of_three_is_reported_once() {
    let system = ActorSystem::builder()
        .threads(2)
        .detect_ask_cycles(true)
        .build();
    let timeout = Duration::from_millis(200);
    let ring = hops(3, true, timeout, |a, o| system.spawn_with(Async::new(a), o));
    // The first hop gives up after its timeout, which unwinds the others.
    let got = ring[0].ask(|r| HopMsg::Ask(3, r), T).unwrap();
    assert_eq!(got, Err(AskError::Timeout));
    assert_eq!(system.ask_cycles_detected(), 1);
    let c = &system.ask_cycles()[0];
    let mut got: Vec<_> = c.members.iter().map(|m| m.id).collect();
    got.sort();
    assert_eq!(got, ids(&ring));
    // With every ask ended, the graph is empty again: a chain is no cycle.
    let chain = hops(3, false, timeout, |a, o| {
        system.spawn_with(Async::new(a), o)
    });
    assert_eq!(chain[0].ask(|r| HopMsg::Ask(100, r), T), Ok(Ok(2)));
    assert_eq!(system.ask_cycles_detected(), 1);
    system.shutdown();
}

#[test]
fn off_nothing_is_detected() {
    let system = ActorSystem::builder().threads(2).build();
    let ring = hops(2, true, Duration::from_millis(50), |a, o| {
        system.spawn_with(Async::new(a), o)
    });
    let got = ring[0].ask(|r| HopMsg::Ask(100, r), T).unwrap();
    assert_eq!(got, Err(AskError::Timeout));
    assert_eq!(system.ask_cycles_detected(), 0);
    assert!(system.ask_cycles().is_empty());
    system.shutdown();
}

/// On a dedicated thread, asks `peer` with a blocking ask.
struct Blocking {
    peer: Option<ActorRef<Blocking>>,
}

enum BlockingMsg {
    Link(ActorRef<Blocking>),
    Ask(u32, ReplyTo<Result<u32, AskError>>),
}

impl Actor for Blocking {
    type Msg = BlockingMsg;
    fn handle(&mut self, m: BlockingMsg, _: &mut Context<'_, Self>) {
        match m {
            BlockingMsg::Link(p) => self.peer = Some(p),
            BlockingMsg::Ask(hops, r) => match (&self.peer, hops) {
                (Some(p), 1..) => {
                    let got = p.ask(
                        |rr| BlockingMsg::Ask(hops - 1, rr),
                        Duration::from_millis(200),
                    );
                    r.reply(got.and_then(|v| v));
                }
                _ => {
                    r.reply(Ok(0));
                }
            },
        }
    }
}

#[test]
fn blocking_asks_between_dedicated_threads_make_a_cycle() {
    let system = ActorSystem::builder()
        .threads(1)
        .detect_ask_cycles(true)
        .build();
    let a = system.spawn_with(
        Blocking { peer: None },
        SpawnOptions::new().name("blocking-a").dedicated_thread(),
    );
    let b = system.spawn_with(
        Blocking { peer: None },
        SpawnOptions::new().name("blocking-b").dedicated_thread(),
    );
    a.tell(BlockingMsg::Link(b.clone())).unwrap();
    b.tell(BlockingMsg::Link(a.clone())).unwrap();
    let got = a.ask(|r| BlockingMsg::Ask(2, r), T).unwrap();
    assert_eq!(got, Err(AskError::Timeout));
    assert_eq!(system.ask_cycles_detected(), 1);
    let c = &system.ask_cycles()[0];
    let got: Vec<_> = c.members.iter().map(|m| m.id).collect();
    // b's ask closed it: b waits on a, a on b. A blocking ask knows its
    // asker by id; the member is named by the edge that named it best.
    assert_eq!(got, [b.id(), a.id()]);
    assert_eq!(c.members[1].name.as_deref(), Some("blocking-a"));
    system.shutdown();
}
