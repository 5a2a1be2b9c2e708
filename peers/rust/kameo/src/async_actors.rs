//! The async actor workloads (issue 27) on kameo. Every kameo handler is an
//! `async fn`, so these are ordinary kameo actors:
//! * `async_pingpong`: the `pingpong` round of `main.rs` (`bounce`): its
//!   handlers `tell(..).await` the next ball, which waits only on a full
//!   mailbox, so they await nothing here; reported under this workload;
//! * `async_ask_chain`: the asker's handler awaits `responder.ask(..)` K
//!   times in sequence; the driver asks the asker for the sum;
//! * `async_io`: N actors each handle M messages, each awaiting
//!   `tokio::time::sleep`; the contract sends all M × N messages up front,
//!   which kameo's default bounded mailbox (64) would refuse to queue, so the
//!   sleepers get `mailbox::unbounded()` (as Troupe's mailboxes are).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kameo::prelude::*;
use tokio::sync::mpsc;
use troupe_bench_contract::async_actors as contract;
use troupe_bench_contract::{fail, seconds_since, Reporter};

use crate::{bounce, stop_all};

// ---------------------------------------------------------------- async_pingpong

pub async fn pingpong(rep: &Reporter, round_trips: usize) {
    let (n, secs) = bounce(round_trips).await;
    let params = contract::pingpong_params(round_trips);
    contract::pingpong_finish(rep, &params, n, round_trips, secs);
}

// ---------------------------------------------------------------- async_ask_chain

/// Answers `Ask(i)` with `i + 1`.
#[derive(Actor)]
struct Responder;

struct Ask(u64);

impl Message<Ask> for Responder {
    type Reply = u64;

    async fn handle(&mut self, Ask(i): Ask, _: &mut Context<Self, u64>) -> u64 {
        i + 1
    }
}

#[derive(Actor)]
struct Asker {
    responder: ActorRef<Responder>,
}

/// Ask the responder this many times, one after another; answers the sum.
struct Run(u64);

impl Message<Run> for Asker {
    type Reply = u64;

    async fn handle(&mut self, Run(asks): Run, _: &mut Context<Self, u64>) -> u64 {
        let mut sum = 0;
        for i in 0..asks {
            match self.responder.ask(Ask(i)).await {
                Ok(v) => sum += v,
                Err(e) => fail(format!("async_ask_chain: ask {i}: {e}")),
            }
        }
        sum
    }
}

pub async fn ask_chain(rep: &Reporter, asks: u64) {
    let responder = Responder::spawn(Responder);
    let asker = Asker::spawn(Asker {
        responder: responder.clone(),
    });
    asker.wait_for_startup().await;
    responder.wait_for_startup().await;
    let start = Instant::now();
    let sum = asker
        .ask(Run(asks))
        .await
        .unwrap_or_else(|e| fail(format!("async_ask_chain: asker: {e}")));
    let secs = seconds_since(start);
    contract::ask_chain_finish(rep, &contract::ask_chain_params(asks), sum, asks, secs);
    stop_all(&[asker]).await;
    stop_all(&[responder]).await;
}

// ---------------------------------------------------------------- async_io

#[derive(Actor)]
struct Sleeper {
    left: u64,
    sleep: Duration,
    remaining: Arc<AtomicUsize>,
    done: mpsc::UnboundedSender<()>,
}

struct Tick;

impl Message<Tick> for Sleeper {
    type Reply = ();

    async fn handle(&mut self, _: Tick, _: &mut Context<Self, ()>) {
        tokio::time::sleep(self.sleep).await;
        self.left -= 1;
        if self.left == 0 && self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            let _ = self.done.send(());
        }
    }
}

pub async fn io(rep: &Reporter, actors: usize, messages: u64, sleep_us: u64) {
    let remaining = Arc::new(AtomicUsize::new(actors));
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let sleepers: Vec<_> = (0..actors)
        .map(|_| {
            Sleeper::spawn_with_mailbox(
                Sleeper {
                    left: messages,
                    sleep: Duration::from_micros(sleep_us),
                    remaining: remaining.clone(),
                    done: done_tx.clone(),
                },
                kameo::mailbox::unbounded(),
            )
        })
        .collect();
    for s in &sleepers {
        s.wait_for_startup().await;
    }
    let start = Instant::now();
    for _ in 0..messages {
        for s in &sleepers {
            s.tell(Tick)
                .await
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
    stop_all(&sleepers).await;
}
