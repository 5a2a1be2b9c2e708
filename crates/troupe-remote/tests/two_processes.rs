//! Two OS processes (the `remote_ping` example, built by `cargo test`)
//! talking through a nats-server that this test starts and stops.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use troupe_test_nats::NatsServer;

fn example(name: &str) -> PathBuf {
    // target/<profile>/deps/two_processes-<hash> -> target/<profile>/examples/<name>
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(name)
}

/// Kills the child when dropped, so a failing test leaves no process behind.
struct Reaped(Child);
impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn ping_and_pong_processes_talk_through_nats() {
    let Some(server) = NatsServer::start_or_skip() else {
        return;
    };
    let bin = example("remote_ping");
    {
        // `cargo test --test two_processes` does not build examples, and a
        // left-over binary may be stale: build it (a no-op when fresh).
        let built = Command::new(env!("CARGO"))
            .args(["build", "-p", "troupe-remote", "--example", "remote_ping"])
            .status()
            .unwrap();
        assert!(
            built.success() && bin.exists(),
            "cannot build {}",
            bin.display()
        );
    }
    let mut pong = Reaped(
        Command::new(&bin)
            .args(["pong", "--url", &server.url()])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    // Kept open to the end: pong prints again when it quits.
    let mut pong_out = BufReader::new(pong.0.stdout.take().unwrap());
    pong_out.read_line(&mut line).unwrap();
    assert!(line.starts_with("ready"), "pong said {line:?}");
    let out = Command::new(&bin)
        .args(["ping", "--url", &server.url(), "--count", "200", "--quit"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "ping failed: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("pong has 200 notes"), "{stdout}");
    assert!(stdout.contains("ping: ok"), "{stdout}");
    // Pong exits on its own after the Quit tell.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = pong.0.try_wait().unwrap() {
            assert!(status.success());
            line.clear();
            pong_out.read_line(&mut line).unwrap();
            assert!(line.starts_with("pong: 200 notes"), "{line}");
            line.clear();
            pong_out.read_line(&mut line).unwrap();
            assert_eq!(line.trim(), "pong: quit");
            break;
        }
        assert!(Instant::now() < deadline, "pong did not quit");
        std::thread::sleep(Duration::from_millis(20));
    }
}
