//! Two processes, one NATS server: `pong` serves an actor, `ping` asks it.
//!
//! ```text
//! nats-server -a 127.0.0.1 -p 4222                                  # terminal 0
//! cargo run -p troupe-remote --example remote_ping -- pong          # terminal 1
//! cargo run -p troupe-remote --example remote_ping -- ping          # terminal 2
//! ```
//!
//! Flags: `--url nats://HOST:PORT` (default `$NATS_URL`, else
//! `nats://127.0.0.1:4222`), `--count N` round trips (ping, default 10),
//! `--quit` (ping: tell pong to exit afterwards).

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use troupe::{Actor, ActorSystem, Context, ReplyTo};
use troupe_remote::{remote, Node};

/// A request: pong answers with the same number plus one.
#[remote("example.ping.Ping", reply = u64)]
#[derive(Serialize, Deserialize, Debug)]
struct Ping(u64);

/// A one-way note; pong counts them.
#[remote("example.ping.Note")]
#[derive(Serialize, Deserialize, Debug)]
struct Note(String);

/// How many notes pong has seen.
#[remote("example.ping.Notes", reply = u64)]
#[derive(Serialize, Deserialize, Debug)]
struct Notes;

/// Tells pong to exit.
#[remote("example.ping.Quit")]
#[derive(Serialize, Deserialize, Debug)]
struct Quit;

enum PongMsg {
    Ping(Ping, ReplyTo<u64>),
    Note(Note),
    Notes(Notes, ReplyTo<u64>),
    Quit(Quit),
}

impl From<Note> for PongMsg {
    fn from(n: Note) -> Self {
        PongMsg::Note(n)
    }
}
impl From<Quit> for PongMsg {
    fn from(q: Quit) -> Self {
        PongMsg::Quit(q)
    }
}

struct Pong {
    notes: u64,
    note_bytes: usize,
    quit: std::sync::mpsc::Sender<()>,
}

impl Actor for Pong {
    type Msg = PongMsg;
    fn handle(&mut self, msg: PongMsg, _: &mut Context<'_, Self>) {
        match msg {
            PongMsg::Ping(Ping(n), reply) => {
                reply.reply(n + 1);
            }
            PongMsg::Note(Note(text)) => {
                self.notes += 1;
                self.note_bytes += text.len();
            }
            PongMsg::Notes(_, reply) => {
                reply.reply(self.notes);
            }
            PongMsg::Quit(_) => {
                println!("pong: {} notes, {} bytes", self.notes, self.note_bytes);
                let _ = self.quit.send(());
            }
        }
    }
}

/// Ping and pong: two processes, one actor each, over NATS.
#[derive(clap::Parser)]
struct Args {
    /// Which side this process plays.
    role: Role,
    /// The nats-server [default: $NATS_URL, else nats://127.0.0.1:4222].
    #[arg(long)]
    url: Option<String>,
    /// Round trips (ping).
    #[arg(long, default_value_t = 10)]
    count: u64,
    /// Tell pong to exit afterwards (ping).
    #[arg(long)]
    quit: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Role {
    /// Serve the `ponger` actor.
    Pong,
    /// Ask it.
    Ping,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Args = clap::Parser::parse();
    let url = args
        .url
        .clone()
        .or_else(|| std::env::var("NATS_URL").ok())
        .unwrap_or_else(|| "nats://127.0.0.1:4222".into());
    match args.role {
        Role::Pong => {
            let system = ActorSystem::new();
            let (quit, quitted) = std::sync::mpsc::channel();
            let pong = system.spawn(Pong {
                notes: 0,
                note_bytes: 0,
                quit,
            });
            let node = Node::builder(&url, "pong").insecure().connect()?;
            node.expose("ponger", &pong)
                .ask::<Ping>(PongMsg::Ping)
                .tell::<Note>()
                .ask::<Notes>(PongMsg::Notes)
                .tell::<Quit>()
                .serve()?;
            println!("ready: serving ponger@pong on {url}");
            quitted.recv()?;
            println!("pong: quit");
            system.shutdown();
        }
        Role::Ping => {
            let count = args.count;
            let node = Node::builder(&url, "ping").insecure().connect()?;
            let ping = node.lookup::<Ping>("ponger@pong")?;
            let mut worst = Duration::ZERO;
            for i in 0..count {
                let start = Instant::now();
                let answer = ping.ask(Ping(i), Duration::from_secs(2))?;
                worst = worst.max(start.elapsed());
                assert_eq!(answer, i + 1, "pong answered wrong");
            }
            println!("ping: {count} round trips, slowest {worst:?}");
            let note = ping.retype::<Note>()?;
            for i in 0..count {
                note.tell(Note(format!("note {i}")))?;
            }
            // Asks may overtake tells still queued; wait until all arrived.
            let notes = ping.retype::<Notes>()?;
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                let n = notes.ask(Notes, Duration::from_secs(2))?;
                if n >= count || Instant::now() > deadline {
                    println!("ping: pong has {n} notes");
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            if args.quit {
                ping.retype::<Quit>()?.tell(Quit)?;
                node.flush(Duration::from_secs(2));
            }
            println!("ping: ok");
        }
    }
    Ok(())
}
