//! Metrics, served and watched: a three-stage pipeline whose last stage is
//! slower than the rate it is fed, so its mailbox grows. The system records
//! metrics; every second this prints each stage's arrival rate, throughput
//! and mailbox depth from `system.metrics()`, and with feature
//! `metrics-http` it also serves them in the Prometheus text format at
//! `$TROUPE_METRICS_ADDR` (default `127.0.0.1:9464`), for Prometheus or for
//! `troupe-top`, which marks the slow stage `!` (buffering).
//!
//! ```text
//! cargo run -p troupe --features metrics-http --example metrics -- 60   # serve for 60 s
//! cargo run -p troupe-top -- http://127.0.0.1:9464/metrics              # in another terminal
//! ```
//!
//! Argument: how many seconds to run (default 30).

use std::time::Duration;
use troupe::timer;
use troupe::{Actor, ActorRef, ActorSystem, Context, SpawnOptions};

/// One upload: an id and its bytes.
struct Upload {
    id: u64,
    bytes: Vec<u8>,
}

/// Checks an upload and passes it on: fast.
struct Parser {
    next: ActorRef<Thumbnailer>,
}

impl Actor for Parser {
    type Msg = Upload;
    fn handle(&mut self, upload: Upload, _ctx: &mut Context<'_, Self>) {
        if !upload.bytes.is_empty() {
            let _ = self.next.tell(upload);
        }
    }
}

/// Makes a thumbnail: 25 ms of blocking work per upload, so at 50 uploads
/// a second it falls behind (it handles 40 a second at best).
struct Thumbnailer {
    done: u64,
}

impl Actor for Thumbnailer {
    type Msg = Upload;
    fn handle(&mut self, upload: Upload, _ctx: &mut Context<'_, Self>) {
        std::thread::sleep(Duration::from_millis(25));
        self.done = upload.id;
    }
}

/// Turns each tick of its timer into an upload for the parser.
struct Ingest {
    next: ActorRef<Parser>,
    seq: u64,
}

impl Actor for Ingest {
    type Msg = ();
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        let every = Duration::from_millis(20); // 50 uploads a second
        timer::send_periodic(ctx.myself(), every, every, ()).detach();
    }
    fn handle(&mut self, _tick: (), _ctx: &mut Context<'_, Self>) {
        self.seq += 1;
        let _ = self.next.tell(Upload {
            id: self.seq,
            bytes: vec![0; 1024],
        });
    }
}

/// A pipeline with a slow stage, its metrics printed and served.
#[derive(clap::Parser)]
struct Args {
    /// How many seconds to run.
    #[arg(default_value_t = 30)]
    seconds: u64,
}

fn main() {
    let Args { seconds } = clap::Parser::parse();
    let system = ActorSystem::builder()
        .threads(2)
        .metrics(true)
        // A few dozen messages a second: time one in 8, not 1 in 1,024.
        .metrics_sample_every(8)
        .build();

    #[cfg(feature = "metrics-http")]
    let _server = {
        let addr = std::env::var("TROUPE_METRICS_ADDR").unwrap_or_else(|_| "127.0.0.1:9464".into());
        let server = system
            .serve_metrics(&addr)
            .unwrap_or_else(|e| panic!("could not serve metrics at {addr}: {e}"));
        println!("metrics at http://{}/metrics", server.addr());
        println!(
            "watch them: cargo run -p troupe-top -- http://{}/metrics",
            server.addr()
        );
        server
    };
    #[cfg(not(feature = "metrics-http"))]
    println!("(run with --features metrics-http to serve these over HTTP for troupe-top)");

    // The thumbnailer blocks: it gets a thread of a blocking pool, not one
    // of the two workers the other stages share.
    let blocking = system.blocking_pool("thumbs", 1);
    let named = |name: &str| SpawnOptions::new().name(name);
    let thumbnailer = system.spawn_with(
        Thumbnailer { done: 0 },
        named("thumbnailer").dispatcher(&blocking),
    );
    let parser = system.spawn_with(Parser { next: thumbnailer }, named("parser"));
    system.spawn_with(
        Ingest {
            next: parser,
            seq: 0,
        },
        named("ingest"),
    );

    let mut buffering_seen = false;
    for second in 1..=seconds {
        std::thread::sleep(Duration::from_secs(1));
        let m = system.metrics();
        let mut line = format!("{second:>3} s:");
        for a in &m.actors {
            let flag = if a.is_buffering() { "!" } else { "" };
            buffering_seen |= a.name == "thumbnailer" && a.is_buffering();
            line += &format!(
                "  {flag}{} in {:.0}/s out {:.0}/s depth {}",
                a.name, a.arrival_rate, a.throughput, a.mailbox_depth
            );
        }
        println!("{line}");
    }
    let text = system.metrics_text();
    println!(
        "{} Prometheus series; the thumbnailer {} buffering",
        text.lines().filter(|l| l.starts_with("troupe_")).count(),
        if buffering_seen {
            "was seen"
        } else {
            "was never seen"
        }
    );
    // Kill rather than drain: the thumbnailer's backlog would take a while.
    println!("{}", system.shutdown_timeout(Duration::from_millis(200)));
}
