//! `savina_pingpong` on actix: Ping sends `Ping` to Pong with `do_send`, Pong answers `Pong`
//! the same way. Both live on one arbiter (actix's placement for two chatty actors): Pong is
//! started from Ping's `start_in_arbiter` closure and knows Ping's address from the start, so
//! no message carries one. After N round trips Ping reports to the driver.

use actix::prelude::*;
use std::time::Instant;
use tokio::sync::oneshot;
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{lifecycle, ready, report, stop_all};

struct Pinger {
    pong: Addr<Ponger>,
    pings: u64,
    pongs: u64,
    done: Option<oneshot::Sender<u64>>,
}

struct Ponger {
    ping: Addr<Pinger>,
}

impl Actor for Pinger {
    type Context = Context<Self>;
}

impl Actor for Ponger {
    type Context = Context<Self>;
}

lifecycle!(Pinger);

#[derive(Message)]
#[rtype(result = "()")]
struct Start;

#[derive(Message)]
#[rtype(result = "()")]
struct Ping;

#[derive(Message)]
#[rtype(result = "()")]
struct Pong;

impl Handler<Start> for Pinger {
    type Result = ();

    fn handle(&mut self, _: Start, _: &mut Context<Self>) {
        self.pong.do_send(Ping);
    }
}

impl Handler<Ping> for Ponger {
    type Result = ();

    fn handle(&mut self, _: Ping, _: &mut Context<Self>) {
        self.ping.do_send(Pong);
    }
}

impl Handler<Pong> for Pinger {
    type Result = ();

    fn handle(&mut self, _: Pong, _: &mut Context<Self>) {
        self.pongs += 1;
        if self.pongs < self.pings {
            self.pong.do_send(Ping);
        } else if let Some(done) = self.done.take() {
            let _ = done.send(self.pongs);
        }
    }
}

pub async fn run(rep: &Reporter, w: &Args, arbs: &[ArbiterHandle]) {
    let pings = w.u64("pings");
    let (done_tx, done_rx) = oneshot::channel();
    let ping = Pinger::start_in_arbiter(&arbs[0], move |ctx| {
        let me = ctx.address();
        Pinger {
            // `start` runs Pong on this arbiter.
            pong: Ponger { ping: me }.start(),
            pings,
            pongs: 0,
            done: Some(done_tx),
        }
    });
    ready(std::slice::from_ref(&ping)).await;
    let start = Instant::now();
    ping.do_send(Start);
    let pongs = done_rx
        .await
        .unwrap_or_else(|_| fail("ping never finished"));
    let secs = seconds_since(start);
    if pongs != pings {
        fail(format!("savina_pingpong: {pongs} pongs, expected {pings}"));
    }
    report(rep, w, secs, &[]);
    // Pong goes with the last address to it, held by Ping.
    stop_all(&[ping]).await;
}
