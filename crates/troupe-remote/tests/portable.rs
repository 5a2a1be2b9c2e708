//! The portable (CBOR) body encoding: a type exposed with
//! `tell_portable` / `ask_portable` takes postcard from Rust peers and
//! CBOR from other languages on one node; a type exposed plainly refuses
//! CBOR as an unknown type; the schema export lists what a node serves.
//! Real nats-server; skips without it unless `TROUPE_REQUIRE_NATS=1`.

use serde::{Deserialize, Serialize};
use std::time::Duration;
use troupe::{Actor, ActorSystem, Context, ReplyTo};
use troupe_remote::envelope::{decode_frame, encode_frame, Header, Kind, Status};
use troupe_remote::portable::{decode_cbor, Encoding};
use troupe_remote::{node_subject, remote, schema, type_id, Node, RemoteMessage};
use troupe_test_nats::NatsServer;

const T: Duration = Duration::from_secs(10);

#[remote("test.cart.Add")]
#[derive(Serialize, Deserialize, Debug, Clone)]
struct Add {
    item: String,
    qty: u32,
}

#[remote("test.cart.Get", reply = Vec<(String, u32)>)]
#[derive(Serialize, Deserialize, Debug)]
struct Get;

enum Msg {
    Add(Add),
    Get(ReplyTo<Vec<(String, u32)>>),
}
impl From<Add> for Msg {
    fn from(a: Add) -> Self {
        Msg::Add(a)
    }
}

#[derive(Default)]
struct Cart(Vec<(String, u32)>);
impl Actor for Cart {
    type Msg = Msg;
    fn handle(&mut self, msg: Msg, _: &mut Context<'_, Self>) {
        match msg {
            Msg::Add(a) => self.0.push((a.item, a.qty)),
            Msg::Get(r) => {
                r.reply(self.0.clone());
            }
        }
    }
}

fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + limit;
    while std::time::Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    f()
}

fn add(item: &str, qty: u32) -> Add {
    Add {
        item: item.into(),
        qty,
    }
}

/// One node serves a Rust peer in postcard and a CBOR sender; the CBOR
/// ask is answered in CBOR, echoing the fingerprint. (Mutation: with
/// `Handlers::ask_for` ignoring the encoding, the CBOR ask is decoded as
/// postcard and answered `BadFrame`; this test fails.)
#[test]
fn a_portable_type_takes_postcard_and_cbor_on_one_node() {
    let Some(server) = NatsServer::start_or_skip() else {
        return;
    };
    let system = ActorSystem::new();
    let cart = system.spawn(Cart::default());
    let b = Node::builder(&server.url(), "b")
        .insecure()
        .connect()
        .unwrap();
    b.expose("cart", &cart)
        .tell_portable::<Add>()
        .ask_portable::<Get>(|_, r| Msg::Get(r))
        .serve()
        .unwrap();
    let a = Node::builder(&server.url(), "a")
        .insecure()
        .connect()
        .unwrap();
    let to = a.lookup::<Add>("cart@b").unwrap();
    to.tell(add("tea", 1)).unwrap();
    to.tell_portable(&add("milk", 2)).unwrap();
    assert!(
        wait_until(T, || b.stats().delivered == 2),
        "{:?}",
        b.stats()
    );
    let get = to.retype::<Get>().unwrap();
    let want = vec![("tea".to_string(), 1), ("milk".to_string(), 2)];
    assert_eq!(get.ask(Get, T), Ok(want.clone()));

    // A CBOR ask, written by hand as a client in another language would.
    let fp = schema::ask_fingerprint::<Get>();
    let h = Header::new(Kind::Ask, Get::TYPE_ID, type_id("cart"), fp).encoded(Encoding::Cbor);
    let mut frame = Vec::new();
    encode_frame(&mut frame, h, &Get, 1 << 20).unwrap();
    assert_eq!(frame[3], 0x04, "flag bit 2");
    let subject = node_subject("default", "b");
    let rt = a.runtime().clone();
    let reply = rt
        .block_on(a.transport().request(&subject, frame.into(), T))
        .unwrap();
    let (f, rest) = decode_frame(&reply, 1 << 20).unwrap();
    assert!(rest.is_empty());
    assert_eq!(
        (f.kind, f.status, f.correlation),
        (Kind::Reply, Status::Ok, fp)
    );
    assert_eq!(f.encoding, Encoding::Cbor);
    assert_eq!(decode_cbor::<Vec<(String, u32)>>(f.body).unwrap(), want);

    // The same ask with another fingerprint: SchemaMismatch, its body CBOR.
    let h = Header::new(Kind::Ask, Get::TYPE_ID, type_id("cart"), fp ^ 1).encoded(Encoding::Cbor);
    let mut frame = Vec::new();
    encode_frame(&mut frame, h, &Get, 1 << 20).unwrap();
    let reply = rt
        .block_on(a.transport().request(&subject, frame.into(), T))
        .unwrap();
    let (f, _) = decode_frame(&reply, 1 << 20).unwrap();
    assert_eq!(
        (f.status, f.encoding),
        (Status::SchemaMismatch, Encoding::Cbor)
    );
    let (_rust_type, theirs) = decode_cbor::<(String, u64)>(f.body).unwrap();
    assert_eq!(theirs, fp);
    system.shutdown();
}

/// A type exposed plainly pays nothing for portability and takes no CBOR:
/// a CBOR tell of it is refused as an unknown type, not misdecoded.
/// (Mutation: `tell_for` returning the postcard handler for CBOR makes
/// it `undecodable`; this test fails.)
#[test]
fn a_cbor_tell_of_a_type_that_is_not_portable_is_an_unknown_type() {
    let Some(server) = NatsServer::start_or_skip() else {
        return;
    };
    let system = ActorSystem::new();
    let cart = system.spawn(Cart::default());
    let b = Node::builder(&server.url(), "b")
        .insecure()
        .connect()
        .unwrap();
    b.expose("cart", &cart).tell::<Add>().serve().unwrap();
    let a = Node::builder(&server.url(), "a")
        .insecure()
        .connect()
        .unwrap();
    let to = a.lookup::<Add>("cart@b").unwrap();
    to.tell_portable(&add("tea", 1)).unwrap();
    to.tell(add("milk", 2)).unwrap();
    assert!(wait_until(T, || {
        let s = b.stats();
        s.delivered + s.unknown_type + s.undecodable == 2
    }));
    let s = b.stats();
    assert_eq!(
        (s.delivered, s.unknown_type, s.undecodable),
        (1, 1, 0),
        "{s:?}"
    );
    system.shutdown();
}

/// The schema export names the actor, each type with its id, its
/// fingerprints, whether portable, its fields and its reply type.
#[test]
fn the_schema_export_lists_exposed_types_with_their_shapes() {
    let Some(server) = NatsServer::start_or_skip() else {
        return;
    };
    let system = ActorSystem::new();
    let cart = system.spawn(Cart::default());
    let b = Node::builder(&server.url(), "b")
        .insecure()
        .connect()
        .unwrap();
    b.expose("cart", &cart)
        .tell_portable::<Add>()
        .ask::<Get>(|_, r| Msg::Get(r))
        .serve()
        .unwrap();
    let doc = b.schema_json();
    let hex = |v: u64| format!("{v:#018x}");
    assert_eq!(doc["format"], "troupe.schema.v1");
    assert_eq!(doc["subject"], "troupe.default.node.b");
    let actor = &doc["actors"][0];
    assert_eq!(actor["name"], "cart");
    assert_eq!(actor["target_id"], hex(type_id("cart")));
    let (add_t, get_t) = (&actor["types"][0], &actor["types"][1]);
    assert_eq!(add_t["name"], "test.cart.Add");
    assert_eq!(add_t["type_id"], hex(Add::TYPE_ID));
    assert_eq!(add_t["shape"]["shape"], "struct{item:str,qty:u32}");
    assert_eq!(add_t["tell"]["portable"], true);
    assert_eq!(
        add_t["tell"]["fingerprint"],
        hex(schema::tell_fingerprint::<Add>())
    );
    assert_eq!(add_t["ask"], serde_json::Value::Null);
    assert_eq!(
        add_t["shape"]["tree"],
        serde_json::json!({"struct": [{"name": "item", "type": "str"}, {"name": "qty", "type": "u32"}]})
    );
    assert_eq!(get_t["name"], "test.cart.Get");
    assert_eq!(get_t["ask"]["portable"], false);
    assert_eq!(
        get_t["ask"]["fingerprint"],
        hex(schema::ask_fingerprint::<Get>())
    );
    assert_eq!(get_t["ask"]["reply"]["shape"], "seq<(str,u32)>");
    assert_eq!(doc, b.schema_json(), "deterministic");
    system.shutdown();
}
