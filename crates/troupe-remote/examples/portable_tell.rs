//! Rust-to-Rust tell throughput, postcard vs CBOR (the portable
//! encoding), one actor on one node, in one run: rounds alternate
//! between the two encodings so the machine's load falls on both alike.
//!
//! ```text
//! cargo run --release -p troupe-remote --example portable_tell -- [tells per round] [rounds]
//! ```

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use troupe::{Actor, ActorSystem, Context};
use troupe_remote::{remote, Node};

/// A cart line: a short string and two numbers (a typical small message).
#[remote("bench.cart.Add")]
#[derive(Serialize, Deserialize, Clone)]
struct Add {
    item: String,
    qty: u32,
    price_cents: u64,
}

struct Counter(Arc<AtomicU64>);
impl Actor for Counter {
    type Msg = Add;
    fn handle(&mut self, m: Add, _: &mut Context<'_, Self>) {
        self.0.fetch_add(u64::from(m.qty), Ordering::Relaxed);
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(200_000);
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let Some(server) = troupe_test_nats::NatsServer::start_or_skip() else {
        return;
    };
    let system = ActorSystem::new();
    let seen = Arc::new(AtomicU64::new(0));
    let counter = system.spawn(Counter(seen.clone()));
    let b = Node::builder(&server.url(), "b")
        .insecure()
        .connect()
        .unwrap();
    b.expose("counter", &counter)
        .tell_portable::<Add>()
        .serve()
        .unwrap();
    let a = Node::builder(&server.url(), "a")
        .insecure()
        .connect()
        .unwrap();
    let to = a.lookup::<Add>("counter@b").unwrap();
    let msg = Add {
        item: "darjeeling-250g".into(),
        qty: 1,
        price_cents: 1_250,
    };
    let mut rates: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for round in 0..rounds * 2 {
        let cbor = round % 2 == 1;
        let start_seen = seen.load(Ordering::Relaxed);
        let t0 = Instant::now();
        for _ in 0..n {
            loop {
                let sent = if cbor {
                    to.tell_portable(&msg)
                } else {
                    to.tell_ref(&msg)
                };
                if sent.is_ok() {
                    break;
                }
                std::thread::yield_now();
            }
        }
        let limit = Instant::now() + Duration::from_secs(120);
        while seen.load(Ordering::Relaxed) < start_seen + n && Instant::now() < limit {
            std::thread::sleep(Duration::from_micros(200));
        }
        let secs = t0.elapsed().as_secs_f64();
        rates[cbor as usize].push(n as f64 / secs);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|x, y| x.partial_cmp(y).unwrap());
        v[v.len() / 2]
    };
    let (p, c) = (median(&mut rates[0]), median(&mut rates[1]));
    println!("tells per round {n}, rounds {rounds} each, alternating");
    println!("postcard: {:>10.0} tells/s (median)", p);
    println!("cbor:     {:>10.0} tells/s (median)", c);
    println!("postcard/cbor time ratio: {:.2}x", p / c);
    let s = b.stats();
    println!(
        "receiver: delivered {} undecodable {} unknown_type {}",
        s.delivered, s.undecodable, s.unknown_type
    );
    system.shutdown();
}
