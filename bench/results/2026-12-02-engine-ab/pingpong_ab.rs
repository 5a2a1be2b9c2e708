//! Pingpong without troupe-bench's crossbeam-thread baseline (which takes
//! minutes on a loaded machine): two actors bounce a counter K round trips
//! on a system of `threads` workers; prints each sample's ns per round trip
//! and the median. Built as an example of `troupe` in both trees of the A/B
//! (copied into `crates/troupe/examples/`, not committed there):
//! `pingpong_ab K SAMPLES [THREADS]`.
use std::sync::mpsc;
use std::time::Instant;
use troupe::{Actor, ActorRef, ActorSystem, Context};

enum Msg {
    Peer(ActorRef<Player>),
    Ball(u64),
}

struct Player {
    peer: Option<ActorRef<Player>>,
    target: u64,
    done: Option<mpsc::Sender<u64>>,
}

impl Actor for Player {
    type Msg = Msg;
    fn handle(&mut self, msg: Msg, _ctx: &mut Context<'_, Self>) {
        match msg {
            Msg::Peer(p) => self.peer = Some(p),
            Msg::Ball(n) if n >= self.target && self.done.is_some() => {
                let _ = self.done.take().unwrap().send(n);
            }
            Msg::Ball(n) => {
                if let Some(p) = &self.peer {
                    let _ = p.tell(Msg::Ball(n + 1));
                }
            }
        }
    }
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().unwrap())
        .collect();
    let k = args.first().copied().unwrap_or(1_000_000);
    let samples = args.get(1).copied().unwrap_or(5);
    let threads = args.get(2).copied().unwrap_or(2) as usize;
    let mut ns = Vec::new();
    for _ in 0..samples + 1 {
        let system = ActorSystem::builder().threads(threads).build();
        let (tx, rx) = mpsc::channel();
        // Ping counts odd balls, pong even: 2k hops = k round trips.
        let ping = system.spawn(Player {
            peer: None,
            target: 2 * k,
            done: Some(tx),
        });
        let pong = system.spawn(Player {
            peer: None,
            target: u64::MAX,
            done: None,
        });
        ping.tell(Msg::Peer(pong.clone())).unwrap();
        pong.tell(Msg::Peer(ping.clone())).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let t0 = Instant::now();
        pong.tell(Msg::Ball(1)).unwrap();
        let n = rx.recv().unwrap();
        let s = t0.elapsed().as_secs_f64();
        assert!(n >= 2 * k);
        ns.push(s * 1e9 / k as f64);
        system.shutdown();
    }
    ns.remove(0); // the warm-up
    let mut sorted = ns.clone();
    sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let samples: Vec<String> = ns.iter().map(|v| format!("{v:.1}")).collect();
    println!(
        "pingpong_ab k={k} threads={threads} median_ns_per_round_trip={:.1} samples={}",
        sorted[sorted.len() / 2],
        samples.join(",")
    );
}
