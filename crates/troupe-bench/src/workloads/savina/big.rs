//! `savina_big` (Savina micro 7): W actors; actor i draws peers from
//! `Rng::new(i + 1)`, sends `Ping(self)` to peer `below(W)` (itself
//! included), waits for the `Pong`, and repeats until N pongs came back, then
//! reports done to a sink; every actor answers every `Ping` with `Pong`.
//!
//! On Troupe: "self" is the sender's index into a shared slice of the W
//! `ActorRef`s (handed over once before the run), so a ping is a `u32` and a
//! pong a unit variant. The sink is an actor that sums the pongs of the W
//! reports and hands them to the waiting thread. Check: W reports, W*N pongs.

use super::super::{verify, Workload};
use super::{measure, recv, sample, timed};
use crossbeam_channel::{bounded, Sender};
use std::sync::Arc;
use troupe::{Actor, ActorRef, Context};
use troupe_bench_contract::savina::{self, Rng};

pub struct Sink {
    reports: u64,
    pongs: u64,
    expect: u64,
    done: Sender<(u64, u64)>,
}

impl Actor for Sink {
    type Msg = u64;
    fn handle(&mut self, pongs: u64, _ctx: &mut Context<'_, Self>) {
        self.reports += 1;
        self.pongs += pongs;
        if self.reports == self.expect {
            let _ = self.done.send((self.reports, self.pongs));
        }
    }
}

pub struct Big {
    id: u32,
    rng: Rng,
    pongs: u64,
    target: u64,
    peers: Arc<[ActorRef<Big>]>,
    sink: ActorRef<Sink>,
}

pub enum BigMsg {
    Peers(Arc<[ActorRef<Big>]>),
    Start,
    Ping(u32),
    Pong,
}

impl Big {
    #[inline]
    fn ping_someone(&mut self) {
        let to = self.rng.below(self.peers.len() as u64) as usize;
        let _ = self.peers[to].tell(BigMsg::Ping(self.id));
    }
}

impl Actor for Big {
    type Msg = BigMsg;
    #[inline]
    fn handle(&mut self, msg: BigMsg, _ctx: &mut Context<'_, Self>) {
        match msg {
            BigMsg::Ping(from) => {
                let _ = self.peers[from as usize].tell(BigMsg::Pong);
            }
            BigMsg::Pong => {
                self.pongs += 1;
                if self.pongs == self.target {
                    let _ = self.sink.tell(self.pongs);
                } else {
                    self.ping_someone();
                }
            }
            BigMsg::Start => self.ping_someone(),
            BigMsg::Peers(p) => self.peers = p,
        }
    }
}

pub const WORKLOAD: Workload = Workload {
    spec: &savina::BIG,
    peers: true,
    run: |cfg, a| {
        let (w, n) = (a.usize("actors"), a.u64("pings"));
        measure(cfg, a, |system| {
            let (tx, rx) = bounded(1);
            let sink = system.spawn(Sink {
                reports: 0,
                pongs: 0,
                expect: w as u64,
                done: tx,
            });
            let refs: Arc<[ActorRef<Big>]> = (0..w)
                .map(|i| {
                    system.spawn(Big {
                        id: i as u32,
                        rng: Rng::new(i as u64 + 1),
                        pongs: 0,
                        target: n,
                        peers: Arc::new([]),
                        sink: sink.clone(),
                    })
                })
                .collect();
            for r in refs.iter() {
                r.tell(BigMsg::Peers(refs.clone()))
                    .map_err(|e| e.to_string())?;
            }
            while refs.iter().any(|r| r.mailbox_len() > 0) {
                std::thread::yield_now();
            }
            let (s, (reports, pongs)) = timed(
                || {
                    for r in refs.iter() {
                        r.tell(BigMsg::Start).map_err(|e| e.to_string())?;
                    }
                    Ok(())
                },
                || recv(&rx),
            )?;
            verify(reports == w as u64 && pongs == w as u64 * n, || {
                format!(
                    "savina_big: {reports} reports and {pongs} pongs, expected {w} and {}",
                    w as u64 * n
                )
            })?;
            // Break the reference cycles before the system stops.
            for r in refs.iter() {
                let _ = r.tell(BigMsg::Peers(Arc::new([])));
            }
            Ok(sample(s))
        })
    },
    plot: None,
};
