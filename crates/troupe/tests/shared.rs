//! Thread-safe handlers run in parallel; exclusive ones alone; order holds.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;
use troupe::parallel::{Coordinator, Fifo, SharedActor};
use troupe::{ActorSystem, StopReason};

/// (violations, stale reads, shared handled, exclusive handled, max parallel)
type Totals = (u64, u64, u64, u64, usize);

const T: Duration = Duration::from_secs(10);

#[derive(Default)]
struct Probe {
    active_shared: AtomicUsize,
    in_exclusive: AtomicBool,
    violations: AtomicU64,
    shared_done: AtomicU64,
    max_parallel: AtomicUsize,
    value: u64,
    stale_reads: AtomicU64,
    exclusive_done: u64,
    barrier: Option<Arc<Barrier>>,
    met_at_barrier: AtomicU64,
}

enum M {
    /// Thread-safe: must see the last `Set` that was sent before it.
    Read(u64),
    /// Thread-safe: waits (bounded) at the barrier with the other meeters.
    Meet,
    /// Exclusive.
    Set(u64),
    Panic,
}

impl SharedActor for Probe {
    type Msg = M;
    fn is_thread_safe(msg: &M) -> bool {
        matches!(msg, M::Read(_) | M::Meet | M::Panic)
    }
    fn handle_shared(&self, msg: M) {
        if self.in_exclusive.load(Ordering::SeqCst) {
            self.violations.fetch_add(1, Ordering::SeqCst);
        }
        let now = self.active_shared.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_parallel.fetch_max(now, Ordering::SeqCst);
        match msg {
            M::Read(expected) => {
                if self.value != expected {
                    self.stale_reads.fetch_add(1, Ordering::SeqCst);
                }
                std::hint::black_box((0..200).sum::<u64>());
            }
            M::Meet => {
                let b = self.barrier.clone().expect("barrier");
                let (tx, rx) = std::sync::mpsc::channel();
                std::thread::spawn(move || {
                    let _ = tx.send(b.wait());
                });
                if rx.recv_timeout(T).is_ok() {
                    self.met_at_barrier.fetch_add(1, Ordering::SeqCst);
                }
            }
            M::Panic => panic!("shared handler failed"),
            M::Set(_) => unreachable!(),
        }
        self.shared_done.fetch_add(1, Ordering::SeqCst);
        self.active_shared.fetch_sub(1, Ordering::SeqCst);
    }
    fn handle_exclusive(&mut self, msg: M) {
        if self.in_exclusive.swap(true, Ordering::SeqCst)
            || self.active_shared.load(Ordering::SeqCst) != 0
        {
            self.violations.fetch_add(1, Ordering::SeqCst);
        }
        if let M::Set(v) = msg {
            self.value = v;
        }
        self.exclusive_done += 1;
        self.in_exclusive.store(false, Ordering::SeqCst);
    }
}

#[test]
fn thread_safe_handlers_really_overlap() {
    let system = ActorSystem::builder().threads(1).build();
    let pool = system.work_stealing_pool("adv", 2);
    // The actor shares its counters with the test through an Arc.
    let counters = Arc::new(Probe {
        barrier: Some(Arc::new(Barrier::new(2))),
        ..Default::default()
    });
    struct Wrap(Arc<Probe>);
    impl SharedActor for Wrap {
        type Msg = M;
        fn is_thread_safe(m: &M) -> bool {
            Probe::is_thread_safe(m)
        }
        fn handle_shared(&self, m: M) {
            self.0.handle_shared(m)
        }
        fn handle_exclusive(&mut self, _m: M) {}
    }
    let w = system.spawn_shared(Wrap(counters.clone()), &pool, Fifo::PerActor);
    w.tell(M::Meet).unwrap();
    w.tell(M::Meet).unwrap();
    w.stop();
    w.join_timeout(T).unwrap();
    assert_eq!(
        counters.met_at_barrier.load(Ordering::SeqCst),
        2,
        "thread-safe handlers did not overlap"
    );
    assert_eq!(counters.max_parallel.load(Ordering::SeqCst), 2);
}

#[test]
fn exclusive_handlers_never_overlap_and_order_is_kept() {
    let system = ActorSystem::builder().threads(2).build();
    let pool = system.work_stealing_pool("adv", 2);
    let counters = Arc::new(std::sync::Mutex::new(None::<Totals>));
    struct Report(Probe, Arc<std::sync::Mutex<Option<Totals>>>);
    impl Drop for Report {
        fn drop(&mut self) {
            *self.1.lock().unwrap() = Some((
                self.0.violations.load(Ordering::SeqCst),
                self.0.stale_reads.load(Ordering::SeqCst),
                self.0.shared_done.load(Ordering::SeqCst),
                self.0.exclusive_done,
                self.0.max_parallel.load(Ordering::SeqCst),
            ));
        }
    }
    impl SharedActor for Report {
        type Msg = M;
        fn is_thread_safe(m: &M) -> bool {
            Probe::is_thread_safe(m)
        }
        fn handle_shared(&self, m: M) {
            self.0.handle_shared(m)
        }
        fn handle_exclusive(&mut self, m: M) {
            self.0.handle_exclusive(m)
        }
    }
    let r = system.spawn_shared(
        Report(Probe::default(), counters.clone()),
        &pool,
        Fifo::PerActor,
    );
    let mut sets = 0;
    for round in 1..=500u64 {
        r.tell(M::Set(round)).unwrap();
        sets += 1;
        for _ in 0..10 {
            r.tell(M::Read(round)).unwrap();
        }
    }
    r.stop();
    assert_eq!(r.join_timeout(T), Some(StopReason::Normal));
    let (violations, stale, shared, exclusive, _max) =
        counters.lock().unwrap().expect("actor dropped");
    assert_eq!(
        violations, 0,
        "an exclusive handler overlapped another handler"
    );
    assert_eq!(
        stale, 0,
        "a read started before the Set sent ahead of it had finished"
    );
    assert_eq!((shared, exclusive), (5000, sets));
}

#[test]
fn group_fifo_orders_messages_across_actors() {
    struct Gate {
        log: Arc<std::sync::Mutex<Vec<&'static str>>>,
        release: crossbeam_channel::Receiver<()>,
    }
    enum G {
        Block,
        Note(&'static str),
    }
    impl SharedActor for Gate {
        type Msg = G;
        fn is_thread_safe(m: &G) -> bool {
            matches!(m, G::Note(_))
        }
        fn handle_shared(&self, m: G) {
            if let G::Note(s) = m {
                self.log.lock().unwrap().push(s);
            }
        }
        fn handle_exclusive(&mut self, m: G) {
            if let G::Block = m {
                let _ = self.release.recv_timeout(T);
                self.log.lock().unwrap().push("a-unblocked");
            }
        }
    }
    let system = ActorSystem::builder().threads(2).build();
    let pool = system.work_stealing_pool("adv", 2);
    let group = Coordinator::new();
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (tx, rx) = crossbeam_channel::unbounded();
    let a = system.spawn_shared(
        Gate {
            log: log.clone(),
            release: rx.clone(),
        },
        &pool,
        Fifo::Group(group.clone()),
    );
    let b = system.spawn_shared(
        Gate {
            log: log.clone(),
            release: rx,
        },
        &pool,
        Fifo::Group(group),
    );
    a.tell(G::Block).unwrap();
    b.tell(G::Note("b-after-a-block")).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        log.lock().unwrap().is_empty(),
        "b's message started before a's earlier exclusive one finished"
    );
    tx.send(()).unwrap();
    a.stop();
    b.stop();
    a.join_timeout(T).unwrap();
    b.join_timeout(T).unwrap();
    assert_eq!(*log.lock().unwrap(), vec!["a-unblocked", "b-after-a-block"]);
}

#[test]
fn panic_stops_only_that_shared_actor() {
    let system = ActorSystem::builder().threads(2).build();
    let pool = system.work_stealing_pool("adv", 2);
    let bad = system.spawn_shared(Probe::default(), &pool, Fifo::PerActor);
    let good = system.spawn_shared(Probe::default(), &pool, Fifo::PerActor);
    bad.tell(M::Panic).unwrap();
    assert!(matches!(bad.join_timeout(T), Some(StopReason::Panicked(_))));
    assert!(
        bad.tell(M::Read(0)).is_err(),
        "a failed actor refuses messages"
    );
    for _ in 0..100 {
        good.tell(M::Read(0)).unwrap();
    }
    good.stop();
    assert_eq!(good.join_timeout(T), Some(StopReason::Normal));
}

#[test]
fn shutdown_drains_shared_actors() {
    let system = ActorSystem::builder().threads(2).build();
    let pool = system.work_stealing_pool("adv", 2);
    let r = system.spawn_shared(Probe::default(), &pool, Fifo::PerActor);
    for i in 0..1000 {
        r.tell(if i % 10 == 0 { M::Set(0) } else { M::Read(0) })
            .unwrap();
    }
    let report = system.shutdown();
    assert_eq!(report.messages_dropped, 0);
    assert_eq!(report.actors_stopped, 1);
    assert_eq!(r.join_timeout(T), Some(StopReason::Shutdown));
    assert!(r.tell(M::Read(0)).is_err());
}
