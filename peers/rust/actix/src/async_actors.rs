//! The async actor workloads (issue 27) on actix. An actix handler is a plain
//! `fn`; a handler that awaits returns a future, and `AtomicResponse` is the
//! kind that keeps one message at a time: the actor's context waits for the
//! future before it takes the next message (actix's docs: "the response to
//! `Msg` would always be 29 even if there are multiple `Msg` sent"), which is
//! the semantics of Troupe's `AsyncActor` and of kameo's and ractor's async
//! handlers. The future is an `async` block turned into an actor future with
//! `into_actor(self)`, and `.map(|out, act, ctx| ..)` gets the actor back
//! after the await, as in actix's `AtomicResponse` example.
//! * `async_pingpong`: ping and pong answer each ball through an
//!   `AtomicResponse` over an `async` block that awaits nothing; two rows as
//!   in `pingpong`: ping and pong on one arbiter (actix's figure), and on two
//!   (`placement: cross-arbiter`);
//! * `async_ask_chain`: the asker's `AtomicResponse` wraps an `async` block
//!   that awaits `responder.send(Ask(i))` K times in sequence; the responder
//!   is a plain handler answering `i + 1`; the driver `send`s the asker the
//!   `Run` and gets the sum; the same two placements;
//! * `async_io`: N sleepers round robin on the arbiters, each handling M
//!   `Tick`s with an `AtomicResponse` over `actix::clock::sleep` (tokio's
//!   `sleep`, re-exported; each arbiter runs a tokio runtime with its timer);
//!   all M × N `do_send`s go up front.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use tokio::sync::{mpsc, oneshot};
use troupe_bench_contract::async_actors as contract;
use troupe_bench_contract::{fail, seconds_since, Params, Reporter};

use crate::savina::{lifecycle, on, ready, stop_all};

/// `pingpong`'s placements: ping and pong (asker and responder) on one
/// arbiter, then on two, the second row labelled `placement: cross-arbiter`.
fn placement(params: Params, cross: bool) -> Params {
    if cross {
        params.str("placement", "cross-arbiter")
    } else {
        params
    }
}

// ---------------------------------------------------------------- async_pingpong

struct Ping {
    pong: Addr<Pong>,
    round_trips: u64,
    done: Option<oneshot::Sender<u64>>,
}

/// Knows its ping from the start, as in `pingpong`.
struct Pong {
    ping: Addr<Ping>,
}

impl Actor for Ping {
    type Context = Context<Self>;
}

impl Actor for Pong {
    type Context = Context<Self>;
}

lifecycle!(Ping);

#[derive(Message)]
#[rtype(result = "()")]
struct Ball(u64);

// These handlers await nothing. Written as plain `fn`s returning `()` they
// would be actix's `pingpong`, which the suite already has; an async handler
// in actix is one that returns a future, and `AtomicResponse` over an `async`
// block is the like-for-like form of an `async fn handle` that keeps one
// message at a time (Troupe's, kameo's, ractor's): what this workload costs
// is that path with nothing to wait for.
impl Handler<Ball> for Ping {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, Ball(n): Ball, _: &mut Context<Self>) -> Self::Result {
        AtomicResponse::new(Box::pin(async move { n }.into_actor(self).map(
            |n, act, _| {
                if n >= act.round_trips {
                    if let Some(done) = act.done.take() {
                        let _ = done.send(n);
                    }
                } else {
                    act.pong.do_send(Ball(n + 1));
                }
            },
        )))
    }
}

impl Handler<Ball> for Pong {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, ball: Ball, _: &mut Context<Self>) -> Self::Result {
        AtomicResponse::new(Box::pin(
            async move { ball }
                .into_actor(self)
                .map(|ball, act, _| act.ping.do_send(ball)),
        ))
    }
}

pub async fn pingpong(rep: &Reporter, arbs: &[ArbiterHandle], round_trips: usize) {
    for cross in [false, true] {
        let (done_tx, done_rx) = oneshot::channel();
        let pong_arbiter = on(arbs, usize::from(cross)).clone();
        let ping = Ping::start_in_arbiter(&arbs[0], move |ctx| {
            let me = ctx.address();
            let pong = if cross {
                Pong::start_in_arbiter(&pong_arbiter, move |_| Pong { ping: me })
            } else {
                Pong { ping: me }.start()
            };
            Ping {
                pong,
                round_trips: round_trips as u64,
                done: Some(done_tx),
            }
        });
        ready(std::slice::from_ref(&ping)).await;
        let start = Instant::now();
        ping.do_send(Ball(0));
        let n = done_rx
            .await
            .unwrap_or_else(|_| fail("ping never finished"));
        let secs = seconds_since(start);
        let params = placement(contract::pingpong_params(round_trips), cross);
        contract::pingpong_finish(rep, &params, n, round_trips, secs);
        // Pong goes with the last address to it, held by ping.
        stop_all(&[ping]).await;
    }
}

// ---------------------------------------------------------------- async_ask_chain

/// Answers `Ask(i)` with `i + 1`: a plain handler.
struct Responder;

impl Actor for Responder {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "u64")]
struct Ask(u64);

impl Handler<Ask> for Responder {
    type Result = u64;

    fn handle(&mut self, Ask(i): Ask, _: &mut Context<Self>) -> u64 {
        i + 1
    }
}

struct Asker {
    responder: Addr<Responder>,
}

impl Actor for Asker {
    type Context = Context<Self>;
}

lifecycle!(Asker);

/// Ask the responder this many times, one after another; answers the sum.
#[derive(Message)]
#[rtype(result = "u64")]
struct Run(u64);

impl Handler<Run> for Asker {
    type Result = AtomicResponse<Self, u64>;

    fn handle(&mut self, Run(asks): Run, _: &mut Context<Self>) -> Self::Result {
        let responder = self.responder.clone();
        AtomicResponse::new(Box::pin(
            async move {
                let mut sum = 0;
                for i in 0..asks {
                    match responder.send(Ask(i)).await {
                        Ok(v) => sum += v,
                        Err(e) => fail(format!("async_ask_chain: ask {i}: {e}")),
                    }
                }
                sum
            }
            .into_actor(self),
        ))
    }
}

pub async fn ask_chain(rep: &Reporter, arbs: &[ArbiterHandle], asks: u64) {
    for cross in [false, true] {
        let responder_arbiter = on(arbs, usize::from(cross)).clone();
        let asker = Asker::start_in_arbiter(&arbs[0], move |_| Asker {
            responder: if cross {
                Responder::start_in_arbiter(&responder_arbiter, |_| Responder)
            } else {
                Responder.start()
            },
        });
        ready(std::slice::from_ref(&asker)).await;
        let start = Instant::now();
        let sum = asker
            .send(Run(asks))
            .await
            .unwrap_or_else(|e| fail(format!("async_ask_chain: asker: {e}")));
        let secs = seconds_since(start);
        let params = placement(contract::ask_chain_params(asks), cross);
        contract::ask_chain_finish(rep, &params, sum, asks, secs);
        // The responder goes with the last address to it, held by the asker.
        stop_all(&[asker]).await;
    }
}

// ---------------------------------------------------------------- async_io

struct Sleeper {
    left: u64,
    sleep: Duration,
    remaining: Arc<AtomicUsize>,
    done: mpsc::UnboundedSender<()>,
}

impl Actor for Sleeper {
    type Context = Context<Self>;
}

lifecycle!(Sleeper);

#[derive(Message)]
#[rtype(result = "()")]
struct Tick;

impl Handler<Tick> for Sleeper {
    type Result = AtomicResponse<Self, ()>;

    fn handle(&mut self, _: Tick, _: &mut Context<Self>) -> Self::Result {
        AtomicResponse::new(Box::pin(
            actix::clock::sleep(self.sleep)
                .into_actor(self)
                .map(|_, act, _| {
                    act.left -= 1;
                    if act.left == 0 && act.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
                        let _ = act.done.send(());
                    }
                }),
        ))
    }
}

pub async fn io(
    rep: &Reporter,
    arbs: &[ArbiterHandle],
    actors: usize,
    messages: u64,
    sleep_us: u64,
) {
    let remaining = Arc::new(AtomicUsize::new(actors));
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let sleepers: Vec<_> = (0..actors)
        .map(|i| {
            let sleeper = Sleeper {
                left: messages,
                sleep: Duration::from_micros(sleep_us),
                remaining: remaining.clone(),
                done: done_tx.clone(),
            };
            Sleeper::start_in_arbiter(on(arbs, i), move |_| sleeper)
        })
        .collect();
    ready(&sleepers).await;
    let start = Instant::now();
    for _ in 0..messages {
        for s in &sleepers {
            s.do_send(Tick);
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
