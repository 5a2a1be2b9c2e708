//! Trace context in process (feature `trace-context`): a message carries
//! the span it was sent from, and the receiver's `handle` span is its
//! child, through tell, ask and its reply, `Context::ask`, an actor that
//! does not trace its own messages, a message timer and the async bridge.
//!
//! One test in its own binary: it installs a global subscriber, which
//! every worker thread sees.
//!
//! `cargo test -p troupe --features trace-context --test trace_context`

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing::span::{Attributes, Id};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context as LayerContext, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use troupe::{
    timer, Actor, ActorRef, ActorSystem, AskError, Async, AsyncActor, AsyncContext, Context,
    ReplyTo, SpawnOptions,
};

/// A span as recorded: its name, the actor it handled for (`handle`
/// spans), its parent's id.
#[derive(Clone, Debug)]
struct Rec {
    name: &'static str,
    dest: String,
    op: String,
    parent: Option<u64>,
}

/// Events as (message, the id of the span they were in).
type Events = Arc<Mutex<Vec<(String, Option<u64>)>>>;

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<HashMap<u64, Rec>>>, Events);

struct Message<'a>(&'a mut String);
impl tracing::field::Visit for Message<'_> {
    fn record_debug(&mut self, f: &tracing::field::Field, v: &dyn std::fmt::Debug) {
        if f.name() == "message" {
            *self.0 = format!("{v:?}");
        }
    }
}

struct Dest<'a>(&'a mut Rec);
impl tracing::field::Visit for Dest<'_> {
    fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
    fn record_str(&mut self, f: &tracing::field::Field, v: &str) {
        match f.name() {
            "messaging.destination.name" => self.0.dest = v.to_string(),
            "messaging.operation.type" => self.0.op = v.to_string(),
            _ => {}
        }
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: LayerContext<'_, S>) {
        let parent = ctx
            .span(id)
            .and_then(|s| s.parent())
            .map(|p| p.id().into_u64());
        let mut rec = Rec {
            name: attrs.metadata().name(),
            dest: String::new(),
            op: String::new(),
            parent,
        };
        attrs.record(&mut Dest(&mut rec));
        self.0.lock().unwrap().insert(id.into_u64(), rec);
    }

    fn on_event(&self, event: &tracing::Event<'_>, ctx: LayerContext<'_, S>) {
        let mut msg = String::new();
        event.record(&mut Message(&mut msg));
        let span = ctx.event_span(event).map(|s| s.id().into_u64());
        self.1.lock().unwrap().push((msg, span));
    }
}

impl Recorder {
    /// The `handle` spans of actor `dest`, with their parents' labels
    /// (`request` or `handle:<actor>`).
    fn parents_of(&self, dest: &str) -> Vec<String> {
        let all = self.0.lock().unwrap();
        let label = |id: Option<u64>| match id.and_then(|i| all.get(&i)) {
            None => "root".to_string(),
            Some(r) if r.name == "handle" => format!("handle:{}", r.dest),
            Some(r) => r.name.to_string(),
        };
        let mut v: Vec<String> = all
            .values()
            .filter(|r| r.name == "handle" && r.dest == dest)
            .map(|r| label(r.parent))
            .collect();
        v.sort();
        v
    }

    /// The label of the span the event with message `msg` was in.
    fn event_in(&self, msg: &str) -> Vec<String> {
        let all = self.0.lock().unwrap();
        self.1
            .lock()
            .unwrap()
            .iter()
            .filter(|(m, _)| m == msg)
            .map(|(_, span)| match span.and_then(|i| all.get(&i)) {
                None => "none".to_string(),
                Some(r) if r.name == "handle" => format!("handle:{}", r.dest),
                Some(r) => r.name.to_string(),
            })
            .collect()
    }

    /// Whether every span reaches the `request` span through its parents.
    fn one_tree(&self) -> bool {
        let all = self.0.lock().unwrap();
        all.values().all(|r| {
            let mut cur = r.clone();
            for _ in 0..16 {
                if cur.name == "request" {
                    return true;
                }
                match cur.parent.and_then(|p| all.get(&p)) {
                    Some(p) => cur = p.clone(),
                    None => return false,
                }
            }
            false
        })
    }
}

enum FrontMsg {
    Start(ReplyTo<u64>),
    Answer(Result<u64, AskError>),
}
impl From<Result<u64, AskError>> for FrontMsg {
    fn from(r: Result<u64, AskError>) -> Self {
        FrontMsg::Answer(r)
    }
}

/// Asks `back` with `Context::ask`, tells `side`, answers the request with
/// what `back` said.
struct Front {
    back: ActorRef<Back>,
    side: ActorRef<Side>,
    pending: Option<ReplyTo<u64>>,
}
impl Actor for Front {
    type Msg = FrontMsg;
    fn handle(&mut self, m: FrontMsg, ctx: &mut Context<'_, Self>) {
        match m {
            FrontMsg::Start(r) => {
                self.pending = Some(r);
                self.side.tell(1).unwrap();
                ctx.ask(&self.back, Req::Ask).unwrap();
            }
            FrontMsg::Answer(a) => {
                if let Some(r) = self.pending.take() {
                    r.reply(a.unwrap_or(0));
                }
            }
        }
    }
}

enum Req {
    Ask(ReplyTo<u64>),
    FutureDone,
}

/// Answers, and sets a timer to `leaf` and a future whose end tells `leaf`.
struct Back {
    leaf: ActorRef<Leaf>,
}
impl Actor for Back {
    type Msg = Req;
    fn handle(&mut self, m: Req, ctx: &mut Context<'_, Self>) {
        let Req::Ask(r) = m else { return };
        timer::send_delayed(&self.leaf, Duration::from_millis(1), 2).detach();
        let leaf = self.leaf.clone();
        // The future's end sends from a thread of the async runtime.
        let _ = ctx.spawn_future(async {}, move |()| {
            let _ = leaf.tell(3);
            Req::FutureDone
        });
        r.reply(7);
    }
}

/// Does not trace its own messages: passes the context on.
struct Side {
    leaf: ActorRef<Leaf>,
}
impl Actor for Side {
    type Msg = u8;
    fn handle(&mut self, n: u8, _: &mut Context<'_, Self>) {
        self.leaf.tell(n).unwrap();
    }
}

/// An async actor: tells `leaf` after an `.await`.
struct Later(ActorRef<Leaf>);
impl AsyncActor for Later {
    type Msg = u8;
    async fn handle(&mut self, n: u8, _: &mut AsyncContext<Self>) {
        timer::sleep(Duration::from_millis(1)).await;
        self.0.tell(n).unwrap();
    }
}

/// Fails on its first message.
struct Fuse;
impl Actor for Fuse {
    type Msg = ();
    fn handle(&mut self, (): (), _: &mut Context<'_, Self>) {
        panic!("fuse blown");
    }
}

struct Leaf(crossbeam_channel::Sender<u8>);
impl Actor for Leaf {
    type Msg = u8;
    fn handle(&mut self, n: u8, _: &mut Context<'_, Self>) {
        self.0.send(n).unwrap();
    }
}

#[test]
fn handle_spans_are_children_of_the_sending_span() {
    let rec = Recorder::default();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(rec.clone()))
        .expect("the only subscriber in this test binary");
    let t = Duration::from_secs(10);
    let system = ActorSystem::builder().threads(2).build();
    let traced = |name: &str| SpawnOptions::new().name(name).trace_messages(true);

    let (tx, rx) = crossbeam_channel::unbounded();
    let leaf = system.spawn_with(Leaf(tx), traced("leaf"));
    let side = system.spawn_with(
        Side { leaf: leaf.clone() },
        SpawnOptions::new().name("side"),
    );
    let back = system.spawn_with(Back { leaf: leaf.clone() }, traced("back"));
    let front = system.spawn_with(
        Front {
            back,
            side,
            pending: None,
        },
        traced("front"),
    );

    let answer = {
        let _request = tracing::info_span!("request").entered();
        front.ask(FrontMsg::Start, t)
    };
    assert_eq!(answer, Ok(7));
    let mut got: Vec<u8> = (0..3).map(|_| rx.recv_timeout(t).unwrap()).collect();
    got.sort();
    assert_eq!(got, [1, 2, 3]);

    // An async handler's sends after an `.await` still carry its span.
    let later = system.spawn_with(Async::new(Later(leaf.clone())), traced("later"));
    {
        let _later = tracing::info_span!("request").entered();
        later.tell(4).unwrap();
    }
    assert_eq!(rx.recv_timeout(t), Ok(4));

    // Troupe's own log of a stop a message caused is inside that message's
    // span: the handle span of a traced actor, the sender's otherwise.
    let fuse = system.spawn_with(Fuse, traced("fuse"));
    let quiet_fuse = system.spawn_with(Fuse, SpawnOptions::new().name("quiet-fuse"));
    {
        let _blast = tracing::info_span!("blast").entered();
        fuse.tell(()).unwrap();
        quiet_fuse.tell(()).unwrap();
    }
    fuse.join_timeout(t).unwrap();
    quiet_fuse.join_timeout(t).unwrap();
    system.shutdown();
    let mut failed = rec.event_in("actor failed and was stopped");
    failed.sort();
    assert_eq!(failed, ["blast", "handle:fuse"]);

    // The request (from a plain thread) and the reply to `Context::ask`.
    assert_eq!(rec.parents_of("front"), ["handle:back", "request"]);
    // `Context::ask`'s request, and the bridged future's message (its
    // future was started in back's handler).
    assert_eq!(rec.parents_of("back"), ["handle:back", "handle:front"]);
    // Through the untraced `side` (front's span), the timer and the bridge
    // (both set up in back's handler).
    assert_eq!(
        rec.parents_of("leaf"),
        ["handle:back", "handle:back", "handle:front", "handle:later"]
    );
    assert_eq!(rec.parents_of("later"), ["request"]);
    rec.0
        .lock()
        .unwrap()
        .retain(|_, r| r.dest != "fuse" && r.name != "blast");
    assert!(rec.one_tree(), "{:#?}", rec.0.lock().unwrap());
    let all = rec.0.lock().unwrap();
    assert!(all
        .values()
        .filter(|r| r.name == "handle")
        .all(|r| r.op == "process"));
}
