//! `troupe-bench`: reruns every benchmark of the seeds on Troupe (see
//! `shared/BENCHMARKS.md`) and prints one report.
//!
//! `troupe-bench` runs the quick suite; `troupe-bench all` the default
//! parameters; `troupe-bench ring --rings 10 ...` one workload. `--peers` puts
//! the peer frameworks beside Troupe, `--baseline FILE` compares with a saved
//! `--json` run, `--plot DIR` draws the scaling figures as SVG + CSV.

mod compare;
mod contention;
mod peers;
mod plot;
mod programs;
mod run;
mod stats;
mod workloads;

use clap::{Arg, ArgAction, ArgMatches, Command};
use run::{PlotCtx, RunCfg, Workload};
use stats::{clear_progress, progress, render_block, summary_lines, Figure};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;
use troupe_bench_contract::spec::Args;

/// The suite's own options (the workloads' parameters are added from their
/// declarations, see [`command`]).
#[derive(Debug)]
struct Cli {
    /// `all`, or workload names; none = the quick suite.
    workloads: Vec<String>,
    quick: bool,
    threads: usize,
    json: Option<String>,
    samples: usize,
    warmup: usize,
    peers: bool,
    peer_timeout: u64,
    baseline: Option<PathBuf>,
    threshold: f64,
    fail_on_regression: bool,
    plot: Option<PathBuf>,
    matches: ArgMatches,
}

/// The command line: the suite's options, then one flag per distinct
/// workload parameter (a flag several workloads share, like `--actors`, is
/// one flag; each workload applies its own default when it is absent).
fn command() -> Command {
    let mut after = String::from("Workloads (parameters and defaults):\n");
    for w in workloads::ALL {
        after.push_str(&format!(
            "{}{}\n      {}\n",
            w.spec.usage_line(),
            if w.peers { "  [peers]" } else { "" },
            w.spec.about
        ));
    }
    after.push_str(
        "\nExamples:\n  troupe-bench                      # quick suite\n  \
         troupe-bench all --json run.jsonl # default parameters\n  \
         troupe-bench pingpong --round-trips 100000 --peers\n  \
         troupe-bench mixed_case --ring-masters 10 --ring-size 100 --token 1000 --repetitions 4\n  \
         troupe-bench ring --baseline old.jsonl --threshold 10 --fail-on-regression\n  \
         troupe-bench reader_db ring --plot plots/\n  \
         troupe-bench --quick savina        # the Savina suite (also savina-micro, savina-concurrency, savina-parallel)\n  \
         troupe-bench --quick cluster       # entity tells, persistence, rebalancing (needs nats-server)",
    );
    let mut cmd = Command::new("troupe-bench")
        .about("The Troupe benchmark suite (shared/BENCHMARKS.md)")
        .after_help(after)
        .arg(
            Arg::new("workloads")
                .num_args(0..)
                .help("`all`, workload names, Savina groups (savina, savina-micro, savina-concurrency, savina-parallel) or `cluster`; none = the quick suite (without `cluster`)"),
        )
        .arg(flag("quick", "Scale every workload down (the default when no workload is named)"))
        .arg(opt("threads", "N", "Worker threads", "2"))
        .arg(opt_none("json", "FILE", "Write one JSON line per figure to FILE (`-` for stdout)"))
        .arg(opt("samples", "N", "Measured samples per figure, for Troupe and every peer", "5"))
        .arg(opt("warmup", "N", "Unrecorded warm-up runs per figure, for Troupe and every peer", "1"))
        .arg(flag("peers", "Run the peer programs (peers/README.md) on each selected workload too"))
        .arg(opt("peer-timeout", "S", "Seconds before a peer run is killed and shown as failed", "300"))
        .arg(opt_none("baseline", "FILE", "Compare with a saved `--json` run (JSON lines)"))
        .arg(opt("threshold", "PCT", "Regression threshold for --baseline, in percent", "10"))
        .arg(flag("fail-on-regression", "Exit 1 when --baseline finds a regression"))
        .arg(flag(
            "contention",
            "Count contention (RMWs, CAS failures, allocations, wake-ups) per message of mailbox_performance and stress; needs a build with --features contention",
        ))
        .arg(opt_none(
            "plot",
            "DIR",
            "Draw the scaling figures as SVG (+ CSV) into DIR; reader_db and the Savina parallel workloads then also run at 1, 2 and 4 threads",
        ));
    let mut seen: Vec<&str> = Vec::new();
    for w in workloads::ALL {
        for p in w.spec.params {
            if !seen.contains(&p.flag) {
                seen.push(p.flag);
                cmd = cmd.arg(opt_none(p.flag, "VALUE", p.help));
            }
        }
    }
    cmd
}

fn flag(name: &'static str, help: &'static str) -> Arg {
    Arg::new(name)
        .long(name)
        .help(help)
        .action(ArgAction::SetTrue)
}

fn opt(name: &'static str, value: &'static str, help: &'static str, default: &'static str) -> Arg {
    opt_none(name, value, help).default_value(default)
}

fn opt_none(name: &'static str, value: &'static str, help: &'static str) -> Arg {
    Arg::new(name).long(name).value_name(value).help(help)
}

impl Cli {
    fn parse() -> Cli {
        let m = command().get_matches();
        let num = |name: &str| -> u64 {
            let v = m.get_one::<String>(name).expect("has a default");
            v.parse().unwrap_or_else(|_| {
                eprintln!("troupe-bench: --{name} wants a non-negative integer, got `{v}`");
                std::process::exit(2);
            })
        };
        let s = |name: &str| m.get_one::<String>(name).cloned();
        Cli {
            workloads: m
                .get_many::<String>("workloads")
                .map(|v| v.cloned().collect())
                .unwrap_or_default(),
            quick: m.get_flag("quick"),
            threads: num("threads") as usize,
            json: s("json"),
            samples: num("samples") as usize,
            warmup: num("warmup") as usize,
            peers: m.get_flag("peers"),
            peer_timeout: num("peer-timeout"),
            baseline: s("baseline").map(PathBuf::from),
            threshold: s("threshold")
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| {
                    eprintln!("troupe-bench: --threshold wants a number");
                    std::process::exit(2);
                }),
            fail_on_regression: m.get_flag("fail-on-regression"),
            plot: s("plot").map(PathBuf::from),
            matches: m,
        }
    }

    /// A workload's parameters: the flags given, else its quick or default values.
    fn args(&self, w: &Workload, quick: bool) -> Result<Args, String> {
        w.spec
            .resolve(quick, |flag| self.matches.get_one::<String>(flag).cloned())
    }
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
         Scheduler: work-stealing, {} worker threads, throughput 64; {} warm-up + {} samples per figure\n\
         Interference: a sample during which other processes used more than {:.0}% of its wall time \
         in CPU is disturbed; figures use the undisturbed samples when there are any\n",
        env!("TROUPE_RUSTC"),
        env!("CARGO_PKG_VERSION"),
        env!("TROUPE_COMMIT"),
        cfg.threads,
        cfg.warmup,
        cfg.samples,
        troupe_bench_contract::probe::DISTURBED_SHARE * 100.0,
    )
}

fn main() {
    let cli = Cli::parse();
    // `all`: every workload, the cluster group only where a nats-server is.
    let every = || match workloads::cluster::program::missing_nats() {
        None => workloads::ALL.to_vec(),
        Some(why) => {
            eprintln!("troupe-bench: skipping the cluster group: {why}");
            workloads::quick_suite()
        }
    };
    let (selected, quick): (Vec<&Workload>, bool) = if cli.workloads.is_empty() {
        (workloads::quick_suite(), true)
    } else if cli.workloads.iter().any(|w| w == "all") {
        (every(), cli.quick)
    } else {
        let found = cli.workloads.iter().map(|n| {
            workloads::select(n).ok_or_else(|| {
                let known: Vec<&str> = workloads::ALL.iter().map(|w| w.spec.name).collect();
                format!(
                    "unknown workload `{n}`; known: all, {}, {}, {}",
                    workloads::savina::GROUPS.join(", "),
                    workloads::cluster::NAME,
                    known.join(", ")
                )
            })
        });
        match found.collect::<Result<Vec<Vec<_>>, _>>() {
            Ok(v) => {
                // A workload named twice (alone and in a group) runs once.
                let mut picked: Vec<&Workload> = Vec::new();
                for w in v.into_iter().flatten() {
                    if !picked.iter().any(|p| p.spec.name == w.spec.name) {
                        picked.push(w);
                    }
                }
                (picked, cli.quick)
            }
            Err(e) => {
                eprintln!("troupe-bench: {e}");
                std::process::exit(2);
            }
        }
    };
    if cli.matches.get_flag("contention") {
        if !contention::BUILT {
            eprintln!(
                "troupe-bench: --contention needs a build with the counters: \
                 cargo build --release -p troupe-bench --features contention"
            );
            std::process::exit(2);
        }
        contention::enable();
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
    let mut peer_notes: Vec<workloads::savina::report::Note> = Vec::new();
    let mut failed = false;
    for w in selected {
        let name = w.spec.name;
        let args = match cli.args(w, quick) {
            Ok(a) => a,
            Err(e) => {
                eprintln!("troupe-bench: {e}");
                std::process::exit(2);
            }
        };
        let mut figs = match (w.run)(&cfg, &args) {
            Ok(figs) => {
                clear_progress();
                let refs: Vec<&Figure> = figs.iter().collect();
                print(&render_block(&format!("== {name}"), &refs));
                print(&summary_lines(&figs));
                print(&contention::take_report());
                figs
            }
            Err(e) => {
                clear_progress();
                eprintln!("\ntroupe-bench: {name} FAILED: {e}");
                failed = true;
                continue;
            }
        };
        if let (Some(dir), Some(plot)) = (&cli.plot, w.plot) {
            let ctx = PlotCtx {
                workload: w,
                dir,
                cfg: &cfg,
                args: &args,
                figs: &figs,
            };
            match plot(&ctx) {
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
            match w.peers.then(|| args.to_flags()) {
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
                            &cfg,
                            Duration::from_secs(cli.peer_timeout.max(1)),
                        );
                        outcomes.push((peer.to_string(), o));
                    }
                    clear_progress();
                    let troupe: Vec<&Figure> =
                        figs.iter().filter(|f| f.framework == "troupe").collect();
                    print(&peers::render_table(name, &troupe, &outcomes));
                    for (peer, o) in outcomes {
                        let note = match o {
                            peers::PeerOutcome::Figures(pf) => {
                                figs.extend(pf);
                                continue;
                            }
                            peers::PeerOutcome::Unsupported(_) => "unsupported",
                            peers::PeerOutcome::Failed(_) => "failed",
                            peers::PeerOutcome::NotInstalled(_) => "not inst.",
                        };
                        peer_notes.push((name.to_string(), peer, note.to_string()));
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
    if cli.peers {
        if let Some(text) = workloads::savina::report::summary(&all, &peer_notes) {
            print(&text);
        }
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
