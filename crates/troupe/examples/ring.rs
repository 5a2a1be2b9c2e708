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

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let (rings, actors, laps) = (
        *args.first().unwrap_or(&4),
        *args.get(1).unwrap_or(&1000),
        *args.get(2).unwrap_or(&100),
    );
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
