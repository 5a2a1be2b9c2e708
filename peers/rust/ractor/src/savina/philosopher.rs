//! `savina_philosopher`: Savina's Dining Philosophers with an arbitrator. Philosopher i
//! casts `Hungry(i, its ActorRef)` to the arbitrator actor, which casts back `Eat` (taking
//! forks i and i+1) or `Denied`; a denied philosopher asks again at once, one that ate
//! casts `Done(i)` and is hungry again until it ate M times, then casts `Exit` with its
//! meals and denials. The arbitrator hands the totals to the driver once all N exited.

use std::time::Instant;

use ractor::{Actor, ActorRef};
use tokio::sync::oneshot;
use troupe_bench_contract::savina::Forks;
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{finished, report};
use crate::{spawn, stop_all, Res};

struct Arbitrator;
struct Philosopher;

enum ArbitratorMsg {
    Hungry(usize, ActorRef<PhilosopherMsg>),
    Done(usize),
    Exit { meals: u64, denials: u64 },
}

enum PhilosopherMsg {
    Start,
    Eat,
    Denied,
}

struct ArbitratorState {
    forks: Forks,
    exited: usize,
    meals: u64,
    denials: u64,
    done: Option<oneshot::Sender<(u64, u64)>>,
}

impl Actor for Arbitrator {
    type Msg = ArbitratorMsg;
    type State = ArbitratorState;
    type Arguments = ArbitratorState;

    async fn pre_start(
        &self,
        _: ActorRef<ArbitratorMsg>,
        args: ArbitratorState,
    ) -> Res<ArbitratorState> {
        Ok(args)
    }

    async fn handle(
        &self,
        _: ActorRef<ArbitratorMsg>,
        msg: ArbitratorMsg,
        st: &mut ArbitratorState,
    ) -> Res<()> {
        let n = st.forks.len();
        match msg {
            ArbitratorMsg::Hungry(i, philosopher) => {
                if st.forks.try_take(i) {
                    philosopher.cast(PhilosopherMsg::Eat)?;
                } else {
                    philosopher.cast(PhilosopherMsg::Denied)?;
                }
            }
            ArbitratorMsg::Done(i) => st.forks.put_back(i),
            ArbitratorMsg::Exit { meals, denials } => {
                st.exited += 1;
                st.meals += meals;
                st.denials += denials;
                if st.exited == n {
                    if let Some(done) = st.done.take() {
                        let _ = done.send((st.meals, st.denials));
                    }
                }
            }
        }
        Ok(())
    }
}

struct PhilosopherState {
    id: usize,
    meals: u64,
    denials: u64,
    rounds: u64,
    arbitrator: ActorRef<ArbitratorMsg>,
}

impl Actor for Philosopher {
    type Msg = PhilosopherMsg;
    type State = PhilosopherState;
    type Arguments = PhilosopherState;

    async fn pre_start(
        &self,
        _: ActorRef<PhilosopherMsg>,
        args: PhilosopherState,
    ) -> Res<PhilosopherState> {
        Ok(args)
    }

    async fn handle(
        &self,
        me: ActorRef<PhilosopherMsg>,
        msg: PhilosopherMsg,
        st: &mut PhilosopherState,
    ) -> Res<()> {
        match msg {
            PhilosopherMsg::Start => st.arbitrator.cast(ArbitratorMsg::Hungry(st.id, me))?,
            PhilosopherMsg::Denied => {
                st.denials += 1;
                st.arbitrator.cast(ArbitratorMsg::Hungry(st.id, me))?;
            }
            PhilosopherMsg::Eat => {
                st.meals += 1;
                st.arbitrator.cast(ArbitratorMsg::Done(st.id))?;
                if st.meals < st.rounds {
                    st.arbitrator.cast(ArbitratorMsg::Hungry(st.id, me))?;
                } else {
                    st.arbitrator.cast(ArbitratorMsg::Exit {
                        meals: st.meals,
                        denials: st.denials,
                    })?;
                }
            }
        }
        Ok(())
    }
}

pub async fn run(rep: &Reporter, w: &Args) {
    let philosophers = w.usize("philosophers");
    let rounds = w.u64("rounds");
    let (done_tx, done_rx) = oneshot::channel();
    let arbitrator = spawn(
        Arbitrator,
        ArbitratorState {
            forks: Forks::new(philosophers),
            exited: 0,
            meals: 0,
            denials: 0,
            done: Some(done_tx),
        },
    )
    .await;
    let mut all = Vec::with_capacity(philosophers);
    for id in 0..philosophers {
        let state = PhilosopherState {
            id,
            meals: 0,
            denials: 0,
            rounds,
            arbitrator: arbitrator.0.clone(),
        };
        all.push(spawn(Philosopher, state).await);
    }
    let start = Instant::now();
    for (philosopher, _) in &all {
        philosopher
            .cast(PhilosopherMsg::Start)
            .unwrap_or_else(|_| fail("savina_philosopher: philosopher died"));
    }
    let (meals, denials) = finished(done_rx, "savina_philosopher").await;
    let secs = seconds_since(start);
    let expected = philosophers as u64 * rounds;
    if meals != expected {
        fail(format!(
            "savina_philosopher: {meals} meals, expected {expected}"
        ));
    }
    report(rep, w, secs, &[("denials", denials as f64)]);
    stop_all(all).await;
    stop_all(vec![arbitrator]).await;
}
