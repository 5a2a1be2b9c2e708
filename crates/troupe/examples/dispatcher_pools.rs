//! Work-stealing pools and a shared-queue pool: isolate a subsystem's CPU
//! share by giving it a pool of its own.
//!
//! Run: `cargo run -p troupe --example dispatcher_pools`

use troupe::{Actor, ActorSystem, Context, SpawnOptions};

struct Worker(&'static str);

impl Actor for Worker {
    type Msg = u32;
    fn handle(&mut self, n: u32, _ctx: &mut Context<'_, Self>) {
        let thread = std::thread::current();
        println!("{} got {n} on {}", self.0, thread.name().unwrap_or("?"));
    }
}

fn main() {
    let system = ActorSystem::builder().threads(2).build();
    // A second, independent work-stealing pool (e.g. for a billing subsystem).
    let billing = system.work_stealing_pool("billing", 2);
    // All workers pull from one queue: strict global FIFO, no stealing.
    let fifo = system.shared_queue_pool("fifo", 2);

    let a = system.spawn(Worker("default-pool actor"));
    let b = system.spawn_with(
        Worker("billing actor"),
        SpawnOptions::new().dispatcher(&billing),
    );
    let c = system.spawn_with(
        Worker("shared-queue actor"),
        SpawnOptions::new().dispatcher(&fifo),
    );
    for n in 0..3 {
        a.tell(n).unwrap();
        b.tell(n).unwrap();
        c.tell(n).unwrap();
    }
    println!("{}", system.shutdown());
}
