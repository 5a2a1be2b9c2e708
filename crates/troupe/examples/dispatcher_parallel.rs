//! Thread-safe handlers in parallel (SObjectizer's adv_thread_pool): the
//! seed-000 resizer takes `&self` for frames, so two workers resize at once;
//! changing its settings takes `&mut self` and runs alone.
//!
//! Run: `cargo run --release -p troupe --example dispatcher_parallel`

use std::sync::atomic::{AtomicU64, Ordering};
use troupe::parallel::{Fifo, SharedActor};
use troupe::ActorSystem;

struct Resizer {
    resized: AtomicU64,
    checksum: AtomicU64,
    factor: usize,
}

enum Msg {
    Frame(Vec<u8>),
    SetFactor(usize),
}

impl SharedActor for Resizer {
    type Msg = Msg;
    fn is_thread_safe(msg: &Msg) -> bool {
        matches!(msg, Msg::Frame(_))
    }
    fn handle_shared(&self, msg: Msg) {
        if let Msg::Frame(pixels) = msg {
            let small: u64 = pixels.iter().step_by(self.factor).map(|&p| p as u64).sum();
            self.checksum.fetch_add(small, Ordering::Relaxed);
            self.resized.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn handle_exclusive(&mut self, msg: Msg) {
        if let Msg::SetFactor(f) = msg {
            self.factor = f.max(1);
        }
    }
}

fn main() {
    let system = ActorSystem::builder().threads(1).build();
    let pool = system.work_stealing_pool("resizers", 2);
    let resizer = system.spawn_shared(
        Resizer {
            resized: AtomicU64::new(0),
            checksum: AtomicU64::new(0),
            factor: 2,
        },
        &pool,
        Fifo::PerActor,
    );
    for frame in 0..100u32 {
        let pixels: Vec<u8> = (0..640 * 480)
            .map(|i| (i as u32 * 7 + frame) as u8)
            .collect();
        resizer.tell(Msg::Frame(pixels)).unwrap();
        if frame == 50 {
            resizer.tell(Msg::SetFactor(4)).unwrap();
        }
    }
    resizer.stop();
    println!("resizer stopped: {}", resizer.join());
}
