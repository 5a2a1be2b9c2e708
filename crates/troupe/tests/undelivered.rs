//! An actor spawned with an undelivered hook hands what its mailbox held
//! when it stopped to the hook (issue 38, L8): stopped by itself, panicked
//! or killed, in order, nothing counted as dropped; what the owner does
//! not take is dropped and counted when the `Undelivered` is, asks among
//! it failing with `ActorStopped`. And `Context::passivate` stops an actor
//! once its queue has drained, refusing what comes after.

use std::sync::mpsc;
use std::time::Duration;

use troupe::{
    Actor, ActorRef, ActorSystem, AskError, Context, ReplyTo, SendError, SpawnOptions, StopReason,
    Undelivered,
};

enum Msg {
    /// Handled: written down.
    Note(u32),
    /// Waits for the gate, then stops itself.
    Stop,
    /// Waits for the gate, then panics.
    Panic,
    /// Waits for the gate, then passivates.
    Passivate,
    /// Waits for the gate (so that what follows queues up).
    Hold,
    /// An ask.
    Echo(u32, ReplyTo<u32>),
}

struct Worker {
    gate: mpsc::Receiver<()>,
    seen: mpsc::Sender<u32>,
}

impl Actor for Worker {
    type Msg = Msg;
    fn handle(&mut self, m: Msg, ctx: &mut Context<'_, Self>) {
        match m {
            Msg::Note(n) => self.seen.send(n).unwrap(),
            Msg::Stop => {
                let _ = self.gate.recv();
                ctx.stop();
            }
            Msg::Panic => {
                let _ = self.gate.recv();
                panic!("on purpose");
            }
            Msg::Passivate => {
                let _ = self.gate.recv();
                ctx.passivate();
            }
            Msg::Hold => {
                let _ = self.gate.recv();
            }
            Msg::Echo(n, r) => {
                r.reply(n);
            }
        }
    }
}

type Left = (u64, StopReason, Vec<u32>);

/// A worker with a hook that reports what it left (the notes' numbers; an
/// `Echo` as 1000 + n, answered here).
fn spawn(
    system: &ActorSystem,
) -> (
    ActorRef<Worker>,
    mpsc::Sender<()>,
    mpsc::Receiver<u32>,
    mpsc::Receiver<Left>,
) {
    let (gate_tx, gate) = mpsc::channel();
    let (seen, seen_rx) = mpsc::channel();
    let (left_tx, left_rx) = mpsc::channel();
    let hook = move |mut u: Undelivered<Msg>| {
        let handled = u.handled();
        let reason = u.reason().clone();
        let left = u
            .take()
            .into_iter()
            .map(|m| match m {
                Msg::Note(n) => n,
                Msg::Echo(n, r) => {
                    r.reply(n);
                    1000 + n
                }
                _ => u32::MAX,
            })
            .collect();
        left_tx.send((handled, reason, left)).unwrap();
    };
    let a =
        system
            .handle()
            .spawn_with_undelivered(Worker { gate, seen }, SpawnOptions::new(), hook);
    (a, gate_tx, seen_rx, left_rx)
}

fn system() -> ActorSystem {
    ActorSystem::builder().threads(2).build()
}

const WAIT: Duration = Duration::from_secs(5);

/// Waits until the worker has taken its first message (it waits for the
/// gate in it), so that what follows is queued behind it.
fn popped(a: &ActorRef<Worker>) {
    while a.mailbox_len() > 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn an_actor_that_stops_itself_hands_back_its_queue() {
    let system = system();
    let (a, gate, seen, left) = spawn(&system);
    a.tell(Msg::Note(1)).unwrap();
    a.tell(Msg::Stop).unwrap();
    for n in 2..=4 {
        a.tell(Msg::Note(n)).unwrap();
    }
    gate.send(()).unwrap();
    assert_eq!(a.join_timeout(WAIT), Some(StopReason::Normal));
    assert_eq!(seen.recv_timeout(WAIT), Ok(1));
    assert_eq!(
        left.recv_timeout(WAIT),
        Ok((2, StopReason::Normal, vec![2, 3, 4]))
    );
    assert_eq!(system.dropped_messages(), 0, "handed over, not dropped");
    system.shutdown();
}

#[test]
fn an_actor_that_panics_hands_back_what_followed_the_panic() {
    let system = system();
    let (a, gate, _seen, left) = spawn(&system);
    a.tell(Msg::Panic).unwrap();
    for n in 1..=3 {
        a.tell(Msg::Note(n)).unwrap();
    }
    gate.send(()).unwrap();
    assert!(matches!(
        a.join_timeout(WAIT),
        Some(StopReason::Panicked(_))
    ));
    let (handled, reason, msgs) = left.recv_timeout(WAIT).unwrap();
    assert_eq!((handled, msgs), (1, vec![1, 2, 3]));
    assert!(matches!(reason, StopReason::Panicked(_)), "{reason:?}");
    assert_eq!(system.dropped_messages(), 0);
    system.shutdown();
}

#[test]
fn a_killed_actor_hands_back_its_queue_asks_included() {
    let system = system();
    let (a, gate, _seen, left) = spawn(&system);
    a.tell(Msg::Hold).unwrap();
    popped(&a);
    a.tell(Msg::Note(1)).unwrap();
    let asker = {
        let a = a.clone();
        std::thread::spawn(move || a.ask(|r| Msg::Echo(7, r), WAIT))
    };
    // The ask is queued behind the hold.
    while a.mailbox_len() < 2 {
        std::thread::sleep(Duration::from_millis(1));
    }
    a.kill();
    gate.send(()).unwrap();
    assert_eq!(a.join_timeout(WAIT), Some(StopReason::Killed));
    assert_eq!(
        left.recv_timeout(WAIT),
        Ok((1, StopReason::Killed, vec![1, 1007]))
    );
    // The hook answered the ask it was handed.
    assert_eq!(asker.join().unwrap(), Ok(7));
    system.shutdown();
}

#[test]
fn what_the_owner_does_not_take_is_dropped_and_counted() {
    let system = system();
    let (gate_tx, gate) = mpsc::channel();
    let (seen, _seen_rx) = mpsc::channel();
    let (done_tx, done) = mpsc::channel();
    let hook = move |u: Undelivered<Msg>| {
        done_tx.send(u.len()).unwrap();
        // Dropped here, untaken.
    };
    let a =
        system
            .handle()
            .spawn_with_undelivered(Worker { gate, seen }, SpawnOptions::new(), hook);
    a.tell(Msg::Stop).unwrap();
    popped(&a);
    a.tell(Msg::Note(1)).unwrap();
    let asker = {
        let a = a.clone();
        std::thread::spawn(move || a.ask(|r| Msg::Echo(7, r), WAIT))
    };
    while a.mailbox_len() < 2 {
        std::thread::sleep(Duration::from_millis(1));
    }
    gate_tx.send(()).unwrap();
    assert_eq!(done.recv_timeout(WAIT), Ok(2));
    assert_eq!(asker.join().unwrap(), Err(AskError::ActorStopped));
    a.join();
    assert_eq!(system.dropped_messages(), 2);
    system.shutdown();
}

/// `passivate`: what was queued is handled, what comes after is refused
/// with the message back, and nothing is left for the hook.
#[test]
fn passivate_handles_the_queue_then_stops() {
    let system = system();
    let (a, gate, seen, left) = spawn(&system);
    a.tell(Msg::Passivate).unwrap();
    for n in 1..=3 {
        a.tell(Msg::Note(n)).unwrap();
    }
    gate.send(()).unwrap();
    assert_eq!(a.join_timeout(WAIT), Some(StopReason::Normal));
    let handled: Vec<u32> = seen.try_iter().collect();
    assert_eq!(handled, [1, 2, 3]);
    assert!(matches!(a.tell(Msg::Note(4)), Err(SendError::Stopped(_))));
    assert_eq!(
        left.recv_timeout(WAIT),
        Ok((4, StopReason::Normal, Vec::new()))
    );
    assert_eq!(system.dropped_messages(), 0);
    system.shutdown();
}

/// Without a hook nothing changes: a stop drops what is queued, counted.
#[test]
fn without_a_hook_the_queue_is_dropped_as_before() {
    let system = system();
    let (gate_tx, gate) = mpsc::channel();
    let (seen, _seen_rx) = mpsc::channel();
    let a = system.spawn(Worker { gate, seen });
    a.tell(Msg::Stop).unwrap();
    a.tell(Msg::Note(1)).unwrap();
    a.tell(Msg::Note(2)).unwrap();
    gate_tx.send(()).unwrap();
    a.join();
    assert_eq!(system.dropped_messages(), 2);
    system.shutdown();
}
