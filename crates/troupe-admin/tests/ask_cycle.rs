//! An ask cycle detected by the actor system shows in the API: three
//! async actors in a ring, each awaiting its ask to the next; the cycle
//! is in `GET /api/v1/workers` with its members, by name, and counted.

mod common;

use std::time::Duration;

use common::request;
use troupe::{
    ActorRef, ActorSystem, AskError, Async, AsyncActor, AsyncContext, ReplyTo, SpawnOptions,
};
use troupe_admin::AdminServer;

const BEARER: (&str, &str) = ("Authorization", "Bearer test-token-0123456789");

/// Passes a request on to `next`, awaiting its reply, `hops` times.
struct Hop {
    next: Option<ActorRef<Async<Hop>>>,
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
                        .with_timeout(Duration::from_millis(200))
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

#[test]
fn a_ring_of_asks_shows_as_an_ask_cycle_with_its_members() {
    let system = ActorSystem::builder()
        .threads(2)
        .detect_ask_cycles(true)
        .build();
    let s = AdminServer::builder("test-token-0123456789")
        .bind("127.0.0.1:0")
        .system(system.handle())
        .start()
        .unwrap();
    let get = || {
        let a = request(s.addr(), "GET", "/api/v1/workers", &[BEARER], b"");
        assert_eq!(a.status, 200, "{}", a.body);
        a.json()
    };
    let before = get();
    assert_eq!(before["ask_cycles"]["detected"], 0, "{before}");
    let ring: Vec<ActorRef<Async<Hop>>> = (0..3)
        .map(|i| {
            system.spawn_with(
                Async::new(Hop { next: None }),
                SpawnOptions::new().name(format!("hop-{i}")),
            )
        })
        .collect();
    for i in 0..3 {
        ring[i]
            .tell(HopMsg::Link(ring[(i + 1) % 3].clone()))
            .unwrap();
    }
    // hop-0 -> hop-1 -> hop-2 -> hop-0: no reply comes; the first hop
    // gives up after its timeout, which unwinds the others.
    let got = ring[0]
        .ask(|r| HopMsg::Ask(3, r), Duration::from_secs(10))
        .unwrap();
    assert_eq!(got, Err(AskError::Timeout));
    let after = get();
    assert_eq!(after["ask_cycles"]["detected"], 1, "{after}");
    let cycle = &after["ask_cycles"]["recent"][0];
    let mut names: Vec<&str> = cycle["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["hop-0", "hop-1", "hop-2"], "{after}");
    assert!(cycle["text"].as_str().unwrap().contains("hop-"), "{after}");
    drop(s);
    system.shutdown();
}
