//! `troupe-bench`: reruns every benchmark of the seeds on Troupe (see
//! `shared/BENCHMARKS.md`) and prints one report.
//!
//! `troupe-bench` runs the quick suite; `troupe-bench all` the default
//! parameters; `troupe-bench ring --rings 10 ...` one workload. `--peers` puts
//! the peer frameworks beside Troupe, `--baseline FILE` compares with a saved
//! `--json` run, `--plot DIR` draws the scaling figures as SVG + CSV.

mod compare;
mod estimator;
mod peers;
mod plot;
mod stats;
mod workloads;

use clap::Parser;
use stats::{render_block, Figure};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;
use workloads::RunCfg;

/// Every workload this build knows, in report order (BENCHMARKS.md's table).
const WORKLOADS: &[&str] = &[
    "ring",
    "pingpong",
    "mailbox_performance",
    "actor_creation",
    "mixed_case",
    "spawn_and_await",
    "message",
    "registry",
    "reader_db",
    "max_throughput",
    "schedulers",
    "channels",
];

#[derive(Parser, Debug)]
#[command(
    name = "troupe-bench",
    about = "The Troupe benchmark suite (shared/BENCHMARKS.md)",
    after_help = "Workloads: ring, pingpong, mailbox_performance, actor_creation, mixed_case, \
                  spawn_and_await, message, registry, reader_db, max_throughput, schedulers, channels.\n\
                  registry measures Troupe's Registry at each size (find, dispatch, dispatch_group, \
                  memory per entry); schedulers runs the ring (--rings, --actors, \
                  --laps) under each dispatcher kind.\n\n\
                  Examples:\n  troupe-bench                      # quick suite\n  \
                  troupe-bench all --json run.jsonl # default parameters\n  \
                  troupe-bench pingpong --round-trips 100000 --peers\n  \
                  troupe-bench mixed_case --ring-masters 10 --ring-size 100 --token 1000 --repetitions 4\n  \
                  troupe-bench ring --baseline old.jsonl --threshold 10 --fail-on-regression\n  \
                  troupe-bench reader_db ring --plot plots/"
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
    /// mixed_case: ring masters (R).
    #[arg(long)]
    ring_masters: Option<usize>,
    /// mixed_case: actors per ring, master included (S).
    #[arg(long)]
    ring_size: Option<usize>,
    /// mixed_case: the token's start value, i.e. laps per ring (T).
    #[arg(long)]
    token: Option<u64>,
    /// mixed_case: rings each master builds, one after the other (K).
    #[arg(long)]
    repetitions: Option<usize>,
    /// spawn_and_await: spawns.
    #[arg(long)]
    count: Option<u64>,
    /// message: operations per sample of each micro-benchmark.
    #[arg(long)]
    iterations: Option<u64>,
    /// registry: registry sizes, comma-separated.
    #[arg(long)]
    sizes: Option<String>,
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
    /// max_throughput: frames sent through the resizer.
    #[arg(long)]
    frames: Option<u64>,
    /// Run the peer programs (peers/README.md) on each selected workload too.
    #[arg(long)]
    peers: bool,
    /// Seconds before a peer run is killed and shown as failed.
    #[arg(long, default_value_t = 300)]
    peer_timeout: u64,
    /// Compare with a saved `--json` run (JSON lines).
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Regression threshold for --baseline, in percent.
    #[arg(long, value_name = "PCT", default_value_t = 10.0)]
    threshold: f64,
    /// Exit 1 when --baseline finds a regression.
    #[arg(long)]
    fail_on_regression: bool,
    /// Draw the scaling figures as SVG (+ CSV) into DIR; reader_db then also
    /// runs at 1, 2 and 4 threads.
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
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

/// What a workload gave: figures, or why Troupe cannot run it yet.
enum Outcome {
    Figures(Vec<Figure>),
    /// A workload this build cannot run, with the reason (every workload of
    /// BENCHMARKS.md runs today; kept for ones a platform lacks).
    #[allow(dead_code)]
    Unavailable(String),
}

fn q<T>(quick: bool, quick_v: T, default_v: T) -> T {
    if quick {
        quick_v
    } else {
        default_v
    }
}

fn ring_params(quick: bool, cli: &Cli) -> workloads::ring::Params {
    workloads::ring::Params {
        rings: cli.rings.unwrap_or(10),
        actors: cli.actors.unwrap_or(q(quick, 1_000, 10_000)),
        laps: cli.laps.unwrap_or(q(quick, 20, 100)),
    }
}

fn pingpong_params(quick: bool, cli: &Cli) -> workloads::pingpong::Params {
    workloads::pingpong::Params {
        round_trips: cli.round_trips.unwrap_or(q(quick, 200_000, 1_000_000)),
    }
}

fn mailbox_params(quick: bool, cli: &Cli) -> workloads::mailbox_performance::Params {
    workloads::mailbox_performance::Params {
        senders: cli.senders.unwrap_or(q(quick, 20, 100)),
        messages: cli.messages.unwrap_or(q(quick, 100_000, 1_000_000)),
    }
}

fn creation_params(quick: bool, cli: &Cli) -> workloads::actor_creation::Params {
    workloads::actor_creation::Params {
        pow: cli.pow.unwrap_or(q(quick, 16, 20)),
    }
}

fn mixed_params(quick: bool, cli: &Cli) -> workloads::mixed_case::Params {
    workloads::mixed_case::Params {
        ring_masters: cli.ring_masters.unwrap_or(q(quick, 2, 10)),
        ring_size: cli.ring_size.unwrap_or(q(quick, 50, 100)),
        token: cli.token.unwrap_or(q(quick, 100, 1000)),
        repetitions: cli.repetitions.unwrap_or(q(quick, 1, 4)),
    }
}

fn spawn_params(quick: bool, cli: &Cli) -> workloads::spawn_and_await::Params {
    workloads::spawn_and_await::Params {
        count: cli.count.unwrap_or(q(quick, 20_000, 100_000)),
    }
}

fn reader_params(quick: bool, cli: &Cli) -> workloads::reader_db::Params {
    workloads::reader_db::Params {
        reads: cli.reads.unwrap_or(q(quick, 310_000, 3_100_000)),
        clients: cli.clients.unwrap_or(2),
        readers: cli.readers.unwrap_or(2),
        outstanding: cli.outstanding.unwrap_or(64),
    }
}

fn registry_sizes(quick: bool, cli: &Cli) -> String {
    cli.sizes
        .clone()
        .unwrap_or_else(|| q(quick, "10,100,1000", "10,100,1000,10000").to_string())
}

/// The peer contract's flags for a workload, with the values Troupe used;
/// `None` where the contract has no such workload.
fn peer_flags(name: &str, quick: bool, cli: &Cli) -> Option<Vec<String>> {
    let f = |pairs: &[(&str, String)]| {
        Some(
            pairs
                .iter()
                .flat_map(|(k, v)| [format!("--{k}"), v.clone()])
                .collect(),
        )
    };
    match name {
        "ring" => {
            let p = ring_params(quick, cli);
            f(&[
                ("rings", p.rings.to_string()),
                ("actors", p.actors.to_string()),
                ("laps", p.laps.to_string()),
            ])
        }
        "pingpong" => f(&[(
            "round-trips",
            pingpong_params(quick, cli).round_trips.to_string(),
        )]),
        "mailbox_performance" => {
            let p = mailbox_params(quick, cli);
            f(&[
                ("senders", p.senders.to_string()),
                ("messages", p.messages.to_string()),
            ])
        }
        "actor_creation" => f(&[("pow", creation_params(quick, cli).pow.to_string())]),
        "spawn_and_await" => f(&[("count", spawn_params(quick, cli).count.to_string())]),
        "reader_db" => {
            let p = reader_params(quick, cli);
            f(&[
                ("reads", p.reads.to_string()),
                ("clients", p.clients.to_string()),
                ("readers", p.readers.to_string()),
                ("outstanding", p.outstanding.to_string()),
            ])
        }
        "registry" => f(&[("sizes", registry_sizes(quick, cli))]),
        _ => None,
    }
}

fn run_workload(name: &str, quick: bool, cli: &Cli, cfg: &RunCfg) -> Result<Outcome, String> {
    use workloads::*;
    let figs = match name {
        "ring" => ring::run(cfg, &ring_params(quick, cli)),
        "pingpong" => pingpong::run(cfg, &pingpong_params(quick, cli)),
        "mailbox_performance" => mailbox_performance::run(cfg, &mailbox_params(quick, cli)),
        "actor_creation" => actor_creation::run(cfg, &creation_params(quick, cli)),
        "mixed_case" => mixed_case::run(cfg, &mixed_params(quick, cli)),
        "spawn_and_await" => spawn_and_await::run(cfg, &spawn_params(quick, cli)),
        "message" => message::run(
            cfg,
            &message::Params {
                iterations: cli.iterations.unwrap_or(q(quick, 1_000_000, 10_000_000)),
            },
        ),
        "reader_db" => reader_db::run(cfg, &reader_params(quick, cli)),
        "max_throughput" => max_throughput::run(
            cfg,
            &max_throughput::Params {
                frames: cli.frames.unwrap_or(q(quick, 300, 1_000)),
            },
        ),
        "registry" => {
            let sizes: Result<Vec<usize>, _> = registry_sizes(quick, cli)
                .split(',')
                .map(|x| x.trim().parse::<usize>())
                .collect();
            let sizes = sizes.map_err(|e| format!("registry: bad --sizes: {e}"))?;
            registry::run(cfg, &registry::Params { sizes })
        }
        "channels" => {
            let d = channels::Params::default();
            let p = if quick {
                channels::Params {
                    subscribers: vec![1, 10, 100],
                    deliveries: d.deliveries / 10,
                    timers: d.timers / 10,
                    chain_messages: d.chain_messages / 10,
                }
            } else {
                d
            };
            channels::run(cfg, &p)
        }
        "schedulers" => schedulers::run(
            cfg,
            &schedulers::Params {
                rings: cli.rings.unwrap_or(10),
                actors: cli.actors.unwrap_or(q(quick, 500, 1_000)),
                laps: cli.laps.unwrap_or(q(quick, 20, 100)),
            },
        ),
        other => Err(format!(
            "unknown workload `{other}`; known: all, {}",
            WORKLOADS.join(", ")
        )),
    }?;
    Ok(Outcome::Figures(figs))
}

/// The per-figure summary lines under a block.
fn summary_lines(figs: &[Figure]) -> String {
    let mut out = String::new();
    for f in figs {
        let extras: Vec<String> = f
            .extra
            .iter()
            .map(|(k, v)| match v.as_f64() {
                Some(x) if x.fract() != 0.0 => format!("{k}={x:.3}"),
                _ => format!("{k}={v}"),
            })
            .collect();
        out.push_str(&format!(
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
    out
}

fn clear_progress() {
    let _ = write!(std::io::stderr(), "\r\x1b[2K");
}

/// `--plot` for one workload; returns report lines and extra figures.
fn plots(
    name: &str,
    dir: &std::path::Path,
    quick: bool,
    cli: &Cli,
    cfg: &RunCfg,
    figs: &[Figure],
) -> Result<(String, Vec<Figure>), String> {
    let mut out = String::new();
    let mut extra = Vec::new();
    match name {
        "reader_db" => {
            let p = reader_params(quick, cli);
            let mut points = Vec::new();
            for t in [1usize, 2, 4] {
                let fig = match figs
                    .iter()
                    .find(|f| f.framework == "troupe" && f.threads == t)
                {
                    Some(f) => f.clone(),
                    None => {
                        let c = RunCfg {
                            threads: t,
                            ..cfg.clone()
                        };
                        let f = workloads::reader_db::run(&c, &p)?
                            .into_iter()
                            .find(|f| f.framework == "troupe")
                            .ok_or("reader_db gave no troupe figure")?;
                        extra.push(f.clone());
                        f
                    }
                };
                points.push((t as f64, fig.rate));
            }
            clear_progress();
            if !extra.is_empty() {
                let refs: Vec<&Figure> = extra.iter().collect();
                out.push_str(&render_block(
                    "== reader_db at other thread counts (--plot)",
                    &refs,
                ));
                out.push_str(&summary_lines(&extra));
            }
            let (svg, csv) = plot::line_chart(
                dir,
                "reader_db_threads",
                &format!(
                    "reader_db: reads/s against worker threads ({} reads)",
                    p.reads
                ),
                "threads",
                "reads/s",
                &points,
            )?;
            out.push_str(&format!("plot: {} ({})\n", svg.display(), csv.display()));
        }
        "ring" => {
            let bars: Vec<(String, f64)> = figs
                .iter()
                .filter(|f| f.framework == "troupe")
                .map(|_| "default work-stealing".to_string())
                .zip(figs.iter().map(|f| f.rate))
                .collect();
            let (svg, csv) = plot::bar_chart(
                dir,
                "ring_dispatchers",
                "ring: hops/s on the default dispatcher (`schedulers` plots every kind)",
                "hops/s",
                &bars,
            )?;
            out.push_str(&format!("plot: {} ({})\n", svg.display(), csv.display()));
        }
        "schedulers" => {
            let bars: Vec<(String, f64)> = figs
                .iter()
                .map(|f| {
                    let kind = f.params.get("dispatcher").and_then(|v| v.as_str());
                    (kind.unwrap_or("?").to_string(), f.rate)
                })
                .collect();
            let (svg, csv) = plot::bar_chart(
                dir,
                "ring_dispatchers_all",
                "ring: hops/s per dispatcher",
                "hops/s",
                &bars,
            )?;
            out.push_str(&format!("plot: {} ({})\n", svg.display(), csv.display()));
        }
        "registry" => {
            for op in ["find", "dispatch_group", "memory"] {
                let points: Vec<(f64, f64)> = figs
                    .iter()
                    .filter(|f| {
                        f.framework == "troupe"
                            && f.params.get("op").and_then(|v| v.as_str()) == Some(op)
                    })
                    .filter_map(|f| {
                        let size = f.params.get("size")?.as_f64()?;
                        let y = if op == "memory" {
                            f.extra.get("bytes_per_entry")?.as_f64()?
                        } else {
                            f.ns_per_op_mean
                        };
                        Some((size.log10(), y))
                    })
                    .collect();
                if points.is_empty() {
                    continue;
                }
                let (svg, csv) = plot::line_chart(
                    dir,
                    &format!("registry_{op}"),
                    &format!("registry {op}: cost against registry size"),
                    "log10(registry size)",
                    if op == "memory" {
                        "bytes per entry"
                    } else {
                        "ns per op"
                    },
                    &points,
                )?;
                out.push_str(&format!("plot: {} ({})\n", svg.display(), csv.display()));
            }
        }
        _ => {}
    }
    Ok((out, extra))
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
    if let Some(bad) = names.iter().find(|n| !WORKLOADS.contains(&n.as_str())) {
        eprintln!(
            "troupe-bench: unknown workload `{bad}`; known: all, {}",
            WORKLOADS.join(", ")
        );
        std::process::exit(2);
    }
    let saved = cli.baseline.as_ref().map(|path| {
        match std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|t| compare::parse_saved(&t))
        {
            Ok(s) => s,
            Err(e) => {
                eprintln!("troupe-bench: cannot read baseline {}: {e}", path.display());
                std::process::exit(2);
            }
        }
    });
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
            let _ = std::io::stdout().flush();
        }
    };
    print(&header(&cfg));
    print(if quick {
        "Suite:     quick (scaled-down parameters)\n"
    } else {
        "Suite:     default parameters\n"
    });
    let root = peers::repo_root();
    let mut all: Vec<Figure> = Vec::new();
    let mut failed = false;
    for name in &names {
        let mut figs = match run_workload(name, quick, &cli, &cfg) {
            Ok(Outcome::Figures(figs)) => {
                clear_progress();
                let refs: Vec<&Figure> = figs.iter().collect();
                print(&render_block(&format!("== {name}"), &refs));
                print(&summary_lines(&figs));
                figs
            }
            Ok(Outcome::Unavailable(why)) => {
                clear_progress();
                print(&format!("\n== {name}\nnot available yet: {why}\n"));
                Vec::new()
            }
            Err(e) => {
                clear_progress();
                eprintln!("\ntroupe-bench: {name} FAILED: {e}");
                failed = true;
                continue;
            }
        };
        if let Some(dir) = &cli.plot {
            match plots(name, dir, quick, &cli, &cfg, &figs) {
                Ok((text, extra)) => {
                    print(&text);
                    figs.extend(extra);
                }
                Err(e) => {
                    clear_progress();
                    eprintln!("\ntroupe-bench: {name} plot FAILED: {e}");
                    failed = true;
                }
            }
        }
        if cli.peers {
            match peer_flags(name, quick, &cli) {
                None => print(&format!(
                    "\n== peers: {name}\nno peer contract for this workload (peers/README.md)\n"
                )),
                Some(flags) => {
                    let mut outcomes = Vec::new();
                    for peer in peers::PEERS {
                        progress(&format!("{name}: peer {peer}"));
                        let o = peers::run_peer(
                            peer,
                            &root,
                            name,
                            &flags,
                            cfg.threads,
                            cfg.samples,
                            Duration::from_secs(cli.peer_timeout.max(1)),
                        );
                        outcomes.push((peer.to_string(), o));
                    }
                    clear_progress();
                    let troupe: Vec<&Figure> =
                        figs.iter().filter(|f| f.framework == "troupe").collect();
                    print(&peers::render_table(name, &troupe, &outcomes));
                    for (_, o) in outcomes {
                        if let peers::PeerOutcome::Figures(pf) = o {
                            figs.extend(pf);
                        }
                    }
                }
            }
        }
        if let Some(out) = json_out.as_mut() {
            for f in &figs {
                let _ = writeln!(
                    out,
                    "{}",
                    serde_json::to_string(f).expect("figure serializes")
                );
            }
            let _ = out.flush();
        }
        all.extend(figs);
    }
    if let Some(mut out) = json_out {
        let _ = out.flush();
    }
    let mut regressed = false;
    if let (Some(saved), Some(path)) = (&saved, &cli.baseline) {
        let rows = compare::compare(saved, &all, cli.threshold);
        regressed = rows.iter().any(|r| r.regression);
        print(&compare::render(
            &rows,
            &path.display().to_string(),
            cli.threshold,
        ));
    }
    if failed {
        std::process::exit(1);
    }
    if regressed && cli.fail_on_regression {
        eprintln!("troupe-bench: regression against the baseline (--fail-on-regression)");
        std::process::exit(1);
    }
}
