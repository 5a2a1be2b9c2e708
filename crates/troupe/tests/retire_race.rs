//! Issue 24: a stopped actor's cell was dropped in place and its memory
//! kept for the next spawn (`actor::recycle`) while another thread, which
//! had upgraded a weak reference to it, still used it. The retirement's
//! uniqueness test read the strong and weak counts with two separate
//! `Relaxed` loads; a `Weak` upgraded between them passed it.
//!
//! This stress runs the racing shape as hard as two cores allow: actors
//! stop themselves (so their worker retires them, recycling their cells)
//! while other threads upgrade `WeakActorRef`s to them, drop the weak
//! reference, and then tell and drop. Counted exactly: every tell accepted
//! is handled or dropped. Under
//! ThreadSanitizer (CI) the old check shows as a data race between the
//! retirement's drop in place and the upgraded holder's send; under
//! AddressSanitizer as a use of the dropped mailbox's freed block.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use troupe::{Actor, ActorSystem, Context, WeakActorRef};

struct Brief {
    handled: Arc<AtomicU64>,
    /// Stops itself after this many messages.
    left: u32,
}

impl Actor for Brief {
    type Msg = ();
    fn handle(&mut self, _: (), ctx: &mut Context<'_, Self>) {
        self.handled.fetch_add(1, Ordering::Relaxed);
        self.left = self.left.saturating_sub(1);
        if self.left == 0 {
            ctx.stop();
        }
    }
}

#[test]
fn weak_upgrades_racing_retirement_lose_nothing() {
    let system = ActorSystem::builder().threads(2).build();
    let handled = Arc::new(AtomicU64::new(0));
    let accepted = Arc::new(AtomicU64::new(0));
    let upgraded = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    // The newest actors' weak references, for the upgraders to race.
    let weaks: Arc<Mutex<Vec<WeakActorRef<Brief>>>> = Arc::new(Mutex::new(Vec::new()));
    let deadline = Instant::now() + Duration::from_millis(1500);

    let upgraders: Vec<_> = (0..3)
        .map(|_| {
            let (weaks, accepted, stop) = (weaks.clone(), accepted.clone(), stop.clone());
            let upgraded = upgraded.clone();
            std::thread::spawn(move || {
                let mut n = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    let weak = {
                        let w = weaks.lock().unwrap();
                        if w.is_empty() {
                            continue;
                        }
                        w[n % w.len()].clone()
                    };
                    n += 1;
                    // Upgrade, then drop the weak reference before using the
                    // strong one: the interleaving the old check missed.
                    let Some(strong) = weak.upgrade() else {
                        continue;
                    };
                    drop(weak);
                    upgraded.fetch_add(1, Ordering::Relaxed);
                    if strong.tell(()).is_ok() {
                        accepted.fetch_add(1, Ordering::Relaxed);
                    }
                    let _ = strong.is_alive();
                    drop(strong);
                }
            })
        })
        .collect();

    let mut spawned = 0u64;
    while Instant::now() < deadline {
        let a = system.spawn(Brief {
            handled: handled.clone(),
            left: 3,
        });
        spawned += 1;
        {
            let mut w = weaks.lock().unwrap();
            if w.len() >= 8 {
                w.remove(0);
            }
            w.push(a.downgrade());
        }
        // The spawner's own tells; the actor stops itself after its third
        // message, on its worker, and is retired there.
        for _ in 0..3 {
            if a.tell(()).is_ok() {
                accepted.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    for u in upgraders {
        u.join().unwrap();
    }
    weaks.lock().unwrap().clear();
    let report = system.shutdown();
    assert!(spawned > 100, "the race ran ({spawned} actors)");
    assert!(upgraded.load(Ordering::Relaxed) > 0, "upgrades ran");
    assert_eq!(
        accepted.load(Ordering::Relaxed),
        handled.load(Ordering::Relaxed) + report.messages_dropped,
        "every accepted tell handled or dropped ({report})"
    );
    assert_eq!(report.actors_unresponsive, 0);
}
