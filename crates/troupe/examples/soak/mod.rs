//! The chaos soak and the stress count, shared by `examples/chaos.rs`,
//! `examples/stress.rs` and `tests/chaos.rs` (included with `#[path]`; this
//! folder has no `main.rs`, so Cargo does not build it as an example).
//!
//! Chaos: driver threads pick random operations against a changing set of
//! actors (spawn with an unbounded or a bounded mailbox of any overflow
//! policy, tell, ask, stop from outside and from inside, kill, panic), a
//! supervisor whose children panic and restart, and registry churn
//! (register, send by name, unregister). Every told message carries a
//! `Token` that counts itself once: handled (by the handler), refused
//! (handed back by a failed send), or dropped (its drop ran anywhere else).
//! The invariants checked at the end:
//! * every accepted message was handled or dropped: `accepted == handled +
//!   dropped`, and the runtime counted at least those drops;
//! * every ask resolved (none still pending after shutdown; none timed out
//!   while the system ran);
//! * every panic injected (a handler that panicked) was caught and counted
//!   by the runtime, exactly;
//! * no worker lost: `threads` probe actors can all run at once;
//! * no actor left: shutdown finds none alive and none unresponsive.

#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe::registry::Registry;
use troupe::supervision::{ChildSpec, Strategy, SupervisedRef, SupervisorSpec};
use troupe::{
    Actor, ActorRef, ActorSystem, AskError, AskFuture, Context, MailboxConfig, Overflow, ReplyTo,
    SpawnOptions,
};

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// How long the drivers run.
    pub duration: Duration,
    /// Worker threads of the system.
    pub threads: usize,
    /// Threads issuing operations.
    pub drivers: usize,
    /// Random seed (each driver derives its own).
    pub seed: u64,
}

/// Counters shared by the drivers and the actors.
#[derive(Default, Debug)]
pub struct Shared {
    pub spawned: AtomicU64,
    pub accepted: AtomicU64,
    pub refused: AtomicU64,
    pub handled: AtomicU64,
    pub dropped: AtomicU64,
    pub asks: AtomicU64,
    pub asks_ok: AtomicU64,
    pub asks_failed: AtomicU64,
    pub panics_injected: AtomicU64,
    pub kills: AtomicU64,
    pub stops: AtomicU64,
    pub registry_ops: AtomicU64,
}

/// Counts its message exactly once: handled, refused or dropped.
pub struct Token {
    shared: Arc<Shared>,
    armed: bool,
}

impl Token {
    fn new(shared: &Arc<Shared>) -> Self {
        Token {
            shared: shared.clone(),
            armed: true,
        }
    }
    fn settle(&mut self, counter: impl Fn(&Shared) -> &AtomicU64) {
        if std::mem::replace(&mut self.armed, false) {
            counter(&self.shared).fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Token {
    fn drop(&mut self) {
        self.settle(|s| &s.dropped);
    }
}

pub enum Msg {
    Work(Token),
    Panic(Token),
    StopSelf(Token),
    Ask(ReplyTo<u64>),
}

impl Msg {
    fn token(&mut self) -> Option<&mut Token> {
        match self {
            Msg::Work(t) | Msg::Panic(t) | Msg::StopSelf(t) => Some(t),
            Msg::Ask(_) => None,
        }
    }
}

pub struct Chaos {
    n: u64,
}

impl Actor for Chaos {
    type Msg = Msg;
    fn handle(&mut self, mut msg: Msg, ctx: &mut Context<'_, Self>) {
        if let Some(t) = msg.token() {
            t.settle(|s| &s.handled);
        }
        self.n += 1;
        match msg {
            Msg::Work(_) => {}
            Msg::Panic(t) => {
                t.shared.panics_injected.fetch_add(1, Ordering::SeqCst);
                panic!("chaos: injected panic")
            }
            Msg::StopSelf(_) => ctx.stop(),
            Msg::Ask(r) => {
                r.reply(self.n);
            }
        }
    }
}

/// Spins until `threads` probes run at once (or a deadline passes).
struct Probe {
    arrived: Arc<AtomicU64>,
    need: u64,
}
impl Actor for Probe {
    type Msg = ();
    fn handle(&mut self, _: (), _ctx: &mut Context<'_, Self>) {
        self.arrived.fetch_add(1, Ordering::SeqCst);
        let until = Instant::now() + Duration::from_secs(10);
        while self.arrived.load(Ordering::SeqCst) < self.need && Instant::now() < until {
            std::hint::spin_loop();
        }
    }
}

/// A small xorshift generator: deterministic per seed, no dependency.
pub struct Rng(u64);
impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn random_mailbox(rng: &mut Rng) -> MailboxConfig {
    let cap = 1 + rng.below(64) as usize;
    match rng.below(4) {
        0 => MailboxConfig::Unbounded,
        1 => MailboxConfig::bounded(cap, Overflow::Reject),
        2 => MailboxConfig::bounded(cap, Overflow::DropNewest),
        _ => MailboxConfig::bounded(cap, Overflow::DropOldest),
    }
}

/// What a chaos run did, and what the runtime reported.
#[derive(Debug)]
pub struct Report {
    pub spawned: u64,
    pub accepted: u64,
    pub refused: u64,
    pub handled: u64,
    pub dropped: u64,
    pub runtime_dropped: u64,
    pub asks: u64,
    pub asks_ok: u64,
    pub asks_failed: u64,
    pub panics_injected: u64,
    pub panics_caught: u64,
    pub kills: u64,
    pub stops: u64,
    pub registry_ops: u64,
    pub supervisor_restarts: u64,
    pub threads: usize,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "threads {}: {} actors spawned, {} tells accepted ({} refused): {} handled + {} dropped \
             (runtime counted {} drops); {} asks ({} ok, {} failed fast, 0 pending); \
             {} panics injected, {} caught; {} kills, {} stops; {} registry ops; \
             {} supervisor restarts; 0 actors left, 0 workers lost",
            self.threads,
            self.spawned,
            self.accepted,
            self.refused,
            self.handled,
            self.dropped,
            self.runtime_dropped,
            self.asks,
            self.asks_ok,
            self.asks_failed,
            self.panics_injected,
            self.panics_caught,
            self.kills,
            self.stops,
            self.registry_ops,
            self.supervisor_restarts,
        )
    }
}

/// Tells `make(token)`; counts accepted or refused.
fn tell_counted(
    shared: &Arc<Shared>,
    send: impl FnOnce(Msg) -> Result<(), troupe::SendError<Msg>>,
    make: impl FnOnce(Token) -> Msg,
) {
    match send(make(Token::new(shared))) {
        Ok(()) => {
            shared.accepted.fetch_add(1, Ordering::Relaxed);
        }
        Err(e) => {
            let mut m = e.into_inner();
            if let Some(t) = m.token() {
                t.settle(|s| &s.refused);
            }
        }
    }
}

fn settle_asks(
    shared: &Shared,
    asks: &mut Vec<AskFuture<u64>>,
    wait: Duration,
) -> Result<(), String> {
    for f in asks.drain(..) {
        match f.wait_timeout(wait) {
            Ok(_) => shared.asks_ok.fetch_add(1, Ordering::Relaxed),
            Err(AskError::Timeout) => return Err("an ask was still pending".into()),
            Err(_) => shared.asks_failed.fetch_add(1, Ordering::Relaxed),
        };
    }
    Ok(())
}

fn driver(
    system: troupe::SystemHandle,
    shared: Arc<Shared>,
    registry: Registry<Chaos>,
    supervised: Vec<SupervisedRef<Chaos>>,
    until: Instant,
    seed: u64,
    id: usize,
) -> Result<(), String> {
    let mut rng = Rng::new(seed);
    let mut actors: Vec<ActorRef<Chaos>> = Vec::new();
    let mut asks = Vec::new();
    let mut ops = 0u64;
    while ops % 256 != 0 || Instant::now() < until {
        ops += 1;
        if actors.is_empty() || (actors.len() < 32 && rng.below(10) == 0) {
            let a = system.spawn_with(
                Chaos { n: 0 },
                SpawnOptions::new().mailbox(random_mailbox(&mut rng)),
            );
            shared.spawned.fetch_add(1, Ordering::Relaxed);
            actors.push(a);
            continue;
        }
        let i = rng.below(actors.len() as u64) as usize;
        let a = &actors[i];
        match rng.below(100) {
            0..=49 => tell_counted(&shared, |m| a.tell(m), Msg::Work),
            50..=59 => {
                shared.asks.fetch_add(1, Ordering::Relaxed);
                asks.push(a.ask_async(Msg::Ask));
                if asks.len() >= 64 {
                    settle_asks(&shared, &mut asks, Duration::from_secs(10))?;
                }
            }
            60..=61 => {
                tell_counted(&shared, |m| a.tell(m), Msg::Panic);
            }
            62..=63 => tell_counted(&shared, |m| a.tell(m), Msg::StopSelf),
            64..=65 => {
                a.kill();
                shared.kills.fetch_add(1, Ordering::Relaxed);
                actors.swap_remove(i);
            }
            66..=67 => {
                a.stop();
                shared.stops.fetch_add(1, Ordering::Relaxed);
                actors.swap_remove(i);
            }
            68..=79 => {
                let s = &supervised[rng.below(supervised.len() as u64) as usize];
                if rng.below(20) == 0 {
                    tell_counted(&shared, |m| s.tell(m), Msg::Panic);
                } else {
                    tell_counted(&shared, |m| s.tell(m), Msg::Work);
                }
            }
            80..=89 => {
                let name = format!("d{id}-{}", rng.below(8));
                shared.registry_ops.fetch_add(1, Ordering::Relaxed);
                match rng.below(3) {
                    0 => {
                        let _ = registry.register(&name, a);
                    }
                    1 => {
                        registry.unregister(&name);
                    }
                    _ => tell_counted(&shared, |m| registry.send(&name, m), Msg::Work),
                }
            }
            _ => {
                // A stopped actor stays in the set a while: sends to it are
                // refused with the message handed back.
                if !a.is_alive() {
                    actors.swap_remove(i);
                }
            }
        }
    }
    settle_asks(&shared, &mut asks, Duration::from_secs(10))?;
    Ok(())
}

/// Runs the soak; `Err` names the first broken invariant.
pub fn chaos(cfg: &Config) -> Result<Report, String> {
    let system = ActorSystem::builder().threads(cfg.threads).build();
    let handle = system.handle();
    let shared = Arc::new(Shared::default());
    let registry: Registry<Chaos> = Registry::new();

    let mut spec =
        SupervisorSpec::new(Strategy::OneForOne).intensity(1_000_000, Duration::from_secs(1));
    let mut supervised = Vec::new();
    for k in 0..3 {
        let child = ChildSpec::new(format!("child-{k}"), || Chaos { n: 0 });
        supervised.push(child.supervised_ref::<Chaos>().expect("Chaos child"));
        spec = spec.child(child);
    }
    let sup = spec.spawn(&handle);

    let until = Instant::now() + cfg.duration;
    let drivers: Vec<_> = (0..cfg.drivers)
        .map(|d| {
            let (h, s, r, sv) = (
                handle.clone(),
                shared.clone(),
                registry.clone(),
                supervised.clone(),
            );
            let seed = cfg.seed.wrapping_add(d as u64 * 7919);
            std::thread::spawn(move || driver(h, s, r, sv, until, seed, d))
        })
        .collect();
    for d in drivers {
        d.join()
            .map_err(|_| "a driver thread panicked".to_string())??;
    }

    // No worker lost: `threads` probes must all be running at once.
    let arrived = Arc::new(AtomicU64::new(0));
    let probes: Vec<_> = (0..cfg.threads)
        .map(|_| {
            handle.spawn(Probe {
                arrived: arrived.clone(),
                need: cfg.threads as u64,
            })
        })
        .collect();
    for p in &probes {
        let _ = p.tell(());
    }
    let until = Instant::now() + Duration::from_secs(10);
    while arrived.load(Ordering::SeqCst) < cfg.threads as u64 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(1));
    }
    let alive_workers = arrived.load(Ordering::SeqCst);
    if alive_workers < cfg.threads as u64 {
        return Err(format!(
            "only {alive_workers} of {} workers ran a probe",
            cfg.threads
        ));
    }
    drop(probes);
    let supervisor_restarts = sup.restarts(Duration::from_secs(10)).unwrap_or(0);
    drop(sup);
    drop(supervised);
    drop(registry);

    let report = system.shutdown_timeout(Duration::from_secs(10));
    if report.actors_unresponsive != 0 || handle.live_actors() != 0 {
        return Err(format!("actors left after shutdown: {report}"));
    }
    let get = |c: &AtomicU64| c.load(Ordering::SeqCst);
    let r = Report {
        spawned: get(&shared.spawned),
        accepted: get(&shared.accepted),
        refused: get(&shared.refused),
        handled: get(&shared.handled),
        dropped: get(&shared.dropped),
        runtime_dropped: report.messages_dropped,
        asks: get(&shared.asks),
        asks_ok: get(&shared.asks_ok),
        asks_failed: get(&shared.asks_failed),
        panics_injected: get(&shared.panics_injected),
        panics_caught: report.panics,
        kills: get(&shared.kills),
        stops: get(&shared.stops),
        registry_ops: get(&shared.registry_ops),
        supervisor_restarts,
        threads: cfg.threads,
    };
    if r.accepted != r.handled + r.dropped {
        return Err(format!(
            "{} accepted but {} handled + {} dropped: {r}",
            r.accepted, r.handled, r.dropped
        ));
    }
    if r.runtime_dropped < r.dropped {
        return Err(format!(
            "the runtime counted fewer drops than happened: {r}"
        ));
    }
    if r.panics_caught != r.panics_injected {
        return Err(format!("panics injected and caught differ: {r}"));
    }
    if r.asks != r.asks_ok + r.asks_failed {
        return Err(format!("asks unresolved: {r}"));
    }
    Ok(r)
}

/// Stress: `senders` threads each send `per_sender` numbered messages to
/// one actor, which checks that each sender's numbers arrive in order with
/// no gap and no repeat, and reports its counts when it stops.
pub struct Checker {
    next: Vec<u64>,
    lost: u64,
    duplicated: u64,
    received: u64,
    out: Arc<[AtomicU64; 3]>,
}

impl Actor for Checker {
    type Msg = (u32, u64);
    fn handle(&mut self, (s, seq): (u32, u64), _ctx: &mut Context<'_, Self>) {
        let want = &mut self.next[s as usize];
        if seq > *want {
            self.lost += seq - *want;
        } else if seq < *want {
            self.duplicated += 1;
        }
        *want = seq + 1;
        self.received += 1;
    }
    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {
        self.out[0].store(self.received, Ordering::SeqCst);
        self.out[1].store(self.lost, Ordering::SeqCst);
        self.out[2].store(self.duplicated, Ordering::SeqCst);
    }
}

/// The stress figure: `(received, lost, duplicated, seconds)`; lost counts
/// gaps in each sender's numbers, including a short tail.
pub fn stress(senders: usize, per_sender: u64, threads: usize) -> (u64, u64, u64, f64) {
    let system = ActorSystem::builder().threads(threads).build();
    let out = Arc::new([AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)]);
    let checker = system.spawn(Checker {
        next: vec![0; senders],
        lost: 0,
        duplicated: 0,
        received: 0,
        out: out.clone(),
    });
    let t0 = Instant::now();
    let hs: Vec<_> = (0..senders)
        .map(|s| {
            let c = checker.clone();
            std::thread::spawn(move || {
                for seq in 0..per_sender {
                    if c.tell((s as u32, seq)).is_err() {
                        panic!("the checker stopped early");
                    }
                }
            })
        })
        .collect();
    for h in hs {
        h.join().expect("sender");
    }
    // Stop after draining: everything sent is handled before `stopped`.
    checker.stop();
    checker.join();
    let secs = t0.elapsed().as_secs_f64();
    system.shutdown();
    let received = out[0].load(Ordering::SeqCst);
    let total = senders as u64 * per_sender;
    let lost = out[1].load(Ordering::SeqCst) + total.saturating_sub(received);
    (received, lost, out[2].load(Ordering::SeqCst), secs)
}
