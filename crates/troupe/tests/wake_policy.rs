//! The scheduler's wake policy, from outside (`engine/scheduler/worker.rs`,
//! "The LIFO slot"): a receiver that an actor's handler wakes and then goes
//! on telling does not wait for the rest of that handler in the handler's
//! LIFO slot, where no other worker could take it; and a fan-in receiver
//! with a backlog keeps a worker while more sender handlers wait in the
//! queues (overtime, `engine/scheduler/overtime.rs`), instead of getting
//! one budget (64 messages) per sender handler.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use troupe::{Actor, ActorRef, ActorSystem, Context};

/// Far more tells than a woken worker needs to take the sink (without the
/// spill, the sink waits for all of them); ~64 MB queued at most.
const MAX_TELLS: u64 = 4_000_000;

/// Counts what it gets; raises `running` at the first message.
struct Sink {
    running: Arc<AtomicBool>,
    got: Arc<AtomicU64>,
}

impl Actor for Sink {
    type Msg = u64;
    fn handle(&mut self, _: u64, _ctx: &mut Context<'_, Self>) {
        self.running.store(true, Ordering::Release);
        self.got.fetch_add(1, Ordering::Relaxed);
    }
}

/// One handler that tells the sink until the sink has run (or it sent
/// `MAX_TELLS`, or 20 s passed), then reports how many it sent.
struct Flooder {
    to: ActorRef<Sink>,
    running: Arc<AtomicBool>,
    done: mpsc::Sender<(bool, u64)>,
}

impl Actor for Flooder {
    type Msg = ();
    fn handle(&mut self, _: (), ctx: &mut Context<'_, Self>) {
        let limit = Instant::now() + Duration::from_secs(20);
        let mut sent = 0u64;
        while !self.running.load(Ordering::Acquire) && sent < MAX_TELLS && Instant::now() < limit {
            if self.to.tell(sent).is_err() {
                break;
            }
            sent += 1;
        }
        let _ = self.done.send((self.running.load(Ordering::Acquire), sent));
        ctx.stop();
    }
}

#[test]
fn a_receiver_woken_by_a_flooding_handler_runs_before_the_handler_ends() {
    let system = ActorSystem::builder().threads(2).build();
    let running = Arc::new(AtomicBool::new(false));
    let got = Arc::new(AtomicU64::new(0));
    let sink = system.spawn(Sink {
        running: running.clone(),
        got: got.clone(),
    });
    let (tx, rx) = mpsc::channel();
    let flooder = system.spawn(Flooder {
        to: sink.clone(),
        running,
        done: tx,
    });
    flooder.tell(()).unwrap();
    let (ran, sent) = rx.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(
        ran,
        "the sink never ran while its waker's handler went on telling ({sent} tells)"
    );
    // Every tell arrives.
    let limit = Instant::now() + Duration::from_secs(20);
    while got.load(Ordering::Relaxed) < sent && Instant::now() < limit {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(got.load(Ordering::Relaxed), sent);
    system.shutdown();
}

/// Tells per fan-in sender handler, and the senders (2 workers: the first
/// two run at once; the others queue).
const FAN_IN_TELLS: u64 = 50_000;
const FAN_IN_SENDERS: u64 = 8;

/// What each fan-in sender saw when its handler ended: how many sender
/// handlers had started by then, and how far the sink was behind.
#[derive(Debug)]
struct Seen {
    started: u64,
    behind: u64,
}

/// One handler of `FAN_IN_TELLS` tells to the sink.
struct FanInSender {
    to: ActorRef<Sink>,
    got: Arc<AtomicU64>,
    started: Arc<AtomicU64>,
    sent: Arc<AtomicU64>,
    done: mpsc::Sender<Seen>,
}

impl Actor for FanInSender {
    type Msg = ();
    fn handle(&mut self, _: (), ctx: &mut Context<'_, Self>) {
        self.started.fetch_add(1, Ordering::SeqCst);
        for i in 0..FAN_IN_TELLS {
            if self.to.tell(i).is_err() {
                break;
            }
        }
        let sent = self.sent.fetch_add(FAN_IN_TELLS, Ordering::SeqCst) + FAN_IN_TELLS;
        let got = self.got.load(Ordering::SeqCst);
        let _ = self.done.send(Seen {
            started: self.started.load(Ordering::SeqCst),
            behind: sent.saturating_sub(got),
        });
        ctx.stop();
    }
}

/// 8 sender actors, each one handler of 50,000 tells to one sink, on 2
/// workers. Before overtime the sink, once it ran, yielded at every budget
/// end to the senders queued on its worker.
/// Between two sender ends the sink then handled at most two budgets, so
/// how far it was behind grew by nearly a handler's 50,000 tells at every
/// end while a sender still waited. With overtime the sink keeps its
/// worker and the other worker runs the senders: the sink gains on them,
/// and some sender that ends while another has not started finds it less
/// far behind than the sender that ended before it. (One such pair
/// suffices: a loaded machine may deschedule the sink's worker for a
/// while, but not for every sender.)
#[test]
fn a_fan_in_receiver_keeps_up_while_sender_handlers_wait() {
    let system = ActorSystem::builder().threads(2).build();
    let got = Arc::new(AtomicU64::new(0));
    let sink = system.spawn(Sink {
        running: Arc::new(AtomicBool::new(false)),
        got: got.clone(),
    });
    let (started, sent) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (tx, rx) = mpsc::channel();
    let senders: Vec<_> = (0..FAN_IN_SENDERS)
        .map(|_| {
            system.spawn(FanInSender {
                to: sink.clone(),
                got: got.clone(),
                started: started.clone(),
                sent: sent.clone(),
                done: tx.clone(),
            })
        })
        .collect();
    for s in &senders {
        s.tell(()).unwrap();
    }
    let seen: Vec<Seen> = (0..FAN_IN_SENDERS)
        .map(|_| rx.recv_timeout(Duration::from_secs(30)).unwrap())
        .collect();
    let total = FAN_IN_TELLS * FAN_IN_SENDERS;
    let limit = Instant::now() + Duration::from_secs(20);
    while got.load(Ordering::Relaxed) < total && Instant::now() < limit {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(got.load(Ordering::Relaxed), total, "every tell arrives");
    assert!(
        seen.windows(2)
            .any(|w| w[1].started < FAN_IN_SENDERS && w[1].behind < w[0].behind),
        "the sink never gained on the senders while others waited: {seen:?}"
    );
    system.shutdown();
}
