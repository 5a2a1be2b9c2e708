//! `actor_creation` (CAF, seed 004): actor(x) spawns two children actor(x-1)
//! and replies 1 + the sum of their replies; actor(1) replies 1; the root
//! actor(P) must answer 2^P - 1; a node spawns its children when it starts
//! (no extra message per node), as every peer does. Memory: `bytes_per_actor`
//! is the peak RSS growth from a settled baseline over the tree's actors, the
//! metric every peer reports; heap in use (`mallinfo2`) is an extra
//! (`heap_bytes_per_actor`) from one more, untimed run, because sampling it
//! takes the allocator's locks (it slowed the timed tree by ~10%). Also
//! measures the memory of idle actors.

use super::Workload;
use super::{params, verify, RunCfg};
use crate::stats::{Figure, Sample};
use crossbeam_channel::{bounded, Sender};
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use troupe::{Actor, ActorRef, Context};
use troupe_bench_contract::{spec, RssBaseline};

pub struct Params {
    pub pow: u32,
}

enum Parent {
    Actor(ActorRef<Node>),
    Root(Sender<u64>),
}

pub struct Node {
    x: u32,
    parent: Parent,
    pending: u8,
    sum: u64,
}

impl Node {
    fn answer(&self, value: u64) {
        match &self.parent {
            Parent::Actor(p) => {
                let _ = p.tell(value);
            }
            Parent::Root(tx) => {
                let _ = tx.send(value);
            }
        }
    }
}

impl Actor for Node {
    type Msg = u64;
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        if self.x <= 1 {
            self.answer(1);
            ctx.stop();
            return;
        }
        let me = ctx.myself();
        for _ in 0..2 {
            ctx.spawn(Node {
                x: self.x - 1,
                parent: Parent::Actor(me.clone()),
                pending: 0,
                sum: 0,
            });
        }
        self.pending = 2;
    }

    fn handle(&mut self, reply: u64, ctx: &mut Context<'_, Self>) {
        self.sum += reply;
        self.pending -= 1;
        if self.pending == 0 {
            self.answer(1 + self.sum);
            ctx.stop();
        }
    }
}

/// glibc's `struct mallinfo2` (all fields `size_t`).
#[repr(C)]
#[derive(Default)]
struct MallInfo2 {
    arena: usize,
    ordblks: usize,
    smblks: usize,
    hblks: usize,
    hblkhd: usize,
    usmblks: usize,
    fsmblks: usize,
    uordblks: usize,
    fordblks: usize,
    keepcost: usize,
}

extern "C" {
    fn mallinfo2() -> MallInfo2;
}

/// Bytes of heap in use right now, over every malloc arena (glibc sums them):
/// unlike resident memory, this sees allocations that reuse memory freed by
/// earlier workloads in this process.
pub fn heap_in_use() -> u64 {
    // SAFETY: `mallinfo2` takes no arguments, only reads allocator statistics
    // (under the arenas' locks) and returns a plain struct by value; glibc
    // >= 2.33 provides it (Debian 12 ships 2.36).
    let m = unsafe { mallinfo2() };
    (m.uordblks + m.hblkhd) as u64
}

/// Samples `heap_in_use` every millisecond until dropped; keeps the peak.
struct PeakHeap {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl PeakHeap {
    fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(heap_in_use()));
        let (s, p) = (stop.clone(), peak.clone());
        let handle = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(heap_in_use(), Ordering::Relaxed);
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        });
        PeakHeap {
            stop,
            peak,
            handle: Some(handle),
        }
    }

    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        self.peak.load(Ordering::Relaxed).max(heap_in_use())
    }
}

/// An actor that does nothing: what an idle actor costs.
pub struct Idle;

impl Actor for Idle {
    type Msg = u64;
    fn handle(&mut self, _: u64, _ctx: &mut Context<'_, Self>) {}
}

/// Builds the tree of `2^pow - 1` actors once; returns the seconds it took
/// and the RSS growth. With `heap` set, a thread also samples the heap in
/// use every millisecond (`mallinfo2`, which takes the allocator's arena
/// locks while it walks them) and the peak growth comes back too: only in
/// an untimed run, since neither the peers nor the timed samples pay for it.
fn tree(cfg: &RunCfg, p: &Params, heap: bool) -> Result<(f64, u64, Option<u64>), String> {
    let actors = (1u64 << p.pow) - 1;
    let system = cfg.system();
    let (tx, rx) = bounded(1);
    let rss = RssBaseline::settle();
    // Read only when sampling: it takes the allocator's locks too.
    let before = heap.then(heap_in_use);
    let sampler = heap.then(PeakHeap::start);
    let t0 = Instant::now();
    system.spawn(Node {
        x: p.pow,
        parent: Parent::Root(tx),
        pending: 0,
        sum: 0,
    });
    let answer = rx.recv().map_err(|e| e.to_string())?;
    let seconds = t0.elapsed().as_secs_f64();
    let peak = sampler
        .zip(before)
        .map(|(s, before)| s.finish().saturating_sub(before));
    let rss_growth = rss.growth();
    verify(answer == actors, || {
        format!("actor_creation: root answered {answer}, expected {actors}")
    })?;
    system.shutdown();
    Ok((seconds, rss_growth, peak))
}

pub fn run(cfg: &RunCfg, p: &Params) -> Result<Vec<Figure>, String> {
    let actors = (1u64 << p.pow) - 1;
    let mut creation = cfg.measure(
        "troupe",
        "actor_creation",
        format!("actor_creation 2^{}", p.pow),
        params(&[("pow", json!(p.pow))]),
        "actors/s",
        || {
            let (seconds, rss_growth, _) = tree(cfg, p, false)?;
            // The figure every framework reports: peak RSS growth from a
            // settled baseline, over all the tree's actors.
            Ok(Sample::new(seconds, actors as f64)
                .with("rss_growth_bytes", rss_growth)
                .with("bytes_per_actor", rss_growth as f64 / actors as f64))
        },
    )?;
    // Heap in use (mallinfo2), which the peers do not have, from one more
    // run outside the samples: its sampler thread slowed the tree by ~10%.
    let (_, _, peak) = tree(cfg, p, true)?;
    let peak = peak.unwrap_or(0);
    creation
        .extra
        .insert("peak_heap_growth_bytes".into(), json!(peak));
    creation.extra.insert(
        "heap_bytes_per_actor".into(),
        json!(peak as f64 / actors as f64),
    );
    // Idle actors: spawn K that stay alive, measure the heap they occupy.
    let k = (actors as usize).clamp(10_000, 1_000_000);
    let idle =
        cfg.measure(
            "troupe",
            "actor_creation",
            format!("idle actors {k}"),
            params(&[("idle_actors", json!(k))]),
            "actors/s",
            || {
                let system = cfg.system();
                let mut refs: Vec<ActorRef<Idle>> = Vec::with_capacity(k);
                let before = heap_in_use();
                let t0 = Instant::now();
                refs.extend((0..k).map(|_| system.spawn(Idle)));
                // Wait until every actor has run its start (a turn) and is idle.
                while refs.last().map(|r| r.mailbox_len()).unwrap_or(0) > 0 {
                    std::thread::yield_now();
                }
                let seconds = t0.elapsed().as_secs_f64();
                std::thread::sleep(std::time::Duration::from_millis(20));
                // Everything the runtime allocated for K idle actors (cells and
                // table entries); the handles' Vec was allocated before.
                let grown = heap_in_use().saturating_sub(before);
                verify(system.live_actors() == k, || {
                    format!("idle actors: {} alive, expected {k}", system.live_actors())
                })?;
                drop(refs);
                system.shutdown();
                Ok(Sample::new(seconds, k as f64)
                    .with("bytes_per_idle_actor", grown as f64 / k as f64))
            },
        )?;
    Ok(vec![creation, idle])
}

/// `actor_creation`: the contract's parameters; no plot.
pub const WORKLOAD: Workload = Workload {
    spec: &spec::ACTOR_CREATION,
    peers: true,
    run: |cfg, a| {
        run(
            cfg,
            &Params {
                pow: a.u64("pow") as u32,
            },
        )
    },
    plot: None,
};
