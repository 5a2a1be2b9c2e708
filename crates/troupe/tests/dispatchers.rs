//! Each dispatcher kind proves its defining property, and keeps the core
//! guarantees (exact counts, FIFO per pair, panic isolation, shutdown).

use std::collections::HashSet;
use std::sync::{Arc, Barrier};
use std::thread::ThreadId;
use std::time::Duration;
use troupe::dispatcher::{Dispatcher, DispatcherKind};
use troupe::{Actor, ActorSystem, Context, ReplyTo, SpawnOptions, StopReason};

const T: Duration = Duration::from_secs(10);

/// Records the thread of every handler call.
struct Where {
    threads: Vec<ThreadId>,
    names: HashSet<String>,
}

enum W {
    Work,
    Report(ReplyTo<(Vec<ThreadId>, HashSet<String>)>),
    Panic,
}

impl Actor for Where {
    type Msg = W;
    fn handle(&mut self, msg: W, _ctx: &mut Context<'_, Self>) {
        match msg {
            W::Work => {
                self.threads.push(std::thread::current().id());
                self.names
                    .insert(std::thread::current().name().unwrap_or("").to_string());
            }
            W::Report(r) => {
                r.reply((
                    std::mem::take(&mut self.threads),
                    std::mem::take(&mut self.names),
                ));
            }
            W::Panic => panic!("dedicated actor failed"),
        }
    }
}

fn where_() -> Where {
    Where {
        threads: Vec::new(),
        names: HashSet::new(),
    }
}

/// Keeps the default pool's workers busy and moving, so an actor that could
/// migrate would.
fn churn(system: &ActorSystem) {
    struct Spin(u32);
    impl Actor for Spin {
        type Msg = ();
        fn handle(&mut self, _: (), ctx: &mut Context<'_, Self>) {
            self.0 += 1;
            if self.0 < 2_000 {
                ctx.myself().tell(()).unwrap();
            } else {
                ctx.stop();
            }
        }
    }
    for _ in 0..4 {
        system.spawn(Spin(0)).tell(()).unwrap();
    }
}

#[test]
fn dedicated_thread_is_one_thread_for_the_actors_life() {
    let system = ActorSystem::builder().threads(2).build();
    let a = system.spawn_with(
        where_(),
        SpawnOptions::new()
            .dedicated_thread()
            .thread_name("my-actor"),
    );
    let b = system.spawn_with(where_(), SpawnOptions::new().dedicated_thread());
    churn(&system);
    for _ in 0..200 {
        a.tell(W::Work).unwrap();
        b.tell(W::Work).unwrap();
        // Messages from a plain thread, and a yield so turns interleave.
        std::thread::yield_now();
    }
    let (ta, names) = a.ask(W::Report, T).unwrap();
    let (tb, _) = b.ask(W::Report, T).unwrap();
    assert_eq!(ta.len(), 200);
    assert_eq!(
        ta.iter().collect::<HashSet<_>>().len(),
        1,
        "actor a ran on several threads"
    );
    assert_eq!(
        tb.iter().collect::<HashSet<_>>().len(),
        1,
        "actor b ran on several threads"
    );
    assert_ne!(ta[0], tb[0], "two dedicated actors share a thread");
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        vec!["my-actor-0".to_string()]
    );
    // A panic stops that actor (and its thread) only.
    a.tell(W::Panic).unwrap();
    assert!(matches!(a.join_timeout(T), Some(StopReason::Panicked(_))));
    b.tell(W::Work).unwrap();
    assert_eq!(b.ask(W::Report, T).unwrap().0.len(), 1);
    let report = system.shutdown();
    assert_eq!(report.actors_unresponsive, 0);
}

#[test]
fn one_thread_dispatcher_runs_a_group_on_one_thread() {
    let system = ActorSystem::builder().threads(2).build();
    let group = system.one_thread("group");
    assert_eq!(group.kind(), &DispatcherKind::OneThread);
    let members: Vec<_> = (0..3)
        .map(|_| system.spawn_with(where_(), SpawnOptions::new().dispatcher(&group)))
        .collect();
    churn(&system);
    for _ in 0..100 {
        for m in &members {
            m.tell(W::Work).unwrap();
        }
    }
    let mut all = HashSet::new();
    for m in &members {
        let (t, _) = m.ask(W::Report, T).unwrap();
        assert_eq!(t.len(), 100);
        all.extend(t);
    }
    assert_eq!(all.len(), 1, "the group ran on {} threads", all.len());
}

/// Counts items per sender and checks their order.
struct Checker {
    next: Vec<u64>,
    violations: u64,
    total: u64,
}

enum C {
    Item(usize, u64),
    Report(ReplyTo<(u64, u64)>),
}

impl Actor for Checker {
    type Msg = C;
    fn handle(&mut self, msg: C, _ctx: &mut Context<'_, Self>) {
        match msg {
            C::Item(s, i) => {
                if self.next[s] != i {
                    self.violations += 1;
                }
                self.next[s] = i + 1;
                self.total += 1;
            }
            C::Report(r) => {
                r.reply((self.total, self.violations));
            }
        }
    }
}

/// Sender actors on `senders_on`, a checker on `checker_on`: exact and FIFO.
fn exact_fifo(system: &ActorSystem, senders_on: &Dispatcher, checker_on: &Dispatcher) {
    struct Sender {
        id: usize,
        to: troupe::ActorRef<Checker>,
    }
    impl Actor for Sender {
        type Msg = u64;
        fn handle(&mut self, n: u64, ctx: &mut Context<'_, Self>) {
            for i in 0..n {
                self.to.tell(C::Item(self.id, i)).unwrap();
            }
            ctx.stop();
        }
    }
    let checker = system.spawn_with(
        Checker {
            next: vec![0; 4],
            violations: 0,
            total: 0,
        },
        SpawnOptions::new().dispatcher(checker_on),
    );
    let senders: Vec<_> = (0..4)
        .map(|id| {
            system.spawn_with(
                Sender {
                    id,
                    to: checker.clone(),
                },
                SpawnOptions::new().dispatcher(senders_on),
            )
        })
        .collect();
    for s in &senders {
        s.tell(25_000).unwrap();
    }
    for s in &senders {
        assert_eq!(s.join_timeout(T), Some(StopReason::Normal));
    }
    assert_eq!(checker.ask(C::Report, T), Ok((100_000, 0)));
}

#[test]
fn shared_queue_and_extra_work_stealing_pools_keep_counts_and_order() {
    let system = ActorSystem::builder().threads(2).build();
    let shared = system.shared_queue_pool("shared", 2);
    let ws = system.work_stealing_pool("second", 2);
    assert_eq!(shared.threads(), 2);
    exact_fifo(&system, &shared, &shared);
    exact_fifo(&system, &ws, &shared);
    exact_fifo(&system, &system.default_dispatcher(), &ws);
    let report = system.shutdown();
    assert_eq!(report.messages_dropped, 0);
}

#[test]
fn pinned_workers_report_their_cpu() {
    let cpus = core_ids();
    let system = ActorSystem::builder().threads(1).build();
    let pinned = system.pinned_pool("pinned", &cpus);
    struct Probe;
    impl Actor for Probe {
        type Msg = ReplyTo<(Option<usize>, Option<usize>)>;
        fn handle(&mut self, r: Self::Msg, _ctx: &mut Context<'_, Self>) {
            r.reply((troupe::dispatcher::current_worker_cpu(), current_cpu()));
        }
    }
    let probes: Vec<_> = (0..8)
        .map(|_| system.spawn_with(Probe, SpawnOptions::new().dispatcher(&pinned)))
        .collect();
    for p in &probes {
        let (assigned, actual) = p.ask(|r| r, T).unwrap();
        let assigned = assigned.expect("a pinned worker knows its CPU");
        assert!(cpus.contains(&assigned));
        assert_eq!(
            actual,
            Some(assigned),
            "worker pinned to {assigned} ran on {actual:?}"
        );
    }
    // Off a pinned pool there is no pinned CPU.
    let free = system.spawn(Probe);
    assert_eq!(free.ask(|r| r, T).unwrap().0, None);
}

/// The CPU this thread runs on now (Linux `sched_getcpu`).
#[cfg(target_os = "linux")]
fn current_cpu() -> Option<usize> {
    // SAFETY: `sched_getcpu` has no preconditions; it returns -1 on error.
    let cpu = unsafe { libc::sched_getcpu() };
    (cpu >= 0).then_some(cpu as usize)
}

#[cfg(not(target_os = "linux"))]
fn current_cpu() -> Option<usize> {
    troupe::dispatcher::current_worker_cpu()
}

fn core_ids() -> Vec<usize> {
    (0..std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1))
        .collect()
}

#[test]
fn blocking_pool_runs_blocking_handlers_side_by_side_without_stalling_the_cpu_pool() {
    let system = ActorSystem::builder().threads(1).build();
    let n = troupe::dispatcher::io_pool_size(1, 1.0, 3.0, 1.0);
    assert_eq!(n, 4);
    let io = system.blocking_pool("io", n);
    struct Blocker(Arc<Barrier>);
    impl Actor for Blocker {
        type Msg = ReplyTo<bool>;
        fn handle(&mut self, r: Self::Msg, _ctx: &mut Context<'_, Self>) {
            // Only passes if all four handlers block at the same time.
            let b = self.0.clone();
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let _ = tx.send(b.wait());
            });
            r.reply(rx.recv_timeout(T).is_ok());
        }
    }
    let barrier = Arc::new(Barrier::new(4));
    let blockers: Vec<_> = (0..4)
        .map(|_| {
            system.spawn_with(
                Blocker(barrier.clone()),
                SpawnOptions::new().dispatcher(&io),
            )
        })
        .collect();
    let pending: Vec<_> = blockers.iter().map(|b| b.ask_async(|r| r)).collect();
    // Meanwhile the single CPU worker still serves ordinary actors.
    let cpu_actor = system.spawn(where_());
    cpu_actor.tell(W::Work).unwrap();
    assert_eq!(cpu_actor.ask(W::Report, T).unwrap().0.len(), 1);
    for p in pending {
        assert_eq!(p.wait_timeout(T), Ok(true));
    }
}

#[test]
fn shutdown_drains_actors_on_every_dispatcher() {
    struct Count(Arc<std::sync::atomic::AtomicUsize>);
    impl Actor for Count {
        type Msg = ();
        fn handle(&mut self, _: (), _ctx: &mut Context<'_, Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
    let system = ActorSystem::builder().threads(2).build();
    let n = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let dispatchers = [
        system.shared_queue_pool("s", 1),
        system.one_thread("g"),
        system.blocking_pool("b", 2),
        system.work_stealing_pool("w", 1),
    ];
    let mut actors =
        vec![system.spawn_with(Count(n.clone()), SpawnOptions::new().dedicated_thread())];
    for d in &dispatchers {
        actors.push(system.spawn_with(Count(n.clone()), SpawnOptions::new().dispatcher(d)));
    }
    for a in &actors {
        for _ in 0..1000 {
            a.tell(()).unwrap();
        }
    }
    let report = system.shutdown();
    assert_eq!(n.load(std::sync::atomic::Ordering::SeqCst), 5000);
    assert_eq!(report.messages_dropped, 0);
    assert_eq!(report.actors_stopped, 5);
}
