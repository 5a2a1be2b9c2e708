//! The programs the suite runs as children: where each peer's program is
//! (peers/README.md), and running a program under a deadline. Below the
//! workloads (the cluster group runs its programs through
//! [`run_with_timeout`]) and the peers' report (`peers`), which both use it.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The peers, in report order.
pub const PEERS: &[&str] = &["actix", "xtra", "ractor", "kameo", "caf", "erlang"];

/// The repository root: the working directory if it has `peers/`, else the
/// checkout this binary was built from.
pub fn repo_root() -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    if cwd.join("peers").is_dir() {
        return cwd;
    }
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if built.join("peers").is_dir() {
        return built;
    }
    cwd
}

/// Where a peer's program is.
pub fn program(peer: &str, root: &Path) -> PathBuf {
    match peer {
        "caf" => root.join("peers/caf/build/peer-caf"),
        "erlang" => root.join("peers/erlang/peer-erlang"),
        rust => {
            let exe_dir = std::env::current_exe()
                .ok()
                .and_then(|p| p.parent().map(Path::to_path_buf));
            let name = format!("peer-{rust}");
            match exe_dir {
                Some(d) if d.join(&name).is_file() => d.join(name),
                _ => root.join("target/release").join(name),
            }
        }
    }
}

/// Runs `prog args`, killing it (and its process group) after `timeout`.
/// Returns its stdout when it exits 0.
pub fn run_with_timeout(prog: &Path, args: &[String], timeout: Duration) -> Result<String, String> {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start: {e}"))?;
    let mut so = child.stdout.take().expect("piped");
    let mut se = child.stderr.take().expect("piped");
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = so.read_to_string(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if Instant::now() >= deadline => break None,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("wait: {e}")),
        }
    };
    let Some(status) = status else {
        // The peer's own process group (an Erlang VM under its launcher too).
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", child.id())])
            .status();
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!("timeout after {} s", timeout.as_secs()));
    };
    let stdout = out_t.join().unwrap_or_default();
    let stderr = err_t.join().unwrap_or_default();
    if !status.success() {
        // The last line that says something (not a panic's backtrace hint).
        let last = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty() && !l.starts_with("note: run with `RUST_BACKTRACE"))
            .unwrap_or("")
            .trim()
            .to_string();
        return Err(format!("{status}: {last}"));
    }
    Ok(stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_out_and_kills() {
        let t0 = Instant::now();
        let r = run_with_timeout(
            Path::new("/bin/sh"),
            &["-c".into(), "sleep 30".into()],
            Duration::from_millis(300),
        );
        assert!(r.unwrap_err().starts_with("timeout"));
        assert!(t0.elapsed() < Duration::from_secs(10));
        let r = run_with_timeout(
            Path::new("/bin/sh"),
            &["-c".into(), "echo oops >&2; exit 3".into()],
            Duration::from_secs(10),
        );
        assert!(r.unwrap_err().contains("oops"));
    }
}
