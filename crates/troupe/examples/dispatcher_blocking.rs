//! A blocking/IO pool sized by the formula of seed 003, and the async bridge:
//! two ways to wait on I/O without stalling the CPU workers.
//!
//! Run: `cargo run -p troupe --example dispatcher_blocking`

use std::time::{Duration, Instant};
use troupe::dispatcher::io_pool_size;
use troupe::{Actor, ActorSystem, Context, SpawnOptions};

/// Blocks its thread, like a synchronous file or database call.
struct BlockingReader;

impl Actor for BlockingReader {
    type Msg = u32;
    fn handle(&mut self, n: u32, _ctx: &mut Context<'_, Self>) {
        std::thread::sleep(Duration::from_millis(50));
        println!(
            "blocking read {n} done on {}",
            std::thread::current().name().unwrap_or("?")
        );
    }
}

/// Waits asynchronously: the future runs on the system's tokio runtime and
/// its result comes back as a message.
struct AsyncReader {
    done: u32,
}

enum AsyncMsg {
    Read(u32),
    Done(u32),
}

impl Actor for AsyncReader {
    type Msg = AsyncMsg;
    fn handle(&mut self, msg: AsyncMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            AsyncMsg::Read(n) => {
                ctx.spawn_future(
                    async move {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        n
                    },
                    AsyncMsg::Done,
                );
            }
            AsyncMsg::Done(n) => {
                self.done += 1;
                println!("async read {n} done");
                if self.done == 8 {
                    ctx.stop();
                }
            }
        }
    }
}

fn main() {
    let system = ActorSystem::builder().threads(2).build();
    // 2 cores, aim for 50% utilization, 50 ms waiting per 1 ms computing.
    let threads = io_pool_size(2, 0.5, 50.0, 1.0);
    println!("blocking pool: {threads} threads");
    let io = system.blocking_pool("io", threads);
    let t0 = Instant::now();
    let readers: Vec<_> = (0..8)
        .map(|_| system.spawn_with(BlockingReader, SpawnOptions::new().dispatcher(&io)))
        .collect();
    for (i, r) in readers.iter().enumerate() {
        r.tell(i as u32).unwrap();
    }
    let a = system.spawn(AsyncReader { done: 0 });
    for i in 0..8 {
        a.tell(AsyncMsg::Read(i)).unwrap();
    }
    a.join();
    println!(
        "{}; 16 reads of 50 ms took {:?}",
        system.shutdown(),
        t0.elapsed()
    );
}
