//! `pingpong`: two actors bounce an integer K round trips.

use super::{params, verify, RunCfg};
use crate::stats::{Figure, Sample};
use crossbeam_channel::{bounded, Sender};
use serde_json::json;
use std::time::Instant;
use troupe::{Actor, ActorRef, Context};

pub struct Params {
    pub round_trips: u64,
}

pub struct Ponger;

impl Actor for Ponger {
    type Msg = (u64, ActorRef<Pinger>);
    #[inline]
    fn handle(&mut self, (n, back): Self::Msg, _ctx: &mut Context<'_, Self>) {
        let _ = back.tell(PingMsg::Pong(n));
    }
}

pub enum PingMsg {
    Start(ActorRef<Ponger>),
    Pong(u64),
}

pub struct Pinger {
    me: Option<ActorRef<Pinger>>,
    peer: Option<ActorRef<Ponger>>,
    target: u64,
    done: Sender<u64>,
}

impl Actor for Pinger {
    type Msg = PingMsg;
    #[inline]
    fn handle(&mut self, msg: PingMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            PingMsg::Start(peer) => {
                let me = ctx.myself();
                let _ = peer.tell((1, me.clone()));
                self.me = Some(me);
                self.peer = Some(peer);
            }
            PingMsg::Pong(n) if n == self.target => {
                let _ = self.done.send(n);
            }
            PingMsg::Pong(n) => {
                if let (Some(peer), Some(me)) = (&self.peer, &self.me) {
                    let _ = peer.tell((n + 1, me.clone()));
                }
            }
        }
    }
}

pub fn run(cfg: &RunCfg, p: &Params) -> Result<Vec<Figure>, String> {
    let k = p.round_trips;
    let mut figs = vec![cfg.measure(
        "troupe",
        "pingpong",
        format!("pingpong {k}"),
        params(&[("round_trips", json!(k))]),
        "round-trips/s",
        || {
            let system = cfg.system();
            let (tx, rx) = bounded(1);
            let ponger = system.spawn(Ponger);
            let pinger = system.spawn(Pinger {
                me: None,
                peer: None,
                target: k,
                done: tx,
            });
            let t0 = Instant::now();
            pinger
                .tell(PingMsg::Start(ponger))
                .map_err(|e| e.to_string())?;
            let n = rx.recv().map_err(|e| e.to_string())?;
            let seconds = t0.elapsed().as_secs_f64();
            verify(n == k, || {
                format!("pingpong: finished at {n}, expected {k}")
            })?;
            system.shutdown();
            Ok(Sample::new(seconds, k as f64).with("ns_per_op", seconds * 1e9 / k as f64))
        },
    )?];
    figs.push(super::baseline::thread_pingpong(cfg, k.min(200_000))?);
    Ok(figs)
}
