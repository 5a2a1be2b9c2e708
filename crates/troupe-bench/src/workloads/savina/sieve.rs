//! `savina_sieve` (Savina parallel 4, the sieve of Eratosthenes as a
//! pipeline): a producer sends the odd numbers 3..=L to the first prime
//! filter (which starts with the prime 2); a filter holds up to M primes;
//! a number divisible by none of them is a new prime if the filter has room,
//! else it goes on to the next filter, created on demand. At the end an
//! `Exit` runs down the pipeline counting the primes.
//!
//! On Troupe: candidates are `u64` messages; filters create their successor
//! with `ctx.spawn`; a filter's primes are a preallocated `Vec`. The last
//! filter hands the count to the waiting thread. Check: the count is pi(L)
//! (9,592 for L = 100,000), computed by a plain sieve.

use super::super::{verify, Workload};
use super::{measure, plot_threads, recv, sample, timed};
use crossbeam_channel::{bounded, Sender};
use troupe::{Actor, ActorRef, Context};
use troupe_bench_contract::spec::{ParamSpec, Spec};

/// pi(limit): the primes up to `limit`, by a plain sieve.
pub fn prime_count(limit: u64) -> u64 {
    let n = limit as usize;
    let mut composite = vec![false; n + 1];
    let mut count = 0;
    for i in 2..=n {
        if !composite[i] {
            count += 1;
            let mut j = i * i;
            while j <= n {
                composite[j] = true;
                j += i;
            }
        }
    }
    count
}

pub struct Filter {
    primes: Vec<u64>,
    capacity: usize,
    next: Option<ActorRef<Filter>>,
    done: Sender<u64>,
}

pub enum FilterMsg {
    Candidate(u64),
    /// The primes counted by the filters before this one.
    Exit(u64),
}

impl Filter {
    fn new(capacity: usize, done: Sender<u64>) -> Filter {
        Filter {
            primes: Vec::with_capacity(capacity),
            capacity,
            next: None,
            done,
        }
    }
}

impl Actor for Filter {
    type Msg = FilterMsg;
    #[inline]
    fn handle(&mut self, msg: FilterMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            FilterMsg::Candidate(c) => {
                if self.primes.iter().any(|p| c % p == 0) {
                    return;
                }
                if self.primes.len() < self.capacity {
                    self.primes.push(c);
                    return;
                }
                let next = self.next.get_or_insert_with(|| {
                    ctx.spawn(Filter::new(self.capacity, self.done.clone()))
                });
                let _ = next.tell(FilterMsg::Candidate(c));
            }
            FilterMsg::Exit(before) => {
                let total = before + self.primes.len() as u64;
                match self.next.take() {
                    Some(n) => {
                        let _ = n.tell(FilterMsg::Exit(total));
                    }
                    None => {
                        let _ = self.done.send(total);
                    }
                }
                ctx.stop();
            }
        }
    }
}

pub struct Producer {
    limit: u64,
    first: ActorRef<Filter>,
}

impl Actor for Producer {
    type Msg = ();
    fn handle(&mut self, _msg: (), _ctx: &mut Context<'_, Self>) {
        let mut c = 3;
        while c <= self.limit {
            let _ = self.first.tell(FilterMsg::Candidate(c));
            c += 2;
        }
        let _ = self.first.tell(FilterMsg::Exit(0));
    }
}

pub const SPEC: Spec = Spec {
    name: "savina_sieve",
    about: "Savina parallel: a pipeline of prime-filter actors finds the primes up to L; ms",
    params: &[
        ParamSpec::count(
            "limit",
            "savina_sieve: find the primes up to L",
            "100000",
            "20000",
        ),
        ParamSpec::count(
            "primes-per-actor",
            "savina_sieve: primes each filter actor holds (M)",
            "1000",
            "1000",
        ),
    ],
};

pub const WORKLOAD: Workload = Workload {
    spec: &SPEC,
    peers: false,
    run: |cfg, a| {
        let (limit, m) = (a.u64("limit"), a.usize("primes-per-actor"));
        let expected = prime_count(limit);
        measure(cfg, a, |system| {
            let (tx, rx) = bounded(1);
            let mut first = Filter::new(m, tx);
            if limit >= 2 {
                first.primes.push(2);
            }
            let first = system.spawn(first);
            let producer = system.spawn(Producer { limit, first });
            let (s, count) = timed(
                || producer.tell(()).map_err(|e| e.to_string()),
                || recv(&rx),
            )?;
            verify(count == expected, || {
                format!("savina_sieve: {count} primes up to {limit}, expected {expected}")
            })?;
            Ok(sample(s).with("primes", count))
        })
    },
    plot: Some(plot_threads),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prime_counts() {
        assert_eq!(prime_count(100_000), 9_592);
        assert_eq!(prime_count(10), 4);
        assert_ne!(prime_count(100_000), 9_591);
    }
}
