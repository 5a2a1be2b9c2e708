//! `savina_philosopher` on kameo: an arbitrator actor holding the forks and N philosopher
//! actors. A philosopher's `Start` handler runs its meals: it `ask`s `Hungry(i)` (answered
//! granted or denied) and asks again at once when denied; after eating it `tell`s `Done(i)`,
//! and after M meals `Exit`. The arbitrator never waits on a philosopher, and counts meals and
//! denials; it reports to the driver once all N exited.

use kameo::prelude::*;
use std::time::Instant;
use tokio::sync::oneshot;
use troupe_bench_contract::savina::Forks;
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{gone, report, sent, started, stop_all};

#[derive(Actor)]
struct Arbitrator {
    forks: Forks,
    meals: u64,
    denials: u64,
    exited: usize,
    done: Option<oneshot::Sender<(u64, u64)>>,
}

#[derive(Actor)]
struct Philosopher {
    id: usize,
    arbitrator: ActorRef<Arbitrator>,
    meals: usize,
}

/// Answered `true` (eat: the forks are taken) or `false` (denied).
struct Hungry(usize);
struct Done(usize);
struct Exit;
struct Start;

const WHAT: &str = "savina_philosopher";

impl Message<Hungry> for Arbitrator {
    type Reply = bool;

    async fn handle(&mut self, Hungry(i): Hungry, _: &mut Context<Self, bool>) -> bool {
        if self.forks.try_take(i) {
            self.meals += 1;
            true
        } else {
            self.denials += 1;
            false
        }
    }
}

impl Message<Done> for Arbitrator {
    type Reply = ();

    async fn handle(&mut self, Done(i): Done, _: &mut Context<Self, ()>) {
        self.forks.put_back(i);
    }
}

impl Message<Exit> for Arbitrator {
    type Reply = ();

    async fn handle(&mut self, _: Exit, _: &mut Context<Self, ()>) {
        self.exited += 1;
        if self.exited == self.forks.len() {
            if let Some(done) = self.done.take() {
                let _ = done.send((self.meals, self.denials));
            }
        }
    }
}

impl Message<Start> for Philosopher {
    type Reply = ();

    async fn handle(&mut self, _: Start, ctx: &mut Context<Self, ()>) {
        let mut eaten = 0;
        while eaten < self.meals {
            if sent(self.arbitrator.ask(Hungry(self.id)).await, WHAT) {
                eaten += 1;
                sent(self.arbitrator.tell(Done(self.id)).await, WHAT);
            }
        }
        sent(self.arbitrator.tell(Exit).await, WHAT);
        ctx.stop();
    }
}

pub async fn run(rep: &Reporter, w: &Args) {
    let philosophers = w.usize("philosophers");
    let rounds = w.usize("rounds");
    if philosophers < 2 {
        fail("savina_philosopher: needs at least 2 philosophers (2 forks)");
    }
    let (done_tx, done_rx) = oneshot::channel();
    let arbitrator = Arbitrator::spawn(Arbitrator {
        forks: Forks::new(philosophers),
        meals: 0,
        denials: 0,
        exited: 0,
        done: Some(done_tx),
    });
    let all: Vec<_> = (0..philosophers)
        .map(|id| {
            Philosopher::spawn(Philosopher {
                id,
                arbitrator: arbitrator.clone(),
                meals: rounds,
            })
        })
        .collect();
    started(std::slice::from_ref(&arbitrator)).await;
    started(&all).await;
    let start = Instant::now();
    for philosopher in &all {
        sent(philosopher.tell(Start).await, WHAT);
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
