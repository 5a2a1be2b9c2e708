//! Issue 25, finding 6: two nodes give one stable name to two shapes.
//! `Item(u64)` on one, `Item(String)` on the other: postcard would read
//! `Item("")` as `Item(0)` and the sender would see it confirmed. With
//! schema fingerprints the receiver refuses it, counts it, and both nodes
//! can name both sides.

use std::sync::mpsc;
use std::time::Duration;

use troupe::{Actor, ActorSystem, AskError, Context, ReplyTo};
use troupe_remote::Node;
use troupe_test_nats::NatsServer;

const T: Duration = Duration::from_secs(5);

/// The receiver's types.
mod here {
    use serde::{Deserialize, Serialize};
    use troupe_remote::remote;

    #[remote("shop.Item")]
    #[derive(Serialize, Deserialize, Debug)]
    pub struct Item(pub u64);

    #[remote("shop.Count", reply = u64)]
    #[derive(Serialize, Deserialize, Debug)]
    pub struct Count;
}

/// The sender's: same stable names, other shapes (the ask differs only
/// in its reply type).
mod there {
    use serde::{Deserialize, Serialize};
    use troupe_remote::remote;

    #[remote("shop.Item")]
    #[derive(Serialize, Deserialize, Debug)]
    pub struct Item(pub String);

    #[remote("shop.Count", reply = String)]
    #[derive(Serialize, Deserialize, Debug)]
    pub struct Count;
}

/// The sender's agreeing twins: other Rust names, the same shapes.
mod twin {
    use serde::{Deserialize, Serialize};
    use troupe_remote::remote;

    #[remote("shop.Item")]
    #[derive(Serialize, Deserialize, Debug)]
    pub struct Thing(pub u64);

    #[remote("shop.Count", reply = u64)]
    #[derive(Serialize, Deserialize, Debug)]
    pub struct HowMany;
}

enum Msg {
    Item(here::Item),
    Count(here::Count, ReplyTo<u64>),
}
impl From<here::Item> for Msg {
    fn from(i: here::Item) -> Self {
        Msg::Item(i)
    }
}

struct Shop(mpsc::Sender<u64>, u64);
impl Actor for Shop {
    type Msg = Msg;
    fn handle(&mut self, m: Msg, _: &mut Context<'_, Self>) {
        match m {
            Msg::Item(here::Item(n)) => {
                self.1 += 1;
                let _ = self.0.send(n);
            }
            Msg::Count(_, r) => {
                r.reply(self.1);
            }
        }
    }
}

#[test]
fn a_shape_mismatch_is_refused_and_names_both_sides() {
    let Some(server) = NatsServer::start_or_skip() else {
        return;
    };
    let system = ActorSystem::builder().threads(2).build();
    let a = Node::builder(&server.url(), "a")
        .insecure()
        .connect()
        .unwrap();
    let b = Node::builder(&server.url(), "b")
        .insecure()
        .connect()
        .unwrap();
    let (tx, items) = mpsc::channel();
    let shop = system.spawn(Shop(tx, 0));
    a.expose("shop", &shop)
        .tell::<here::Item>()
        .ask::<here::Count>(Msg::Count)
        .serve()
        .unwrap();

    // The other shape: refused at a, never misdecoded as Item(0).
    let item = b.lookup::<there::Item>("shop@a").unwrap();
    item.tell(there::Item(String::new())).unwrap();
    assert!(b.settle(T), "{:?}", b.stats());
    assert_eq!(
        items.recv_timeout(Duration::from_millis(300)),
        Err(mpsc::RecvTimeoutError::Timeout)
    );
    let (sa, sb) = (a.stats(), b.stats());
    assert_eq!((sa.schema_mismatches, sa.delivered), (1, 0), "{sa:?}");
    assert_eq!(
        (sb.tells_refused_by_peer, sb.tells_confirmed),
        (1, 0),
        "{sb:?}"
    );
    let m = a.last_schema_mismatch().expect("a keeps the mismatch");
    assert_eq!(m.name, "shop.Item");
    assert!(!m.ask);
    assert_eq!((m.here.node.as_str(), m.there.node.as_str()), ("a", "b"));
    assert_eq!(
        m.here.fingerprint,
        troupe_remote::schema::fingerprint::<here::Item>()
    );
    assert_eq!(
        m.there.fingerprint,
        troupe_remote::schema::fingerprint::<there::Item>()
    );
    let text = m.to_string();
    assert!(
        text.contains("shop.Item") && text.contains("node a") && text.contains("node b"),
        "{text}"
    );
    assert!(text.contains("here::Item"), "{text}");

    // An ask whose reply type differs: refused with the serving side's
    // type, which the asker names.
    let count = b.lookup::<there::Count>("shop@a").unwrap();
    assert_eq!(count.ask(there::Count, T), Err(AskError::NoResponders));
    assert_eq!(a.stats().schema_mismatches, 2);
    assert_eq!(b.stats().schema_mismatches, 1);
    let m = b.last_schema_mismatch().expect("b keeps the mismatch");
    assert!(m.ask);
    assert_eq!(m.name, "shop.Count");
    assert_eq!((m.here.node.as_str(), m.there.node.as_str()), ("b", "a"));
    assert!(m
        .here
        .rust_type
        .as_deref()
        .unwrap()
        .ends_with("there::Count"));
    assert!(
        m.there
            .rust_type
            .as_deref()
            .unwrap()
            .ends_with("here::Count"),
        "{m}"
    );
    assert_ne!(m.here.fingerprint, m.there.fingerprint);

    // The same shapes under other Rust names pass: the stable name is the
    // identity (a third node: b's registry holds `there`'s types).
    let c = Node::builder(&server.url(), "c")
        .insecure()
        .connect()
        .unwrap();
    let thing = c.lookup::<twin::Thing>("shop@a").unwrap();
    thing.tell(twin::Thing(7)).unwrap();
    assert_eq!(items.recv_timeout(T), Ok(7));
    let how_many = thing.retype::<twin::HowMany>().unwrap();
    assert_eq!(how_many.ask(twin::HowMany, T), Ok(1));
    assert!(c.settle(T));
    assert_eq!(c.stats().tells_confirmed, 1);
    assert_eq!(c.stats().schema_mismatches, 0);
    assert_eq!(a.stats().schema_mismatches, 2);
}
