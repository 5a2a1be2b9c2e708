//! A `nats-server` child process with JetStream (and optionally a user and
//! password), on a free loopback port, for tests, examples and the bench.
//!
//! Invariants (as troupe-remote's helper, which has no JetStream):
//! - it listens on 127.0.0.1 only, and its JetStream store lives in a
//!   temporary directory that survives [`NatsServer::restart`] (so the
//!   registry bucket does) and is removed on drop;
//! - it never outlives this process: it runs under a `sh` guard that kills
//!   it when our end of the guard's stdin closes (drop, panic, or this
//!   process being killed);
//! - [`NatsServer::start`] returns once the port accepts connections, or
//!   fails after 10 s.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `nats-server` with JetStream; stopped when dropped.
///
/// ```no_run
/// let server = troupe_cluster::nats_server::NatsServer::start().unwrap();
/// let cluster = troupe_cluster::Cluster::connect(&server.url(), "a").unwrap();
/// ```
pub struct NatsServer {
    port: u16,
    user: Option<(String, String)>,
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

impl NatsServer {
    /// Starts a server with JetStream and no authentication.
    pub fn start() -> std::io::Result<NatsServer> {
        Self::start_with_user(None)
    }

    /// Starts a server with JetStream that admits only `user`/`password`.
    pub fn start_with_user(user: Option<(&str, &str)>) -> std::io::Result<NatsServer> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let dir =
            std::env::temp_dir().join(format!("troupe-cluster-nats-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let mut server = NatsServer {
            port,
            user: user.map(|(u, p)| (u.to_string(), p.to_string())),
            guard: None,
            pid: None,
            dir,
        };
        server.launch()?;
        Ok(server)
    }

    fn launch(&mut self) -> std::io::Result<()> {
        let conf = self.dir.join("nats.conf");
        let mut text = format!(
            "listen: 127.0.0.1:{}\njetstream {{ store_dir: \"{}\" }}\n",
            self.port,
            self.dir.join("js").display()
        );
        if let Some((u, p)) = &self.user {
            text.push_str(&format!(
                "authorization {{ user: \"{u}\", password: \"{p}\" }}\n"
            ));
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
                        "nats-server did not listen on port {} within 10 s",
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

    /// Kills the server at once (SIGKILL), as a crash would.
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

    /// Starts it again on the same port with the same JetStream store.
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
