//! `savina_philosopher` on actix: the arbitrator on arbiter 0 holds the forks; philosophers
//! round robin on the arbiters. A hungry philosopher asks (`send`) `Hungry(i)` and awaits the
//! answer (granted or denied) in a future spawned on its own context; after eating it
//! `do_send`s `Done(i)`, and after M meals `Exit`. The arbitrator counts meals and denials and
//! reports to the driver once all N exited.

use actix::prelude::*;
use std::time::Instant;
use tokio::sync::oneshot;
use troupe_bench_contract::savina::Forks;
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{gone, lifecycle, on, ready, report, stop_all};

struct Arbitrator {
    forks: Forks,
    meals: u64,
    denials: u64,
    exited: usize,
    done: Option<oneshot::Sender<(u64, u64)>>,
}

struct Philosopher {
    id: usize,
    arbitrator: Addr<Arbitrator>,
    meals_left: usize,
}

impl Actor for Arbitrator {
    type Context = Context<Self>;
}

impl Actor for Philosopher {
    type Context = Context<Self>;
}

lifecycle!(Arbitrator, Philosopher);

/// Answered `true` (eat: the forks are taken) or `false` (denied).
#[derive(Message)]
#[rtype(result = "bool")]
struct Hungry(usize);

#[derive(Message)]
#[rtype(result = "()")]
struct Done(usize);

#[derive(Message)]
#[rtype(result = "()")]
struct Exit;

#[derive(Message)]
#[rtype(result = "()")]
struct Start;

impl Handler<Hungry> for Arbitrator {
    type Result = bool;

    fn handle(&mut self, Hungry(i): Hungry, _: &mut Context<Self>) -> bool {
        if self.forks.try_take(i) {
            self.meals += 1;
            true
        } else {
            self.denials += 1;
            false
        }
    }
}

impl Handler<Done> for Arbitrator {
    type Result = ();

    fn handle(&mut self, Done(i): Done, _: &mut Context<Self>) {
        self.forks.put_back(i);
    }
}

impl Handler<Exit> for Arbitrator {
    type Result = ();

    fn handle(&mut self, _: Exit, _: &mut Context<Self>) {
        self.exited += 1;
        if self.exited == self.forks.len() {
            if let Some(done) = self.done.take() {
                let _ = done.send((self.meals, self.denials));
            }
        }
    }
}

impl Philosopher {
    fn hungry(&mut self, ctx: &mut Context<Self>) {
        let answer = self.arbitrator.send(Hungry(self.id));
        ctx.spawn(answer.into_actor(self).map(|granted, act, ctx| {
            match granted {
                Ok(true) => {
                    act.arbitrator.do_send(Done(act.id));
                    act.meals_left -= 1;
                    if act.meals_left == 0 {
                        act.arbitrator.do_send(Exit);
                        ctx.stop();
                        return;
                    }
                }
                Ok(false) => {}
                Err(_) => fail("savina_philosopher: the arbitrator died"),
            }
            act.hungry(ctx);
        }));
    }
}

impl Handler<Start> for Philosopher {
    type Result = ();

    fn handle(&mut self, _: Start, ctx: &mut Context<Self>) {
        self.hungry(ctx);
    }
}

pub async fn run(rep: &Reporter, w: &Args, arbs: &[ArbiterHandle]) {
    let philosophers = w.usize("philosophers");
    let rounds = w.usize("rounds");
    if philosophers < 2 {
        fail("savina_philosopher: needs at least 2 philosophers (2 forks)");
    }
    let (done_tx, done_rx) = oneshot::channel();
    let arbitrator = Arbitrator {
        forks: Forks::new(philosophers),
        meals: 0,
        denials: 0,
        exited: 0,
        done: Some(done_tx),
    };
    let arbitrator = Arbitrator::start_in_arbiter(&arbs[0], move |_| arbitrator);
    let all: Vec<_> = (0..philosophers)
        .map(|id| {
            let arbitrator = arbitrator.clone();
            Philosopher::start_in_arbiter(on(arbs, id), move |_| Philosopher {
                id,
                arbitrator,
                meals_left: rounds,
            })
        })
        .collect();
    ready(std::slice::from_ref(&arbitrator)).await;
    ready(&all).await;
    let start = Instant::now();
    for philosopher in &all {
        philosopher.do_send(Start);
    }
    let (meals, denials) = done_rx
        .await
        .unwrap_or_else(|_| fail("savina_philosopher: the arbitrator never finished"));
    let secs = seconds_since(start);
    let expected = (philosophers * rounds) as u64;
    if meals != expected {
        fail(format!(
            "savina_philosopher: {meals} meals, expected {expected}"
        ));
    }
    report(rep, w, secs, &[("denials", denials as f64)]);
    gone(&all).await;
    stop_all(&[arbitrator]).await;
}
