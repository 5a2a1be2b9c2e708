//! `mixed_case` (CAF, seed 004): R ring masters each build a ring of S actors
//! (the master + S-1 links) and send a token of value T; links forward it, the
//! master decrements it once per lap; at 0 the ring stops (its links stop) and
//! the master builds a new ring, K times in all. Each time it builds a ring the
//! master asks its own factorizer to factor 28350160440309881 = 86028157 x
//! 329545133 by trial division; the factorizer sends the factors to the
//! supervisor, which waits for R*K (checked) results and R done messages.
//! The factorizers run on a blocking pool, the rings on the default pool.

use super::Workload;
use super::{params, verify, RunCfg};
use crate::stats::{Figure, Sample};
use crossbeam_channel::{bounded, Sender};
use serde_json::json;
use std::time::{Duration, Instant};
use troupe::dispatcher::Dispatcher;
use troupe::{Actor, ActorRef, Context, SpawnOptions};
use troupe_bench_contract::spec::{ParamSpec, Spec};

pub struct Params {
    pub ring_masters: usize,
    pub ring_size: usize,
    pub token: u64,
    pub repetitions: usize,
}

/// The number CAF's benchmark factors, and its two prime factors.
pub const TASK_N: u64 = 28_350_160_440_309_881;
pub const TASK_FACTORS: [u64; 2] = [86_028_157, 329_545_133];

/// CAF's `factorize`: trial division by 2, then by every odd number, until
/// the rest is itself the divisor (deliberately heavy work, as in CAF).
#[allow(clippy::manual_is_multiple_of)] // keeps the MSRV (1.80)
pub fn factorize(mut n: u64) -> Vec<u64> {
    let mut result = Vec::new();
    if n <= 3 {
        result.push(n);
        return result;
    }
    let mut d: u64 = 2;
    while d < n {
        if n % d == 0 {
            result.push(d);
            n /= d;
        } else {
            d = if d == 2 { 3 } else { d + 2 };
        }
    }
    result.push(d);
    result
}

// ---- supervisor ----

pub enum SupMsg {
    Factors(Vec<u64>),
    /// A master finished its K rings: (laps counted, rings built).
    Done(u64, usize),
}

/// What the supervisor reports when it has everything.
#[derive(Debug)]
pub struct Outcome {
    pub results: usize,
    pub bad_results: usize,
    pub dones: usize,
    pub laps: u64,
    pub rings: usize,
}

pub struct Supervisor {
    expected_results: usize,
    expected_dones: usize,
    out: Outcome,
    report: Sender<Outcome>,
}

impl Supervisor {
    fn check_done(&mut self, ctx: &mut Context<'_, Self>) {
        if self.out.results == self.expected_results && self.out.dones == self.expected_dones {
            let out = std::mem::replace(
                &mut self.out,
                Outcome {
                    results: 0,
                    bad_results: 0,
                    dones: 0,
                    laps: 0,
                    rings: 0,
                },
            );
            let _ = self.report.send(out);
            ctx.stop();
        }
    }
}

impl Actor for Supervisor {
    type Msg = SupMsg;
    fn handle(&mut self, msg: SupMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            SupMsg::Factors(f) => {
                self.out.results += 1;
                if f != TASK_FACTORS {
                    self.out.bad_results += 1;
                }
            }
            SupMsg::Done(laps, rings) => {
                self.out.dones += 1;
                self.out.laps += laps;
                self.out.rings += rings;
            }
        }
        self.check_done(ctx);
    }
}

// ---- factorizer ----

/// Factors what its master asks and sends the result to the supervisor.
///
/// It runs on a blocking pool (`SystemHandle::blocking_pool`, shared by all
/// masters, one thread per worker thread of the system), CAF's `detached`
/// counterpart, so a factorization never occupies a worker of the ring actors'
/// work-stealing pool.
pub struct Factorizer {
    supervisor: ActorRef<Supervisor>,
}

pub enum FactorMsg {
    Factor(u64),
}

impl Actor for Factorizer {
    type Msg = FactorMsg;
    fn handle(&mut self, FactorMsg::Factor(n): FactorMsg, _ctx: &mut Context<'_, Self>) {
        let _ = self.supervisor.tell(SupMsg::Factors(factorize(n)));
    }
}

// ---- ring ----

pub enum LinkMsg {
    Token(u64),
    Stop,
}

enum Next {
    Link(ActorRef<Link>),
    Master(ActorRef<Master>),
}

/// Forwards the token unchanged to its successor.
pub struct Link {
    next: Next,
}

impl Actor for Link {
    type Msg = LinkMsg;
    #[inline]
    fn handle(&mut self, msg: LinkMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            LinkMsg::Token(t) => {
                let _ = match &self.next {
                    Next::Link(l) => l.tell(LinkMsg::Token(t)).map_err(|_| ()),
                    Next::Master(m) => m.tell(MasterMsg::Token(t)).map_err(|_| ()),
                };
            }
            LinkMsg::Stop => {
                if let Next::Link(l) = &self.next {
                    let _ = l.tell(LinkMsg::Stop);
                }
                ctx.stop();
            }
        }
    }
}

pub enum MasterMsg {
    Start,
    Token(u64),
}

pub struct Master {
    ring_size: usize,
    token: u64,
    rings_left: usize,
    rings_built: usize,
    laps: u64,
    first: Option<ActorRef<Link>>,
    factorizer: Option<ActorRef<Factorizer>>,
    supervisor: ActorRef<Supervisor>,
    blocking: Dispatcher,
}

impl Master {
    fn new_ring(&mut self, ctx: &mut Context<'_, Self>) {
        self.rings_left -= 1;
        self.rings_built += 1;
        if let Some(f) = &self.factorizer {
            let _ = f.tell(FactorMsg::Factor(TASK_N));
        }
        // Built back to front: the last link points at the master.
        let mut next = Next::Master(ctx.myself());
        for _ in 1..self.ring_size {
            next = Next::Link(ctx.spawn(Link { next }));
        }
        match next {
            Next::Link(first) => {
                let _ = first.tell(LinkMsg::Token(self.token));
                self.first = Some(first);
            }
            // A ring of one: the master alone.
            Next::Master(me) => {
                let _ = me.tell(MasterMsg::Token(self.token));
                self.first = None;
            }
        }
    }

    fn send_token(&self, t: u64, ctx: &mut Context<'_, Self>) {
        match &self.first {
            Some(first) => {
                let _ = first.tell(LinkMsg::Token(t));
            }
            None => {
                let _ = ctx.myself().tell(MasterMsg::Token(t));
            }
        }
    }
}

impl Actor for Master {
    type Msg = MasterMsg;
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        self.factorizer = Some(ctx.spawn_with(
            Factorizer {
                supervisor: self.supervisor.clone(),
            },
            SpawnOptions::new().dispatcher(&self.blocking),
        ));
    }

    fn handle(&mut self, msg: MasterMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            MasterMsg::Start => self.new_ring(ctx),
            MasterMsg::Token(t) => {
                self.laps += 1;
                let t = t.saturating_sub(1);
                if t > 0 {
                    self.send_token(t, ctx);
                    return;
                }
                // The ring is done: its links stop.
                if let Some(first) = self.first.take() {
                    let _ = first.tell(LinkMsg::Stop);
                }
                if self.rings_left > 0 {
                    self.new_ring(ctx);
                } else {
                    let _ = self
                        .supervisor
                        .tell(SupMsg::Done(self.laps, self.rings_built));
                    if let Some(f) = self.factorizer.take() {
                        // Drains: it stops after the factorizations it has queued.
                        f.stop();
                    }
                    ctx.stop();
                }
            }
        }
    }
}

/// One run on a fresh system; times from the first Start to the supervisor's
/// report.
pub fn sample(system: &troupe::SystemHandle, p: &Params) -> Result<Sample, String> {
    let (tx, rx) = bounded(1);
    let r = p.ring_masters.max(1);
    let k = p.repetitions.max(1);
    let supervisor = system.spawn(Supervisor {
        expected_results: r * k,
        expected_dones: r,
        out: Outcome {
            results: 0,
            bad_results: 0,
            dones: 0,
            laps: 0,
            rings: 0,
        },
        report: tx,
    });
    let blocking = system.blocking_pool("factorizers", system.threads());
    let t0 = Instant::now();
    let masters: Vec<_> = (0..r)
        .map(|_| {
            system.spawn(Master {
                ring_size: p.ring_size.max(1),
                token: p.token.max(1),
                rings_left: k,
                rings_built: 0,
                laps: 0,
                first: None,
                factorizer: None,
                supervisor: supervisor.clone(),
                blocking: blocking.clone(),
            })
        })
        .collect();
    for m in &masters {
        m.tell(MasterMsg::Start).map_err(|e| e.to_string())?;
    }
    let out = rx
        .recv_timeout(Duration::from_secs(3600))
        .map_err(|e| format!("mixed_case: supervisor never reported: {e}"))?;
    let seconds = t0.elapsed().as_secs_f64();
    verify(out.bad_results == 0, || {
        format!(
            "mixed_case: {} of {} factorizations were not {:?}",
            out.bad_results, out.results, TASK_FACTORS
        )
    })?;
    let laps_expected = (r * k) as u64 * p.token.max(1);
    verify(out.rings == r * k && out.laps == laps_expected, || {
        format!(
            "mixed_case: {} rings and {} laps, expected {} and {laps_expected}",
            out.rings,
            out.laps,
            r * k
        )
    })?;
    // Every actor (links, masters, factorizers, supervisor) must stop.
    for m in &masters {
        m.join_timeout(Duration::from_secs(60))
            .ok_or("mixed_case: a master did not stop")?;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while system.live_actors() > 0 {
        if Instant::now() > deadline {
            return Err(format!(
                "mixed_case: {} actors still alive after the run",
                system.live_actors()
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(Sample::new(seconds, (r * k) as f64).with(
        "hops",
        (r * k) as u64 * p.token.max(1) * p.ring_size.max(1) as u64,
    ))
}

pub fn run(cfg: &RunCfg, p: &Params) -> Result<Vec<Figure>, String> {
    let name = format!(
        "mixed_case {}x{}x{}x{}",
        p.ring_masters, p.ring_size, p.token, p.repetitions
    );
    let fig = cfg.measure(
        "troupe",
        "mixed_case",
        name,
        params(&[
            ("ring_masters", json!(p.ring_masters)),
            ("ring_size", json!(p.ring_size)),
            ("token", json!(p.token)),
            ("repetitions", json!(p.repetitions)),
        ]),
        "rings/s",
        || {
            let system = cfg.system();
            let s = sample(&system, p);
            system.shutdown();
            s
        },
    )?;
    Ok(vec![fig])
}

/// `mixed_case` (Troupe only): CAF's shape with R scaled to 2 cores; no plot.
pub const WORKLOAD: Workload = Workload {
    spec: &Spec {
        name: "mixed_case",
        about:
            "R masters build rings of S actors, pass a token T laps, K times, and factor a number",
        params: &[
            ParamSpec::count("ring-masters", "mixed_case: ring masters (R)", "10", "2"),
            ParamSpec::count(
                "ring-size",
                "mixed_case: actors per ring, master included (S)",
                "100",
                "50",
            ),
            ParamSpec::count("token", "mixed_case: laps per ring (T)", "1000", "100"),
            ParamSpec::count(
                "repetitions",
                "mixed_case: rings each master builds (K)",
                "4",
                "1",
            ),
        ],
    },
    peers: false,
    run: |cfg, a| {
        run(
            cfg,
            &Params {
                ring_masters: a.usize("ring-masters"),
                ring_size: a.usize("ring-size"),
                token: a.u64("token"),
                repetitions: a.usize("repetitions"),
            },
        )
    },
    plot: None,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factorize_small() {
        assert_eq!(factorize(12), vec![2, 2, 3]);
        assert_eq!(factorize(97), vec![97]);
        assert_eq!(factorize(3), vec![3]);
        assert_eq!(factorize(15), vec![3, 5]);
    }

    #[test]
    fn task_factors_multiply_back() {
        assert_eq!(TASK_FACTORS[0] * TASK_FACTORS[1], TASK_N);
    }
}
