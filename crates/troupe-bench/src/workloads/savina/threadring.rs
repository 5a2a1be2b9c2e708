//! `savina_threadring` (Savina micro 5): a ring of N actors passes a token
//! carrying R, each hop decrementing it; the actor that receives 0 reports
//! done.
//!
//! On Troupe: the ring is linked (each actor holds its successor's
//! `ActorRef`) before the run; the token is a plain `u64` pair (remaining,
//! hops so far), so a hop is one `tell` with no allocation. Check: R hops.

use super::super::{verify, Workload};
use super::{measure, recv, sample, timed};
use crossbeam_channel::{bounded, Sender};
use troupe::{Actor, ActorRef, Context};
use troupe_bench_contract::savina;

pub struct RingActor {
    next: Option<ActorRef<RingActor>>,
    done: Sender<u64>,
}

pub enum RingMsg {
    Link(ActorRef<RingActor>),
    /// (remaining passes, hops so far)
    Token(u64, u64),
}

impl Actor for RingActor {
    type Msg = RingMsg;
    #[inline]
    fn handle(&mut self, msg: RingMsg, _ctx: &mut Context<'_, Self>) {
        match msg {
            RingMsg::Token(0, hops) => {
                let _ = self.done.send(hops);
            }
            RingMsg::Token(r, hops) => {
                if let Some(next) = &self.next {
                    let _ = next.tell(RingMsg::Token(r - 1, hops + 1));
                }
            }
            RingMsg::Link(n) => self.next = Some(n),
        }
    }
}

pub const WORKLOAD: Workload = Workload {
    spec: &savina::THREADRING,
    peers: true,
    run: |cfg, a| {
        let (n, r) = (a.usize("actors"), a.u64("passes"));
        measure(cfg, a, |system| {
            let (tx, rx) = bounded(1);
            let ring: Vec<ActorRef<RingActor>> = (0..n)
                .map(|_| {
                    system.spawn(RingActor {
                        next: None,
                        done: tx.clone(),
                    })
                })
                .collect();
            for i in 0..n {
                ring[i]
                    .tell(RingMsg::Link(ring[(i + 1) % n].clone()))
                    .map_err(|e| e.to_string())?;
            }
            for a in &ring {
                while a.mailbox_len() > 0 {
                    std::thread::yield_now();
                }
            }
            let (s, hops) = timed(
                || {
                    ring[0]
                        .tell(RingMsg::Token(r, 0))
                        .map_err(|e| e.to_string())
                },
                || recv(&rx),
            )?;
            verify(hops == r, || {
                format!("savina_threadring: {hops} hops, expected {r}")
            })?;
            Ok(sample(s))
        })
    },
    plot: None,
};
