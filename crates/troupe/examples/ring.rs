//! The ring benchmark of seed 002, small: R rings of N actors pass a token
//! that counts down from N*L; each ring reports when its token reaches 0.
//!
//! Run: `cargo run --release -p troupe --example ring -- 10 10000 100`

use std::time::Instant;
use troupe::{Actor, ActorRef, ActorSystem, Context};

enum Msg {
    Link(ActorRef<Node>),
    Token(u64),
}

struct Node {
    next: Option<ActorRef<Node>>,
    done: std::sync::mpsc::Sender<()>,
}

impl Actor for Node {
    type Msg = Msg;
    fn handle(&mut self, msg: Msg, _ctx: &mut Context<'_, Self>) {
        match msg {
            Msg::Link(next) => self.next = Some(next),
            Msg::Token(0) => {
                let _ = self.done.send(());
            }
            Msg::Token(t) => {
                if let Some(next) = &self.next {
                    let _ = next.tell(Msg::Token(t - 1));
                }
            }
        }
    }
}

/// Rings of actors passing a token.
#[derive(clap::Parser)]
struct Args {
    /// Rings run at once.
    #[arg(default_value_t = 4)]
    rings: u64,
    /// Actors per ring.
    #[arg(default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    actors: u64,
    /// Laps of the token around each ring.
    #[arg(default_value_t = 100)]
    laps: u64,
}

fn main() {
    let Args {
        rings,
        actors,
        laps,
    } = clap::Parser::parse();
    let system = ActorSystem::new();
    let (tx, rx) = std::sync::mpsc::channel();
    let t0 = Instant::now();
    let firsts: Vec<ActorRef<Node>> = (0..rings)
        .map(|_| {
            let nodes: Vec<_> = (0..actors)
                .map(|_| {
                    system.spawn(Node {
                        next: None,
                        done: tx.clone(),
                    })
                })
                .collect();
            for (i, n) in nodes.iter().enumerate() {
                n.tell(Msg::Link(nodes[(i + 1) % nodes.len()].clone()))
                    .unwrap();
            }
            nodes[0].clone()
        })
        .collect();
    println!("created {} actors in {:?}", rings * actors, t0.elapsed());
    let t0 = Instant::now();
    for f in &firsts {
        f.tell(Msg::Token(actors * laps)).unwrap();
    }
    for _ in 0..rings {
        rx.recv().unwrap();
    }
    let secs = t0.elapsed().as_secs_f64();
    let hops = (rings * actors * laps) as f64;
    println!(
        "{hops} hops in {secs:.3} s: {:.1} M hops/s on {} threads",
        hops / secs / 1e6,
        system.threads()
    );
}
