//! Asks in flight when the connection drops end with `Disconnected` at
//! once, as the README's error table says, not with `Timeout` at their
//! deadline (issue 25, finding 8).

mod common;

use common::*;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe::{ActorSystem, AskError};
use troupe_remote::Node;
use troupe_test_nats::NatsServer;

#[test]
fn an_ask_in_flight_fails_with_disconnected_when_the_server_goes() {
    let Some(mut server) = NatsServer::start_or_skip() else {
        return;
    };
    let system = ActorSystem::builder().threads(1).build();
    let counter = system.spawn(Counter::new(Arc::new(AtomicU64::new(0))));
    let b = Node::builder(&server.url(), "b")
        .insecure()
        .connect()
        .unwrap();
    b.expose("counter", &counter)
        .ask::<Silent>(CounterMsg::Silent)
        .ask::<Sum>(CounterMsg::Sum)
        .serve()
        .unwrap();
    let a = Node::builder(&server.url(), "a")
        .insecure()
        .connect()
        .unwrap();
    let silent = a.lookup::<Silent>("counter@b").unwrap();
    let asker = std::thread::spawn(move || {
        let r = silent.ask(Silent, Duration::from_secs(20));
        (r, Instant::now())
    });
    std::thread::sleep(Duration::from_millis(300)); // the ask is at b now
    let killed = Instant::now();
    server.kill();
    let (r, ended) = asker.join().unwrap();
    assert_eq!(r, Err(AskError::Disconnected));
    let took = ended - killed;
    assert!(
        took < Duration::from_secs(3),
        "ended {took:?} after the kill"
    );

    // The nodes come back by themselves, and asks work again.
    server.restart().unwrap();
    let sum = a.lookup::<Sum>("counter@b").unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || sum
            .ask(Sum, Duration::from_secs(1))
            .is_ok()),
        "asks work after the server returns"
    );
}
