//! An order entity whose events are tagged, shared by the read-side
//! tests: every event carries `order` (the type's tag function), and a
//! command may add `vip` (`Effect::tagged`).
#![allow(dead_code)]

use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;
use troupe::{ActorSystem, ReplyTo};
use troupe_persistence::{
    spawn_persistent, Effect, JetStreamStore, PersistError, PersistenceId, PersistentActor,
    PersistentRef,
};
use troupe_test_nats::NatsServer;

pub const T: Duration = Duration::from_secs(10);

#[troupe_remote::remote("test.shop.OrderEvent")]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum OrderEvent {
    Placed { amount: u64 },
    Shipped,
}

pub enum OrderCmd {
    /// Places one order line; `vip` tags it `vip` too.
    Place(u64, bool, ReplyTo<Result<u64, PersistError>>),
    /// Two lines in one append.
    PlaceTwo(u64, ReplyTo<Result<u64, PersistError>>),
    Ship(ReplyTo<Result<u64, PersistError>>),
    /// An invalid tag: the command must fail, storing nothing.
    BadTag(ReplyTo<Result<u64, PersistError>>),
}

pub struct Order {
    pub id: PersistenceId,
}

impl PersistentActor for Order {
    type Command = OrderCmd;
    type Event = OrderEvent;
    type State = u64;

    fn persistence_id(&self) -> PersistenceId {
        self.id.clone()
    }

    fn handle_command(&mut self, _total: &u64, cmd: OrderCmd) -> Effect<Self> {
        match cmd {
            OrderCmd::Place(amount, vip, r) => {
                let e = Effect::<Self>::persist(OrderEvent::Placed { amount });
                let e = if vip { e.tagged("vip") } else { e };
                e.reply(r, |t| *t)
            }
            OrderCmd::PlaceTwo(amount, r) => Effect::<Self>::persist_all(vec![
                OrderEvent::Placed { amount },
                OrderEvent::Placed { amount },
            ])
            .reply(r, |t| *t),
            OrderCmd::Ship(r) => Effect::<Self>::persist(OrderEvent::Shipped).reply(r, |t| *t),
            OrderCmd::BadTag(r) => Effect::<Self>::persist(OrderEvent::Shipped)
                .tagged("not a tag")
                .reply(r, |t| *t),
        }
    }

    fn apply(total: &mut u64, event: &OrderEvent) {
        if let OrderEvent::Placed { amount } = event {
            *total += amount;
        }
    }

    fn tags(_event: &OrderEvent) -> &'static [&'static str] {
        &["order"]
    }
}

pub fn server() -> Option<NatsServer> {
    NatsServer::builder().jetstream().start_or_skip()
}

pub fn store(server: &NatsServer) -> Arc<JetStreamStore> {
    Arc::new(
        JetStreamStore::builder(&server.url())
            .namespace("read")
            .connect()
            .expect("connect"),
    )
}

pub fn order(system: &ActorSystem, store: &Arc<JetStreamStore>, id: &str) -> PersistentRef<Order> {
    spawn_persistent(
        system,
        Order {
            id: PersistenceId::new("order", id).unwrap(),
        },
        store.clone(),
    )
}

pub fn place(o: &PersistentRef<Order>, amount: u64, vip: bool) -> u64 {
    o.ask(move |r| OrderCmd::Place(amount, vip, r), T)
        .unwrap()
        .unwrap()
}

/// A runtime with I/O and timers, for the tests' async parts.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}
