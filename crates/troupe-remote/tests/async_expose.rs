//! An async actor exposed over a node (issue 27): remote tells and asks
//! reach an `AsyncActor` whose handler awaits before it answers, in order.

mod common;

use common::*;
use std::time::Duration;
use troupe::{ActorSystem, Async, AsyncActor, AsyncContext};
use troupe_remote::Node;
use troupe_test_nats::NatsServer;

const T: Duration = Duration::from_secs(5);

/// Sums what it is told, awaiting a timer per message first.
struct SlowCounter {
    sum: u64,
    seen: Vec<u64>,
}

impl AsyncActor for SlowCounter {
    type Msg = CounterMsg;
    async fn handle(&mut self, msg: CounterMsg, _ctx: &mut AsyncContext<Self>) {
        troupe::timer::sleep(Duration::from_micros(200)).await;
        match msg {
            CounterMsg::Add(Add(n)) => {
                self.seen.push(n);
                self.sum += n;
            }
            CounterMsg::Sum(_, r) => {
                // In order: every tell before the ask was handled first.
                let ordered = self.seen.windows(2).all(|w| w[0] < w[1]);
                r.reply(if ordered { self.sum } else { u64::MAX });
            }
            _ => {}
        }
    }
}

/// Serves a `SlowCounter` as `slow@b`.
fn serve_slow(server: &NatsServer, system: &ActorSystem) -> Node {
    let counter = system.spawn(Async::new(SlowCounter {
        sum: 0,
        seen: Vec::new(),
    }));
    let b = Node::builder(&server.url(), "b")
        .insecure()
        .connect()
        .unwrap();
    b.expose("slow", &counter)
        .tell::<Add>()
        .ask::<Sum>(CounterMsg::Sum)
        .serve()
        .unwrap();
    b
}

#[test]
fn an_async_actor_answers_remote_tells_and_asks_in_order() {
    let Some(server) = NatsServer::start_or_skip() else {
        return;
    };
    let system = ActorSystem::builder().threads(2).build();
    let b = serve_slow(&server, &system);
    let a = Node::builder(&server.url(), "a")
        .insecure()
        .connect()
        .unwrap();
    let add = a.lookup::<Add>("slow@b").unwrap();
    for i in 1..=200u64 {
        add.tell(Add(i)).unwrap();
    }
    let sum = add.retype::<Sum>().unwrap();
    assert_eq!(sum.ask(Sum, T), Ok(200 * 201 / 2));
    drop((a, b));
    system.shutdown();
}

/// Asks a remote counter with `.await` inside its own async handler.
struct Auditor {
    sum: troupe_remote::RemoteRef<Sum>,
}

impl AsyncActor for Auditor {
    type Msg = troupe::ReplyTo<u64>;
    async fn handle(&mut self, reply: troupe::ReplyTo<u64>, _ctx: &mut AsyncContext<Self>) {
        // Twice, in sequence: the handler suspends on each remote ask.
        let a = self.sum.ask_async(Sum, T).await.unwrap_or(0);
        let b = self.sum.ask_async(Sum, T).await.unwrap_or(0);
        reply.reply(a + b);
    }
}

#[test]
fn an_async_handler_awaits_a_remote_ask() {
    let Some(server) = NatsServer::start_or_skip() else {
        return;
    };
    let system = ActorSystem::builder().threads(2).build();
    let b = serve_slow(&server, &system);
    let a = Node::builder(&server.url(), "a")
        .insecure()
        .connect()
        .unwrap();
    let add = a.lookup::<Add>("slow@b").unwrap();
    for i in 1..=10u64 {
        add.tell(Add(i)).unwrap();
    }
    let auditor = system.spawn(Async::new(Auditor {
        sum: a.lookup::<Sum>("slow@b").unwrap(),
    }));
    assert_eq!(auditor.ask(|r| r, T), Ok(2 * 55));
    drop((a, b));
    system.shutdown();
}
