//! The contention budget, checked by the counters (`--features contention`;
//! `docs/architecture.md`, "Contention budget"): a tell to a busy receiver
//! does at most `budget::tell_steady` shared-line RMWs and touches no
//! scheduler queue, and the receiver's pops stay within `budget::pop_steady`.
//!
//! Shape: the receiver's first handler waits until the sender has pushed all
//! `N` messages, so every one of them finds the actor scheduled (busy); only
//! the sender thread runs during the counted window (the workers are parked
//! or blocked in that handler). Then the handler returns and the receiver
//! pops all `N` in the second window.

use std::sync::{mpsc, Mutex};
use std::time::Duration;
use troupe::contention::{budget, snapshot};
use troupe::{Actor, ActorRef, ActorSystem, Context};

const N: u64 = 30_000;

/// The counters are process-wide: one counted test at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

enum Msg {
    /// The first message: wait for the go.
    Hold(mpsc::Receiver<()>),
    Item,
    Done(mpsc::Sender<u64>),
}

struct Receiver {
    got: u64,
}

impl Actor for Receiver {
    type Msg = Msg;
    fn handle(&mut self, msg: Msg, _ctx: &mut Context<'_, Self>) {
        match msg {
            Msg::Hold(go) => {
                let _ = go.recv_timeout(Duration::from_secs(20));
            }
            Msg::Item => self.got += 1,
            Msg::Done(to) => {
                let _ = to.send(self.got);
            }
        }
    }
}

#[test]
fn a_tell_to_a_busy_receiver_stays_within_the_budget() {
    let _one = serial();
    let system = ActorSystem::builder().threads(2).build();
    let r = system.spawn(Receiver { got: 0 });
    let (go_tx, go_rx) = mpsc::channel();
    let (held_tx, held_rx) = mpsc::channel::<u64>();
    r.tell(Msg::Hold(go_rx)).unwrap();
    // The receiver is in its handler once it answers nothing: give it the
    // first message's turn, then make sure it is busy by asking after.
    std::thread::sleep(Duration::from_millis(50));

    let before = snapshot();
    for _ in 0..N {
        r.tell(Msg::Item).unwrap();
    }
    let tells = snapshot().since(&before);

    let before = snapshot();
    r.tell(Msg::Done(held_tx)).unwrap();
    go_tx.send(()).unwrap();
    assert_eq!(held_rx.recv_timeout(Duration::from_secs(20)).unwrap(), N);
    let pops = snapshot().since(&before);
    system.shutdown();

    let report = tells.report(N);
    eprint!(
        "tells:\n{report}pops (and the Done tell):\n{}",
        pops.report(N)
    );
    let rmw = tells.get("rmw");
    assert!(
        rmw <= budget::tell_steady(N),
        "{N} tells to a busy receiver did {rmw} shared RMWs, budget {}:\n{report}",
        budget::tell_steady(N)
    );
    assert_eq!(tells.get("cas_fail"), 0, "one sender, no claim retried");
    for event in [
        "injector_push",
        "notify",
        "unpark",
        "lifo_place",
        "deque_push",
    ] {
        assert_eq!(
            tells.get(event),
            budget::TELL_SCHED_EVENTS * N,
            "{event} during tells to a busy receiver"
        );
    }
    // The drain is one long turn: nothing else waits, so the budget's ends
    // neither hand the actor off nor wake anyone.
    for event in ["injector_push", "notify", "unpark", "budget_yield"] {
        assert_eq!(pops.get(event), 0, "{event} while a lone receiver drains");
    }
    // One more tell (`Done`) in the pop window, and its turn's release.
    let pop_rmw = pops.get("rmw");
    assert!(
        pop_rmw <= budget::pop_steady(N + 1) + budget::tell_steady(1),
        "popping {N} did {pop_rmw} shared RMWs, budget {}",
        budget::pop_steady(N + 1) + budget::tell_steady(1)
    );
}

/// Ping-pong between two actors: each reply wakes the other into the
/// replier's LIFO slot, run next on the same worker.
struct Ping {
    left: u64,
    done: Option<mpsc::Sender<()>>,
}

impl Actor for Ping {
    type Msg = ActorRef<Ping>;
    fn handle(&mut self, from: ActorRef<Ping>, ctx: &mut Context<'_, Self>) {
        if self.left == 0 {
            if let Some(d) = self.done.take() {
                let _ = d.send(());
            }
            return;
        }
        self.left -= 1;
        let _ = from.tell(ctx.myself());
    }
}

#[test]
fn ping_pong_stays_in_the_lifo_slot() {
    const ROUNDS: u64 = 10_000;
    let _one = serial();
    let system = ActorSystem::builder().threads(2).build();
    let (tx, rx) = mpsc::channel();
    let a = system.spawn(Ping {
        left: ROUNDS,
        done: Some(tx),
    });
    let b = system.spawn(Ping {
        left: u64::MAX,
        done: None,
    });
    std::thread::sleep(Duration::from_millis(50));
    let before = snapshot();
    a.tell(b).unwrap();
    rx.recv_timeout(Duration::from_secs(30)).unwrap();
    let d = snapshot().since(&before);
    system.shutdown();
    eprint!("{}", d.report(2 * ROUNDS));
    assert!(
        d.get("lifo_place") >= 2 * ROUNDS - 1,
        "every hop in the LIFO slot"
    );
    assert_eq!(d.get("lifo_spill"), 0, "no hop spilled");
    // Each hop wakes its receiver with its one claim, and the receiver's
    // turn ends with one release: no second RMW to take the task.
    let mailbox_rmw = d.get("rmw.unbounded");
    assert!(
        mailbox_rmw <= budget::ping_pong(2 * ROUNDS + 1),
        "{} hops did {mailbox_rmw} mailbox RMWs, budget {}",
        2 * ROUNDS + 1,
        budget::ping_pong(2 * ROUNDS + 1)
    );
    // The first tell comes from outside the pool; no hop after it.
    assert!(d.get("injector_push") <= 1);
    assert_eq!(d.get("deque_push"), 0);
}
