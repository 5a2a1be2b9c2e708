//! Request-reply: `ask` from a plain thread (blocking, with a timeout), from
//! async code, and from inside another actor (the reply comes back as a
//! message), plus the errors an ask can end with.
//!
//! Run: `cargo run -p troupe --example ask`

use std::time::Duration;
use troupe::{Actor, ActorRef, ActorSystem, AskError, Context, ReplyTo};

/// A key-value store actor.
struct Store {
    map: std::collections::HashMap<String, u64>,
}

enum StoreMsg {
    Put(String, u64),
    Get(String, ReplyTo<Option<u64>>),
    Crash,
}

impl Actor for Store {
    type Msg = StoreMsg;
    fn handle(&mut self, msg: StoreMsg, _ctx: &mut Context<'_, Self>) {
        match msg {
            StoreMsg::Put(k, v) => {
                self.map.insert(k, v);
            }
            StoreMsg::Get(k, reply) => {
                reply.reply(self.map.get(&k).copied());
            }
            StoreMsg::Crash => panic!("the store crashed"),
        }
    }
}

/// Asks the store from inside an actor: no blocking, the answer is a message.
struct Auditor {
    store: ActorRef<Store>,
}

enum AuditMsg {
    Check(String),
    Answer(Result<Option<u64>, AskError>),
}

impl From<Result<Option<u64>, AskError>> for AuditMsg {
    fn from(r: Result<Option<u64>, AskError>) -> Self {
        AuditMsg::Answer(r)
    }
}

impl Actor for Auditor {
    type Msg = AuditMsg;
    fn handle(&mut self, msg: AuditMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            AuditMsg::Check(key) => {
                let _ = ctx.ask(&self.store, |r| StoreMsg::Get(key, r));
            }
            AuditMsg::Answer(answer) => {
                println!("auditor got {answer:?}");
                ctx.stop();
            }
        }
    }
}

fn main() {
    let system = ActorSystem::new();
    let store = system.spawn(Store {
        map: Default::default(),
    });
    store.tell(StoreMsg::Put("apples".into(), 3)).unwrap();

    // From a plain thread: block for at most a second.
    let apples = store.ask(
        |r| StoreMsg::Get("apples".into(), r),
        Duration::from_secs(1),
    );
    println!("apples: {apples:?}");

    // From async code: a future (here simply waited on).
    let pears = store.ask_async(|r| StoreMsg::Get("pears".into(), r));
    println!("pears: {:?}", pears.wait_timeout(Duration::from_secs(1)));

    // From another actor.
    let auditor = system.spawn(Auditor {
        store: store.clone(),
    });
    auditor.tell(AuditMsg::Check("apples".into())).unwrap();
    auditor.join();

    // A panicking handler stops that actor only; asks to it fail at once.
    store.tell(StoreMsg::Crash).unwrap();
    println!("store stopped: {}", store.join());
    let late = store.ask(
        |r| StoreMsg::Get("apples".into(), r),
        Duration::from_secs(1),
    );
    assert_eq!(late, Err(AskError::ActorStopped));
    println!("asking a stopped actor: {}", late.unwrap_err());
}
