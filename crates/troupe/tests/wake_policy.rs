//! The scheduler's wake policy, from outside (`engine/scheduler/worker.rs`,
//! "The LIFO slot"): a receiver that an actor's handler wakes and then goes
//! on telling does not wait for the rest of that handler in the handler's
//! LIFO slot, where no other worker could take it.

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
