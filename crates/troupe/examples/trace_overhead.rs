//! What tracing each message costs, beside `metrics_overhead`: a pingpong
//! between two actors, each spawned with `trace_messages(true)`, with a
//! `tracing` subscriber installed (the plain registry: spans are recorded,
//! nothing is exported), so every message gets a `handle` span. Built with
//! the `trace-context` feature, each message also carries its sender's
//! span and its `handle` span is that span's child; without it, the spans
//! are the same but unlinked. Comparing the two builds gives the cost of
//! carrying the context when tracing is on.
//!
//! Run: `cargo run --release -p troupe --example trace_overhead [--features trace-context] -- [round trips] [samples]`
//! (defaults: 100,000 and 5). Prints the median ns per round trip.

use std::sync::mpsc;
use std::time::Instant;
use troupe::{Actor, ActorRef, ActorSystem, Context, SpawnOptions};

struct Pong;
impl Actor for Pong {
    type Msg = (u64, ActorRef<Ping>);
    fn handle(&mut self, (n, back): (u64, ActorRef<Ping>), _: &mut Context<'_, Self>) {
        let _ = back.tell(n);
    }
}

struct Ping {
    pong: ActorRef<Pong>,
    left: u64,
    done: mpsc::Sender<()>,
}
impl Actor for Ping {
    type Msg = u64;
    fn handle(&mut self, n: u64, ctx: &mut Context<'_, Self>) {
        if self.left == 0 {
            let _ = self.done.send(());
            return;
        }
        self.left -= 1;
        let _ = self.pong.tell((n + 1, ctx.myself()));
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let round_trips: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let samples: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    tracing::subscriber::set_global_default(tracing_subscriber::registry())
        .expect("the only subscriber");
    let system = ActorSystem::builder().threads(1).build();
    let traced = || SpawnOptions::new().trace_messages(true);
    let mut ns = Vec::new();
    for _ in 0..samples {
        let (tx, rx) = mpsc::channel();
        let pong = system.spawn_with(Pong, traced());
        let ping = system.spawn_with(
            Ping {
                pong,
                left: round_trips,
                done: tx,
            },
            traced(),
        );
        let start = Instant::now();
        ping.tell(0).expect("ping is running");
        rx.recv().expect("done");
        ns.push(start.elapsed().as_nanos() as f64 / round_trips as f64);
    }
    ns.sort_by(f64::total_cmp);
    let feature = if cfg!(feature = "trace-context") {
        "on"
    } else {
        "off"
    };
    println!(
        "trace_overhead trace-context={feature}: {round_trips} round trips, median {:.1} ns per round trip (samples {ns:.1?})",
        ns[ns.len() / 2]
    );
    system.shutdown();
}
