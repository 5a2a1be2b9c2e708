//! The registry: names, groups, dispatch, errors, and cleanup through
//! monitors under concurrency (exact counts, no stale entries).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe::registry::Reader;
use troupe::registry::{RegisterError, Registry};
use troupe::{Actor, ActorRef, ActorSystem, Context, SendError, StopReason};

// Generous: under ASan on a loaded machine 20 s was once too short for
// thousands of panicking actors to stop.
const T: Duration = Duration::from_secs(60);

#[derive(Clone)]
enum M {
    Ping,
    Crash,
    Stop,
}

struct Member {
    pings: Arc<AtomicU64>,
}

impl Actor for Member {
    type Msg = M;
    fn handle(&mut self, msg: M, ctx: &mut Context<'_, Self>) {
        match msg {
            M::Ping => {
                self.pings.fetch_add(1, Ordering::Relaxed);
            }
            M::Crash => panic!("member crashed"),
            M::Stop => ctx.stop(),
        }
    }
}

fn system() -> ActorSystem {
    ActorSystem::builder().threads(2).build()
}

fn spawn(system: &ActorSystem, pings: &Arc<AtomicU64>) -> ActorRef<Member> {
    system.spawn(Member {
        pings: pings.clone(),
    })
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + T;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn names_are_unique_and_errors_are_clear() {
    let system = system();
    let pings = Arc::new(AtomicU64::new(0));
    let reg = Registry::new();
    let a = spawn(&system, &pings);
    let b = spawn(&system, &pings);
    reg.register("a", &a).unwrap();
    assert_eq!(reg.find("a"), Some(a.clone()));
    assert_eq!(reg.reader().find("a"), Some(&a));
    // The same actor again under the same name: fine, no duplicate.
    reg.register("a", &a).unwrap();
    let err = reg.register("a", &b).unwrap_err();
    assert_eq!(
        err,
        RegisterError::NameTaken {
            name: "a".into(),
            holder: a.id()
        }
    );
    assert!(err.to_string().contains("already registered"));
    // Unknown name.
    assert!(reg.find("nobody").is_none());
    match reg.send("nobody", M::Ping) {
        Err(SendError::Closed(M::Ping)) => {}
        other => panic!("{:?}", other.map_err(|e| e.to_string())),
    }
    reg.send("a", M::Ping).unwrap();
    // An actor may hold several names.
    reg.register("a2", &a).unwrap();
    assert_eq!(reg.names_len(), 2);
    assert_eq!(reg.len(), 1);
    // Unregister.
    assert_eq!(reg.unregister("a2"), Some(a.clone()));
    assert!(reg.find("a2").is_none());
    // Sending to a dead entry: the entry is still there only until the
    // monitor runs, so hold a reader-independent check through send().
    a.stop();
    assert_eq!(a.join_timeout(T), Some(StopReason::Normal));
    match reg.send("a", M::Ping) {
        Err(SendError::Closed(_)) | Err(SendError::Stopped(_)) => {}
        Ok(()) => panic!("sent to a stopped actor"),
        Err(SendError::Full(_)) => panic!("full"),
    }
    wait_until("the entry to go", || reg.find("a").is_none());
    // A stopped actor cannot be registered.
    assert_eq!(
        reg.register("late", &a),
        Err(RegisterError::ActorStopped(a.id()))
    );
    // The name is free again.
    reg.register("a", &b).unwrap();
    wait_until("the ping", || pings.load(Ordering::Relaxed) == 1);
    system.shutdown();
}

#[test]
fn stopped_holder_gives_its_name_up_at_once() {
    let system = system();
    let pings = Arc::new(AtomicU64::new(0));
    let reg = Registry::new();
    let a = spawn(&system, &pings);
    reg.register("x", &a).unwrap();
    a.stop(); // refuses messages at once, even before its monitor runs
    let b = spawn(&system, &pings);
    reg.register("x", &b).unwrap();
    assert_eq!(reg.find("x"), Some(b.clone()));
    a.join_timeout(T).unwrap();
    // a's monitor did not remove b's entry.
    assert_eq!(reg.find("x"), Some(b));
    system.shutdown();
}

#[test]
fn groups_and_dispatch() {
    let system = system();
    let pings = Arc::new(AtomicU64::new(0));
    let reg = Registry::new();
    let actors: Vec<_> = (0..100).map(|_| spawn(&system, &pings)).collect();
    for (i, a) in actors.iter().enumerate() {
        if i % 2 == 0 {
            reg.register(format!("m{i}"), a).unwrap();
        }
        assert!(reg.join_group(&format!("g{}", i % 10), a));
        if i < 5 {
            assert!(reg.join_group("first", a));
        }
    }
    assert!(!reg.join_group("g0", &actors[0]), "already a member");
    assert_eq!(reg.len(), 100);
    assert_eq!(reg.group_len("g3"), 10);
    assert_eq!(reg.group_len("first"), 5);
    let mut m: Vec<_> = reg.members("g3").iter().map(|a| a.id()).collect();
    m.sort();
    let mut want: Vec<_> = (0..100)
        .filter(|i| i % 10 == 3)
        .map(|i| actors[i].id())
        .collect();
    want.sort();
    assert_eq!(m, want);
    assert_eq!(reg.groups().len(), 11);
    assert!(reg.members("nope").is_empty());
    assert_eq!(reg.dispatch_group("nope", M::Ping), 0);

    assert_eq!(reg.dispatch_group("g3", M::Ping), 10);
    assert_eq!(reg.dispatch_group("first", M::Ping), 5);
    assert_eq!(reg.dispatch(M::Ping), 100);
    wait_until("deliveries", || pings.load(Ordering::Relaxed) == 115);
    assert!(reg.leave_group("g3", &actors[3]));
    assert!(!reg.leave_group("g3", &actors[3]));
    assert_eq!(reg.group_len("g3"), 9);
    assert_eq!(reg.dispatch_group("g3", M::Ping), 9);
    wait_until("deliveries", || pings.load(Ordering::Relaxed) == 124);
    system.shutdown();
}

#[test]
fn dead_actors_leave_after_panics_and_normal_stops() {
    let system = system();
    let pings = Arc::new(AtomicU64::new(0));
    let reg = Registry::new();
    let actors: Vec<_> = (0..200).map(|_| spawn(&system, &pings)).collect();
    for (i, a) in actors.iter().enumerate() {
        reg.register(format!("m{i}"), a).unwrap();
        reg.join_group("all", a);
        reg.join_group(if i % 2 == 0 { "even" } else { "odd" }, a);
    }
    for (i, a) in actors.iter().enumerate() {
        a.tell(if i % 2 == 0 { M::Crash } else { M::Stop }).unwrap();
    }
    for a in &actors {
        a.join_timeout(T).unwrap();
    }
    wait_until("cleanup", || reg.is_empty());
    assert_eq!(reg.names_len(), 0);
    assert_eq!(reg.group_len("all"), 0);
    assert_eq!(reg.group_len("even"), 0);
    assert!(reg.groups().is_empty());
    assert_eq!(reg.dispatch(M::Ping), 0);
    system.shutdown();
}

/// Thousands of actors die (half by panic) while two other threads look
/// names up and dispatch; at the end nothing is left, every lookup found
/// either nothing or the right actor, and no dispatch reached more actors
/// than were alive.
#[test]
fn cleanup_under_concurrent_lookups_and_dispatch() {
    let system = system();
    let pings = Arc::new(AtomicU64::new(0));
    let reg = Registry::new();
    let n = 4_000;
    let actors: Vec<_> = (0..n).map(|_| spawn(&system, &pings)).collect();
    for (i, a) in actors.iter().enumerate() {
        reg.register(format!("m{i}"), a).unwrap();
        reg.join_group(&format!("g{}", i % 10), a);
    }
    let done = Arc::new(AtomicBool::new(false));
    let ids: Arc<Vec<_>> = Arc::new(actors.iter().map(|a| a.id()).collect());
    let finder = {
        let (reg, done, ids) = (reg.clone(), done.clone(), ids.clone());
        std::thread::spawn(move || {
            let mut wrong = 0u64;
            let mut lookups = 0u64;
            while !done.load(Ordering::Relaxed) {
                let r: Reader<'_, Member> = reg.reader();
                for i in (0..n).step_by(7) {
                    if let Some(a) = r.find(&format!("m{i}")) {
                        wrong += (a.id() != ids[i]) as u64;
                    }
                    lookups += 1;
                }
            }
            (wrong, lookups)
        })
    };
    let dispatcher = {
        let (reg, done) = (reg.clone(), done.clone());
        std::thread::spawn(move || {
            let mut max = 0;
            while !done.load(Ordering::Relaxed) {
                max = max.max(reg.dispatch_group("g3", M::Ping));
                max = max.max(reg.dispatch(M::Ping) / 10);
            }
            max
        })
    };
    for (i, a) in actors.iter().enumerate() {
        let _ = a.tell(if i % 2 == 0 { M::Crash } else { M::Stop });
    }
    for a in &actors {
        a.join_timeout(T).unwrap();
    }
    wait_until("cleanup", || reg.is_empty() && reg.names_len() == 0);
    done.store(true, Ordering::Relaxed);
    let (wrong, lookups) = finder.join().unwrap();
    let max = dispatcher.join().unwrap();
    assert_eq!(wrong, 0);
    assert!(lookups > 0);
    assert!(max <= n / 10);
    for g in 0..10 {
        assert_eq!(reg.group_len(&format!("g{g}")), 0);
    }
    for i in 0..n {
        assert!(reg.find(&format!("m{i}")).is_none());
    }
    system.shutdown();
}

/// Register/die cycles reusing 1,000 names: nothing stale remains. 100,000
/// cycles in release builds, 20,000 in debug builds (to stay within seconds).
#[test]
fn no_stale_entry_after_many_register_die_cycles() {
    let cycles = if cfg!(debug_assertions) {
        20_000
    } else {
        100_000
    };
    let system = system();
    let pings = Arc::new(AtomicU64::new(0));
    let reg = Registry::new();
    let mut last = Vec::new();
    for i in 0..cycles {
        let a = spawn(&system, &pings);
        // The previous holder of this name was stopped (it refuses messages),
        // so the name is free even if its monitor has not run yet.
        reg.register(format!("n{}", i % 1_000), &a).unwrap();
        reg.join_group(&format!("g{}", i % 7), &a);
        if i % 3 == 0 {
            a.tell(M::Crash).unwrap();
            a.stop();
        } else {
            a.stop();
        }
        if i + 1_000 >= cycles {
            last.push(a);
        }
    }
    for a in &last {
        a.join_timeout(T).unwrap();
    }
    wait_until("every actor stopped", || system.live_actors() == 0);
    wait_until("cleanup", || reg.is_empty());
    assert_eq!(reg.names_len(), 0);
    for g in 0..7 {
        assert_eq!(reg.group_len(&format!("g{g}")), 0);
    }
    for i in 0..1_000 {
        assert!(reg.find(&format!("n{i}")).is_none());
    }
    system.shutdown();
}

fn ids(actors: &[ActorRef<Member>]) -> std::collections::BTreeSet<u64> {
    actors.iter().map(|a| a.id().as_u64()).collect()
}

/// An actor with several names and groups: each can go on its own, the rest
/// stay, and its stop removes all of them.
#[test]
fn several_names_and_groups_per_actor() {
    let system = system();
    let pings = Arc::new(AtomicU64::new(0));
    let reg = Registry::new();
    let a = spawn(&system, &pings);
    let b = spawn(&system, &pings);
    for n in ["a1", "a2", "a3"] {
        reg.register(n, &a).unwrap();
    }
    for g in ["g1", "g2"] {
        assert!(reg.join_group(g, &a));
        assert!(reg.join_group(g, &b));
    }
    assert!(!reg.join_group("g1", &a), "joined twice");
    assert_eq!((reg.len(), reg.names_len()), (2, 3));

    assert_eq!(reg.unregister("a2"), Some(a.clone()));
    assert_eq!(reg.unregister("a2"), None);
    assert!(reg.find("a2").is_none());
    assert_eq!(reg.find("a1"), Some(a.clone()));
    assert_eq!(reg.find("a3"), Some(a.clone()));
    assert!(reg.leave_group("g1", &a));
    assert!(!reg.leave_group("g1", &a));
    assert_eq!(reg.members("g1"), vec![b.clone()]);
    assert_eq!(reg.dispatch_group("g2", M::Ping), 2);
    assert_eq!(reg.dispatch(M::Ping), 2);

    // `b` leaves its last group: it is no longer registered at all.
    assert!(reg.leave_group("g1", &b));
    assert!(reg.leave_group("g2", &b));
    assert_eq!(reg.len(), 1);
    assert_eq!(reg.dispatch(M::Ping), 1);

    a.stop();
    a.join_timeout(T).unwrap();
    wait_until("cleanup", || reg.is_empty());
    assert_eq!(reg.names_len(), 0);
    assert!(reg.find("a1").is_none() && reg.find("a3").is_none());
    assert_eq!(reg.group_len("g2"), 0);
    assert!(reg.groups().is_empty());
    // 3 pings to `a` and 2 to `b` were accepted; all were handled.
    wait_until("pings", || pings.load(Ordering::Relaxed) == 5);
    b.stop();
    b.join_timeout(T).unwrap();
    system.shutdown();
}

/// Groups stay dense and exact through joins and leaves in any order (each
/// leave moves the last member into the hole).
#[test]
fn group_membership_stays_exact_through_joins_and_leaves() {
    let system = system();
    let pings = Arc::new(AtomicU64::new(0));
    let reg = Registry::new();
    let actors: Vec<_> = (0..120).map(|_| spawn(&system, &pings)).collect();
    let groups = ["g0", "g1", "g2", "g3", "g4"];
    let mut expected: Vec<Vec<ActorRef<Member>>> = vec![Vec::new(); groups.len()];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for step in 0..4_000 {
        let a = &actors[(next() % actors.len() as u64) as usize];
        let g = (next() % groups.len() as u64) as usize;
        let member = expected[g].contains(a);
        if next() % 2 == 0 {
            assert_eq!(reg.join_group(groups[g], a), !member, "step {step}");
            if !member {
                expected[g].push(a.clone());
            }
        } else {
            assert_eq!(reg.leave_group(groups[g], a), member, "step {step}");
            expected[g].retain(|x| x != a);
        }
        if step % 97 == 0 {
            for (g, name) in groups.iter().enumerate() {
                assert_eq!(ids(&reg.members(name)), ids(&expected[g]), "step {step}");
            }
        }
    }
    // Stopping a third of the actors removes exactly them.
    for a in actors.iter().step_by(3) {
        a.stop();
        a.join_timeout(T).unwrap();
    }
    let stopped = |a: &ActorRef<Member>| !a.is_alive();
    let live_members = expected
        .iter()
        .flatten()
        .filter(|a| !stopped(a))
        .map(|a| a.id().as_u64())
        .collect::<std::collections::BTreeSet<_>>();
    wait_until("cleanup", || reg.len() == live_members.len());
    for (g, name) in groups.iter().enumerate() {
        let want: Vec<_> = expected[g]
            .iter()
            .filter(|a| !stopped(a))
            .cloned()
            .collect();
        assert_eq!(ids(&reg.members(name)), ids(&want));
        assert_eq!(reg.dispatch_group(name, M::Ping), want.len());
    }
    system.shutdown();
}

/// Names registered and unregistered over and over (their records reused)
/// while another thread looks them up: a lookup finds the actor that holds
/// that name, or nothing, never another name's actor.
#[test]
fn reused_name_records_never_answer_for_another_name() {
    let system = system();
    let pings = Arc::new(AtomicU64::new(0));
    let reg = Registry::new();
    let actors: Arc<Vec<_>> = Arc::new((0..64).map(|_| spawn(&system, &pings)).collect());
    let done = Arc::new(AtomicBool::new(false));
    let finder = {
        let (reg, done, actors) = (reg.clone(), done.clone(), actors.clone());
        std::thread::spawn(move || {
            let (mut wrong, mut found) = (0u64, 0u64);
            while !done.load(Ordering::Relaxed) {
                let r: Reader<'_, Member> = reg.reader();
                for i in 0..actors.len() {
                    if let Some(a) = r.find(&format!("name-{i}")) {
                        found += 1;
                        wrong += (*a != actors[i]) as u64;
                    }
                }
            }
            (wrong, found)
        })
    };
    let rounds = if cfg!(debug_assertions) {
        2_000
    } else {
        20_000
    };
    for round in 0..rounds {
        for (i, a) in actors.iter().enumerate() {
            if (i + round) % 3 == 0 {
                reg.register(format!("name-{i}"), a).unwrap();
            }
        }
        for i in 0..actors.len() {
            if (i + round) % 2 == 0 {
                reg.unregister(&format!("name-{i}"));
            }
        }
    }
    done.store(true, Ordering::Relaxed);
    let (wrong, found) = finder.join().unwrap();
    assert_eq!(wrong, 0, "a lookup answered with another name's actor");
    assert!(found > 0);
    for (i, a) in actors.iter().enumerate() {
        if let Some(found) = reg.find(&format!("name-{i}")) {
            assert_eq!(&found, a);
        }
    }
    system.shutdown();
}

/// Dispatch never blocks on a full `Block` mailbox (it skips that member),
/// so a plain thread dispatching cannot hold up the cleanup of the group.
#[test]
fn dispatch_skips_a_full_blocking_mailbox_instead_of_waiting() {
    use troupe::{MailboxConfig, Overflow, SpawnOptions};
    let system = system();
    let pings = Arc::new(AtomicU64::new(0));
    let reg = Registry::new();
    // A member busy in a handler until `open`, with a full mailbox of 1.
    let (open_tx, open_rx) = std::sync::mpsc::channel::<()>();
    let open_rx = Arc::new(std::sync::Mutex::new(open_rx));
    struct Busy {
        open: Arc<std::sync::Mutex<std::sync::mpsc::Receiver<()>>>,
        pings: Arc<AtomicU64>,
    }
    impl Actor for Busy {
        type Msg = M;
        fn handle(&mut self, msg: M, _: &mut Context<'_, Self>) {
            if let M::Crash = msg {
                let _ = self.open.lock().unwrap().recv();
            }
            self.pings.fetch_add(1, Ordering::Relaxed);
        }
    }
    let busy = system.spawn_with(
        Busy {
            open: open_rx,
            pings: pings.clone(),
        },
        SpawnOptions::default().mailbox(MailboxConfig::bounded(1, Overflow::Block)),
    );
    let busy_reg: Registry<Busy> = Registry::new();
    assert!(busy_reg.join_group("g", &busy));
    busy.tell(M::Crash).unwrap(); // taken at once: the handler waits on `open`
    wait_until("busy handler", || busy.mailbox_len() == 0);
    busy.tell(M::Ping).unwrap(); // fills the mailbox
    let t0 = Instant::now();
    assert_eq!(busy_reg.dispatch_group("g", M::Ping), 0);
    assert_eq!(busy_reg.dispatch(M::Ping), 0);
    assert!(t0.elapsed() < Duration::from_secs(5), "dispatch waited");
    open_tx.send(()).unwrap();
    wait_until("handled", || pings.load(Ordering::Relaxed) == 2);
    // A plain member beside it still gets its message.
    let plain = spawn(&system, &pings);
    assert!(reg.join_group("g", &plain));
    assert_eq!(reg.dispatch_group("g", M::Ping), 1);
    busy.stop();
    system.shutdown();
}

/// Once `join` returns, the stopped actor's monitors have run: the registry
/// no longer lists it (no waiting needed).
#[test]
fn join_returns_after_the_registry_forgot_the_actor() {
    let system = system();
    let pings = Arc::new(AtomicU64::new(0));
    let reg = Registry::new();
    for i in 0..500 {
        let a = spawn(&system, &pings);
        reg.register("it", &a).unwrap();
        reg.join_group("all", &a);
        if i % 2 == 0 {
            a.stop();
        } else {
            a.tell(M::Crash).unwrap();
        }
        a.join_timeout(T).unwrap();
        assert!(reg.find("it").is_none(), "round {i}: name still there");
        assert_eq!(reg.group_len("all"), 0, "round {i}");
        assert!(reg.is_empty(), "round {i}");
    }
    system.shutdown();
}
