//! `savina_pingpong` (Savina micro 1): Ping sends `Ping` to Pong, Pong
//! answers `Pong`; after N round trips Ping reports done.
//!
//! On Troupe: two actors that know each other (linked once before the run,
//! so no message carries a sender reference); Ping counts the pongs and, at
//! N, sends the count to the waiting thread. Check: N pongs.

use super::super::{verify, Workload};
use super::{measure, recv, sample, timed};
use crossbeam_channel::{bounded, Sender};
use troupe::{Actor, ActorRef, Context};
use troupe_bench_contract::savina;

pub struct Pong {
    ping: Option<ActorRef<Ping>>,
}

pub enum PongMsg {
    Link(ActorRef<Ping>),
    Ping,
}

impl Actor for Pong {
    type Msg = PongMsg;
    #[inline]
    fn handle(&mut self, msg: PongMsg, _ctx: &mut Context<'_, Self>) {
        match msg {
            PongMsg::Ping => {
                if let Some(p) = &self.ping {
                    let _ = p.tell(PingMsg::Pong);
                }
            }
            PongMsg::Link(p) => self.ping = Some(p),
        }
    }
}

pub struct Ping {
    pong: ActorRef<Pong>,
    pongs: u64,
    target: u64,
    done: Sender<u64>,
}

pub enum PingMsg {
    Start,
    Pong,
}

impl Actor for Ping {
    type Msg = PingMsg;
    #[inline]
    fn handle(&mut self, msg: PingMsg, _ctx: &mut Context<'_, Self>) {
        if let PingMsg::Pong = msg {
            self.pongs += 1;
            if self.pongs == self.target {
                let _ = self.done.send(self.pongs);
                return;
            }
        }
        let _ = self.pong.tell(PongMsg::Ping);
    }
}

pub const WORKLOAD: Workload = Workload {
    spec: &savina::PINGPONG,
    peers: true,
    run: |cfg, a| {
        let n = a.u64("pings");
        measure(cfg, a, |system| {
            let (tx, rx) = bounded(1);
            let pong = system.spawn(Pong { ping: None });
            let ping = system.spawn(Ping {
                pong: pong.clone(),
                pongs: 0,
                target: n,
                done: tx,
            });
            pong.tell(PongMsg::Link(ping.clone()))
                .map_err(|e| e.to_string())?;
            while pong.mailbox_len() > 0 {
                std::thread::yield_now();
            }
            let (s, pongs) = timed(
                || ping.tell(PingMsg::Start).map_err(|e| e.to_string()),
                || recv(&rx),
            )?;
            verify(pongs == n, || {
                format!("savina_pingpong: {pongs} pongs, expected {n}")
            })?;
            Ok(sample(s))
        })
    },
    plot: None,
};
