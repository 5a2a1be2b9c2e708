//! `savina_nqueenk` (Savina parallel 5, N-queens, first K solutions): the
//! master deals work items (a board with the first d queens placed) to W
//! workers round-robin; a worker with d below the threshold sends the master
//! one item per valid placement of the next queen, else counts the
//! solutions below the board sequentially and reports them. The master stops
//! after K solutions or when no work is left.
//!
//! On Troupe: a board is a fixed `[u8; 16]` in the message (no allocation);
//! the validity check and the sequential search are Savina's (each new queen
//! checked against the placed ones). The master counts items in flight; a
//! worker sends its new items before its report, so in-flight never reaches
//! zero early. Check: with K above the total, exactly the known number of
//! solutions (14,200 for N = 12); else at least K.

use super::super::{verify, Workload};
use super::{measure, plot_threads, recv, sample, timed};
use crossbeam_channel::{bounded, Sender};
use troupe::{Actor, ActorRef, Context};
use troupe_bench_contract::spec::{ParamSpec, Spec};

/// The number of solutions for N = 1..=16 queens.
pub const SOLUTIONS: [u64; 16] = [
    1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2_680, 14_200, 73_712, 365_596, 2_279_184, 14_772_512,
];

/// Whether `found` solutions is right for `n` queens stopping after `k`.
pub fn solutions_ok(n: usize, k: u64, found: u64) -> bool {
    let total = SOLUTIONS[n - 1];
    if k >= total {
        found == total
    } else {
        found >= k && found <= total
    }
}

type Board = [u8; 16];

/// Savina's `boardValid`: the last of the first `d` queens attacks none of
/// the others.
#[inline]
fn valid(b: &Board, d: usize) -> bool {
    let q = b[d - 1] as i32;
    (0..d - 1).all(|i| {
        let p = b[i] as i32;
        p != q && (q - p).abs() != (d - 1 - i) as i32
    })
}

/// Savina's sequential kernel: the solutions below a board with `d` queens.
fn count_seq(b: &mut Board, d: usize, n: usize) -> u64 {
    if d == n {
        return 1;
    }
    let mut total = 0;
    for col in 0..n as u8 {
        b[d] = col;
        if valid(b, d + 1) {
            total += count_seq(b, d + 1, n);
        }
    }
    total
}

pub struct Master {
    workers: Vec<ActorRef<Worker>>,
    next: usize,
    in_flight: u64,
    solutions: u64,
    limit: u64,
    reported: bool,
    done: Sender<u64>,
}

pub enum MasterMsg {
    Work(Board, u8),
    Found(u64),
}

impl Actor for Master {
    type Msg = MasterMsg;
    #[inline]
    fn handle(&mut self, msg: MasterMsg, _ctx: &mut Context<'_, Self>) {
        match msg {
            MasterMsg::Work(b, d) => {
                if self.reported {
                    return;
                }
                self.in_flight += 1;
                let _ = self.workers[self.next].tell(WorkerMsg::Work(b, d));
                self.next = (self.next + 1) % self.workers.len();
            }
            MasterMsg::Found(c) => {
                self.in_flight -= 1;
                self.solutions += c;
                if !self.reported && (self.in_flight == 0 || self.solutions >= self.limit) {
                    self.reported = true;
                    let _ = self.done.send(self.solutions);
                    self.workers.clear();
                }
            }
        }
    }
}

pub struct Worker {
    n: usize,
    threshold: usize,
    master: Option<ActorRef<Master>>,
}

pub enum WorkerMsg {
    Link(ActorRef<Master>),
    Work(Board, u8),
}

impl Actor for Worker {
    type Msg = WorkerMsg;
    fn handle(&mut self, msg: WorkerMsg, _ctx: &mut Context<'_, Self>) {
        let (mut b, d) = match msg {
            WorkerMsg::Work(b, d) => (b, d as usize),
            WorkerMsg::Link(m) => {
                self.master = Some(m);
                return;
            }
        };
        let Some(master) = &self.master else {
            return;
        };
        let found = if d == self.n {
            1
        } else if d >= self.threshold {
            count_seq(&mut b, d, self.n)
        } else {
            for col in 0..self.n as u8 {
                b[d] = col;
                if valid(&b, d + 1) {
                    let _ = master.tell(MasterMsg::Work(b, d as u8 + 1));
                }
            }
            0
        };
        let _ = master.tell(MasterMsg::Found(found));
    }
}

pub const SPEC: Spec = Spec {
    name: "savina_nqueenk",
    about: "Savina parallel: the first K solutions of N queens by W workers; ms",
    params: &[
        ParamSpec::count("queens", "savina_nqueenk: board size N", "12", "10").at_most(16),
        ParamSpec::count(
            "solutions",
            "savina_nqueenk: stop after K solutions",
            "1500000",
            "1500000",
        ),
        ParamSpec::count(
            "depth",
            "savina_nqueenk: boards with this many queens are searched sequentially",
            "4",
            "4",
        ),
        ParamSpec::count("workers", "savina_nqueenk: workers (W)", "20", "20"),
    ],
};

pub const WORKLOAD: Workload = Workload {
    spec: &SPEC,
    peers: false,
    run: |cfg, a| {
        let (n, k) = (a.usize("queens"), a.u64("solutions"));
        let (depth, w) = (a.usize("depth"), a.usize("workers"));
        measure(cfg, a, |system| {
            let (tx, rx) = bounded(1);
            let workers: Vec<ActorRef<Worker>> = (0..w)
                .map(|_| {
                    system.spawn(Worker {
                        n,
                        threshold: depth,
                        master: None,
                    })
                })
                .collect();
            let master = system.spawn(Master {
                workers: workers.clone(),
                next: 0,
                in_flight: 0,
                solutions: 0,
                limit: k,
                reported: false,
                done: tx,
            });
            for wk in &workers {
                wk.tell(WorkerMsg::Link(master.clone()))
                    .map_err(|e| e.to_string())?;
            }
            while workers.iter().any(|w| w.mailbox_len() > 0) {
                std::thread::yield_now();
            }
            let (s, found) = timed(
                || {
                    master
                        .tell(MasterMsg::Work([0; 16], 0))
                        .map_err(|e| e.to_string())
                },
                || recv(&rx),
            )?;
            verify(solutions_ok(n, k, found), || {
                format!(
                    "savina_nqueenk: {found} solutions for N = {n} (K = {k}), expected {}",
                    SOLUTIONS[n - 1].min(k)
                )
            })?;
            Ok(sample(s).with("solutions", found))
        })
    },
    plot: Some(plot_threads),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_kernel_and_checker() {
        let mut b = [0; 16];
        assert_eq!(count_seq(&mut b, 0, 8), 92);
        assert!(solutions_ok(12, 1_500_000, 14_200));
        assert!(!solutions_ok(12, 1_500_000, 14_199));
        assert!(solutions_ok(12, 100, 150));
        assert!(!solutions_ok(12, 100, 99));
    }
}
