//! `savina_trapezoid` (Savina parallel 1, trapezoidal approximation): the
//! integral of Savina's `fx(x) = sin(x^3 - 1) / (x + 1) * sqrt(1 + exp(sqrt(2x)))`
//! over [1, 5] by the trapezoidal rule with P pieces, split among W workers.
//!
//! On Troupe: a master actor sends each worker its range as piece indices
//! (so the P pieces are covered exactly, without Savina's floating-point
//! piece count); each worker sums its trapezoids and tells the master its
//! area; the master hands the sum to the waiting thread. Check: `fx` has no
//! closed-form antiderivative, so the reference is the integral computed to
//! 1e-15 with adaptive quadrature (mpmath), and the result must be within the
//! trapezoidal rule's error bound for P pieces.

use super::super::{verify, Workload};
use super::{measure, plot_threads, recv, sample, timed};
use crossbeam_channel::{bounded, Sender};
use troupe::{Actor, ActorRef, Context};
use troupe_bench_contract::spec::{ParamSpec, Spec};

/// The interval Savina integrates over.
pub const LEFT: f64 = 1.0;
/// The interval's right end.
pub const RIGHT: f64 = 5.0;
/// The integral of [`fx`] over [1, 5] (mpmath, 30 digits: 0.27108075195307752399...).
pub const INTEGRAL: f64 = 0.271_080_751_953_077_5;

/// Savina's integrand.
#[inline]
pub fn fx(x: f64) -> f64 {
    let a = (x * x * x - 1.0).sin();
    let b = x + 1.0;
    let c = a / b;
    let d = (1.0 + (2.0 * x).sqrt().exp()).sqrt();
    c * d
}

/// Whether `area` is the integral within the trapezoidal rule's error bound
/// for `pieces` pieces (`(b-a)^3 / (12 P^2) * max|f''|`, `|f''| < 6000` on
/// [1, 5]) plus rounding.
pub fn area_ok(area: f64, pieces: u64) -> bool {
    let p = pieces as f64;
    let bound = (RIGHT - LEFT).powi(3) / (12.0 * p * p) * 6000.0 + 1e-9;
    (area - INTEGRAL).abs() <= bound
}

pub struct Master {
    workers: Vec<ActorRef<Worker>>,
    pieces: u64,
    results: usize,
    area: f64,
    done: Sender<f64>,
}

pub enum MasterMsg {
    Start,
    Area(f64),
}

impl Actor for Master {
    type Msg = MasterMsg;
    fn handle(&mut self, msg: MasterMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            MasterMsg::Start => {
                let w = self.workers.len() as u64;
                let (per, extra) = (self.pieces / w, self.pieces % w);
                let me = ctx.myself();
                let mut first = 0;
                for (i, worker) in self.workers.iter().enumerate() {
                    let count = per + u64::from((i as u64) < extra);
                    let _ = worker.tell(Work {
                        first,
                        count,
                        pieces: self.pieces,
                        master: me.clone(),
                    });
                    first += count;
                }
            }
            MasterMsg::Area(a) => {
                self.area += a;
                self.results += 1;
                if self.results == self.workers.len() {
                    let _ = self.done.send(self.area);
                    self.workers.clear();
                }
            }
        }
    }
}

/// Pieces `first..first + count` of `pieces`.
pub struct Work {
    first: u64,
    count: u64,
    pieces: u64,
    master: ActorRef<Master>,
}

pub struct Worker;

impl Actor for Worker {
    type Msg = Work;
    fn handle(&mut self, w: Work, _ctx: &mut Context<'_, Self>) {
        let h = (RIGHT - LEFT) / w.pieces as f64;
        let mut sum = 0.0;
        let mut lx = LEFT + w.first as f64 * h;
        let mut fl = fx(lx);
        for i in w.first..w.first + w.count {
            let rx = LEFT + (i + 1) as f64 * h;
            let fr = fx(rx);
            sum += 0.5 * (fl + fr) * (rx - lx);
            lx = rx;
            fl = fr;
        }
        let _ = w.master.tell(MasterMsg::Area(sum));
    }
}

pub const SPEC: Spec = Spec {
    name: "savina_trapezoid",
    about: "Savina parallel: trapezoidal integration of Savina's fx over [1,5] by W workers; ms",
    params: &[
        ParamSpec::count(
            "pieces",
            "savina_trapezoid: trapezoids (P)",
            "10000000",
            "1000000",
        ),
        ParamSpec::count("workers", "savina_trapezoid: workers (W)", "100", "100"),
    ],
};

pub const WORKLOAD: Workload = Workload {
    spec: &SPEC,
    peers: false,
    run: |cfg, a| {
        let (pieces, w) = (a.u64("pieces"), a.usize("workers"));
        measure(cfg, a, |system| {
            let (tx, rx) = bounded(1);
            let workers = (0..w).map(|_| system.spawn(Worker)).collect();
            let master = system.spawn(Master {
                workers,
                pieces,
                results: 0,
                area: 0.0,
                done: tx,
            });
            let (s, area) = timed(
                || master.tell(MasterMsg::Start).map_err(|e| e.to_string()),
                || recv(&rx),
            )?;
            verify(area_ok(area, pieces), || {
                format!("savina_trapezoid: area {area}, expected {INTEGRAL} for {pieces} pieces")
            })?;
            Ok(sample(s).with("area", area))
        })
    },
    plot: Some(plot_threads),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checker_accepts_the_integral_and_rejects_a_wrong_area() {
        assert!(area_ok(INTEGRAL, 10_000_000));
        assert!(!area_ok(INTEGRAL + 1e-6, 10_000_000));
        assert!(!area_ok(0.27, 1_000_000));
        // A sequential trapezoidal sum is within the bound.
        let n = 100_000u64;
        let h = (RIGHT - LEFT) / n as f64;
        let s: f64 = (0..n)
            .map(|i| {
                let (l, r) = (LEFT + i as f64 * h, LEFT + (i + 1) as f64 * h);
                0.5 * (fx(l) + fx(r)) * h
            })
            .sum();
        assert!(area_ok(s, n), "{s}");
    }
}
