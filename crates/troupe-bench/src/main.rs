//! `troupe-bench`: reruns every benchmark of the seeds on Troupe (see
//! `shared/BENCHMARKS.md`) and prints one report.
//!
//! `troupe-bench` runs the quick suite; `troupe-bench all` the default
//! parameters; `troupe-bench ring --rings 10 ...` one workload.

mod stats;
mod workloads;

use clap::Parser;
use stats::{render_block, Figure};
use std::io::Write;
use workloads::RunCfg;

/// Every workload this build can run, in report order.
const WORKLOADS: &[&str] = &[
    "ring",
    "pingpong",
    "mailbox_performance",
    "actor_creation",
    "spawn_and_await",
    "reader_db",
];

#[derive(Parser, Debug)]
#[command(
    name = "troupe-bench",
    about = "The Troupe benchmark suite (shared/BENCHMARKS.md)"
)]
struct Cli {
    /// `all`, or workload names; none = the quick suite.
    workloads: Vec<String>,
    /// Scale every workload down (the default when no workload is named).
    #[arg(long)]
    quick: bool,
    /// Worker threads (default: 2, the size of the reference machine).
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Write one JSON line per figure to FILE (`-` for stdout).
    #[arg(long)]
    json: Option<String>,
    /// Measured samples per figure (default 5).
    #[arg(long, default_value_t = 5)]
    samples: usize,
    /// Unrecorded warm-up runs per figure.
    #[arg(long, default_value_t = 1)]
    warmup: usize,
    /// ring: rings.
    #[arg(long)]
    rings: Option<usize>,
    /// ring: actors per ring.
    #[arg(long)]
    actors: Option<usize>,
    /// ring: laps.
    #[arg(long)]
    laps: Option<usize>,
    /// pingpong: round trips.
    #[arg(long)]
    round_trips: Option<u64>,
    /// mailbox_performance: sender actors.
    #[arg(long)]
    senders: Option<usize>,
    /// mailbox_performance: messages per sender.
    #[arg(long)]
    messages: Option<u64>,
    /// actor_creation: the tree has 2^pow - 1 actors.
    #[arg(long)]
    pow: Option<u32>,
    /// spawn_and_await: spawns.
    #[arg(long)]
    count: Option<u64>,
    /// reader_db: total reads.
    #[arg(long)]
    reads: Option<u64>,
    /// reader_db: client actors.
    #[arg(long)]
    clients: Option<usize>,
    /// reader_db: reader actors.
    #[arg(long)]
    readers: Option<usize>,
    /// reader_db: outstanding asks per client.
    #[arg(long)]
    outstanding: Option<usize>,
}

/// A progress line on stderr, overwritten in place.
pub fn progress(msg: &str) {
    let mut e = std::io::stderr().lock();
    let _ = write!(e, "\r\x1b[2K[troupe-bench] {msg}");
    let _ = e.flush();
}

fn header(cfg: &RunCfg) -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let mem_gib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0 / 1024.0)
        .unwrap_or(0.0);
    let os = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("PRETTY_NAME="))
                .map(|l| l[12..].trim_matches('"').to_string())
        })
        .unwrap_or_else(|| std::env::consts::OS.into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    format!(
        "Troupe benchmark suite\n\
         Machine:   {cpu}, {cores} cores, {mem_gib:.1} GiB\n\
         OS:        {os} (Linux {kernel})\n\
         Compiler:  {}\n\
         Troupe:    {} (commit {})\n\
         Scheduler: work-stealing, {} worker threads, throughput 64; {} warm-up + {} samples per figure\n",
        env!("TROUPE_RUSTC"),
        env!("CARGO_PKG_VERSION"),
        env!("TROUPE_COMMIT"),
        cfg.threads,
        cfg.warmup,
        cfg.samples
    )
}

fn run_workload(name: &str, quick: bool, cli: &Cli, cfg: &RunCfg) -> Result<Vec<Figure>, String> {
    use workloads::*;
    fn q<T>(quick: bool, quick_v: T, default_v: T) -> T {
        if quick {
            quick_v
        } else {
            default_v
        }
    }
    match name {
        "ring" => ring::run(
            cfg,
            &ring::Params {
                rings: cli.rings.unwrap_or(10),
                actors: cli.actors.unwrap_or(q(quick, 1_000, 10_000)),
                laps: cli.laps.unwrap_or(q(quick, 20, 100)),
            },
        ),
        "pingpong" => pingpong::run(
            cfg,
            &pingpong::Params {
                round_trips: cli.round_trips.unwrap_or(q(quick, 200_000, 1_000_000)),
            },
        ),
        "mailbox_performance" => mailbox_performance::run(
            cfg,
            &mailbox_performance::Params {
                senders: cli.senders.unwrap_or(q(quick, 20, 100)),
                messages: cli.messages.unwrap_or(q(quick, 100_000, 1_000_000)),
            },
        ),
        "actor_creation" => actor_creation::run(
            cfg,
            &actor_creation::Params {
                pow: cli.pow.unwrap_or(q(quick, 16, 20)),
            },
        ),
        "spawn_and_await" => spawn_and_await::run(
            cfg,
            &spawn_and_await::Params {
                count: cli.count.unwrap_or(q(quick, 20_000, 100_000)),
            },
        ),
        "reader_db" => reader_db::run(
            cfg,
            &reader_db::Params {
                reads: cli.reads.unwrap_or(q(quick, 310_000, 3_100_000)),
                clients: cli.clients.unwrap_or(2),
                readers: cli.readers.unwrap_or(2),
                outstanding: cli.outstanding.unwrap_or(64),
            },
        ),
        other => Err(format!(
            "unknown workload `{other}`; known: all, {}",
            WORKLOADS.join(", ")
        )),
    }
}

fn main() {
    let cli = Cli::parse();
    let (names, quick): (Vec<String>, bool) = if cli.workloads.is_empty() {
        (WORKLOADS.iter().map(|s| s.to_string()).collect(), true)
    } else if cli.workloads.iter().any(|w| w == "all") {
        (WORKLOADS.iter().map(|s| s.to_string()).collect(), cli.quick)
    } else {
        (cli.workloads.clone(), cli.quick)
    };
    let cfg = RunCfg {
        threads: cli.threads.max(1),
        warmup: cli.warmup,
        samples: cli.samples.max(1),
    };
    let mut json_out: Option<Box<dyn Write>> = match cli.json.as_deref() {
        None => None,
        Some("-") => Some(Box::new(std::io::stdout())),
        Some(path) => match std::fs::File::create(path) {
            Ok(f) => Some(Box::new(std::io::BufWriter::new(f))),
            Err(e) => {
                eprintln!("troupe-bench: cannot write {path}: {e}");
                std::process::exit(2);
            }
        },
    };
    let to_stdout_json = cli.json.as_deref() == Some("-");
    let print = |s: &str| {
        if to_stdout_json {
            eprint!("{s}");
        } else {
            print!("{s}");
        }
    };
    print(&header(&cfg));
    print(if quick {
        "Suite:     quick (scaled-down parameters)\n"
    } else {
        "Suite:     default parameters\n"
    });
    let mut failed = false;
    for name in &names {
        match run_workload(name, quick, &cli, &cfg) {
            Ok(figs) => {
                progress("");
                let _ = write!(std::io::stderr(), "\r\x1b[2K");
                let refs: Vec<&Figure> = figs.iter().collect();
                print(&render_block(&format!("== {name}"), &refs));
                for f in &figs {
                    let extras: Vec<String> = f
                        .extra
                        .iter()
                        .map(|(k, v)| match v.as_f64() {
                            Some(x) if x.fract() != 0.0 => format!("{k}={x:.3}"),
                            _ => format!("{k}={v}"),
                        })
                        .collect();
                    print(&format!(
                        "  {}: {} {} (median sample {:.3} s){}\n",
                        f.name,
                        stats::fmt_rate(f.rate),
                        f.unit,
                        f.seconds,
                        if extras.is_empty() {
                            String::new()
                        } else {
                            format!("; {}", extras.join(", "))
                        }
                    ));
                }
                if let Some(out) = json_out.as_mut() {
                    for f in &figs {
                        let _ = writeln!(
                            out,
                            "{}",
                            serde_json::to_string(f).expect("figure serializes")
                        );
                    }
                }
            }
            Err(e) => {
                eprintln!("\ntroupe-bench: {name} FAILED: {e}");
                failed = true;
            }
        }
    }
    if let Some(mut out) = json_out {
        let _ = out.flush();
    }
    if failed {
        std::process::exit(1);
    }
}
