//! `savina_big`: Savina's Big. W ractor actors, each knowing all (an `Arc` of their
//! `ActorRef`s, cast to them before the measured phase): on `Start` an actor casts
//! `Ping(its ActorRef)` to a peer drawn from `Rng::new(i + 1)`, and each `Pong` it gets
//! back triggers the next ping until N came back; then it casts its pong count to a sink
//! actor. Every `Ping` is answered by casting `Pong` to the ref it carries; no actor ever
//! waits, so pings keep being answered while an actor's own ping is out.

use std::sync::Arc;
use std::time::Instant;

use ractor::{Actor, ActorRef};
use tokio::sync::oneshot;
use troupe_bench_contract::savina::Rng;
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{finished, report, Sink};
use crate::{spawn, stop_all, Res};

struct Big;

enum BigMsg {
    Peers(Arc<Vec<ActorRef<BigMsg>>>),
    Start,
    Ping(ActorRef<BigMsg>),
    Pong,
}

struct BigState {
    rng: Rng,
    peers: Arc<Vec<ActorRef<BigMsg>>>,
    pongs: u64,
    pings: u64,
    sink: ActorRef<u64>,
}

impl BigState {
    fn ping(&mut self, me: ActorRef<BigMsg>) -> Res<()> {
        let peer = self.rng.below(self.peers.len() as u64) as usize;
        self.peers[peer].cast(BigMsg::Ping(me))?;
        Ok(())
    }
}

impl Actor for Big {
    type Msg = BigMsg;
    type State = BigState;
    type Arguments = BigState;

    async fn pre_start(&self, _: ActorRef<BigMsg>, args: BigState) -> Res<BigState> {
        Ok(args)
    }

    async fn handle(&self, me: ActorRef<BigMsg>, msg: BigMsg, st: &mut BigState) -> Res<()> {
        match msg {
            BigMsg::Peers(peers) => st.peers = peers,
            BigMsg::Start => st.ping(me)?,
            BigMsg::Ping(from) => from.cast(BigMsg::Pong)?,
            BigMsg::Pong => {
                st.pongs += 1;
                if st.pongs == st.pings {
                    st.sink.cast(st.pongs)?;
                } else {
                    st.ping(me)?;
                }
            }
        }
        Ok(())
    }
}

pub async fn run(rep: &Reporter, w: &Args) {
    let actors = w.usize("actors");
    let pings = w.u64("pings");
    let (done_tx, done_rx) = oneshot::channel();
    let sink = spawn(Sink, (actors as u64, done_tx)).await;
    let mut all = Vec::with_capacity(actors);
    for i in 0..actors {
        let state = BigState {
            rng: Rng::new(i as u64 + 1),
            peers: Arc::new(Vec::new()),
            pongs: 0,
            pings,
            sink: sink.0.clone(),
        };
        all.push(spawn(Big, state).await);
    }
    let peers: Arc<Vec<ActorRef<BigMsg>>> = Arc::new(all.iter().map(|(a, _)| a.clone()).collect());
    for (actor, _) in &all {
        actor
            .cast(BigMsg::Peers(peers.clone()))
            .unwrap_or_else(|_| fail("savina_big: actor died"));
    }
    drop(peers);
    let start = Instant::now();
    for (actor, _) in &all {
        actor
            .cast(BigMsg::Start)
            .unwrap_or_else(|_| fail("savina_big: actor died"));
    }
    let (reports, pongs) = finished(done_rx, "savina_big").await;
    let secs = seconds_since(start);
    if reports != actors as u64 || pongs != actors as u64 * pings {
        fail(format!(
            "savina_big: {reports} reports, {pongs} pongs, expected {actors} and {}",
            actors as u64 * pings
        ));
    }
    report(rep, w, secs, &[]);
    stop_all(all).await;
    stop_all(vec![sink]).await;
}
