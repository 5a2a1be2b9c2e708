//! `Exposure::tell_with`: a handler that takes a tell's body and routes it
//! itself, counted by the node exactly as `tell::<M>()` is. Real
//! nats-server; skips without it unless `TROUPE_REQUIRE_NATS=1`.

mod common;

use common::*;
use std::sync::atomic::Ordering;
use std::time::Duration;
use troupe_remote::envelope::decode_body;
use troupe_remote::{Node, TellOutcome};
use troupe_test_nats::NatsServer;

const T: Duration = Duration::from_secs(5);

#[test]
fn a_handler_delivers_refuses_and_fails_to_decode_and_each_is_counted() {
    let Some(server) = NatsServer::start_or_skip() else {
        return;
    };
    let (system, seen, counter, b) = counter_on_b(&server.url(), 2);
    let (to_add, to_blob) = (counter.clone(), counter.clone());
    b.expose("counter", &counter)
        // Every tenth `Add` refused by the handler, the others told.
        .tell_with::<Add>(move |body| match decode_body::<u64>(body) {
            Ok(n) if n % 10 == 0 => TellOutcome::Refused,
            Ok(n) => told(to_add.try_tell(CounterMsg::Add(Add(n)))),
            Err(_) => TellOutcome::Undecodable,
        })
        // A `Blob` read borrowed as text: bytes that are not UTF-8 do not decode.
        .tell_with::<Blob>(move |body| match decode_body::<&str>(body) {
            Ok(text) => told(to_blob.try_tell(CounterMsg::Blob(Blob(text.as_bytes().to_vec())))),
            Err(_) => TellOutcome::Undecodable,
        })
        .ask::<Sum>(CounterMsg::Sum)
        .serve()
        .unwrap();

    let a = Node::builder(&server.url(), "a")
        .insecure()
        .connect()
        .unwrap();
    let add = a.lookup::<Add>("counter@b").unwrap();
    for i in 1..=100u64 {
        add.tell(Add(i)).unwrap();
    }
    let blob = a.lookup::<Blob>("counter@b").unwrap();
    blob.tell(Blob(b"four".to_vec())).unwrap();
    blob.tell(Blob(vec![0xff, 0xfe])).unwrap();

    // 90 adds and one blob delivered; 10 refused; one undecodable.
    assert!(wait_until(T, || {
        let s = b.stats();
        s.delivered + s.refused + s.undecodable == 102
    }));
    let s = b.stats();
    assert_eq!(
        (s.delivered, s.refused, s.undecodable),
        (91, 10, 1),
        "{s:?}"
    );
    assert!(wait_until(T, || seen.load(Ordering::Relaxed) == 91));
    let sum = add.retype::<Sum>().unwrap();
    let tens: u64 = (1..=10).map(|k| 10 * k).sum();
    assert_eq!(sum.ask(Sum, T), Ok(100 * 101 / 2 - tens + 4));
    system.shutdown();
}

/// An `Add`'s wire shape (a newtype writes its one field), written from a
/// borrowed number.
#[derive(serde::Serialize)]
struct AddOut<'a>(&'a u64);

impl troupe_remote::EncodesAs<Add> for AddOut<'_> {}

/// `RemoteRef::tell_other_as`: a reference typed by one message type
/// tells the same actor another type it takes, with that type's schema
/// fingerprint, in order with its own tells; a fingerprint that is not
/// the receiver's for that type is refused there as a schema mismatch,
/// never decoded. (Written with the reference's own type id or
/// fingerprint, the adds would reach the actor as blobs or be refused.)
#[test]
fn a_reference_tells_another_type_with_that_type_s_fingerprint() {
    let Some(server) = NatsServer::start_or_skip() else {
        return;
    };
    let (system, seen, counter, b) = counter_on_b(&server.url(), 2);
    b.expose("counter", &counter)
        .tell::<Add>()
        .tell::<Blob>()
        .ask::<Sum>(CounterMsg::Sum)
        .serve()
        .unwrap();

    let a = Node::builder(&server.url(), "a")
        .insecure()
        .connect()
        .unwrap();
    let blob = a.lookup::<Blob>("counter@b").unwrap();
    let add_schema = troupe_remote::schema::tell_fingerprint::<Add>();
    for i in 1..=10u64 {
        blob.tell_other_as::<Add, _>(add_schema, &AddOut(&i))
            .unwrap();
        blob.tell(Blob(vec![0; 100])).unwrap();
    }
    blob.tell_other_as::<Add, _>(add_schema ^ 1, &AddOut(&1000))
        .unwrap();

    assert!(wait_until(T, || {
        let s = b.stats();
        s.delivered + s.schema_mismatches == 21
    }));
    let s = b.stats();
    assert_eq!((s.delivered, s.schema_mismatches), (20, 1), "{s:?}");
    assert!(wait_until(T, || seen.load(Ordering::Relaxed) == 20));
    let sum = blob.retype::<Sum>().unwrap();
    assert_eq!(sum.ask(Sum, T), Ok(55 + 10 * 100));
    system.shutdown();
}
