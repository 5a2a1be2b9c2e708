//! The async actor workloads (issue 27) on ractor. Every ractor `handle` is
//! an `async fn` that the actor awaits before it takes the next message, so
//! these are ordinary ractor actors:
//! * `async_pingpong`: the `pingpong` round of `main.rs` (`bounce`), whose
//!   handlers only `cast`, i.e. await nothing; reported under this workload;
//! * `async_ask_chain`: the asker's `handle` awaits `call!(responder, ..)` K
//!   times in sequence (an `RpcReplyPort` in each ask); the driver
//!   `call!`s the asker for the sum;
//! * `async_io`: N actors each handle M messages, each awaiting
//!   `tokio::time::sleep`; all M × N `cast`s go up front (ractor's mailboxes
//!   are unbounded).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ractor::{call, Actor, ActorRef, RpcReplyPort};
use tokio::sync::mpsc;
use troupe_bench_contract::async_actors as contract;
use troupe_bench_contract::{fail, seconds_since, Reporter};

use crate::{bounce, spawn, stop_all, Res};

// ---------------------------------------------------------------- async_pingpong

pub async fn pingpong(rep: &Reporter, round_trips: usize) {
    let (n, secs) = bounce(round_trips).await;
    let params = contract::pingpong_params(round_trips);
    contract::pingpong_finish(rep, &params, n, round_trips, secs);
}

// ---------------------------------------------------------------- async_ask_chain

/// Answers `i` with `i + 1`.
struct Responder;

struct AskMsg(u64, RpcReplyPort<u64>);

impl Actor for Responder {
    type Msg = AskMsg;
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<AskMsg>, _: ()) -> Res<()> {
        Ok(())
    }

    async fn handle(&self, _: ActorRef<AskMsg>, AskMsg(i, reply): AskMsg, _: &mut ()) -> Res<()> {
        let _ = reply.send(i + 1);
        Ok(())
    }
}

struct Asker;

/// Ask the responder this many times, one after another; answers the sum.
struct Run(u64, RpcReplyPort<u64>);

impl Actor for Asker {
    type Msg = Run;
    type State = ActorRef<AskMsg>;
    type Arguments = ActorRef<AskMsg>;

    async fn pre_start(&self, _: ActorRef<Run>, responder: ActorRef<AskMsg>) -> Res<Self::State> {
        Ok(responder)
    }

    async fn handle(
        &self,
        _: ActorRef<Run>,
        Run(asks, reply): Run,
        responder: &mut ActorRef<AskMsg>,
    ) -> Res<()> {
        let mut sum = 0;
        for i in 0..asks {
            sum += call!(responder, AskMsg, i)?;
        }
        let _ = reply.send(sum);
        Ok(())
    }
}

pub async fn ask_chain(rep: &Reporter, asks: u64) {
    let responder = spawn(Responder, ()).await;
    let asker = spawn(Asker, responder.0.clone()).await;
    let start = Instant::now();
    let sum =
        call!(asker.0, Run, asks).unwrap_or_else(|e| fail(format!("async_ask_chain: asker: {e}")));
    let secs = seconds_since(start);
    contract::ask_chain_finish(rep, &contract::ask_chain_params(asks), sum, asks, secs);
    stop_all(vec![asker]).await;
    stop_all(vec![responder]).await;
}

// ---------------------------------------------------------------- async_io

struct Sleeper;

struct Tick;

struct SleeperState {
    left: u64,
    sleep: Duration,
    remaining: Arc<AtomicUsize>,
    done: mpsc::UnboundedSender<()>,
}

impl Actor for Sleeper {
    type Msg = Tick;
    type State = SleeperState;
    type Arguments = SleeperState;

    async fn pre_start(&self, _: ActorRef<Tick>, args: SleeperState) -> Res<SleeperState> {
        Ok(args)
    }

    async fn handle(&self, _: ActorRef<Tick>, _: Tick, st: &mut SleeperState) -> Res<()> {
        tokio::time::sleep(st.sleep).await;
        st.left -= 1;
        if st.left == 0 && st.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            let _ = st.done.send(());
        }
        Ok(())
    }
}

pub async fn io(rep: &Reporter, actors: usize, messages: u64, sleep_us: u64) {
    let remaining = Arc::new(AtomicUsize::new(actors));
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let mut sleepers = Vec::with_capacity(actors);
    for _ in 0..actors {
        let state = SleeperState {
            left: messages,
            sleep: Duration::from_micros(sleep_us),
            remaining: remaining.clone(),
            done: done_tx.clone(),
        };
        sleepers.push(spawn(Sleeper, state).await);
    }
    let start = Instant::now();
    for _ in 0..messages {
        for (s, _) in &sleepers {
            s.cast(Tick)
                .unwrap_or_else(|_| fail("async_io: a sleeper died"));
        }
    }
    done_rx
        .recv()
        .await
        .unwrap_or_else(|| fail("async_io: done channel closed"));
    let secs = seconds_since(start);
    contract::io_finish(
        rep,
        (actors, messages, sleep_us),
        remaining.load(Ordering::Acquire),
        secs,
    );
    stop_all(sleepers).await;
}
