//! A dedicated thread per actor (SObjectizer's active_obj) and one thread
//! shared by a group (one_thread / active_group).
//!
//! Run: `cargo run -p troupe --example dispatcher_dedicated`

use troupe::{Actor, ActorSystem, Context, SpawnOptions};

struct Reporter(&'static str);

impl Actor for Reporter {
    type Msg = ();
    fn handle(&mut self, _: (), _ctx: &mut Context<'_, Self>) {
        println!(
            "{:<10} runs on {:?}",
            self.0,
            std::thread::current().name().unwrap_or("?")
        );
    }
}

fn main() {
    let system = ActorSystem::builder().threads(2).build();
    // This actor owns an OS thread for its whole life (e.g. it talks to a
    // thread-bound library); the thread exits when the actor stops.
    let device = system.spawn_with(
        Reporter("device"),
        SpawnOptions::new()
            .dedicated_thread()
            .thread_name("device-io"),
    );
    // These three share one thread: their handlers never run in parallel.
    let group = system.one_thread("ui");
    let widgets: Vec<_> = ["button", "slider", "label"]
        .into_iter()
        .map(|w| system.spawn_with(Reporter(w), SpawnOptions::new().dispatcher(&group)))
        .collect();
    device.tell(()).unwrap();
    for w in &widgets {
        w.tell(()).unwrap();
    }
    system.shutdown();
}
