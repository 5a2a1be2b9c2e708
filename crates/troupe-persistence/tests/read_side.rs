//! The read side on a real `nats-server -js` (started here; skipped with
//! one line where nats-server is missing, a failure with
//! TROUPE_REQUIRE_NATS=1): events by persistence id and by tag, up to now
//! and live, decoded by the actor's codec, with offsets to go on from.

mod common;
mod readside;

use futures::StreamExt;
use readside::*;
use std::sync::Arc;
use troupe::ActorSystem;
use troupe_persistence::query::{reader, EventEnvelope};
use troupe_persistence::{spawn_persistent, Follow, Offset, PersistError, PersistenceId};

type Read = Result<EventEnvelope<OrderEvent>, PersistError>;

fn collect(
    rt: &tokio::runtime::Runtime,
    s: futures::stream::BoxStream<'static, Read>,
) -> Vec<EventEnvelope<OrderEvent>> {
    rt.block_on(async {
        tokio::time::timeout(T, s.collect::<Vec<_>>())
            .await
            .expect("an up-to-now stream ends")
    })
    .into_iter()
    .map(|r| r.expect("every event reads"))
    .collect()
}

fn placed(amount: u64) -> OrderEvent {
    OrderEvent::Placed { amount }
}

#[test]
fn events_by_id_and_by_tag_up_to_now() {
    let Some(server) = server() else { return };
    let store = store(&server);
    let system = ActorSystem::new();
    let (a, b) = (order(&system, &store, "a"), order(&system, &store, "b"));
    // An untagged kind in the same journal: never returned by a tag.
    let acc = spawn_persistent(&system, common::account("x"), store.clone());
    place(&a, 1, false);
    assert_eq!(acc.ask(|r| common::Cmd::Deposit(7, r), T), Ok(Ok(7)));
    place(&b, 2, true);
    assert_eq!(a.ask(|r| OrderCmd::PlaceTwo(3, r), T), Ok(Ok(7)));
    place(&b, 4, false);
    assert_eq!(a.ask(OrderCmd::Ship, T), Ok(Ok(7)));
    // A bad tag fails its command and stores nothing.
    assert!(matches!(
        b.ask(OrderCmd::BadTag, T),
        Ok(Err(PersistError::Encode { .. }))
    ));
    place(&b, 5, false);

    let rt = runtime();
    let read = reader::<Order>(store.clone());
    let id_a = PersistenceId::new("order", "a").unwrap();
    let by_a = collect(&rt, read.by_id(&id_a, 0, Follow::UpToNow));
    let events: Vec<_> = by_a.iter().map(|e| (e.seq, e.event.clone())).collect();
    assert_eq!(
        events,
        vec![
            (1, placed(1)),
            (2, placed(3)),
            (3, placed(3)),
            (4, OrderEvent::Shipped)
        ]
    );
    assert!(by_a.iter().all(|e| e.id == id_a && e.offset.seq == e.seq));
    // Two events of one append share its stream sequence.
    assert_eq!(by_a[1].offset.append, by_a[2].offset.append);
    assert!(by_a[0].tags.iter().any(|t| t == "order"));
    // From an event number on.
    let after_2: Vec<u64> = collect(&rt, read.by_id(&id_a, 2, Follow::UpToNow))
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(after_2, vec![3, 4]);

    let orders = collect(&rt, read.by_tag("order", Offset::START, Follow::UpToNow));
    let seen: Vec<_> = orders
        .iter()
        .map(|e| (e.id.id().to_string(), e.event.clone()))
        .collect();
    let want: Vec<(String, OrderEvent)> = vec![
        ("a".into(), placed(1)),
        ("b".into(), placed(2)),
        ("a".into(), placed(3)),
        ("a".into(), placed(3)),
        ("b".into(), placed(4)),
        ("a".into(), OrderEvent::Shipped),
        ("b".into(), placed(5)),
    ];
    assert_eq!(seen, want, "every order event once, in the journal's order");
    assert!(orders.windows(2).all(|w| w[0].offset < w[1].offset));
    let vip = collect(&rt, read.by_tag("vip", Offset::START, Follow::UpToNow));
    assert_eq!(vip.len(), 1);
    assert_eq!((vip[0].id.id(), &vip[0].event), ("b", &placed(2)));
    // From an offset: inside an append of two events, the second only.
    let rest = collect(&rt, read.by_tag("order", orders[2].offset, Follow::UpToNow));
    assert_eq!(rest, orders[3..].to_vec());
    assert!(collect(&rt, read.by_tag("none", Offset::START, Follow::UpToNow)).is_empty());
    let last = orders.last().unwrap().offset;
    assert!(collect(&rt, read.by_tag("order", last, Follow::UpToNow)).is_empty());
}

#[test]
fn a_live_reader_follows_new_events() {
    let Some(server) = server() else { return };
    let store = store(&server);
    let system = ActorSystem::new();
    let a = order(&system, &store, "live");
    place(&a, 1, false);
    let rt = runtime();
    let read = reader::<Order>(store.clone());
    let mut by_tag = read.by_tag("order", Offset::START, Follow::Live);
    let id = PersistenceId::new("order", "live").unwrap();
    let mut by_id = read.by_id(&id, 0, Follow::Live);
    let next = |s: &mut futures::stream::BoxStream<'static, Read>| {
        rt.block_on(async { tokio::time::timeout(T, s.next()).await })
            .expect("a live event arrives")
            .expect("a live stream does not end")
            .expect("it reads")
    };
    assert_eq!(next(&mut by_tag).event, placed(1));
    assert_eq!(next(&mut by_id).event, placed(1));
    for n in 2..=20 {
        place(&a, n, false);
        assert_eq!(next(&mut by_tag).event, placed(n));
        assert_eq!(next(&mut by_id).seq, n);
    }
    // Nothing more: a live stream waits (it neither ends nor repeats).
    let quiet = rt.block_on(async {
        tokio::time::timeout(std::time::Duration::from_millis(300), by_tag.next()).await
    });
    assert!(quiet.is_err(), "no event after the last: {quiet:?}");
    drop(Arc::clone(&store));
}
