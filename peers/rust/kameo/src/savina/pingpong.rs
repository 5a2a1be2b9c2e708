//! `savina_pingpong` on kameo: Ping `tell`s `Ping` to Pong, Pong `tell`s `Pong` back. Pong
//! learns Ping's `ActorRef` once before the measured phase (asked, so it is there when the
//! clock starts), so no message carries an address. After N round trips Ping reports to the
//! driver.

use kameo::prelude::*;
use std::time::Instant;
use tokio::sync::oneshot;
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{report, sent, started, stop_all};

#[derive(Actor)]
struct Pinger {
    pong: ActorRef<Ponger>,
    pings: u64,
    pongs: u64,
    done: Option<oneshot::Sender<u64>>,
}

#[derive(Actor)]
struct Ponger {
    ping: Option<ActorRef<Pinger>>,
}

struct Start;
struct Ping;
struct Pong;
struct Link(ActorRef<Pinger>);

impl Message<Start> for Pinger {
    type Reply = ();

    async fn handle(&mut self, _: Start, _: &mut Context<Self, ()>) {
        sent(self.pong.tell(Ping).await, "savina_pingpong");
    }
}

impl Message<Link> for Ponger {
    type Reply = ();

    async fn handle(&mut self, Link(ping): Link, _: &mut Context<Self, ()>) {
        self.ping = Some(ping);
    }
}

impl Message<Ping> for Ponger {
    type Reply = ();

    async fn handle(&mut self, _: Ping, _: &mut Context<Self, ()>) {
        let Some(ping) = &self.ping else {
            fail("savina_pingpong: pong got a ping before its ping actor");
        };
        sent(ping.tell(Pong).await, "savina_pingpong");
    }
}

impl Message<Pong> for Pinger {
    type Reply = ();

    async fn handle(&mut self, _: Pong, _: &mut Context<Self, ()>) {
        self.pongs += 1;
        if self.pongs < self.pings {
            sent(self.pong.tell(Ping).await, "savina_pingpong");
        } else if let Some(done) = self.done.take() {
            let _ = done.send(self.pongs);
        }
    }
}

pub async fn run(rep: &Reporter, w: &Args) {
    let pings = w.u64("pings");
    let (done_tx, done_rx) = oneshot::channel();
    let pong = Ponger::spawn(Ponger { ping: None });
    let ping = Pinger::spawn(Pinger {
        pong: pong.clone(),
        pings,
        pongs: 0,
        done: Some(done_tx),
    });
    sent(pong.ask(Link(ping.clone())).await, "savina_pingpong");
    started(std::slice::from_ref(&ping)).await;
    let start = Instant::now();
    sent(ping.tell(Start).await, "savina_pingpong");
    let pongs = done_rx
        .await
        .unwrap_or_else(|_| fail("savina_pingpong: ping never finished"));
    let secs = seconds_since(start);
    if pongs != pings {
        fail(format!("savina_pingpong: {pongs} pongs, expected {pings}"));
    }
    report(rep, w, secs, &[]);
    stop_all(&[ping]).await;
    stop_all(&[pong]).await;
}
