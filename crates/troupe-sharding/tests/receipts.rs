//! `EntityRef::tell_confirmed`: a receipt per entity tell, on the
//! in-memory transport with an in-memory store. Counts exactly: every
//! receipt `Delivered` is a tell the owner took (and the entity handles
//! once); every `Refused` one the owner's region could not buffer.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use troupe::SendError;
use troupe_cluster::Cluster;
use troupe_remote::transport::memory::MemoryNetwork;
use troupe_remote::{Delivered, TellRefusal, Undelivered};
use troupe_sharding::ownership::MemoryOwnership;
use troupe_sharding::placement::desired_owner;

const BUFFER: usize = 20;
const T: Duration = Duration::from_secs(10);

#[test]
fn a_receipt_says_what_the_owner_did_with_each_tell() {
    let net = MemoryNetwork::new();
    let tracker = Tracker::default();
    let store = Arc::new(MemoryOwnership::new());
    let node = |name: &str| {
        let c = Arc::new(
            Cluster::builder_on(net.connect(), name)
                .insecure()
                .heartbeat(HB)
                .connect()
                .expect("connect"),
        );
        let s = counters(&c, &tracker)
            .store(store.clone())
            .buffer(BUFFER)
            .buffer_timeout(Duration::from_secs(60))
            .start()
            .expect("start");
        (c, s)
    };
    let (c1, s1) = node("r1");
    let (c2, s2) = node("r2");
    settle(&[&c1, &c2], &[&s1, &s2]);
    let names = ["r1".to_string(), "r2".to_string()];
    let owned_by = |owner: &str, skip: usize, take: usize| -> Vec<String> {
        (0..)
            .map(|i| format!("e-{i}"))
            .filter(|id| desired_owner(&names, s1.shard_of(id)) == Some(owner))
            .skip(skip)
            .take(take)
            .collect()
    };
    let remote = owned_by("r2", 0, 5);
    let local = owned_by("r1", 0, 5);

    // Owned by r2 and by r1, sent as a user who wants each delivered
    // would: again after `Full` (handed back here) or `Refused` (the
    // owner's buffer, which also holds tells on their way to entities
    // that are starting, was full). A refused tell is never handled: the
    // entities handle exactly the 100 delivered.
    let mut refused = 0u64;
    for seq in 1..=10 {
        for id in remote.iter().chain(&local) {
            let mut msg = Add { from: 1, seq };
            loop {
                match s1.entity(id).tell_confirmed(msg.clone(), T) {
                    Ok(r) => match r.wait() {
                        Ok(Delivered) => break,
                        Err(Undelivered::Refused(TellRefusal::Actor)) => refused += 1,
                        Err(other) => panic!("{other}"),
                    },
                    Err(SendError::Full(m)) => msg = m,
                    Err(e) => panic!("{e:?}"),
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }
    assert_handled_once(&tracker, 100, || format!("{:?}", s1.stats()));
    assert_eq!(tracker.fifo_violations(), 0);
    assert_eq!(s1.stats().tells_confirmed_sent, 100 + refused);
    let base = c1.node().stats();

    // r2 cannot activate (the store is down): its region buffers up to
    // BUFFER, and refuses the rest; each receipt says which.
    let cold = owned_by("r2", 5, 10);
    store.set_down(true);
    let mut outcomes = Vec::new();
    for seq in 1..=5 {
        for id in &cold {
            let r = s1
                .entity(id)
                .tell_confirmed(Add { from: 1, seq }, T)
                .expect("sent");
            outcomes.push(r.wait());
        }
    }
    let delivered = outcomes.iter().filter(|o| **o == Ok(Delivered)).count();
    let refused = outcomes
        .iter()
        .filter(|o| **o == Err(Undelivered::Refused(TellRefusal::Actor)))
        .count();
    assert_eq!((delivered, refused), (BUFFER, 50 - BUFFER), "{outcomes:?}");
    let st = c1.node().stats();
    assert_eq!(
        st.receipts_delivered - base.receipts_delivered,
        BUFFER as u64,
        "{st:?}"
    );
    assert_eq!(
        st.receipts_refused - base.receipts_refused,
        (50 - BUFFER) as u64,
        "{st:?}"
    );
    store.set_down(false);
    assert_handled_once(&tracker, 100 + BUFFER as u64, || {
        format!("{:?}", s2.stats())
    });
}
