//! A supervisor restarts a crashing worker; a stable reference reaches each
//! new instance; a monitor reports every exit; past its restart intensity
//! the supervisor gives up.
//!
//! Run: `cargo run -p troupe --example supervision`

use std::sync::mpsc;
use std::time::Duration;
use troupe::supervision::{monitor, ChildSpec, Restart, Strategy, SupervisorSpec};
use troupe::Down;
use troupe::{Actor, ActorSystem, Context};

/// Counts jobs; crashes on a poisoned one (its state is lost and rebuilt).
struct Worker {
    done: u32,
}

enum Job {
    Work(u32),
    Poison,
}

impl Actor for Worker {
    type Msg = Job;

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        println!("  worker {} started", ctx.id());
    }

    fn handle(&mut self, job: Job, _ctx: &mut Context<'_, Self>) {
        match job {
            Job::Work(n) => {
                self.done += 1;
                println!("  job {n} done ({} by this instance)", self.done);
            }
            Job::Poison => panic!("poisoned job"),
        }
    }
}

/// Prints the `Down` messages of what it monitors.
struct Watcher(mpsc::Sender<Down>);

impl Actor for Watcher {
    type Msg = Down;
    fn handle(&mut self, down: Down, _ctx: &mut Context<'_, Self>) {
        println!("  down: actor {} ({})", down.id, down.reason);
        let _ = self.0.send(down);
    }
}

fn main() {
    // The crashes below are on purpose: print them in one line.
    std::panic::set_hook(Box::new(|info| eprintln!("  (panic: {info})")));
    let system = ActorSystem::new();
    let t = Duration::from_secs(5);

    let spec = ChildSpec::new("worker", || Worker { done: 0 }).restart(Restart::Permanent);
    let worker = spec.supervised_ref::<Worker>().expect("a Worker child");
    let supervisor = SupervisorSpec::new(Strategy::OneForOne)
        .intensity(2, Duration::from_secs(10))
        .child(spec)
        .spawn(&system);

    let (downs_tx, downs) = mpsc::channel();
    let watcher = system.spawn(Watcher(downs_tx));

    for round in 1..=3 {
        println!("round {round}:");
        let instance = worker.current().expect("running");
        let _ = monitor(&watcher, &instance, |down| down);
        worker.tell_wait(Job::Work(round), t).unwrap();
        worker.tell_wait(Job::Poison, t).unwrap();
        downs.recv_timeout(t).expect("the instance's exit");
        // The stable reference now reaches the next instance (generations
        // count restarts), unless the supervisor gave up.
        if worker
            .wait_generation(round as u64, Duration::from_millis(500))
            .is_none()
        {
            println!("  no new instance: the supervisor gave up");
        }
    }
    // The third crash was one restart too many within 10 s.
    println!("supervisor stopped: {}", supervisor.join());
    let report = system.shutdown();
    println!("{report}");
}
