//! What happens to in-flight tells when the NATS server goes away: a sender
//! streams numbered tells, the server is killed (SIGKILL) mid-stream, then
//! restarted on the same port. Every message ends in exactly one of:
//! delivered, handed back by `tell` (reported), counted lost by the sender's
//! node (`frames_lost`: its publish failed, or the receiver's acks show it
//! never arrived; reported), or lost silently (accepted, never arrived, never
//! reported). Once the sender's `tells_unconfirmed` gauge has drained, the
//! test checks that nothing was lost silently, that the sender's accounting
//! matches what the receiver's actor saw and the gaps the receiver counted,
//! that nothing arrives twice or out of order, and that traffic flows again
//! after the restart. It prints the counts (run with `--nocapture`).

mod common;

use common::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe::{ActorSystem, AskError, SendError};
use troupe_remote::Node;
use troupe_test_nats::NatsServer;

#[test]
fn killing_the_server_under_a_flat_out_stream() {
    kill_mid_stream(false);
}

#[test]
fn killing_the_server_under_a_paced_stream() {
    kill_mid_stream(true);
}

/// `paced`: bursts of 100 tells 1 ms apart (~80k msgs/s, the outbox mostly
/// empty); otherwise flat out (the pipe full when the server dies).
fn kill_mid_stream(paced: bool) {
    let Some(mut server) = NatsServer::start_or_skip() else {
        return;
    };
    let system = ActorSystem::builder().threads(2).build();
    let seen = Arc::new(AtomicU64::new(0));
    let c = Counter::new(seen.clone());
    let disorder = c.disorder.clone();
    let counter = system.spawn(c);
    let b = Node::builder(&server.url(), "b")
        .insecure()
        .connect()
        .unwrap();
    b.expose("counter", &counter)
        .tell::<Add>()
        .ask::<Sum>(CounterMsg::Sum)
        .serve()
        .unwrap();
    let a = Node::builder(&server.url(), "a")
        .insecure()
        .connect()
        .unwrap();
    let add = a.lookup::<Add>("counter@b").unwrap();

    // Phase 1: stream flat out for 600 ms; another thread kills the server
    // at 300 ms, while a burst is in flight.
    let (mut accepted, mut handed_back, mut i) = (0u64, 0u64, 0u64);
    let accepted_now = Arc::new(AtomicU64::new(0));
    let killer = {
        let accepted_now = accepted_now.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            server.kill();
            (server, accepted_now.load(Ordering::Relaxed))
        })
    };
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(600) {
        accepted_now.store(accepted, Ordering::Relaxed);
        for _ in 0..100 {
            i += 1;
            match add.tell(Add(i)) {
                Ok(()) => accepted += 1,
                Err(SendError::Closed(Add(n))) | Err(SendError::Full(Add(n))) => {
                    assert_eq!(n, i, "the message handed back is the one sent");
                    handed_back += 1
                }
                Err(e) => panic!("unexpected {e:?}"),
            }
        }
        if paced {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let sent_phase1 = i;
    let (mut server, killed_at) = killer.join().unwrap();
    // While the server is down an ask fails at once, and says why.
    let sum = add.retype::<Sum>().unwrap();
    assert_eq!(
        sum.ask(Sum, Duration::from_secs(2)),
        Err(AskError::Disconnected)
    );
    // Phase 2: the server comes back on the same port; both nodes reconnect.
    server.restart().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !(a.is_connected() && b.is_connected()) {
        assert!(Instant::now() < deadline, "the nodes did not reconnect");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Give the sender's queued bytes time to go out (they may, after
    // reconnect), then wait for the receiver's acks to account for every
    // accepted tell (probes reveal a tail lost in the outage).
    a.flush(Duration::from_secs(5));
    let settle = Instant::now();
    assert!(
        a.settle(Duration::from_secs(10)),
        "tells still unconfirmed: {:?}",
        a.stats()
    );
    let settled_in = settle.elapsed();
    // Confirmed tells were handed to the actor's mailbox; let it count them.
    let confirmed = a.stats().tells_confirmed;
    assert!(wait_until(Duration::from_secs(5), || seen
        .load(Ordering::Relaxed)
        >= confirmed));
    let delivered_phase1 = seen.load(Ordering::Relaxed);
    let s = a.stats();
    let r = b.stats();
    let reported_lost = s.frames_lost;
    let silently_lost =
        accepted as i64 - (delivered_phase1 + reported_lost + s.tells_refused_by_peer) as i64;
    eprintln!(
        "server_loss ({}): sent {sent_phase1}, accepted {accepted} (of which {} before the kill), \
         delivered {delivered_phase1}, handed back by tell {handed_back}, reported lost {reported_lost} \
         (frames_lost; the receiver counted {} missed), refused by the peer {}, lost silently {silently_lost}, \
         jumps in the actor's sequence {}; settled {settled_in:?} after the flush ({} probes, {} acks)",
        if paced { "paced" } else { "flat out" },
        killed_at,
        r.frames_missed,
        s.tells_refused_by_peer,
        disorder.load(Ordering::Relaxed),
        s.probes_sent,
        r.acks_sent,
    );
    assert_eq!(accepted + handed_back, sent_phase1);
    // Every accepted tell is in exactly one bucket on the sender.
    assert_eq!(s.tells_unconfirmed, 0);
    assert_eq!(
        s.tells_confirmed + s.tells_refused_by_peer + s.frames_lost,
        accepted,
        "{s:?}"
    );
    assert_eq!(silently_lost, 0, "{s:?}");
    assert_eq!(s.tells_confirmed, delivered_phase1, "{s:?}");
    assert_eq!(s.tells_refused_by_peer, 0, "{s:?}");
    // The receiver saw the same holes the sender reports (its link state
    // began with the first batch, and what failed to publish is a hole too).
    assert_eq!(
        r.frames_missed, s.frames_lost,
        "sender {s:?}\nreceiver {r:?}"
    );
    assert_eq!(r.unlinked, 0);
    assert!(
        delivered_phase1 <= accepted,
        "more arrived than was accepted: duplicates"
    );
    assert!(
        handed_back > 0,
        "tells during the outage must be handed back"
    );
    assert!(delivered_phase1 > 0 && killed_at > 0);

    // After the restart, new traffic flows again, complete and in order (to
    // a fresh actor, so stragglers of phase 1 cannot blur the count).
    let seen2 = Arc::new(AtomicU64::new(0));
    let c2 = Counter::new(seen2.clone());
    let disorder2 = c2.disorder.clone();
    let counter2 = system.spawn(c2);
    b.expose("counter2", &counter2)
        .tell::<Add>()
        .serve()
        .unwrap();
    let add2 = a.lookup::<Add>("counter2@b").unwrap();
    for k in 1..=10_000 {
        add2.tell(Add(k)).unwrap();
    }
    assert!(wait_until(Duration::from_secs(10), || seen2
        .load(Ordering::Relaxed)
        == 10_000));
    assert_eq!(
        disorder2.load(Ordering::Relaxed),
        0,
        "out of order after reconnect"
    );
    system.shutdown();
}
