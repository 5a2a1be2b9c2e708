//! `savina_quicksort` (Savina parallel 3): an actor sorting a list of more
//! than T values picks the middle value as pivot, splits the list into
//! smaller / equal / larger, creates two child actors for the outer parts,
//! waits for both sorted parts and sends `smaller ++ equal ++ larger` to its
//! parent; a list of at most T values is sorted sequentially.
//!
//! On Troupe: the lists are `Vec<u64>`s moved (never copied) in messages;
//! children are spawned with `ctx.spawn` and stop after answering; the root
//! hands the sorted list to the waiting thread. Values are 60-bit, from the
//! contract's `Rng::new(1024)` (Savina's seed). Check: the result is sorted,
//! as long as the input, with the same sum and xor.

use super::super::{verify, Workload};
use super::{measure, plot_threads, recv, sample, timed};
use crossbeam_channel::{bounded, Sender};
use troupe::{Actor, ActorRef, Context};
use troupe_bench_contract::savina::Rng;
use troupe_bench_contract::spec::{ParamSpec, Spec};

/// The input: `n` values below 2^60.
pub fn input(n: usize) -> Vec<u64> {
    let mut rng = Rng::new(1024);
    (0..n)
        .map(|_| ((rng.next() << 29) ^ rng.next()) & ((1 << 60) - 1))
        .collect()
}

/// (length, wrapping sum, xor) of a list.
pub fn checksum(v: &[u64]) -> (usize, u64, u64) {
    let sum = v.iter().fold(0u64, |s, &x| s.wrapping_add(x));
    let xor = v.iter().fold(0u64, |s, &x| s ^ x);
    (v.len(), sum, xor)
}

/// Whether `out` is `input` sorted (by the checksum and order).
pub fn sorted_ok(input: (usize, u64, u64), out: &[u64]) -> bool {
    checksum(out) == input && out.windows(2).all(|w| w[0] <= w[1])
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Left,
    Right,
}

pub enum Parent {
    Root(Sender<Vec<u64>>),
    Node(ActorRef<Sorter>, Side),
}

impl Parent {
    fn send(&self, v: Vec<u64>) {
        match self {
            Parent::Root(tx) => {
                let _ = tx.send(v);
            }
            Parent::Node(p, side) => {
                let _ = p.tell(SortMsg::Sorted(*side, v));
            }
        }
    }
}

pub struct Sorter {
    parent: Parent,
    threshold: usize,
    left: Option<Vec<u64>>,
    equal: Vec<u64>,
    right: Option<Vec<u64>>,
}

pub enum SortMsg {
    Sort(Vec<u64>),
    Sorted(Side, Vec<u64>),
}

impl Sorter {
    fn new(parent: Parent, threshold: usize) -> Sorter {
        Sorter {
            parent,
            threshold,
            left: None,
            equal: Vec::new(),
            right: None,
        }
    }
}

impl Actor for Sorter {
    type Msg = SortMsg;
    fn handle(&mut self, msg: SortMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            SortMsg::Sort(mut v) => {
                if v.len() <= self.threshold {
                    v.sort_unstable();
                    self.parent.send(v);
                    ctx.stop();
                    return;
                }
                let pivot = v[v.len() / 2];
                let mut less = Vec::with_capacity(v.len() / 2);
                let mut more = Vec::with_capacity(v.len() / 2);
                for x in v.drain(..) {
                    match x.cmp(&pivot) {
                        std::cmp::Ordering::Less => less.push(x),
                        std::cmp::Ordering::Equal => self.equal.push(x),
                        std::cmp::Ordering::Greater => more.push(x),
                    }
                }
                let me = ctx.myself();
                for (side, part) in [(Side::Left, less), (Side::Right, more)] {
                    let child =
                        ctx.spawn(Sorter::new(Parent::Node(me.clone(), side), self.threshold));
                    let _ = child.tell(SortMsg::Sort(part));
                }
            }
            SortMsg::Sorted(side, v) => {
                match side {
                    Side::Left => self.left = Some(v),
                    Side::Right => self.right = Some(v),
                }
                if self.left.is_some() && self.right.is_some() {
                    let mut all = self.left.take().unwrap_or_default();
                    let right = self.right.take().unwrap_or_default();
                    all.reserve(self.equal.len() + right.len());
                    all.append(&mut self.equal);
                    all.extend_from_slice(&right);
                    self.parent.send(all);
                    ctx.stop();
                }
            }
        }
    }
}

pub const SPEC: Spec = Spec {
    name: "savina_quicksort",
    about: "Savina parallel: quicksort by a tree of actors, sequential below T values; ms",
    params: &[
        ParamSpec::count(
            "values",
            "savina_quicksort: values to sort (N)",
            "1000000",
            "100000",
        ),
        ParamSpec::count(
            "sequential",
            "savina_quicksort: lists of at most T values are sorted sequentially",
            "2048",
            "2048",
        ),
    ],
};

pub const WORKLOAD: Workload = Workload {
    spec: &SPEC,
    peers: false,
    run: |cfg, a| {
        let (n, t) = (a.usize("values"), a.usize("sequential"));
        let data = input(n);
        let sum = checksum(&data);
        measure(cfg, a, |system| {
            let (tx, rx) = bounded(1);
            let v = data.clone();
            let root = system.spawn(Sorter::new(Parent::Root(tx), t.max(1)));
            let (s, out) = timed(
                || root.tell(SortMsg::Sort(v)).map_err(|e| e.to_string()),
                || recv(&rx),
            )?;
            verify(sorted_ok(sum, &out), || {
                format!(
                    "savina_quicksort: the {} values came back unsorted or changed",
                    out.len()
                )
            })?;
            Ok(sample(s))
        })
    },
    plot: Some(plot_threads),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checker_rejects_unsorted_or_changed_output() {
        let v = input(1000);
        let c = checksum(&v);
        let mut s = v.clone();
        s.sort_unstable();
        assert!(sorted_ok(c, &s));
        assert!(!sorted_ok(c, &v));
        s[10] += 1;
        assert!(!sorted_ok(c, &s));
        assert!(v.iter().all(|&x| x < 1 << 60));
    }
}
