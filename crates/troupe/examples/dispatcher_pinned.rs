//! A pinned pool: each worker is pinned to a CPU (the affinity executor of
//! seed 003), so an actor's data stays in that core's caches.
//!
//! Run: `cargo run -p troupe --example dispatcher_pinned`

use troupe::dispatcher::current_worker_cpu;
use troupe::{Actor, ActorSystem, Context, SpawnOptions};

struct Where;

impl Actor for Where {
    type Msg = u32;
    fn handle(&mut self, n: u32, _ctx: &mut Context<'_, Self>) {
        println!(
            "message {n}: handled by the worker pinned to CPU {:?} ({:?})",
            current_worker_cpu(),
            std::thread::current().name()
        );
    }
}

fn main() {
    let system = ActorSystem::builder().threads(1).build();
    let cpus: Vec<usize> = (0..std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1))
        .collect();
    let pinned = system.pinned_pool("pinned", &cpus);
    let actors: Vec<_> = (0..4)
        .map(|_| system.spawn_with(Where, SpawnOptions::new().dispatcher(&pinned)))
        .collect();
    for (i, a) in actors.iter().enumerate() {
        a.tell(i as u32).unwrap();
    }
    system.shutdown();
}
