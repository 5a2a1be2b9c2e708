//! The `tracing` output users see (issue 14, item 6): a span per handled
//! message for actors spawned with `trace_messages`, at TRACE, named
//! `handle` with the actor's id, name and message type; lifecycle events
//! (spawn, stop with its reason, a supervisor's restart) at DEBUG.
//!
//! One test in its own binary: it installs a global subscriber, which
//! every worker thread sees.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context as LayerContext, Layer, SubscriberExt};
use troupe::supervision::{ChildSpec, Strategy, SupervisorSpec};
use troupe::{Actor, ActorSystem, Context, SpawnOptions, StopReason};

/// Every span opened and event emitted, as `LEVEL kind name: k=v k=v`.
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
    fn on_new_span(&self, attrs: &Attributes<'_>, _id: &Id, _ctx: LayerContext<'_, S>) {
        let m = attrs.metadata();
        let mut f = Fields(format!("{} span {}:", m.level(), m.name()));
        attrs.record(&mut f);
        self.0.lock().unwrap().push(f.0);
    }

    fn on_event(&self, event: &Event<'_>, _ctx: LayerContext<'_, S>) {
        let mut f = Fields(format!("{} event:", event.metadata().level()));
        event.record(&mut f);
        self.0.lock().unwrap().push(f.0);
    }
}

impl Recorder {
    fn lines(&self, pat: &[&str]) -> Vec<String> {
        let all = self.0.lock().unwrap();
        all.iter()
            .filter(|l| pat.iter().all(|p| l.contains(p)))
            .cloned()
            .collect()
    }
}

struct Echo;
impl Actor for Echo {
    type Msg = u64;
    fn handle(&mut self, n: u64, _: &mut Context<'_, Self>) {
        if n == 99 {
            panic!("echo asked to fail");
        }
    }
}

#[test]
fn spans_per_message_and_lifecycle_events() {
    let rec = Recorder::default();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(rec.clone()))
        .expect("the only subscriber in this test binary");
    let t = Duration::from_secs(10);
    let system = ActorSystem::builder().threads(2).build();

    let traced = system.spawn_with(
        Echo,
        SpawnOptions::new().name("traced").trace_messages(true),
    );
    let quiet = system.spawn_with(Echo, SpawnOptions::new().name("quiet"));
    for n in 0..3 {
        traced.tell(n).unwrap();
        quiet.tell(n).unwrap();
    }
    traced.stop();
    quiet.stop();
    assert_eq!(traced.join_timeout(t), Some(StopReason::Normal));
    assert_eq!(quiet.join_timeout(t), Some(StopReason::Normal));

    // One TRACE span per handled message of the traced actor, none for the
    // other; each names the actor and the message type.
    let spans = rec.lines(&["span handle:"]);
    assert_eq!(spans.len(), 3, "{spans:#?}");
    for s in &spans {
        assert!(s.starts_with("TRACE"), "{s}");
        assert!(s.contains("name=traced"), "{s}");
        assert!(s.contains("msg=u64"), "{s}");
        assert!(s.contains(&format!("actor={}", traced.id())), "{s}");
    }
    // Lifecycle at DEBUG: spawned, stopped with the reason.
    for who in ["traced", "quiet"] {
        let name = format!("name={who}");
        let spawned = rec.lines(&["DEBUG event:", "actor spawned", &name]);
        assert_eq!(spawned.len(), 1, "{who}: {spawned:#?}");
        let stopped = rec.lines(&[
            "DEBUG event:",
            "actor stopped",
            &name,
            "reason=stopped normally",
        ]);
        assert_eq!(stopped.len(), 1, "{who}: {:#?}", rec.lines(&[&name]));
    }

    // A supervisor's restart, at DEBUG, with the child and the reason; the
    // failure itself at ERROR.
    let spec = ChildSpec::new("echo-child", || Echo);
    let child = spec.supervised_ref::<Echo>().unwrap();
    let sup = SupervisorSpec::new(Strategy::OneForOne)
        .child(spec)
        .spawn(&system);
    let first = child.current().unwrap();
    first.tell(99).unwrap();
    assert!(matches!(
        first.join_timeout(t),
        Some(StopReason::Panicked(_))
    ));
    assert!(child.wait_generation(1, t).is_some(), "restarted");
    let restarts = rec.lines(&["DEBUG event:", "restarting child", "echo-child"]);
    assert_eq!(restarts.len(), 1, "{:#?}", rec.lines(&["echo-child"]));
    assert!(
        restarts[0].contains("reason=panicked: echo asked to fail"),
        "{}",
        restarts[0]
    );
    assert!(!rec.lines(&["ERROR event:", "actor failed"]).is_empty());
    assert!(rec
        .lines(&[Level::TRACE.as_str(), "span handle:", "echo-child"])
        .is_empty());
    sup.stop();
    sup.join_timeout(t).unwrap();
    system.shutdown();
}
