//! The Savina suite (Imam & Sarkar, AGERE 2014) as far as the peers run it:
//! the micro and concurrency groups. Each workload is declared once here
//! (name, parameters with Savina's defaults, the `--quick` scale-down), with
//! the protocol every framework implements, the deterministic random numbers
//! and busy work they share, and the result each run checks.
//!
//! The parallel group (trapezoid, recmatmul, quicksort, sieve, nqueenk) runs
//! on Troupe only and is declared in `troupe-bench`.
//!
//! # Figure
//!
//! Savina reports execution time: every workload prints one JSON line per
//! sample with `"unit":"ms"` and `"rate"` the wall time of the measured phase
//! in milliseconds (lower is better). The measured phase starts when the
//! actors exist and the first message is sent, and ends when the run's last
//! message has been handled and its result is known; creating and stopping
//! the actors is outside it, except in `savina_fjcreate`, whose point is
//! creation.
//!
//! # Protocols
//!
//! Message names are Savina's. "Reply" means the framework's own
//! request–reply idiom where it has one (an ask), otherwise a message back
//! to the sender carried in the request.
//!
//! - **savina_pingpong** (`--pings` N): Ping sends `Ping` to Pong, Pong
//!   answers `Pong`; after N round trips Ping reports done. Check: N pongs.
//! - **savina_count** (`--increments` N): a producer sends N `Increment`
//!   messages to a counter, then asks it for the total. Check: total == N.
//! - **savina_fjthrput** (`--messages` N, `--actors` A): the main thread
//!   sends N messages to each of A actors, interleaved (message i to actor 0,
//!   1, ..., A-1, then i+1); each actor reports done after its N-th. Check:
//!   every actor counted exactly N.
//! - **savina_fjcreate** (`--actors` N): N times, create an actor and send it
//!   one message; the actor reports to a sink when it handles it and stops.
//!   Check: N reports. Creation is inside the measured phase.
//! - **savina_threadring** (`--actors` N, `--passes` R): a ring of N actors
//!   passes a token carrying R, each hop decrementing it; the actor that
//!   receives 0 reports done. Check: R hops counted in total.
//! - **savina_chameneos** (`--chameneos` C, `--meetings` M): chameneo i
//!   starts with color `i % 3` and sends `MeetMe(color, self)` to the mall.
//!   The mall keeps at most one waiting request; when a second arrives and
//!   fewer than M meetings have happened, it counts a meeting and forwards
//!   the waiting request to the newcomer. A chameneo receiving the other's
//!   `MeetMe` takes the color [`complement`]`(own, other)`, counts a meeting,
//!   sends `Change(new color)` to the other and `MeetMe` to the mall again; one
//!   receiving `Change` takes that color, counts a meeting and sends `MeetMe`
//!   to the mall. Once M meetings happened, the mall answers every `MeetMe`
//!   (and the one waiting) with `Exit`; a chameneo answers `Exit` with its
//!   meeting count and stops. Check: the counts sum to 2M.
//! - **savina_big** (`--actors` W, `--pings` N): actor i draws peers from
//!   [`Rng::new`]`(i + 1)`: it sends `Ping(self)` to peer `below(W)` (itself
//!   included), waits for the `Pong`, and repeats until N pongs came back, then
//!   reports done to a sink; every actor answers every `Ping` with `Pong`.
//!   Check: W reports, W*N pongs in all.
//! - **savina_concdict** (`--workers` W, `--requests` M, `--write-percent`
//!   P): a dictionary actor holds a hash map prefilled with keys
//!   `0..`[`CONCDICT_KEYS`] (value = key). Worker i draws from
//!   `Rng::new(i + 1)`: per request `key = below(CONCDICT_KEYS)`, then a write
//!   (`put key -> key`) when `below(100) < P`, else a read; each request is
//!   replied to (the write with an acknowledgement, the read with the value)
//!   and the worker waits for the reply before its next request. Check:
//!   W*M replies, every read returned its key.
//! - **savina_bndbuffer** (`--buffer` B, `--producers` P, `--consumers` C,
//!   `--items` I, `--cost` K): a manager with a buffer of B items. Producer j
//!   makes item `j * I + k` (k = 0..I) after [`busy`]`(K, item)`, sends it to
//!   the manager and waits for `ProduceMore` before the next. The manager
//!   hands an item to an idle consumer if there is one, else buffers it; it
//!   answers the producer `ProduceMore` at once unless the buffer is full
//!   (then when an item leaves the buffer). A consumer runs `busy(K, item)`,
//!   adds the item to its sum and tells the manager it is available again,
//!   which gives it a buffered item if any. Producers say when they are done;
//!   the run ends when all are done, the buffer is empty and every consumer is
//!   idle. Check: the consumers' sums add up to `sum(0..P*I)`.
//! - **savina_philosopher** (`--philosophers` N, `--rounds` M): philosopher
//!   i asks an arbitrator `Hungry(i)`; the arbitrator grants `Eat` when forks
//!   i and (i+1) % N are both free (and takes them), else answers `Denied`
//!   and the philosopher asks again at once. After eating the philosopher
//!   sends `Done(i)` (the forks are freed) and, until it ate M times, is hungry
//!   again; then it sends `Exit`. The run ends when all N exited. Check: N*M
//!   meals; the denials are reported as extra `denials`.
//! - **savina_barber** (`--haircuts` N, `--seats` S, `--arrival-cost` A,
//!   `--haircut-cost` H): a customer factory (random numbers from
//!   `Rng::new(7)`) sends N customers, each after `busy(below(A) + 1, i)`, to a
//!   waiting room of S seats; a full room sends the customer back to the
//!   factory, which sends it again at once. The room hands the first waiting
//!   customer to the barber whenever the barber is asleep; the barber (random
//!   numbers from `Rng::new(11)`) cuts with `busy(below(H) + 1, id)`, tells the
//!   customer, and asks the room for the next. Each customer tells the factory
//!   it is done. Check: N haircuts; the returns are reported as extra
//!   `rejections`.
//! - **savina_banking** (`--accounts` A, `--transfers` T): A accounts start
//!   with [`BANK_INITIAL`] each. A teller draws from `Rng::new(42)`: per
//!   transfer `src = below(A)`, `dst = below(A - 1)` (plus one if `>= src`, so
//!   `dst != src`), `amount = below(1000) + 1`, and sends `Debit(dst, amount)`
//!   to account `src`, all T at once. The source subtracts the amount and
//!   sends `Credit(amount)` to the destination as a request; when the
//!   destination's reply comes back the source replies to the teller. The run
//!   ends with T replies; then the teller asks each account for its balance.
//!   Check: T replies, balances sum to `A * BANK_INITIAL`.
//!
//! Savina's per-message arithmetic in fjthrput and fjcreate
//! (`performComputation`) is left out: it measures the floating-point library,
//! not the runtime. Where busy work is part of the protocol's timing
//! (bndbuffer, barber) every framework runs the same [`busy`] loop.

use crate::spec::{ParamSpec, Spec};

/// `savina_pingpong`.
pub const PINGPONG: Spec = Spec {
    name: "savina_pingpong",
    about: "Savina micro: ping and pong actors exchange N messages each way; ms",
    params: &[ParamSpec::count(
        "pings",
        "savina_pingpong: round trips (N)",
        "40000",
        "40000",
    )],
};

/// `savina_count`.
pub const COUNT: Spec = Spec {
    name: "savina_count",
    about: "Savina micro: N increments to a counter, then ask the total; ms",
    params: &[ParamSpec::count(
        "increments",
        "savina_count: increments (N)",
        "1000000",
        "200000",
    )],
};

/// `savina_fjthrput`.
pub const FJTHRPUT: Spec = Spec {
    name: "savina_fjthrput",
    about: "Savina micro: N messages to each of A actors, interleaved; ms",
    params: &[
        ParamSpec::count(
            "messages",
            "savina_fjthrput: messages per actor (N)",
            "10000",
            "2000",
        ),
        ParamSpec::count("actors", "savina_fjthrput: actors (A)", "60", "60"),
    ],
};

/// `savina_fjcreate`.
pub const FJCREATE: Spec = Spec {
    name: "savina_fjcreate",
    about: "Savina micro: create N actors, one message each; ms",
    params: &[ParamSpec::count(
        "actors",
        "savina_fjcreate: actors (N)",
        "40000",
        "10000",
    )],
};

/// `savina_threadring`.
pub const THREADRING: Spec = Spec {
    name: "savina_threadring",
    about: "Savina micro: a token passed R times around a ring of N actors; ms",
    params: &[
        ParamSpec::count("actors", "savina_threadring: ring actors (N)", "100", "100"),
        ParamSpec::count("passes", "savina_threadring: passes (R)", "100000", "20000"),
    ],
};

/// `savina_chameneos`.
pub const CHAMENEOS: Spec = Spec {
    name: "savina_chameneos",
    about: "Savina micro: C chameneos meet M times through a mall; ms",
    params: &[
        ParamSpec::count("chameneos", "savina_chameneos: chameneos (C)", "100", "100"),
        ParamSpec::count(
            "meetings",
            "savina_chameneos: meetings (M)",
            "200000",
            "20000",
        ),
    ],
};

/// `savina_big`.
pub const BIG: Spec = Spec {
    name: "savina_big",
    about: "Savina micro: W actors each ping random peers N times, each ponged back; ms",
    params: &[
        ParamSpec::count("actors", "savina_big: actors (W)", "120", "120"),
        ParamSpec::count("pings", "savina_big: pings per actor (N)", "20000", "2000"),
    ],
};

/// `savina_concdict`.
pub const CONCDICT: Spec = Spec {
    name: "savina_concdict",
    about: "Savina concurrency: W workers send M requests (P% writes) to a dictionary actor; ms",
    params: &[
        ParamSpec::count("workers", "savina_concdict: workers (W)", "20", "20"),
        ParamSpec::count(
            "requests",
            "savina_concdict: requests per worker (M)",
            "10000",
            "2000",
        ),
        ParamSpec::count(
            "write-percent",
            "savina_concdict: writes in percent (P)",
            "10",
            "10",
        )
        .at_most(100),
    ],
};

/// `savina_bndbuffer`.
pub const BNDBUFFER: Spec = Spec {
    name: "savina_bndbuffer",
    about: "Savina concurrency: P producers and C consumers through a manager with a bounded buffer; ms",
    params: &[
        ParamSpec::count("buffer", "savina_bndbuffer: buffer size (B)", "50", "50"),
        ParamSpec::count("producers", "savina_bndbuffer: producers (P)", "40", "40"),
        ParamSpec::count("consumers", "savina_bndbuffer: consumers (C)", "40", "40"),
        ParamSpec::count("items", "savina_bndbuffer: items per producer (I)", "1000", "200"),
        ParamSpec::count("cost", "savina_bndbuffer: busy work per item (K)", "25", "25"),
    ],
};

/// `savina_philosopher`.
pub const PHILOSOPHER: Spec = Spec {
    name: "savina_philosopher",
    about: "Savina concurrency: N dining philosophers eat M times each through an arbitrator; ms",
    params: &[
        ParamSpec::count(
            "philosophers",
            "savina_philosopher: philosophers (N)",
            "20",
            "20",
        ),
        ParamSpec::count(
            "rounds",
            "savina_philosopher: meals each (M)",
            "10000",
            "1000",
        ),
    ],
};

/// `savina_barber`.
pub const BARBER: Spec = Spec {
    name: "savina_barber",
    about: "Savina concurrency: the sleeping barber, N haircuts, S seats; ms",
    params: &[
        ParamSpec::count("haircuts", "savina_barber: customers (N)", "5000", "1000"),
        ParamSpec::count(
            "seats",
            "savina_barber: waiting-room seats (S)",
            "1000",
            "1000",
        ),
        ParamSpec::count(
            "arrival-cost",
            "savina_barber: busy work between arrivals, at most (A)",
            "1000",
            "1000",
        ),
        ParamSpec::count(
            "haircut-cost",
            "savina_barber: busy work per haircut, at most (H)",
            "1000",
            "1000",
        ),
    ],
};

/// `savina_banking`.
pub const BANKING: Spec = Spec {
    name: "savina_banking",
    about: "Savina concurrency: T transfers among A accounts, each debit confirmed by request-reply; ms",
    params: &[
        ParamSpec::count("accounts", "savina_banking: accounts (A)", "1000", "1000").at_most(1 << 31),
        ParamSpec::count("transfers", "savina_banking: transfers (T)", "50000", "10000"),
    ],
};

/// The Savina micro group, in report order.
pub const MICRO: &[&Spec] = &[
    &PINGPONG,
    &COUNT,
    &FJTHRPUT,
    &FJCREATE,
    &THREADRING,
    &CHAMENEOS,
    &BIG,
];

/// The Savina concurrency group, in report order.
pub const CONCURRENCY: &[&Spec] = &[&CONCDICT, &BNDBUFFER, &PHILOSOPHER, &BARBER, &BANKING];

/// The Savina workloads the peers run (micro, then concurrency).
pub const PEER_RUN: &[&Spec] = &[
    &PINGPONG,
    &COUNT,
    &FJTHRPUT,
    &FJCREATE,
    &THREADRING,
    &CHAMENEOS,
    &BIG,
    &CONCDICT,
    &BNDBUFFER,
    &PHILOSOPHER,
    &BARBER,
    &BANKING,
];

/// The Savina workload the peers run called `name`.
pub fn spec(name: &str) -> Option<&'static Spec> {
    PEER_RUN.iter().copied().find(|s| s.name == name)
}

/// The unit of every Savina figure: milliseconds of the measured phase.
pub const UNIT: &str = "ms";

/// Keys of `savina_concdict`'s dictionary (prefilled `0..CONCDICT_KEYS`).
pub const CONCDICT_KEYS: u64 = 1024;

/// Every account's opening balance in `savina_banking`.
pub const BANK_INITIAL: u64 = 1_000_000;

/// The random numbers every framework draws the same way: a 64-bit linear
/// congruential generator (Knuth's MMIX constants) that returns the high 31
/// bits of its state.
///
/// ```
/// let mut r = troupe_bench_contract::savina::Rng::new(1);
/// assert_eq!(r.next(), 908_834_774);
/// assert!(r.below(10) < 10);
/// ```
#[derive(Debug, Clone)]
pub struct Rng(u64);

/// The generator's multiplier.
pub const LCG_MUL: u64 = 6_364_136_223_846_793_005;
/// The generator's increment.
pub const LCG_INC: u64 = 1_442_695_040_888_963_407;

impl Rng {
    /// The generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next value, in `0..2^31`: advance the state, return its top 31 bits.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(LCG_MUL).wrapping_add(LCG_INC);
        self.0 >> 33
    }

    /// The next value modulo `n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Savina's busy work: `iterations` steps of the generator from `seed`, kept
/// from being optimised away. Returns the last state.
///
/// ```
/// assert_eq!(troupe_bench_contract::savina::busy(0, 5), 5);
/// assert_eq!(troupe_bench_contract::savina::busy(1, 5), 14_816_632_086_413_376_816);
/// ```
pub fn busy(iterations: u64, seed: u64) -> u64 {
    let mut x = seed;
    for _ in 0..iterations {
        x = std::hint::black_box(x.wrapping_mul(LCG_MUL).wrapping_add(LCG_INC));
    }
    x
}

/// Chameneos' color rule: the same color stays, two different ones give the
/// third (colors 0, 1, 2).
pub fn complement(own: u8, other: u8) -> u8 {
    if own == other {
        own
    } else {
        3 - own - other
    }
}

/// `savina_philosopher`'s forks as the arbitrator holds them: fork `i` lies
/// between philosopher `i` and philosopher `i + 1` (mod N), so philosopher
/// `i` eats with forks `i` and `(i + 1) % N`.
///
/// ```
/// let mut f = troupe_bench_contract::savina::Forks::new(3);
/// assert!(f.try_take(0));
/// assert!(!f.try_take(1)); // fork 1 is in use
/// f.put_back(0);
/// assert!(f.try_take(1));
/// ```
#[derive(Debug, Clone)]
pub struct Forks(Vec<bool>);

impl Forks {
    /// `n` free forks for `n` philosophers.
    pub fn new(n: usize) -> Forks {
        Forks(vec![false; n])
    }

    /// The number of forks (and philosophers).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no forks.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Takes philosopher `i`'s two forks if both are free: `true` means eat,
    /// `false` a denial (nothing taken).
    pub fn try_take(&mut self, i: usize) -> bool {
        let (l, r) = (i, (i + 1) % self.0.len());
        if self.0[l] || self.0[r] {
            return false;
        }
        self.0[l] = true;
        self.0[r] = true;
        true
    }

    /// Puts philosopher `i`'s two forks back.
    pub fn put_back(&mut self, i: usize) {
        let n = self.0.len();
        self.0[i] = false;
        self.0[(i + 1) % n] = false;
    }
}

/// The sum `savina_bndbuffer`'s consumers must count: items `0..producers * items`.
pub fn bndbuffer_sum(producers: u64, items: u64) -> u64 {
    let n = producers * items;
    n * n.saturating_sub(1) / 2
}

/// One `savina_banking` transfer as the teller draws it: `(src, dst, amount)`.
pub fn bank_transfer(rng: &mut Rng, accounts: u64) -> (u64, u64, u64) {
    let src = rng.below(accounts);
    let mut dst = rng.below(accounts - 1);
    if dst >= src {
        dst += 1;
    }
    (src, dst, rng.below(1000) + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_and_busy_are_the_documented_sequence() {
        let mut r = Rng::new(1);
        let first = 1u64.wrapping_mul(LCG_MUL).wrapping_add(LCG_INC);
        assert_eq!(r.next(), first >> 33);
        let second = first.wrapping_mul(LCG_MUL).wrapping_add(LCG_INC);
        assert_eq!(r.next(), second >> 33);
        assert_eq!(busy(2, 1), second);
        assert_eq!(busy(0, 9), 9);
    }

    #[test]
    fn complement_and_transfers() {
        assert_eq!(complement(0, 0), 0);
        assert_eq!(complement(0, 1), 2);
        assert_eq!(complement(2, 1), 0);
        let mut r = Rng::new(42);
        for _ in 0..10_000 {
            let (s, d, a) = bank_transfer(&mut r, 3);
            assert!(s < 3 && d < 3 && s != d && (1..=1000).contains(&a));
        }
        assert_eq!(bndbuffer_sum(2, 3), 15);
    }

    #[test]
    fn names_are_unique_and_resolve() {
        for s in PEER_RUN {
            assert_eq!(spec(s.name).map(|x| x.name), Some(s.name));
            assert!(s.resolve(true, |_| None).is_ok());
        }
        assert_eq!(MICRO.len() + CONCURRENCY.len(), PEER_RUN.len());
    }
}
