//! Alone in its own test binary, as `idle_cpu.rs`: it measures the whole
//! process's CPU time, which other tests running in parallel would
//! pollute. 10^5 async actors suspended on futures that never complete
//! cost no CPU (issue 27).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe::{ActorSystem, Async, AsyncActor, AsyncContext};

const T: Duration = Duration::from_secs(30);

/// Counts itself in, then awaits a future that never completes.
struct Forever {
    suspended: Arc<AtomicUsize>,
}

impl AsyncActor for Forever {
    type Msg = ();
    async fn handle(&mut self, _: (), _ctx: &mut AsyncContext<Self>) {
        self.suspended.fetch_add(1, Ordering::Relaxed);
        std::future::pending::<()>().await;
    }
}

fn process_cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after_comm = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after_comm.split_whitespace().collect();
    Duration::from_millis((f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()) * 10)
}

#[test]
fn a_hundred_thousand_pending_actors_cost_no_cpu() {
    let system = ActorSystem::builder().threads(2).build();
    let n = 100_000;
    let suspended = Arc::new(AtomicUsize::new(0));
    let actors: Vec<_> = (0..n)
        .map(|_| {
            system.spawn(Async::new(Forever {
                suspended: suspended.clone(),
            }))
        })
        .collect();
    for a in &actors {
        a.tell(()).unwrap();
        // A second message waits in the mailbox behind the pending one.
        a.tell(()).unwrap();
    }
    // Every first message has started and suspended (under a sanitizer
    // this takes seconds), then the workers park.
    let deadline = Instant::now() + T;
    while suspended.load(Ordering::Relaxed) < n {
        assert!(Instant::now() < deadline, "not every actor suspended");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    let cpu0 = process_cpu_time();
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_millis(1000));
    let cpu = process_cpu_time() - cpu0;
    // Two spinning workers would burn about 2 s here; parked ones ~0.
    assert!(
        cpu < t0.elapsed() / 10,
        "{n} suspended actors used {cpu:?} of CPU"
    );
    for a in &actors {
        a.kill();
    }
    let report = system.shutdown_timeout(T);
    assert_eq!(report.actors_unresponsive, 0);
    assert_eq!(
        report.messages_dropped, n as u64,
        "each one's queued message"
    );
}
