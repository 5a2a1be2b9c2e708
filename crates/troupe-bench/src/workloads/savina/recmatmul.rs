//! `savina_recmatmul` (Savina parallel 2, recursive matrix multiplication):
//! C = A * B for N x N matrices; a work item (a block of C and the blocks of
//! A and B that add into it) whose area is above the threshold is split into
//! its 8 half-size products (C11 += A11 B11, C11 += A12 B21, ...), sent back
//! to the master, which deals them to W workers round-robin; smaller items
//! are multiplied sequentially.
//!
//! On Troupe: a work item is 7 integers (no allocation per message); A and B
//! are shared read-only (`Arc<[f64]>`); C is split into tiles of the leaf
//! size, each behind a `Mutex`, because two leaf products add into every
//! tile (Savina's shared array races there). A worker multiplies into its
//! own scratch block, then adds it to the tile. The master counts items in
//! flight and hands over when none is left. Inputs are `A[i][k] = i + k`,
//! `B[k][j] = k - j` (Savina's are `i` and `j`, whose product is symmetric,
//! which would hide a transposed result), so every entry is an exact integer:
//! `C[i][j] = i*S1 - N*i*j + S2 - j*S1` with `S1 = sum k`, `S2 = sum k^2`.
//! Check: every entry of C equals the formula.

use super::super::{verify, Workload};
use super::{measure, plot_threads, recv, sample, timed};
use crossbeam_channel::{bounded, Sender};
use std::sync::{Arc, Mutex};
use troupe::{Actor, ActorRef, Context};
use troupe_bench_contract::spec::{ParamSpec, Spec};

/// The expected `C[i][j]` for `n x n` inputs.
pub fn expected(n: usize, i: usize, j: usize) -> f64 {
    let (n, i, j) = (n as f64, i as f64, j as f64);
    let s1 = n * (n - 1.0) / 2.0;
    let s2 = (n - 1.0) * n * (2.0 * n - 1.0) / 6.0;
    i * s1 - n * i * j + s2 - j * s1
}

/// The first entry of `c` (row-major, `n x n`) that differs from
/// [`expected`], if any.
pub fn first_wrong(n: usize, c: &[f64]) -> Option<(usize, usize, f64)> {
    (0..n * n)
        .find(|&x| c[x] != expected(n, x / n, x % n))
        .map(|x| (x / n, x % n, c[x]))
}

/// A block product: `C[c] += A[a] * B[b]`, blocks of `dim` at (row, col).
#[derive(Clone, Copy)]
pub struct Item {
    a: (u32, u32),
    b: (u32, u32),
    c: (u32, u32),
    dim: u32,
}

struct Shared {
    n: usize,
    leaf: usize,
    a: Arc<Vec<f64>>,
    b: Arc<Vec<f64>>,
    /// Tiles of `leaf x leaf`, row-major tile grid.
    c: Vec<Mutex<Vec<f64>>>,
}

pub struct Master {
    workers: Vec<ActorRef<Worker>>,
    next: usize,
    in_flight: u64,
    leaves: u64,
    done: Sender<u64>,
}

pub enum MasterMsg {
    Work(Item),
    /// An item finished; `true` when it was a leaf.
    Finished(bool),
}

impl Master {
    #[inline]
    fn deal(&mut self, item: Item) {
        self.in_flight += 1;
        let w = &self.workers[self.next];
        self.next = (self.next + 1) % self.workers.len();
        let _ = w.tell(WorkerMsg::Work(item));
    }
}

impl Actor for Master {
    type Msg = MasterMsg;
    #[inline]
    fn handle(&mut self, msg: MasterMsg, _ctx: &mut Context<'_, Self>) {
        match msg {
            MasterMsg::Work(item) => self.deal(item),
            MasterMsg::Finished(leaf) => {
                self.in_flight -= 1;
                self.leaves += u64::from(leaf);
                if self.in_flight == 0 {
                    let _ = self.done.send(self.leaves);
                    self.workers.clear();
                }
            }
        }
    }
}

pub struct Worker {
    shared: Arc<Shared>,
    scratch: Vec<f64>,
    master: Option<ActorRef<Master>>,
}

pub enum WorkerMsg {
    Link(ActorRef<Master>),
    Work(Item),
}

impl Worker {
    fn leaf(&mut self, it: Item) {
        let s = &*self.shared;
        let (n, d) = (s.n, it.dim as usize);
        let out = &mut self.scratch[..d * d];
        out.fill(0.0);
        let (ar, ac) = (it.a.0 as usize, it.a.1 as usize);
        let (br, bc) = (it.b.0 as usize, it.b.1 as usize);
        for i in 0..d {
            let row = &mut out[i * d..(i + 1) * d];
            for k in 0..d {
                let aik = s.a[(ar + i) * n + ac + k];
                let brow = &s.b[(br + k) * n + bc..(br + k) * n + bc + d];
                for (o, bkj) in row.iter_mut().zip(brow) {
                    *o += aik * bkj;
                }
            }
        }
        let tiles = n / s.leaf;
        let (tr, tc) = (it.c.0 as usize / s.leaf, it.c.1 as usize / s.leaf);
        let mut tile = s.c[tr * tiles + tc].lock().expect("tile lock");
        for (t, o) in tile.iter_mut().zip(out.iter()) {
            *t += o;
        }
    }
}

impl Actor for Worker {
    type Msg = WorkerMsg;
    fn handle(&mut self, msg: WorkerMsg, _ctx: &mut Context<'_, Self>) {
        let it = match msg {
            WorkerMsg::Work(it) => it,
            WorkerMsg::Link(m) => {
                self.master = Some(m);
                return;
            }
        };
        let Some(master) = self.master.clone() else {
            return;
        };
        let leaf = it.dim as usize == self.shared.leaf;
        if leaf {
            self.leaf(it);
        } else {
            let h = it.dim / 2;
            let q = |(r, c): (u32, u32), i: u32, j: u32| (r + i * h, c + j * h);
            for (ci, cj) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                for k in 0..2 {
                    let _ = master.tell(MasterMsg::Work(Item {
                        a: q(it.a, ci, k),
                        b: q(it.b, k, cj),
                        c: q(it.c, ci, cj),
                        dim: h,
                    }));
                }
            }
        }
        let _ = master.tell(MasterMsg::Finished(leaf));
    }
}

pub const SPEC: Spec = Spec {
    name: "savina_recmatmul",
    about:
        "Savina parallel: recursive block matrix multiplication of N x N matrices by W workers; ms",
    params: &[
        ParamSpec::count(
            "size",
            "savina_recmatmul: matrix size N (a power of 2)",
            "1024",
            "256",
        ),
        ParamSpec::count(
            "block-area",
            "savina_recmatmul: blocks are split until their area is at most this",
            "16384",
            "16384",
        ),
        ParamSpec::count("workers", "savina_recmatmul: workers (W)", "20", "20"),
    ],
};

pub const WORKLOAD: Workload = Workload {
    spec: &SPEC,
    peers: false,
    run: |cfg, a| {
        let (n, area, w) = (a.usize("size"), a.usize("block-area"), a.usize("workers"));
        verify(n.is_power_of_two() && n <= 1 << 14, || {
            format!("savina_recmatmul: --size {n} must be a power of 2 (at most 16384)")
        })?;
        let mut leaf = n;
        while leaf > 1 && leaf * leaf > area {
            leaf /= 2;
        }
        let a_m: Arc<Vec<f64>> = Arc::new((0..n * n).map(|x| (x / n + x % n) as f64).collect());
        let b_m: Arc<Vec<f64>> = Arc::new(
            (0..n * n)
                .map(|x| (x / n) as f64 - (x % n) as f64)
                .collect(),
        );
        measure(cfg, a, |system| {
            let tiles = n / leaf;
            let shared = Arc::new(Shared {
                n,
                leaf,
                a: a_m.clone(),
                b: b_m.clone(),
                c: (0..tiles * tiles)
                    .map(|_| Mutex::new(vec![0.0; leaf * leaf]))
                    .collect(),
            });
            let (tx, rx) = bounded(1);
            let workers: Vec<ActorRef<Worker>> = (0..w)
                .map(|_| {
                    system.spawn(Worker {
                        shared: shared.clone(),
                        scratch: vec![0.0; leaf * leaf],
                        master: None,
                    })
                })
                .collect();
            let master = system.spawn(Master {
                workers: workers.clone(),
                next: 0,
                in_flight: 0,
                leaves: 0,
                done: tx,
            });
            for wk in &workers {
                wk.tell(WorkerMsg::Link(master.clone()))
                    .map_err(|e| e.to_string())?;
            }
            while workers.iter().any(|w| w.mailbox_len() > 0) {
                std::thread::yield_now();
            }
            let root = Item {
                a: (0, 0),
                b: (0, 0),
                c: (0, 0),
                dim: n as u32,
            };
            let (s, leaves) = timed(
                || {
                    master
                        .tell(MasterMsg::Work(root))
                        .map_err(|e| e.to_string())
                },
                || recv(&rx),
            )?;
            drop(workers);
            // Reassemble C and check every entry.
            let mut c = vec![0.0; n * n];
            for (t, tile) in shared.c.iter().enumerate() {
                let tile = tile.lock().map_err(|e| e.to_string())?;
                let (tr, tc) = (t / tiles, t % tiles);
                for i in 0..leaf {
                    let row = (tr * leaf + i) * n + tc * leaf;
                    c[row..row + leaf].copy_from_slice(&tile[i * leaf..(i + 1) * leaf]);
                }
            }
            let expected_leaves = (tiles * tiles * tiles) as u64;
            verify(leaves == expected_leaves, || {
                format!("savina_recmatmul: {leaves} leaf products, expected {expected_leaves}")
            })?;
            if let Some((i, j, v)) = first_wrong(n, &c) {
                return Err(format!(
                    "savina_recmatmul: C[{i}][{j}] = {v}, expected {}",
                    expected(n, i, j)
                ));
            }
            Ok(sample(s).with("leaf", leaf as u64))
        })
    },
    plot: Some(plot_threads),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formula_matches_a_plain_product_and_catches_a_wrong_entry() {
        let n = 8;
        let mut c = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                c[i * n + j] = (0..n).map(|k| (i + k) as f64 * (k as f64 - j as f64)).sum();
            }
        }
        assert_eq!(first_wrong(n, &c), None);
        c[3 * n + 5] += 1.0;
        assert_eq!(first_wrong(n, &c).map(|(i, j, _)| (i, j)), Some((3, 5)));
        // The transpose is wrong too.
        let t: Vec<f64> = (0..n * n).map(|x| c[(x % n) * n + x / n]).collect();
        assert!(first_wrong(n, &t).is_some());
    }
}
