//! `savina_pingpong`: Savina's PingPong. Ping and Pong are ractor actors talking by `cast`;
//! each `Ping` carries the pinger's `ActorRef` (Savina's `sender()`), and Pong casts `Pong`
//! back to it. Ping counts the pongs and, after N, hands the count to the driver.

use std::time::Instant;

use ractor::{Actor, ActorRef};
use tokio::sync::oneshot;
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{finished, report};
use crate::{spawn, stop_all, Res};

struct Pinger;
struct Ponger;

enum PingMsg {
    Start,
    Pong,
}

enum PongMsg {
    Ping(ActorRef<PingMsg>),
}

struct PingerState {
    pong: ActorRef<PongMsg>,
    pongs: u64,
    pings: u64,
    done: Option<oneshot::Sender<u64>>,
}

impl Actor for Pinger {
    type Msg = PingMsg;
    type State = PingerState;
    type Arguments = PingerState;

    async fn pre_start(&self, _: ActorRef<PingMsg>, args: PingerState) -> Res<PingerState> {
        Ok(args)
    }

    async fn handle(&self, me: ActorRef<PingMsg>, msg: PingMsg, st: &mut PingerState) -> Res<()> {
        match msg {
            PingMsg::Start => st.pong.cast(PongMsg::Ping(me))?,
            PingMsg::Pong => {
                st.pongs += 1;
                if st.pongs == st.pings {
                    if let Some(done) = st.done.take() {
                        let _ = done.send(st.pongs);
                    }
                } else {
                    st.pong.cast(PongMsg::Ping(me))?;
                }
            }
        }
        Ok(())
    }
}

impl Actor for Ponger {
    type Msg = PongMsg;
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<PongMsg>, _: ()) -> Res<()> {
        Ok(())
    }

    async fn handle(&self, _: ActorRef<PongMsg>, msg: PongMsg, _: &mut ()) -> Res<()> {
        let PongMsg::Ping(from) = msg;
        from.cast(PingMsg::Pong)?;
        Ok(())
    }
}

pub async fn run(rep: &Reporter, w: &Args) {
    let pings = w.u64("pings");
    let (done_tx, done_rx) = oneshot::channel();
    let pong = spawn(Ponger, ()).await;
    let ping = spawn(
        Pinger,
        PingerState {
            pong: pong.0.clone(),
            pongs: 0,
            pings,
            done: Some(done_tx),
        },
    )
    .await;
    let start = Instant::now();
    ping.0
        .cast(PingMsg::Start)
        .unwrap_or_else(|_| fail("savina_pingpong: ping died"));
    let pongs = finished(done_rx, "savina_pingpong").await;
    let secs = seconds_since(start);
    if pongs != pings {
        fail(format!("savina_pingpong: {pongs} pongs, expected {pings}"));
    }
    report(rep, w, secs, &[]);
    stop_all(vec![ping]).await;
    stop_all(vec![pong]).await;
}
