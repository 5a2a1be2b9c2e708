//! A `nats-server` child process on a free loopback port, for tests,
//! examples and benchmarks.
//!
//! Invariants:
//! - It listens on 127.0.0.1 only, on a port the OS had free a moment before.
//! - It never outlives this process: it runs under a small `sh` guard that
//!   kills it when our end of the guard's stdin closes, which happens when
//!   the [`NatsServer`] is dropped, when a test panics and unwinds, and also
//!   when this process is killed outright.
//! - [`NatsServer::start`] returns only once the port accepts connections
//!   (or fails after 10 s).
//!
//! The binary is `$NATS_SERVER`, else `nats-server` on `PATH`, else
//! `/usr/sbin/nats-server` (Debian's package).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `nats-server`; stopped when dropped.
///
/// ```no_run
/// let server = troupe_remote::nats_server::NatsServer::start().unwrap();
/// let node = troupe_remote::Node::connect(&server.url(), "a").unwrap();
/// ```
pub struct NatsServer {
    port: u16,
    max_payload: Option<usize>,
    guard: Option<(Child, ChildStdin)>,
    pid: Option<u32>,
    dir: PathBuf,
}

fn binary() -> String {
    if let Ok(b) = std::env::var("NATS_SERVER") {
        return b;
    }
    for dir in std::env::var("PATH").unwrap_or_default().split(':') {
        let p = std::path::Path::new(dir).join("nats-server");
        if p.exists() {
            return p.display().to_string();
        }
    }
    "/usr/sbin/nats-server".to_string()
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl NatsServer {
    /// Starts a server with default settings (max payload 1 MiB).
    pub fn start() -> std::io::Result<NatsServer> {
        Self::start_with(None)
    }

    /// Starts a server with the given max payload.
    pub fn start_with(max_payload: Option<usize>) -> std::io::Result<NatsServer> {
        let port = free_port()?;
        let dir = std::env::temp_dir().join(format!("troupe-nats-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let mut server = NatsServer {
            port,
            max_payload,
            guard: None,
            pid: None,
            dir,
        };
        server.launch()?;
        Ok(server)
    }

    fn launch(&mut self) -> std::io::Result<()> {
        let bin = binary();
        if !std::path::Path::new(&bin).exists() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "nats-server not found at {bin}: install the Debian package \
                     `nats-server` (apt-get install nats-server), or set NATS_SERVER \
                     to its path"
                ),
            ));
        }
        let conf = self.dir.join("nats.conf");
        let mut text = format!("listen: 127.0.0.1:{}\n", self.port);
        if let Some(n) = self.max_payload {
            text.push_str(&format!("max_payload: {n}\n"));
        }
        std::fs::write(&conf, text)?;
        let script = format!(
            "\"{}\" -c \"{}\" >/dev/null 2>&1 & p=$!; echo $p; cat >/dev/null; kill $p 2>/dev/null; wait $p",
            binary(),
            conf.display()
        );
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdin = child.stdin.take().expect("piped stdin");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("piped stdout")).read_line(&mut line)?;
        self.pid = line.trim().parse().ok();
        self.guard = Some((child, stdin));
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if Instant::now() > deadline {
                self.stop();
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!(
                        "nats-server ({}) did not listen on port {} within 10 s",
                        binary(),
                        self.port
                    ),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// `nats://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Kills the server at once (SIGKILL: no goodbye to clients), as a crash would.
    pub fn kill(&mut self) {
        if let Some(pid) = self.pid.take() {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
        }
        self.stop();
    }

    /// Stops the server (SIGTERM) and waits for it.
    pub fn stop(&mut self) {
        if let Some((mut child, mut stdin)) = self.guard.take() {
            let _ = stdin.flush();
            drop(stdin);
            let _ = child.wait();
        }
        self.pid = None;
    }

    /// Starts it again on the same port (after [`stop`](Self::stop) or [`kill`](Self::kill)).
    pub fn restart(&mut self) -> std::io::Result<()> {
        self.stop();
        self.launch()
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
