//! Alone in its own test binary: it measures the whole process's CPU time,
//! which other tests running in parallel would pollute.

use std::time::{Duration, Instant};
use troupe::{Actor, ActorSystem, Context, ReplyTo};

const T: Duration = Duration::from_secs(10);

struct Echo;
impl Actor for Echo {
    type Msg = (u64, ReplyTo<u64>);
    fn handle(&mut self, (x, r): Self::Msg, _ctx: &mut Context<'_, Self>) {
        r.reply(x);
    }
}

fn process_cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after_comm = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the full line (12, 13 here).
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}

/// At 2 workers, and at 16, the default on a 16-core machine (issue 24):
/// parked workers cost nothing after a run of asks that woke them. One
/// test, the two in turn: the measure is the whole process's.
#[test]
fn idle_system_uses_almost_no_cpu() {
    idle_at(2);
    idle_at(16);
}

fn idle_at(threads: usize) {
    let system = ActorSystem::builder().threads(threads).build();
    let echo = system.spawn(Echo);
    for i in 0..1000 {
        assert_eq!(echo.ask(|r| (i, r), T), Ok(i));
    }
    std::thread::sleep(Duration::from_millis(100)); // let the workers park
    let cpu0 = process_cpu_time();
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_millis(1000));
    let cpu = process_cpu_time() - cpu0;
    let wall = t0.elapsed();
    // Spinning workers would burn a core each here; parked ones ~0.
    assert!(
        cpu < wall / 10,
        "idle {threads}-worker system used {cpu:?} of CPU in {wall:?}"
    );
    // And it wakes up promptly afterwards.
    assert_eq!(echo.ask(|r| (5, r), T), Ok(5));
}
