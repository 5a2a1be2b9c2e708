//! One cluster node with its management API and dashboard: the node the
//! browser test (`browser/`), the load run (bench/results/2026-12-02-admin)
//! and the guide's production chapter start, three at a time, on one
//! nats-server with JetStream.
//!
//! ```text
//! TROUPE_ADMIN_TOKEN=a-long-secret-token \
//!   cargo run -p troupe-admin --example admin_node -- nats://127.0.0.1:4222 n1 9471
//! # then open http://127.0.0.1:9471/ and give the token
//! ```
//!
//! Options after the three positional arguments: `--entities N` (start
//! entities `e{first}`..`e{first+N}` of the sharded kind `thing`),
//! `--first K`, `--peers P` (start them once this node sees P peers and
//! its shards are settled), `--load` (a local ping-pong pair that tells as fast as it
//! can; the node prints `rate <unix_ms> <messages in the last second>`
//! each second), `--rate R` (the API's requests a second; default 50), `--stall` (an
//! actor whose handler runs 900 ms every 4 s, past the 500 ms stall
//! threshold).
//!
//! It prints `ready http://<addr>` once it serves. SIGTERM, SIGINT or
//! `POST /api/v1/actions/leave` make it leave gracefully: the API stops,
//! the sharding hands its shards over (`Sharding::leave`), the cluster
//! says goodbye (its drop); it prints `left gracefully` and exits 0.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use troupe::{Actor, ActorRef, ActorSystem, Context, SpawnOptions};
use troupe_admin::AdminServer;
use troupe_cluster::Cluster;
use troupe_remote::remote;
use troupe_sharding::{ClusterSharding, Sharding};

/// A message to an entity of `thing`.
#[remote("admin.example.Hit")]
#[derive(Serialize, Deserialize, Clone, Debug)]
struct Hit;

/// An entity: counts its hits.
struct Thing {
    hits: u64,
}

impl Actor for Thing {
    type Msg = Hit;
    fn handle(&mut self, _: Hit, _: &mut Context<'_, Self>) {
        self.hits += 1;
    }
}

/// A handler that now and then runs longer than the stall threshold
/// (`--stall`): the dashboard's stall warnings have something to show.
struct Sluggish;

impl Actor for Sluggish {
    type Msg = Duration;
    fn handle(&mut self, d: Duration, _: &mut Context<'_, Self>) {
        std::thread::sleep(d);
    }
}

/// Half of the load's ping-pong pair: answers each ball with a ball.
struct Player {
    other: Option<ActorRef<Player>>,
    count: Arc<AtomicU64>,
}

enum Ball {
    Meet(ActorRef<Player>),
    Ball,
}

impl Actor for Player {
    type Msg = Ball;
    fn handle(&mut self, msg: Ball, _: &mut Context<'_, Self>) {
        match msg {
            Ball::Meet(o) => self.other = Some(o),
            Ball::Ball => {
                self.count.fetch_add(1, Ordering::Relaxed);
                if let Some(o) = &self.other {
                    let _ = o.tell(Ball::Ball);
                }
            }
        }
    }
}

fn arg_after(args: &[String], flag: &str) -> Option<u64> {
    let i = args.iter().position(|a| a == flag)?;
    args.get(i + 1)?.parse().ok()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!(
            "usage: admin_node NATS_URL NODE PORT [--entities N] [--first K] [--peers P] [--load] [--rate R] [--stall]"
        );
        std::process::exit(2);
    }
    let (url, name, port) = (&args[0], &args[1], &args[2]);
    let token = std::env::var("TROUPE_ADMIN_TOKEN")
        .map_err(|_| "set TROUPE_ADMIN_TOKEN to the API's bearer token (16 bytes or more)")?;
    let entities = arg_after(&args, "--entities").unwrap_or(0);
    let first = arg_after(&args, "--first").unwrap_or(0);
    let rate = arg_after(&args, "--rate").unwrap_or(50) as f64;
    let load = args.iter().any(|a| a == "--load");
    let stall = args.iter().any(|a| a == "--stall");
    let peers = arg_after(&args, "--peers").unwrap_or(0);

    let system = ActorSystem::builder()
        .name(name)
        .metrics(true)
        .stall_threshold(Duration::from_millis(500))
        .build();
    let cluster = Arc::new(
        Cluster::builder(url, name)
            .insecure()
            .heartbeat(Duration::from_millis(200))
            .connect()?,
    );
    let sharding: Arc<Sharding<Thing>> = Arc::new(
        cluster
            .sharding("thing", |_| Thing { hits: 0 })
            .tell::<Hit>()
            .shards(64)
            .idle_timeout(None)
            .system(&system)
            .start()?,
    );
    let (leave_tx, leave_rx) = std::sync::mpsc::channel::<&'static str>();
    let on_leave = leave_tx.clone();
    let admin = AdminServer::builder(&token)
        .bind(&format!("127.0.0.1:{port}"))
        .rate(rate, (rate as u32).max(100))
        .cluster(&cluster)
        .system(system.handle())
        .sharding("thing", 64, sharding.clone())
        .on_leave(move || {
            let _ = on_leave.send("the API");
        })
        .start()?;
    // SIGTERM and SIGINT: a graceful leave, on the process's one runtime.
    let handle = troupe_remote::runtime::handle()?;
    for kind in [
        tokio::signal::unix::SignalKind::terminate(),
        tokio::signal::unix::SignalKind::interrupt(),
    ] {
        let tx = leave_tx.clone();
        let mut sig = {
            let _in = handle.enter();
            tokio::signal::unix::signal(kind)?
        };
        handle.spawn(async move {
            if sig.recv().await.is_some() {
                let _ = tx.send("a signal");
            }
        });
    }
    println!("ready http://{}", admin.addr());

    // Entities are started once the cluster has formed: a hand-over stops
    // an entity, which starts again only on its next message.
    let end = Instant::now() + Duration::from_secs(60);
    while entities > 0
        && Instant::now() < end
        && !(cluster.peers().len() as u64 >= peers && sharding.settled())
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    for i in first..first + entities {
        let _ = sharding.entity(&format!("e{i}")).tell(Hit);
    }
    if load {
        let count = Arc::new(AtomicU64::new(0));
        let opts = || SpawnOptions::new();
        let a = system.spawn_with(
            Player {
                other: None,
                count: count.clone(),
            },
            opts().name("ping"),
        );
        let b = system.spawn_with(
            Player {
                other: None,
                count: count.clone(),
            },
            opts().name("pong"),
        );
        a.tell(Ball::Meet(b.clone())).ok();
        b.tell(Ball::Meet(a.clone())).ok();
        for _ in 0..64 {
            a.tell(Ball::Ball).ok();
        }
        std::thread::spawn(move || {
            let mut last = 0;
            let mut next = Instant::now() + Duration::from_secs(1);
            loop {
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
                next += Duration::from_secs(1);
                let now = count.load(Ordering::Relaxed);
                let ms = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis());
                println!("rate {ms} {}", now - last);
                last = now;
            }
        });
    }

    if stall {
        let slow = system.spawn_with(Sluggish, SpawnOptions::new().name("sluggish"));
        std::thread::spawn(move || loop {
            // 900 ms in the handler, threshold 500 ms: one stall in 4 s.
            if slow.tell(Duration::from_millis(900)).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_secs(4));
        });
    }

    let why = leave_rx.recv().unwrap_or("a closed channel");
    println!("leaving ({why})");
    admin.stop();
    // The server's task holds a reference to the sharding until it ends.
    let mut sharding = sharding;
    let end = Instant::now() + Duration::from_secs(10);
    let owned = loop {
        match Arc::try_unwrap(sharding) {
            Ok(s) => break Some(s),
            Err(s) if Instant::now() < end => {
                sharding = s;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(_) => break None,
        }
    };
    match owned {
        Some(s) => s.leave(),
        None => eprintln!("the sharding is still shared: leaving by its drop"),
    }
    drop(cluster);
    system.shutdown();
    println!("left gracefully");
    Ok(())
}
