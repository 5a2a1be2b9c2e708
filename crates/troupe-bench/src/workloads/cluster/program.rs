//! The cluster benchmark programs, run as child processes.
//!
//! The benchmarks' logic lives once, in `troupe-sharding-bench` and
//! `troupe-persistence-bench`; the suite runs them and reads their sample
//! lines. A program is looked for in `$TROUPE_BENCH_PROGRAMS` when that names
//! a folder (CI runs its debug programs from the release suite), else next to
//! this executable (cargo puts every binary of a profile in one folder).
//! There, under `cargo run` (`$CARGO` set), it is built first with this
//! executable's profile, so a changed source is never measured stale (a
//! no-op when it is up to date); otherwise a missing program fails the
//! workload with the `cargo build` command that makes it.
//! Every program needs a nats-server (it starts its own on loopback): without
//! one the workload fails with an install hint and starts nothing. A child is
//! killed, with its process group, after [`LIMIT`].

use crate::run::RunCfg;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The variable naming the folder to take the programs from, as built.
pub const PROGRAMS_VAR: &str = "TROUPE_BENCH_PROGRAMS";

/// How long one program run may take before it is killed.
pub const LIMIT: Duration = Duration::from_secs(900);

/// A benchmark program and the package it belongs to.
#[derive(Clone, Copy, Debug)]
pub struct Program {
    /// The binary's name.
    pub bin: &'static str,
    /// Its package.
    pub package: &'static str,
}

/// Sharded entities: entity tell against a remote tell, rebalancing.
pub const SHARDING: Program = Program {
    bin: "troupe-sharding-bench",
    package: "troupe-sharding",
};

/// Persistent actors: persisted events against raw JetStream, recovery.
pub const PERSISTENCE: Program = Program {
    bin: "troupe-persistence-bench",
    package: "troupe-persistence",
};

/// Why the cluster workloads cannot run here, if they cannot: no
/// nats-server.
pub fn missing_nats() -> Option<String> {
    (!troupe_test_nats::available()).then(|| {
        format!(
            "needs nats-server with JetStream (2.2 or later): install it with \
             `apt-get install nats-server` or set ${} to its path",
            troupe_test_nats::BINARY_VAR
        )
    })
}

/// The rounds a program runs for `cfg`: its warm-up, then its samples.
pub fn rounds(cfg: &RunCfg) -> usize {
    cfg.warmup + cfg.samples
}

/// The folder of this executable's profile (`target/release`, ...).
fn profile_dir() -> Result<PathBuf, String> {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .ok_or_else(|| "cannot find this executable's folder".to_string())
}

/// The `cargo build` flags of a profile folder's profile: `debug` and
/// `release` by name, another folder of a cargo target directory (one with
/// `CACHEDIR.TAG`) as a custom profile; `None` for a folder cargo did not
/// make.
fn profile_flags(dir: &Path) -> Option<Vec<String>> {
    let in_target = dir
        .parent()
        .is_some_and(|t| t.join("CACHEDIR.TAG").is_file());
    match dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => Some(Vec::new()),
        Some("release") => Some(vec!["--release".into()]),
        Some(other) if in_target => Some(vec!["--profile".into(), other.into()]),
        _ => None,
    }
}

impl Program {
    /// The command that builds this program with `flags`.
    fn build_command(&self, flags: &[String]) -> String {
        let mut words = vec!["cargo", "build"];
        words.extend(flags.iter().map(String::as_str));
        words.extend(["-p", self.package, "--bin", self.bin]);
        words.join(" ")
    }

    /// What to do when the program is not in `dir`.
    fn missing(&self, dir: &Path) -> String {
        match profile_flags(dir) {
            Some(flags) => format!(
                "`{}` is not in {}; build it with `{}`",
                self.bin,
                dir.display(),
                self.build_command(&flags)
            ),
            None => format!(
                "`{}` is not in {}; build it with `{}` and set ${PROGRAMS_VAR} to the folder \
                 it is in (target/release)",
                self.bin,
                dir.display(),
                self.build_command(&["--release".into()])
            ),
        }
    }

    /// The program's path, built first when `$CARGO` is set.
    fn locate(&self) -> Result<PathBuf, String> {
        if let Some(dir) = std::env::var_os(PROGRAMS_VAR) {
            let path = Path::new(&dir).join(self.bin);
            if path.is_file() {
                return Ok(path);
            }
            return Err(format!(
                "`{}` is not in ${PROGRAMS_VAR} = {}",
                self.bin,
                path.display()
            ));
        }
        let dir = profile_dir()?;
        let path = dir.join(self.bin);
        if let (Some(cargo), Some(flags)) = (std::env::var_os("CARGO"), profile_flags(&dir)) {
            let command = self.build_command(&flags);
            crate::stats::clear_progress();
            eprintln!("[troupe-bench] {command}");
            let status = Command::new(cargo)
                .arg("build")
                .args(&flags)
                .args(["-p", self.package, "--bin", self.bin])
                .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .status()
                .map_err(|e| format!("cannot run cargo: {e}"))?;
            if !status.success() {
                return Err(format!("`{command}` failed: {status}"));
            }
        }
        if path.is_file() {
            Ok(path)
        } else {
            Err(self.missing(&dir))
        }
    }

    /// Runs the program with `args` and returns its stdout; fails without a
    /// nats-server, when the program is missing, exits non-zero or runs past
    /// [`LIMIT`].
    pub fn run(&self, args: &[String]) -> Result<String, String> {
        if let Some(why) = missing_nats() {
            return Err(why);
        }
        let path = self.locate()?;
        crate::stats::progress(&format!("{} {}", self.bin, args.join(" ")));
        crate::programs::run_with_timeout(&path, args, LIMIT)
            .map_err(|e| format!("{} {}: {e}", self.bin, args.join(" ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_build_command_names_the_profile() {
        let target =
            std::env::temp_dir().join(format!("troupe-bench-target-{}", std::process::id()));
        std::fs::create_dir_all(target.join("profiling")).unwrap();
        let at = |p: &Path| SHARDING.missing(p);
        assert!(at(Path::new("/t/release"))
            .ends_with("`cargo build --release -p troupe-sharding --bin troupe-sharding-bench`"));
        assert!(at(Path::new("/t/debug"))
            .ends_with("`cargo build -p troupe-sharding --bin troupe-sharding-bench`"));
        // A custom profile only inside a cargo target directory.
        let custom = target.join("profiling");
        assert!(
            at(&custom).contains("$TROUPE_BENCH_PROGRAMS"),
            "{}",
            at(&custom)
        );
        std::fs::write(target.join("CACHEDIR.TAG"), "").unwrap();
        assert!(at(&custom).ends_with(
            "`cargo build --profile profiling -p troupe-sharding --bin troupe-sharding-bench`"
        ));
        std::fs::remove_dir_all(&target).unwrap();
    }
}
