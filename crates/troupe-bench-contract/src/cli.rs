//! A peer program's command line: `<peer> <workload> [--threads N]
//! [--samples K] [--warmup W] [params]`, the params being those of the
//! workload's [`Spec`](crate::spec::Spec) in [`crate::spec::CONTRACT`].

use crate::output::{Params, Rounds};
use crate::spec::{self, Args};
use std::process;

/// A contract workload with its parameters, as typed values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Workload {
    /// `rings` rings of `actors` actors, a token counting down from `actors * laps`.
    Ring {
        /// Number of concurrent rings.
        rings: usize,
        /// Actors per ring.
        actors: usize,
        /// Laps of the token around each ring.
        laps: usize,
    },
    /// Two actors bounce an integer `round_trips` times.
    Pingpong {
        /// Number of round trips.
        round_trips: usize,
    },
    /// `senders` actors each send `messages` integers to one receiver.
    MailboxPerformance {
        /// Number of sender actors.
        senders: usize,
        /// Messages per sender.
        messages: usize,
    },
    /// A binary tree of actors of depth `pow`, `2^pow - 1` actors.
    ActorCreation {
        /// Depth of the tree.
        pow: u32,
    },
    /// Spawn an actor that stops at once and wait for it, `count` times in sequence.
    SpawnAndAwait {
        /// Number of spawn-and-await operations.
        count: usize,
    },
    /// Clients read a 29-customer table through a DB actor and its reader actors.
    ReaderDb {
        /// Total reads across all clients.
        reads: usize,
        /// Number of client actors.
        clients: usize,
        /// Number of reader actors behind the DB actor.
        readers: usize,
        /// Maximum outstanding requests per client.
        outstanding: usize,
    },
    /// Name registry and process groups at several sizes.
    Registry {
        /// Registry sizes to measure.
        sizes: Vec<usize>,
    },
    /// Two actors with async handlers that await nothing bounce an integer
    /// `round_trips` times (issue 27).
    AsyncPingpong {
        /// Number of round trips.
        round_trips: usize,
    },
    /// One actor's async handler awaits `asks` asks to a second actor, one
    /// after another; the second answers `i` with `i + 1` (issue 27).
    AsyncAskChain {
        /// Asks awaited in sequence.
        asks: u64,
    },
    /// `actors` actors each handle `messages` messages, each awaiting a tokio
    /// sleep of `sleep_us` µs; all messages are sent up front (issue 27).
    AsyncIo {
        /// Number of actors (N).
        actors: usize,
        /// Messages per actor (M).
        messages: u64,
        /// Sleep per message, µs.
        sleep_us: u64,
    },
    /// A Savina workload of [`crate::savina::PEER_RUN`] (its name, e.g.
    /// `savina_count`); its parameters are read from [`Cli::args`].
    Savina(&'static str),
}

impl Workload {
    /// The typed view of resolved contract arguments.
    pub fn from_args(a: &Args) -> Workload {
        match a.spec().name {
            "ring" => Workload::Ring {
                rings: a.usize("rings"),
                actors: a.usize("actors"),
                laps: a.usize("laps"),
            },
            "pingpong" => Workload::Pingpong {
                round_trips: a.usize("round-trips"),
            },
            "mailbox_performance" => Workload::MailboxPerformance {
                senders: a.usize("senders"),
                messages: a.usize("messages"),
            },
            "actor_creation" => Workload::ActorCreation {
                pow: a.u64("pow") as u32,
            },
            "spawn_and_await" => Workload::SpawnAndAwait {
                count: a.usize("count"),
            },
            "reader_db" => Workload::ReaderDb {
                reads: a.usize("reads"),
                clients: a.usize("clients"),
                readers: a.usize("readers"),
                outstanding: a.usize("outstanding"),
            },
            "registry" => Workload::Registry {
                sizes: a.list("sizes"),
            },
            "async_pingpong" => Workload::AsyncPingpong {
                round_trips: a.usize("async-round-trips"),
            },
            "async_ask_chain" => Workload::AsyncAskChain {
                asks: a.u64("chain-asks"),
            },
            "async_io" => Workload::AsyncIo {
                actors: a.usize("io-actors"),
                messages: a.u64("io-messages"),
                sleep_us: a.u64("io-sleep-us"),
            },
            savina if crate::savina::spec(savina).is_some() => Workload::Savina(a.spec().name),
            other => unreachable!("`{other}` is not in spec::CONTRACT or savina::PEER_RUN"),
        }
    }
}

impl Args {
    /// The workload's name.
    pub fn name(&self) -> &'static str {
        self.spec().name
    }

    /// The `params` object of the JSON lines.
    pub fn params(&self) -> Params {
        Params::from_json(&self.to_json())
    }
}

/// The parsed command line.
#[derive(Debug, Clone)]
pub struct Cli {
    /// The workload, typed.
    pub workload: Workload,
    /// The workload's resolved parameters.
    pub args: Args,
    /// Worker threads the framework is configured with.
    pub threads: usize,
    /// How many times the measured phase runs (one JSON line each).
    pub samples: usize,
    /// Unprinted warm-up runs before the samples.
    pub warmup: usize,
}

fn usage() -> String {
    let mut s = String::from(
        "usage: <peer> <workload> [--threads N] [--samples K] [--warmup W] [params]\n\
         workloads and params (defaults):\n",
    );
    for w in spec::CONTRACT.iter().chain(crate::savina::PEER_RUN) {
        s.push_str(&w.usage_line());
        s.push('\n');
    }
    s
}

impl Cli {
    /// Parses `std::env::args()`; prints a message and exits with status 2 when it is wrong.
    pub fn from_env() -> Cli {
        let args: Vec<String> = std::env::args().skip(1).collect();
        if matches!(args.first().map(String::as_str), Some("--help" | "-h")) {
            println!("{}", usage());
            process::exit(0);
        }
        match Cli::parse(&args) {
            Ok(cli) => cli,
            Err(msg) => {
                eprintln!("error: {msg}\n{}", usage());
                process::exit(2);
            }
        }
    }

    /// Parses the arguments after the program name.
    pub fn parse(args: &[String]) -> Result<Cli, String> {
        let (name, rest) = args.split_first().ok_or("missing workload")?;
        let spec = spec::contract(name)
            .or_else(|| crate::savina::spec(name))
            .ok_or_else(|| format!("unknown workload `{name}`"))?;
        let mut flags: Vec<(String, String)> = Vec::new();
        let mut it = rest.iter();
        while let Some(flag) = it.next() {
            let key = flag
                .strip_prefix("--")
                .ok_or_else(|| format!("unexpected argument `{flag}`"))?;
            let (key, value) = match key.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None => {
                    let v = it
                        .next()
                        .ok_or_else(|| format!("flag `{flag}` needs a value"))?;
                    (key.to_string(), v.clone())
                }
            };
            flags.push((key.replace('_', "-"), value));
        }
        let mut take = |key: &str| {
            let v = flags
                .iter()
                .rev()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone());
            flags.retain(|(k, _)| k != key);
            v
        };
        let mut num = |key: &str, default: usize| -> Result<usize, String> {
            take(key).map_or(Ok(default), |v| {
                v.parse()
                    .map_err(|_| format!("`--{key}` wants a non-negative integer, got `{v}`"))
            })
        };
        let threads = num("threads", 2)?;
        let samples = num("samples", 1)?;
        let warmup = num("warmup", 0)?;
        if threads == 0 || samples == 0 {
            return Err("--threads and --samples must be at least 1".into());
        }
        let args = spec.resolve(false, &mut take)?;
        if let Some((key, _)) = flags.first() {
            return Err(format!("unknown flag `--{key}` for workload `{name}`"));
        }
        Ok(Cli {
            workload: Workload::from_args(&args),
            args,
            threads,
            samples,
            warmup,
        })
    }

    /// The rounds to run: the warm-up ones (not printed), then the samples.
    pub fn rounds(&self) -> Rounds {
        Rounds::new(self.warmup, self.samples)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn parses_defaults_and_flags() {
        let cli = Cli::parse(&args("ring --rings 2 --threads 4 --warmup 1")).unwrap();
        assert_eq!(
            cli.workload,
            Workload::Ring {
                rings: 2,
                actors: 10_000,
                laps: 100
            }
        );
        assert_eq!((cli.threads, cli.samples, cli.warmup), (4, 1, 1));
        assert_eq!(cli.rounds().count(), 2);
        let cli = Cli::parse(&args("pingpong --round-trips=10")).unwrap();
        assert_eq!(cli.workload, Workload::Pingpong { round_trips: 10 });
        assert_eq!(cli.args.params().to_json(), "{\"round_trips\":10}");
        assert!(Cli::parse(&args("ring --bogus 1")).is_err());
        assert!(Cli::parse(&args("ring --rings 0")).is_err());
        assert!(Cli::parse(&args("nope")).is_err());
        let cli = Cli::parse(&args("savina_big --pings 5")).unwrap();
        assert_eq!(cli.workload, Workload::Savina("savina_big"));
        assert_eq!(
            (cli.args.usize("actors"), cli.args.usize("pings")),
            (120, 5)
        );
        let cli = Cli::parse(&args("registry --sizes 10,100")).unwrap();
        assert_eq!(
            cli.workload,
            Workload::Registry {
                sizes: vec![10, 100]
            }
        );
        assert_eq!(cli.args.params().to_json(), "{\"sizes\":[10,100]}");
        let cli = Cli::parse(&args("async_io --io-actors 3 --io-sleep-us=10")).unwrap();
        assert_eq!(
            cli.workload,
            Workload::AsyncIo {
                actors: 3,
                messages: 100,
                sleep_us: 10
            }
        );
        let cli = Cli::parse(&args("async_ask_chain --chain-asks 5")).unwrap();
        assert_eq!(cli.workload, Workload::AsyncAskChain { asks: 5 });
    }
}
