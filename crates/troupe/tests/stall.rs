//! Stall detection (issue 41, item 3): a handler running past its
//! threshold is reported once, and once more when it returns; an actor's
//! own threshold overrides the system's; off (the default) there is no
//! watchdog thread; the workers' view shows what each worker runs.
//!
//! One global `tracing` subscriber records the watchdogs' events (they
//! come from the watchdog threads); each test names its actors uniquely
//! and counts only the events that name them.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context as LayerContext, Layer, SubscriberExt};
use troupe::{Actor, ActorSystem, Context, ReplyTo, SpawnOptions};

const T: Duration = Duration::from_secs(10);

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={:?}", field.name(), value);
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = write!(self.0, " {}={}", field.name(), value);
    }
}

impl<S: Subscriber> Layer<S> for Recorder {
    fn on_event(&self, event: &Event<'_>, _ctx: LayerContext<'_, S>) {
        if event.metadata().target() != "troupe::stall" {
            return;
        }
        let mut f = Fields(format!("{}:", event.metadata().level()));
        event.record(&mut f);
        self.0.lock().unwrap().push(f.0);
    }
}

/// The stall events that name actor `name`: (stalled, returned).
fn events(name: &str) -> (Vec<String>, Vec<String>) {
    static REC: OnceLock<Recorder> = OnceLock::new();
    let rec = REC.get_or_init(|| {
        let rec = Recorder::default();
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(rec.clone()))
            .expect("the only subscriber in this test binary");
        rec
    });
    let all = rec.0.lock().unwrap();
    let mine = |what: &str| {
        all.iter()
            .filter(|l| l.contains(&format!(" name={name} ")) && l.contains(what))
            .cloned()
            .collect::<Vec<_>>()
    };
    (
        mine("handler running longer than its stall threshold"),
        mine("stalled handler returned"),
    )
}

/// Sleeps as long as it is told, then replies.
struct Sleeper;

enum Nap {
    For(Duration, ReplyTo<()>),
    Quick,
}

impl Actor for Sleeper {
    type Msg = Nap;
    fn handle(&mut self, m: Nap, _: &mut Context<'_, Self>) {
        match m {
            Nap::For(d, r) => {
                std::thread::sleep(d);
                r.reply(());
            }
            Nap::Quick => {}
        }
    }
}

/// Waits until `f` holds (at most 10 s).
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + T;
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_stalled_handler_is_reported_once_and_again_when_it_returns() {
    events("");
    // Well above what a preempted worker on a loaded machine may lose.
    let threshold = Duration::from_millis(150);
    let system = ActorSystem::builder()
        .threads(2)
        .name("stall-once")
        .stall_threshold(threshold)
        .build();
    let a = system.spawn_with(Sleeper, SpawnOptions::new().name("stall-once-sleeper"));
    // Many quick handlers: none is a stall.
    for _ in 0..10_000 {
        a.tell(Nap::Quick).unwrap();
    }
    let nap = Duration::from_millis(600);
    a.ask(|r| Nap::For(nap, r), T).unwrap();
    for _ in 0..1_000 {
        a.tell(Nap::Quick).unwrap();
    }
    eventually("the return report", || system.stalls().returned == 1);
    // A few more scans: nothing more is reported.
    std::thread::sleep(threshold * 3);
    let stalls = system.stalls();
    assert_eq!((stalls.detected, stalls.returned), (1, 1), "{stalls:?}");
    assert!(stalls.ongoing.is_empty());
    let s = &stalls.recent[0];
    assert_eq!(s.actor, a.id());
    assert_eq!(s.name.as_deref(), Some("stall-once-sleeper"));
    assert!(s.actor_type.ends_with("Sleeper"), "{}", s.actor_type);
    assert!(s.msg_type.ends_with("Nap"), "{}", s.msg_type);
    assert_eq!(s.threshold, threshold);
    assert_eq!(s.pool, "stall-once");
    assert!(s.returned);
    // Measured from the first scan that saw it, to within a scan (37 ms).
    assert!(
        s.running >= threshold && s.running <= nap + Duration::from_millis(200),
        "ran {:?}",
        s.running
    );
    let (stalled, returned) = events("stall-once-sleeper");
    assert_eq!(stalled.len(), 1, "{stalled:?}");
    assert_eq!(returned.len(), 1, "{returned:?}");
    assert!(stalled[0].starts_with("WARN:"));
    assert!(
        stalled[0].contains(&format!("actor={}", a.id())),
        "{}",
        stalled[0]
    );
    assert!(stalled[0].contains("msg_type=stall::Nap"), "{}", stalled[0]);
    assert!(returned[0].contains(" ran_ms="), "{}", returned[0]);
    assert_eq!(system.metrics().stalled_handlers, 1);
    system.shutdown();
}

#[test]
fn an_actors_own_threshold_overrides_the_systems() {
    events("");
    // Naps well apart from the thresholds: the machine may be loaded.
    let system = ActorSystem::builder()
        .threads(2)
        .name("stall-own")
        .stall_threshold(Duration::from_millis(400))
        .build();
    let strict = system.spawn_with(
        Sleeper,
        SpawnOptions::new()
            .name("stall-own-strict")
            .stall_threshold(Duration::from_millis(60)),
    );
    let lenient = system.spawn_with(
        Sleeper,
        SpawnOptions::new()
            .name("stall-own-lenient")
            .stall_threshold(Duration::from_secs(30)),
    );
    let exempt = system.spawn_with(
        Sleeper,
        SpawnOptions::new()
            .name("stall-own-exempt")
            .stall_threshold(Duration::MAX),
    );
    let plain = system.spawn_with(Sleeper, SpawnOptions::new().name("stall-own-plain"));
    let nap = |a: &troupe::ActorRef<Sleeper>, ms| {
        a.ask(|r| Nap::For(Duration::from_millis(ms), r), T)
            .unwrap()
    };
    // Past the strict threshold, short of the system's.
    nap(&strict, 250);
    nap(&plain, 150);
    // Past the system's threshold, short of their own.
    nap(&lenient, 700);
    nap(&exempt, 700);
    eventually("the strict actor's return", || {
        system.stalls().returned >= 1
    });
    std::thread::sleep(Duration::from_millis(100));
    let stalls = system.stalls();
    assert_eq!((stalls.detected, stalls.returned), (1, 1), "{stalls:?}");
    assert_eq!(stalls.recent[0].actor, strict.id());
    assert_eq!(stalls.recent[0].threshold, Duration::from_millis(60));
    for quiet in ["stall-own-lenient", "stall-own-exempt", "stall-own-plain"] {
        assert_eq!(events(quiet), (vec![], vec![]), "{quiet}");
    }
    assert_eq!(events("stall-own-strict").0.len(), 1);
    system.shutdown();
}

/// The names of this process's threads (Linux).
fn thread_names() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    dir.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
        .map(|s| s.trim().to_owned())
        .collect()
}

#[test]
#[cfg(target_os = "linux")]
fn off_by_default_there_is_no_watchdog() {
    let off = ActorSystem::builder().threads(1).name("stalloff").build();
    let a = off.spawn(Sleeper);
    a.ask(|r| Nap::For(Duration::from_millis(30), r), T)
        .unwrap();
    eventually("the worker thread", || {
        thread_names().iter().any(|n| n == "stalloff-0")
    });
    assert!(!thread_names().iter().any(|n| n == "stalloff-watch"));
    assert_eq!(off.stalls(), troupe::observability::Stalls::default());
    assert!(off.workers().is_empty());
    // The same system with the detector on has its thread: the check above
    // can fail.
    let on = ActorSystem::builder()
        .threads(1)
        .name("stallon")
        .stall_threshold(Duration::from_millis(10))
        .build();
    // A new thread names itself once it runs.
    eventually("the watchdog thread", || {
        thread_names().iter().any(|n| n == "stallon-watch")
    });
    on.shutdown();
    // Joined by the shutdown.
    assert!(!thread_names().iter().any(|n| n == "stallon-watch"));
    off.shutdown();
}

#[test]
fn the_workers_view_shows_the_running_handler() {
    let system = ActorSystem::builder()
        .threads(2)
        .name("stall-view")
        .stall_threshold(Duration::from_millis(40))
        .build();
    let a = system.spawn_with(Sleeper, SpawnOptions::new().name("stall-view-sleeper"));
    let asker = {
        let a = a.clone();
        std::thread::spawn(move || a.ask(|r| Nap::For(Duration::from_millis(400), r), T))
    };
    let mut seen = None;
    eventually("the sleeper in the workers' view, stalled", || {
        let workers = system.workers();
        assert_eq!(workers.len(), 2);
        seen = workers.into_iter().find(|w| {
            w.running
                .as_ref()
                .is_some_and(|r| r.stalled && r.running_for >= Duration::from_millis(40))
        });
        seen.is_some()
    });
    let w = seen.unwrap();
    assert_eq!(w.pool, "stall-view");
    let r = w.running.unwrap();
    assert_eq!(r.actor, a.id());
    assert_eq!(r.name.as_deref(), Some("stall-view-sleeper"));
    assert_eq!(r.actor_type, "Sleeper");
    assert_eq!(r.msg_type, "Nap");
    assert_eq!(system.stalls().ongoing.len(), 1);
    asker.join().unwrap().unwrap();
    eventually("both workers idle", || {
        system.workers().iter().all(|w| w.running.is_none())
    });
    system.shutdown();
}
