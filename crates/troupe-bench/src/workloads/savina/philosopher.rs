//! `savina_philosopher` (Savina concurrency 3): N dining philosophers and an
//! arbitrator. Philosopher i asks `Hungry(i)`; the arbitrator grants `Eat`
//! when forks i and (i+1) % N are both free (and takes them), else answers
//! `Denied` and the philosopher asks again at once. After eating it sends
//! `Done(i)` (the forks are freed) and, until it ate M times, is hungry
//! again; then it sends `Exit`.
//!
//! On Troupe: philosophers are indices into the arbitrator's `ActorRef`s; the
//! forks are a `Vec<bool>`; `Exit` carries the philosopher's meals and
//! denials, and the arbitrator hands the totals to the waiting thread when
//! all N exited. Check: N*M meals; denials are reported as an extra.

use super::super::{verify, Workload};
use super::{measure, recv, sample, timed};
use crossbeam_channel::{bounded, Sender};
use troupe::{Actor, ActorRef, Context};
use troupe_bench_contract::savina;

pub struct Arbitrator {
    forks: savina::Forks,
    philosophers: Vec<ActorRef<Philosopher>>,
    exited: usize,
    meals: u64,
    denials: u64,
    done: Sender<(u64, u64)>,
}

pub enum ArbMsg {
    Link(Vec<ActorRef<Philosopher>>),
    Hungry(u32),
    Done(u32),
    /// (meals, denials)
    Exit(u64, u64),
}

impl Actor for Arbitrator {
    type Msg = ArbMsg;
    #[inline]
    fn handle(&mut self, msg: ArbMsg, _ctx: &mut Context<'_, Self>) {
        let n = self.forks.len();
        match msg {
            ArbMsg::Hungry(i) => {
                let answer = if self.forks.try_take(i as usize) {
                    PhilMsg::Eat
                } else {
                    PhilMsg::Denied
                };
                let _ = self.philosophers[i as usize].tell(answer);
            }
            ArbMsg::Done(i) => self.forks.put_back(i as usize),
            ArbMsg::Exit(meals, denials) => {
                self.meals += meals;
                self.denials += denials;
                self.exited += 1;
                if self.exited == n {
                    let _ = self.done.send((self.meals, self.denials));
                    self.philosophers.clear();
                }
            }
            ArbMsg::Link(p) => self.philosophers = p,
        }
    }
}

pub struct Philosopher {
    id: u32,
    meals: u64,
    rounds: u64,
    denials: u64,
    arbitrator: ActorRef<Arbitrator>,
}

pub enum PhilMsg {
    Start,
    Eat,
    Denied,
}

impl Actor for Philosopher {
    type Msg = PhilMsg;
    #[inline]
    fn handle(&mut self, msg: PhilMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            PhilMsg::Eat => {
                self.meals += 1;
                let _ = self.arbitrator.tell(ArbMsg::Done(self.id));
                if self.meals == self.rounds {
                    let _ = self.arbitrator.tell(ArbMsg::Exit(self.meals, self.denials));
                    ctx.stop();
                    return;
                }
            }
            PhilMsg::Denied => self.denials += 1,
            PhilMsg::Start => {}
        }
        let _ = self.arbitrator.tell(ArbMsg::Hungry(self.id));
    }
}

pub const WORKLOAD: Workload = Workload {
    spec: &savina::PHILOSOPHER,
    peers: true,
    run: |cfg, a| {
        let (n, m) = (a.usize("philosophers"), a.u64("rounds"));
        measure(cfg, a, |system| {
            verify(n >= 2, || {
                "savina_philosopher: needs at least 2 philosophers".into()
            })?;
            let (tx, rx) = bounded(1);
            let arb = system.spawn(Arbitrator {
                forks: savina::Forks::new(n),
                philosophers: Vec::new(),
                exited: 0,
                meals: 0,
                denials: 0,
                done: tx,
            });
            let phils: Vec<ActorRef<Philosopher>> = (0..n)
                .map(|i| {
                    system.spawn(Philosopher {
                        id: i as u32,
                        meals: 0,
                        rounds: m,
                        denials: 0,
                        arbitrator: arb.clone(),
                    })
                })
                .collect();
            arb.tell(ArbMsg::Link(phils.clone()))
                .map_err(|e| e.to_string())?;
            while arb.mailbox_len() > 0 {
                std::thread::yield_now();
            }
            let (s, (meals, denials)) = timed(
                || {
                    for p in &phils {
                        p.tell(PhilMsg::Start).map_err(|e| e.to_string())?;
                    }
                    Ok(())
                },
                || recv(&rx),
            )?;
            verify(meals == n as u64 * m, || {
                format!(
                    "savina_philosopher: {meals} meals, expected {}",
                    n as u64 * m
                )
            })?;
            Ok(sample(s).with("denials", denials))
        })
    },
    plot: None,
};
