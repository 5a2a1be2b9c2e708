//! The async actor workloads (issue 27), on `troupe::AsyncActor`:
//! * `async_pingpong`: `pingpong` with async handlers that await nothing;
//! * `async_ask_chain`: one async handler awaits K asks to another actor,
//!   one after another (each a suspension and a resume), beside the same
//!   chain on bare tokio tasks (mpsc + oneshot), on a multi-thread runtime
//!   of as many workers and on a current-thread one;
//! * `async_io`: N actors each handle M messages, each awaiting a tokio
//!   sleep, beside N bare tokio tasks doing the same sleeps on a tokio
//!   runtime of as many workers. The figure that matters is the overhead
//!   per step above the sleep: `elapsed / M - sleep`, for both.

use super::Workload;
use super::{params, verify, RunCfg};
use crate::stats::{Figure, Sample};
use crossbeam_channel::{bounded, Sender};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe::{Actor, ActorRef, Async, AsyncActor, AsyncContext, Context, ReplyTo};
use troupe_bench_contract::spec;

// ---- async_pingpong ----

pub struct Ponger {
    peer: Option<ActorRef<Async<Pinger>>>,
}

pub enum PongMsg {
    Meet(ActorRef<Async<Pinger>>),
    Ball(u64),
}

impl AsyncActor for Ponger {
    type Msg = PongMsg;
    async fn handle(&mut self, msg: PongMsg, _ctx: &mut AsyncContext<Self>) {
        match msg {
            PongMsg::Ball(n) => {
                if let Some(peer) = &self.peer {
                    let _ = peer.tell(PingMsg::Ball(n));
                }
            }
            PongMsg::Meet(p) => self.peer = Some(p),
        }
    }
}

pub enum PingMsg {
    Start(ActorRef<Async<Ponger>>),
    Ball(u64),
}

pub struct Pinger {
    peer: Option<ActorRef<Async<Ponger>>>,
    target: u64,
    done: Sender<u64>,
}

impl AsyncActor for Pinger {
    type Msg = PingMsg;
    async fn handle(&mut self, msg: PingMsg, ctx: &mut AsyncContext<Self>) {
        match msg {
            PingMsg::Start(peer) => {
                let _ = peer.tell(PongMsg::Meet(ctx.myself()));
                let _ = peer.tell(PongMsg::Ball(1));
                self.peer = Some(peer);
            }
            PingMsg::Ball(n) if n == self.target => {
                let _ = self.done.send(n);
            }
            PingMsg::Ball(n) => {
                if let Some(peer) = &self.peer {
                    let _ = peer.tell(PongMsg::Ball(n + 1));
                }
            }
        }
    }
}

pub fn run_pingpong(cfg: &RunCfg, k: u64) -> Result<Vec<Figure>, String> {
    Ok(vec![cfg.measure(
        "troupe",
        "async_pingpong",
        format!("async_pingpong {k}"),
        params(&[("round_trips", json!(k))]),
        "round-trips/s",
        || {
            let system = cfg.system();
            let (tx, rx) = bounded(1);
            let ponger = system.spawn(Async::new(Ponger { peer: None }));
            let pinger = system.spawn(Async::new(Pinger {
                peer: None,
                target: k,
                done: tx,
            }));
            let t0 = Instant::now();
            pinger
                .tell(PingMsg::Start(ponger))
                .map_err(|e| e.to_string())?;
            let n = rx.recv().map_err(|e| e.to_string())?;
            let seconds = t0.elapsed().as_secs_f64();
            verify(n == k, || {
                format!("async_pingpong: finished at {n}, expected {k}")
            })?;
            system.shutdown();
            Ok(Sample::new(seconds, k as f64))
        },
    )?])
}

pub const PINGPONG: Workload = Workload {
    spec: &spec::ASYNC_PINGPONG,
    peers: true,
    run: |cfg, a| run_pingpong(cfg, a.u64("async-round-trips")),
    plot: None,
};

// ---- async_ask_chain ----

/// Answers `i` with `i + 1`: a plain actor, as Troupe users write one.
pub struct Responder;

impl Actor for Responder {
    type Msg = (u64, ReplyTo<u64>);
    #[inline]
    fn handle(&mut self, (i, r): Self::Msg, _ctx: &mut Context<'_, Self>) {
        r.reply(i + 1);
    }
}

pub struct Asker {
    responder: ActorRef<Responder>,
}

pub struct Run {
    asks: u64,
    done: Sender<u64>,
}

impl AsyncActor for Asker {
    type Msg = Run;
    async fn handle(&mut self, run: Run, ctx: &mut AsyncContext<Self>) {
        let mut sum = 0u64;
        for i in 0..run.asks {
            match ctx.ask(&self.responder, |r| (i, r)).await {
                Ok(v) => sum += v,
                Err(_) => break,
            }
        }
        let _ = run.done.send(sum);
    }
}

pub fn run_ask_chain(cfg: &RunCfg, k: u64) -> Result<Vec<Figure>, String> {
    let troupe = cfg.measure(
        "troupe",
        "async_ask_chain",
        format!("async_ask_chain {k}"),
        params(&[("asks", json!(k))]),
        "asks/s",
        || {
            let system = cfg.system();
            let (tx, rx) = bounded(1);
            let responder = system.spawn(Responder);
            let asker = system.spawn(Async::new(Asker { responder }));
            let t0 = Instant::now();
            asker
                .tell(Run { asks: k, done: tx })
                .map_err(|e| e.to_string())?;
            let sum = rx.recv().map_err(|e| e.to_string())?;
            let seconds = t0.elapsed().as_secs_f64();
            // Σ (i + 1) for i < k.
            let want = k * (k + 1) / 2;
            verify(sum == want, || {
                format!("async_ask_chain: sum {sum}, expected {want}")
            })?;
            system.shutdown();
            Ok(Sample::new(seconds, k as f64))
        },
    )?;
    let mut figures = vec![troupe];
    for current_thread in [false, true] {
        figures.push(tokio_ask_chain(cfg, k, current_thread)?);
    }
    Ok(figures)
}

/// The floor under every actor runtime: the same chain on bare tokio
/// tasks, the responder a task reading `(i, oneshot::Sender)` from an
/// unbounded mpsc channel, the asker a task awaiting each oneshot in turn.
/// Two rows: a multi-thread runtime of `cfg.threads` workers, and a
/// current-thread runtime (both tasks on one thread, as actix's
/// one-arbiter row).
fn tokio_ask_chain(cfg: &RunCfg, k: u64, current_thread: bool) -> Result<Figure, String> {
    let mut p = params(&[("asks", json!(k))]);
    if current_thread {
        p.insert("placement".into(), json!("current-thread"));
    }
    cfg.measure(
        "tokio-tasks",
        "async_ask_chain",
        format!(
            "async_ask_chain {k}, bare tokio tasks{}",
            if current_thread {
                " (current-thread)"
            } else {
                ""
            }
        ),
        p,
        "asks/s",
        || {
            let rt = if current_thread {
                tokio::runtime::Builder::new_current_thread().build()
            } else {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(cfg.threads)
                    .build()
            }
            .map_err(|e| e.to_string())?;
            let (tx, mut rx) =
                tokio::sync::mpsc::unbounded_channel::<(u64, tokio::sync::oneshot::Sender<u64>)>();
            let responder = rt.spawn(async move {
                while let Some((i, reply)) = rx.recv().await {
                    let _ = reply.send(i + 1);
                }
            });
            let (sum, seconds) = rt.block_on(async move {
                let asker = tokio::spawn(async move {
                    let t0 = Instant::now();
                    let mut sum = 0u64;
                    for i in 0..k {
                        let (reply, answer) = tokio::sync::oneshot::channel();
                        if tx.send((i, reply)).is_err() {
                            break;
                        }
                        match answer.await {
                            Ok(v) => sum += v,
                            Err(_) => break,
                        }
                    }
                    (sum, t0.elapsed().as_secs_f64())
                });
                asker.await.map_err(|e| e.to_string())
            })?;
            let _ = rt.block_on(responder);
            let want = k * (k + 1) / 2;
            verify(sum == want, || {
                format!("async_ask_chain (tokio): sum {sum}, expected {want}")
            })?;
            Ok(Sample::new(seconds, k as f64))
        },
    )
}

pub const ASK_CHAIN: Workload = Workload {
    spec: &spec::ASYNC_ASK_CHAIN,
    peers: true,
    run: |cfg, a| run_ask_chain(cfg, a.u64("chain-asks")),
    plot: None,
};

// ---- async_io ----

pub struct Sleeper {
    left: u64,
    sleep: Duration,
    remaining: Arc<AtomicUsize>,
    done: Sender<()>,
}

impl AsyncActor for Sleeper {
    type Msg = ();
    async fn handle(&mut self, _: (), _ctx: &mut AsyncContext<Self>) {
        tokio::time::sleep(self.sleep).await;
        self.left -= 1;
        if self.left == 0 && self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            let _ = self.done.send(());
        }
    }
}

pub struct IoParams {
    pub actors: usize,
    pub messages: u64,
    pub sleep: Duration,
}

fn io_params(p: &IoParams) -> serde_json::Map<String, serde_json::Value> {
    params(&[
        ("actors", json!(p.actors)),
        ("messages", json!(p.messages)),
        ("sleep_us", json!(p.sleep.as_micros() as u64)),
    ])
}

/// The overhead per step above the sleep, in µs (an extra of both figures).
fn overhead_us(seconds: f64, p: &IoParams) -> f64 {
    (seconds / p.messages as f64 - p.sleep.as_secs_f64()) * 1e6
}

pub fn run_io(cfg: &RunCfg, p: &IoParams) -> Result<Vec<Figure>, String> {
    let steps = p.actors as u64 * p.messages;
    let troupe = cfg.measure(
        "troupe",
        "async_io",
        format!(
            "async_io {}x{} ({} µs sleeps)",
            p.actors,
            p.messages,
            p.sleep.as_micros()
        ),
        io_params(p),
        "steps/s",
        || {
            let system = cfg.system();
            let (tx, rx) = bounded(1);
            let remaining = Arc::new(AtomicUsize::new(p.actors));
            let actors: Vec<_> = (0..p.actors)
                .map(|_| {
                    system.spawn(Async::new(Sleeper {
                        left: p.messages,
                        sleep: p.sleep,
                        remaining: remaining.clone(),
                        done: tx.clone(),
                    }))
                })
                .collect();
            // Warm the system's tokio runtime before the clock starts.
            let warm = system.spawn(Async::new(Sleeper {
                left: 1,
                sleep: Duration::ZERO,
                remaining: Arc::new(AtomicUsize::new(2)),
                done: tx.clone(),
            }));
            warm.tell(()).map_err(|e| e.to_string())?;
            std::thread::sleep(Duration::from_millis(20));
            let t0 = Instant::now();
            for _ in 0..p.messages {
                for a in &actors {
                    a.tell(()).map_err(|e| e.to_string())?;
                }
            }
            rx.recv_timeout(Duration::from_secs(600))
                .map_err(|e| format!("async_io: {e}"))?;
            let seconds = t0.elapsed().as_secs_f64();
            verify(remaining.load(Ordering::Acquire) == 0, || {
                "async_io: not every actor finished".to_string()
            })?;
            system.shutdown();
            Ok(Sample::new(seconds, steps as f64)
                .with("overhead_us_per_step", overhead_us(seconds, p)))
        },
    )?;
    let tokio = cfg.measure(
        "tokio-tasks",
        "async_io",
        format!(
            "async_io {}x{} ({} µs sleeps), bare tokio tasks",
            p.actors,
            p.messages,
            p.sleep.as_micros()
        ),
        io_params(p),
        "steps/s",
        || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(cfg.threads)
                .enable_time()
                .build()
                .map_err(|e| e.to_string())?;
            let (messages, sleep) = (p.messages, p.sleep);
            let seconds = rt.block_on(async move {
                let t0 = Instant::now();
                let tasks: Vec<_> = (0..p.actors)
                    .map(|_| {
                        tokio::spawn(async move {
                            for _ in 0..messages {
                                tokio::time::sleep(sleep).await;
                            }
                        })
                    })
                    .collect();
                for t in tasks {
                    let _ = t.await;
                }
                t0.elapsed().as_secs_f64()
            });
            Ok(Sample::new(seconds, steps as f64)
                .with("overhead_us_per_step", overhead_us(seconds, p)))
        },
    )?;
    Ok(vec![troupe, tokio])
}

pub const IO: Workload = Workload {
    spec: &spec::ASYNC_IO,
    peers: true,
    run: |cfg, a| {
        run_io(
            cfg,
            &IoParams {
                actors: a.usize("io-actors"),
                messages: a.u64("io-messages"),
                sleep: Duration::from_micros(a.u64("io-sleep-us")),
            },
        )
    },
    plot: None,
};
