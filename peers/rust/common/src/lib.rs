//! Shared plumbing for the Rust peer benchmark programs (`peer-actix`, `peer-xtra`,
//! `peer-ractor`, `peer-kameo`).
//!
//! It holds only what is not about the framework under test:
//! - the command line contract (`<peer> <workload> [--threads N] [--samples K] [params]`),
//!   parsed by [`Cli::from_env`], which exits with status 2 on a bad command line;
//! - the JSON line output ([`Reporter`]), one line per figure on stdout and nothing else;
//! - the memory probes ([`peak_rss_mb`], [`current_rss_bytes`]) read from `/proc/self/status`;
//! - the read-only customer table of the `reader_db` workload ([`customers`]);
//! - the harness around the frameworks: [`tokio_main`] (the tokio-based peers' runtime
//!   and driver task) and [`ring_finish`] (collecting and checking the `ring` tokens).
//!
//! The workloads themselves are written in each framework's own crate, in its own idiom.

#![warn(missing_docs)]

use std::fmt::Write as _;
use std::process;
use std::sync::Arc;

/// One workload with its parameters, defaults from `BENCHMARKS.md`.
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
    /// `senders` actors each send `messages` messages to one receiver.
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
}

impl Workload {
    /// The workload's name on the command line and in the JSON output.
    pub fn name(&self) -> &'static str {
        match self {
            Workload::Ring { .. } => "ring",
            Workload::Pingpong { .. } => "pingpong",
            Workload::MailboxPerformance { .. } => "mailbox_performance",
            Workload::ActorCreation { .. } => "actor_creation",
            Workload::SpawnAndAwait { .. } => "spawn_and_await",
            Workload::ReaderDb { .. } => "reader_db",
            Workload::Registry { .. } => "registry",
        }
    }

    /// The `params` object of the JSON output.
    pub fn params(&self) -> Params {
        let p = Params::new();
        match self {
            Workload::Ring {
                rings,
                actors,
                laps,
            } => p
                .int("rings", *rings as u64)
                .int("actors", *actors as u64)
                .int("laps", *laps as u64),
            Workload::Pingpong { round_trips } => p.int("round_trips", *round_trips as u64),
            Workload::MailboxPerformance { senders, messages } => p
                .int("senders", *senders as u64)
                .int("messages", *messages as u64),
            Workload::ActorCreation { pow } => p.int("pow", u64::from(*pow)),
            Workload::SpawnAndAwait { count } => p.int("count", *count as u64),
            Workload::ReaderDb {
                reads,
                clients,
                readers,
                outstanding,
            } => p
                .int("reads", *reads as u64)
                .int("clients", *clients as u64)
                .int("readers", *readers as u64)
                .int("outstanding", *outstanding as u64),
            Workload::Registry { sizes } => {
                let list = sizes
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join(",");
                p.raw("sizes", &format!("[{list}]"))
            }
        }
    }
}

/// The parsed command line.
#[derive(Debug, Clone)]
pub struct Cli {
    /// The workload and its parameters.
    pub workload: Workload,
    /// Worker threads the framework is configured with.
    pub threads: usize,
    /// How many times the measured phase runs (one JSON line each).
    pub samples: usize,
}

const USAGE: &str = "usage: <peer> <workload> [--threads N] [--samples K] [params]
workloads and params (defaults):
  ring                --rings 10 --actors 10000 --laps 100
  pingpong            --round-trips 1000000
  mailbox_performance --senders 100 --messages 1000000
  actor_creation      --pow 20
  spawn_and_await     --count 100000
  reader_db           --reads 3100000 --clients 2 --readers 2 --outstanding 64
  registry            --sizes 10,100,1000,10000";

impl Cli {
    /// Parses `std::env::args()`; prints a message and exits with status 2 when it is wrong.
    pub fn from_env() -> Cli {
        let args: Vec<String> = std::env::args().skip(1).collect();
        match Cli::parse(&args) {
            Ok(cli) => cli,
            Err(msg) => {
                eprintln!("error: {msg}\n{USAGE}");
                process::exit(2);
            }
        }
    }

    /// Parses the arguments after the program name.
    pub fn parse(args: &[String]) -> Result<Cli, String> {
        let (name, rest) = args.split_first().ok_or("missing workload")?;
        if name == "--help" || name == "-h" {
            println!("{USAGE}");
            process::exit(0);
        }
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
        let mut flags = Flags(flags);
        let threads = flags.take_num("threads", 2)?;
        let samples = flags.take_num("samples", 1)?;
        if threads == 0 || samples == 0 {
            return Err("--threads and --samples must be at least 1".into());
        }
        let workload = match name.as_str() {
            "ring" => Workload::Ring {
                rings: flags.take_num("rings", 10)?,
                actors: flags.take_num("actors", 10_000)?,
                laps: flags.take_num("laps", 100)?,
            },
            "pingpong" => Workload::Pingpong {
                round_trips: flags.take_num("round-trips", 1_000_000)?,
            },
            "mailbox_performance" => Workload::MailboxPerformance {
                senders: flags.take_num("senders", 100)?,
                messages: flags.take_num("messages", 1_000_000)?,
            },
            "actor_creation" => {
                let pow = flags.take_num("pow", 20)?;
                if !(1..=40).contains(&pow) {
                    return Err("--pow must be within 1..=40".into());
                }
                Workload::ActorCreation { pow: pow as u32 }
            }
            "spawn_and_await" => Workload::SpawnAndAwait {
                count: flags.take_num("count", 100_000)?,
            },
            "reader_db" => Workload::ReaderDb {
                reads: flags.take_num("reads", 3_100_000)?,
                clients: flags.take_num("clients", 2)?,
                readers: flags.take_num("readers", 2)?,
                outstanding: flags.take_num("outstanding", 64)?,
            },
            "registry" => {
                let sizes = match flags.take("sizes") {
                    None => vec![10, 100, 1000, 10_000],
                    Some(list) => list
                        .split(',')
                        .map(|s| {
                            s.trim()
                                .parse::<usize>()
                                .map_err(|_| format!("bad size `{s}` in --sizes"))
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                };
                Workload::Registry { sizes }
            }
            other => return Err(format!("unknown workload `{other}`")),
        };
        if let Some((key, _)) = flags.0.first() {
            return Err(format!("unknown flag `--{key}` for workload `{name}`"));
        }
        let positive = match &workload {
            Workload::Ring {
                rings,
                actors,
                laps,
            } => *rings > 0 && *actors > 0 && *laps > 0,
            Workload::Pingpong { round_trips } => *round_trips > 0,
            Workload::MailboxPerformance { senders, messages } => *senders > 0 && *messages > 0,
            Workload::ActorCreation { .. } => true,
            Workload::SpawnAndAwait { count } => *count > 0,
            Workload::ReaderDb {
                reads,
                clients,
                readers,
                outstanding,
            } => *reads > 0 && *clients > 0 && *readers > 0 && *outstanding > 0,
            Workload::Registry { sizes } => !sizes.is_empty() && sizes.iter().all(|s| *s > 0),
        };
        if !positive {
            return Err(format!("every parameter of `{name}` must be at least 1"));
        }
        Ok(Cli {
            workload,
            threads,
            samples,
        })
    }
}

struct Flags(Vec<(String, String)>);

impl Flags {
    fn take(&mut self, key: &str) -> Option<String> {
        let pos = self.0.iter().rposition(|(k, _)| k == key)?;
        let value = self.0.remove(pos).1;
        self.0.retain(|(k, _)| k != key);
        Some(value)
    }

    fn take_num(&mut self, key: &str, default: usize) -> Result<usize, String> {
        match self.take(key) {
            None => Ok(default),
            Some(v) => v
                .replace('_', "")
                .parse()
                .map_err(|_| format!("`--{key}` wants a non-negative integer, got `{v}`")),
        }
    }
}

/// A JSON object of parameters, built in order.
#[derive(Debug, Clone, Default)]
pub struct Params(String);

impl Params {
    /// An empty object.
    pub fn new() -> Params {
        Params(String::new())
    }

    /// Adds an integer field.
    pub fn int(self, key: &str, value: u64) -> Params {
        self.raw(key, &value.to_string())
    }

    /// Adds a string field.
    pub fn str(self, key: &str, value: &str) -> Params {
        self.raw(key, &json_string(value))
    }

    /// Adds a field whose value is already JSON.
    pub fn raw(mut self, key: &str, json: &str) -> Params {
        if !self.0.is_empty() {
            self.0.push(',');
        }
        let _ = write!(self.0, "{}:{}", json_string(key), json);
        self
    }

    /// The object as JSON text.
    pub fn to_json(&self) -> String {
        format!("{{{}}}", self.0)
    }
}

fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_number(x: f64) -> String {
    if x.is_finite() {
        // `Display` on f64 never uses exponent notation, so this is always valid JSON.
        format!("{x}")
    } else {
        "null".to_string()
    }
}

/// Writes the JSON lines of one framework on stdout.
#[derive(Debug, Clone, Copy)]
pub struct Reporter {
    framework: &'static str,
    threads: usize,
}

impl Reporter {
    /// A reporter for `framework` configured with `threads` worker threads.
    pub fn new(framework: &'static str, threads: usize) -> Reporter {
        Reporter { framework, threads }
    }

    /// Prints one figure: the measured phase took `seconds`, at `rate` `unit`.
    pub fn figure(
        &self,
        workload: &str,
        params: &Params,
        seconds: f64,
        rate: f64,
        unit: &str,
        extras: &[(&str, f64)],
    ) {
        let mut line = format!(
            "{{\"framework\":{},\"workload\":{},\"params\":{},\"seconds\":{},\"rate\":{},\"unit\":{},\"rss_mb\":{},\"threads\":{}",
            json_string(self.framework),
            json_string(workload),
            params.to_json(),
            json_number(seconds),
            json_number(rate),
            json_string(unit),
            json_number(peak_rss_mb()),
            self.threads
        );
        for (key, value) in extras {
            let _ = write!(line, ",{}:{}", json_string(key), json_number(*value));
        }
        line.push('}');
        println!("{line}");
    }

    /// Prints that this framework cannot express `workload`, and why.
    pub fn unsupported(&self, workload: &str, reason: &str) {
        println!(
            "{{\"framework\":{},\"workload\":{},\"unsupported\":{}}}",
            json_string(self.framework),
            json_string(workload),
            json_string(reason)
        );
    }

    /// Prints that this framework cannot express one operation of `workload`, and why.
    pub fn unsupported_op(&self, workload: &str, params: &Params, reason: &str) {
        println!(
            "{{\"framework\":{},\"workload\":{},\"params\":{},\"unsupported\":{}}}",
            json_string(self.framework),
            json_string(workload),
            params.to_json(),
            json_string(reason)
        );
    }
}

/// Reports a wrong result on stderr and exits with status 1.
pub fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("FAILED: {msg}");
    process::exit(1);
}

fn status_kb(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|line| {
        line.strip_prefix(field)?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()
    })
}

/// Peak resident memory of the process (VmHWM) in MB (10^6 bytes).
pub fn peak_rss_mb() -> f64 {
    peak_rss_bytes() as f64 / 1e6
}

/// Peak resident memory of the process (VmHWM) in bytes.
pub fn peak_rss_bytes() -> u64 {
    status_kb("VmHWM:").unwrap_or(0) * 1024
}

/// Current resident memory of the process (VmRSS) in bytes.
pub fn current_rss_bytes() -> u64 {
    status_kb("VmRSS:").unwrap_or(0) * 1024
}

/// The seconds since `start`, as f64.
pub fn seconds_since(start: std::time::Instant) -> f64 {
    start.elapsed().as_secs_f64()
}

/// Runs `run` as the driver task on a multi-threaded tokio runtime with `--threads`
/// workers (not on the `block_on` thread), as the tokio-based peers do; fails the
/// process if the driver task panics.
pub fn tokio_main<F, Fut>(framework: &'static str, run: F)
where
    F: FnOnce(Cli, Reporter) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let cli = Cli::from_env();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cli.threads)
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(format!("cannot build the tokio runtime: {e}")));
    let rep = Reporter::new(framework, cli.threads);
    let driver = run(cli, rep);
    rt.block_on(async move {
        if let Err(e) = tokio::spawn(driver).await {
            fail(format!("driver task failed: {e}"));
        }
    });
}

/// The end of a `ring` run: waits for each ring's `(ring, node)` report, checks that
/// every token ended at the right node of its ring and each ring reported once, and
/// writes the figure (hops/s since `start`, with `creation_seconds`).
pub async fn ring_finish(
    rep: &Reporter,
    w: &Workload,
    done_rx: &mut tokio::sync::mpsc::UnboundedReceiver<(usize, usize)>,
    (rings, actors, laps): (usize, usize, usize),
    start: std::time::Instant,
    creation: f64,
) {
    let mut finished = vec![false; rings];
    for _ in 0..rings {
        let (r, index) = done_rx
            .recv()
            .await
            .unwrap_or_else(|| fail("ring done channel closed"));
        if index != (actors * laps) % actors || finished[r] {
            fail(format!("ring {r}: token ended at node {index}"));
        }
        finished[r] = true;
    }
    let secs = seconds_since(start);
    let total = (rings * actors * laps) as f64;
    rep.figure(
        w.name(),
        &w.params(),
        secs,
        total / secs,
        "hops/s",
        &[("creation_seconds", creation)],
    );
}

/// The read-only table of the `reader_db` workload: 29 Northwind customers.
pub mod customers {
    use super::Arc;

    /// One customer row.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Customer {
        /// Key, 1..=29.
        pub id: u32,
        /// Company name.
        pub name: String,
        /// City.
        pub city: String,
        /// Country.
        pub country: String,
    }

    /// Number of rows.
    pub const COUNT: u32 = 29;

    const ROWS: [(&str, &str, &str); COUNT as usize] = [
        ("Alfreds Futterkiste", "Berlin", "Germany"),
        (
            "Ana Trujillo Emparedados y helados",
            "Mexico D.F.",
            "Mexico",
        ),
        ("Antonio Moreno Taqueria", "Mexico D.F.", "Mexico"),
        ("Around the Horn", "London", "UK"),
        ("Berglunds snabbkop", "Lulea", "Sweden"),
        ("Blauer See Delikatessen", "Mannheim", "Germany"),
        ("Blondel pere et fils", "Strasbourg", "France"),
        ("Bolido Comidas preparadas", "Madrid", "Spain"),
        ("Bon app'", "Marseille", "France"),
        ("Bottom-Dollar Markets", "Tsawassen", "Canada"),
        ("B's Beverages", "London", "UK"),
        ("Cactus Comidas para llevar", "Buenos Aires", "Argentina"),
        ("Centro comercial Moctezuma", "Mexico D.F.", "Mexico"),
        ("Chop-suey Chinese", "Bern", "Switzerland"),
        ("Comercio Mineiro", "Sao Paulo", "Brazil"),
        ("Consolidated Holdings", "London", "UK"),
        ("Drachenblut Delikatessen", "Aachen", "Germany"),
        ("Du monde entier", "Nantes", "France"),
        ("Eastern Connection", "London", "UK"),
        ("Ernst Handel", "Graz", "Austria"),
        ("Familia Arquibaldo", "Sao Paulo", "Brazil"),
        ("FISSA Fabrica Inter. Salchichas S.A.", "Madrid", "Spain"),
        ("Folies gourmandes", "Lille", "France"),
        ("Folk och fa HB", "Bracke", "Sweden"),
        ("Frankenversand", "Munchen", "Germany"),
        ("France restauration", "Nantes", "France"),
        ("Franchi S.p.A.", "Torino", "Italy"),
        ("Furia Bacalhau e Frutos do Mar", "Lisboa", "Portugal"),
        ("Galeria del gastronomo", "Barcelona", "Spain"),
    ];

    /// The table, indexed by `id - 1`.
    pub fn table() -> Arc<Vec<Arc<Customer>>> {
        Arc::new(
            ROWS.iter()
                .enumerate()
                .map(|(i, (name, city, country))| {
                    Arc::new(Customer {
                        id: i as u32 + 1,
                        name: name.to_string(),
                        city: city.to_string(),
                        country: country.to_string(),
                    })
                })
                .collect(),
        )
    }

    /// The id the `i`-th read asks for.
    pub fn id_for(i: usize) -> u32 {
        (i % COUNT as usize) as u32 + 1
    }
}

/// Splits `total` into `parts` shares that differ by at most one.
pub fn shares(total: usize, parts: usize) -> Vec<usize> {
    (0..parts)
        .map(|i| total / parts + usize::from(i < total % parts))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn parses_defaults_and_flags() {
        let cli = Cli::parse(&args("ring --rings 2 --threads 4")).unwrap();
        assert_eq!(
            cli.workload,
            Workload::Ring {
                rings: 2,
                actors: 10_000,
                laps: 100
            }
        );
        assert_eq!((cli.threads, cli.samples), (4, 1));
        let cli = Cli::parse(&args("pingpong --round-trips=10")).unwrap();
        assert_eq!(cli.workload, Workload::Pingpong { round_trips: 10 });
        assert!(Cli::parse(&args("ring --bogus 1")).is_err());
        assert!(Cli::parse(&args("nope")).is_err());
        assert_eq!(
            Workload::Registry {
                sizes: vec![10, 100]
            }
            .params()
            .to_json(),
            "{\"sizes\":[10,100]}"
        );
    }

    #[test]
    fn shares_add_up() {
        assert_eq!(shares(10, 3), vec![4, 3, 3]);
        assert_eq!(shares(10, 3).iter().sum::<usize>(), 10);
    }
}
