//! # A `nats-server` child process for Troupe's tests, examples and benchmarks
//!
//! [`NatsServer`] starts the real server on a free loopback port, optionally
//! with JetStream (the cluster's registry bucket), a user and password, a
//! smaller max payload, or any further configuration text (users with
//! permissions, say). `troupe-remote` and `troupe-cluster` share it.
//!
//! Invariants:
//! - It listens on 127.0.0.1 only, on a port the OS had free a moment before.
//! - Its configuration and JetStream store live in a temporary directory that
//!   survives [`NatsServer::restart`] (so a JetStream bucket does) and is
//!   removed on drop.
//! - It never outlives this process: it runs under a small `sh` guard that
//!   kills it when our end of the guard's stdin closes, which happens when
//!   the [`NatsServer`] is dropped, when a test panics and unwinds, and also
//!   when this process is killed outright.
//! - [`Builder::start`] returns only once the port accepts connections (or
//!   fails after 10 s).
//!
//! ## Where nats-server is missing
//!
//! A test starts its server with [`Builder::start_or_skip`] (or
//! [`NatsServer::start_or_skip`]): where no binary is found it prints one
//! line to stderr saying how to install one and returns `None`, and the
//! test returns early, passing. With `TROUPE_REQUIRE_NATS=1` in the
//! environment (CI sets it) a missing binary panics instead, so no test is
//! skipped unnoticed. A binary that is found but fails to start is a
//! failure either way.
//!
//! The binary is `$TROUPE_NATS_SERVER`, else `$NATS_SERVER`, else
//! `nats-server` on `PATH`, else `/usr/sbin/nats-server` (Debian's package).
//!
//! ```no_run
//! use troupe_test_nats::NatsServer;
//!
//! let Some(server) = NatsServer::builder().jetstream().start_or_skip() else {
//!     return; // nats-server is not installed here: skipped
//! };
//! println!("{}", server.url()); // nats://127.0.0.1:<port>
//! ```

#![warn(missing_docs)]

pub mod cpu;
pub mod toxiproxy;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Once;
use std::time::{Duration, Instant};

/// The variable that turns a skip for a missing nats-server into a failure.
pub const REQUIRE_VAR: &str = "TROUPE_REQUIRE_NATS";

/// The variable that names the nats-server binary, ahead of `PATH`.
pub const BINARY_VAR: &str = "TROUPE_NATS_SERVER";

/// A running `nats-server`; stopped when dropped.
///
/// ```no_run
/// let server = troupe_test_nats::NatsServer::start().unwrap();
/// assert!(server.url().starts_with("nats://127.0.0.1:"));
/// ```
pub struct NatsServer {
    port: u16,
    config: Builder,
    guard: Option<(Child, ChildStdin)>,
    pid: Option<u32>,
    dir: PathBuf,
}

/// How to start a [`NatsServer`]: plain by default.
#[derive(Clone, Debug, Default)]
pub struct Builder {
    jetstream: bool,
    max_payload: Option<usize>,
    user: Option<(String, String)>,
    extra: Option<String>,
    /// In a cluster: (server name, cluster port, every member's cluster port).
    cluster: Option<(String, u16, Vec<u16>)>,
}

impl Builder {
    /// Turns JetStream on, with its store in the server's temporary directory.
    pub fn jetstream(mut self) -> Self {
        self.jetstream = true;
        self
    }

    /// The largest message the server accepts (its default is 1 MiB).
    pub fn max_payload(mut self, bytes: usize) -> Self {
        self.max_payload = Some(bytes);
        self
    }

    /// Admits only clients that authenticate as `user` with `password`.
    pub fn user(mut self, user: &str, password: &str) -> Self {
        self.user = Some((user.to_string(), password.to_string()));
        self
    }

    /// Appends `text` to the server's configuration file: users with
    /// permissions, accounts, anything `nats-server -c` reads. Use it
    /// instead of [`user`](Self::user) where the text has its own
    /// `authorization` block (a file holds one).
    ///
    /// ```no_run
    /// let server = troupe_test_nats::NatsServer::builder()
    ///     .config(r#"authorization { users = [ { user: "a", password: "p",
    ///         permissions: { publish: "troupe.app.>", subscribe: "troupe.app.>" } } ] }"#)
    ///     .start()
    ///     .unwrap();
    /// ```
    pub fn config(mut self, text: &str) -> Self {
        self.extra = Some(text.to_string());
        self
    }

    /// Starts the server; an error if the binary is missing or the server
    /// does not listen within 10 s.
    pub fn start(self) -> std::io::Result<NatsServer> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let dir = std::env::temp_dir().join(format!("troupe-nats-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let mut server = NatsServer {
            port,
            config: self,
            guard: None,
            pid: None,
            dir,
        };
        server.launch()?;
        Ok(server)
    }

    /// Starts the server for a test, or returns `None` (after printing, once
    /// per process, how to install nats-server) where no binary is found;
    /// see the [crate docs](crate#where-nats-server-is-missing).
    ///
    /// # Panics
    ///
    /// If the binary is missing and `TROUPE_REQUIRE_NATS=1`, or if a binary
    /// was found but the server did not start.
    pub fn start_or_skip(self) -> Option<NatsServer> {
        if let Err(missing) = find_binary() {
            if required() {
                panic!("{missing} ({REQUIRE_VAR}=1: a missing nats-server is a failure)");
            }
            static SAID: Once = Once::new();
            SAID.call_once(|| {
                // Straight to the process's stderr, past the test harness's
                // capture, which would show the line only for a failure.
                let _ = writeln!(
                    std::io::stderr(),
                    "skipping the tests that need nats-server: {missing}"
                );
            });
            return None;
        }
        match self.start() {
            Ok(server) => Some(server),
            Err(e) => panic!("nats-server did not start: {e}"),
        }
    }
}

/// Whether `TROUPE_REQUIRE_NATS=1` is set: a missing nats-server is then a
/// failure, not a skip.
pub fn required() -> bool {
    std::env::var(REQUIRE_VAR).is_ok_and(|v| v == "1")
}

/// Whether a nats-server binary is found (see the [crate docs](crate)).
pub fn available() -> bool {
    find_binary().is_ok()
}

/// The binary to run, or why none was found (a message that says how to
/// install one).
fn find_binary() -> Result<PathBuf, String> {
    let chosen = [BINARY_VAR, "NATS_SERVER"]
        .iter()
        .find_map(|var| std::env::var_os(var).map(|path| (*var, PathBuf::from(path))));
    let looked = match chosen {
        Some((_, path)) if path.is_file() => return Ok(path),
        Some((var, path)) => format!("${var} = {}", path.display()),
        None => {
            let on_path = std::env::var_os("PATH")
                .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
                .unwrap_or_default()
                .into_iter()
                .map(|dir| dir.join("nats-server"))
                .find(|p| p.is_file());
            let debian = Path::new("/usr/sbin/nats-server");
            match on_path {
                Some(p) => return Ok(p),
                None if debian.is_file() => return Ok(debian.to_path_buf()),
                None => "PATH and /usr/sbin".to_string(),
            }
        }
    };
    Err(format!(
        "nats-server not found ({looked}); install it with `apt-get install nats-server` \
         (the cluster tests need JetStream, `nats-server -js`, 2.2 or later) or set \
         ${BINARY_VAR} to its path"
    ))
}

/// The server's configuration file.
fn config_text(config: &Builder, port: u16, dir: &Path) -> String {
    let mut text = format!("listen: 127.0.0.1:{port}\n");
    if config.jetstream {
        text.push_str(&format!(
            "jetstream {{ store_dir: \"{}\" }}\n",
            dir.join("js").display()
        ));
    }
    if let Some((name, port, routes)) = &config.cluster {
        let routes: Vec<String> = routes
            .iter()
            .map(|p| format!("\"nats-route://127.0.0.1:{p}\""))
            .collect();
        text.push_str(&format!(
            "server_name: \"{name}\"\ncluster {{ name: \"troupe-test\", listen: \"127.0.0.1:{port}\", routes: [{}] }}\n",
            routes.join(", ")
        ));
    }
    if let Some(n) = config.max_payload {
        text.push_str(&format!("max_payload: {n}\n"));
    }
    if let Some((u, p)) = &config.user {
        text.push_str(&format!(
            "authorization {{ user: \"{u}\", password: \"{p}\" }}\n"
        ));
    }
    if let Some(extra) = &config.extra {
        text.push_str(extra);
        text.push('\n');
    }
    text
}

/// Servers clustered on loopback, each with JetStream (so a stream may
/// have 3 replicas); each member is a [`NatsServer`] that can be killed and
/// restarted alone. Stopped when dropped.
///
/// ```no_run
/// let Some(mut cluster) = troupe_test_nats::NatsCluster::start_or_skip(3) else {
///     return;
/// };
/// println!("{}", cluster.url(0));
/// cluster.server(1).kill();
/// ```
pub struct NatsCluster {
    servers: Vec<NatsServer>,
}

impl NatsCluster {
    /// Starts `n` clustered JetStream servers; an error if one does not
    /// start. JetStream may still be electing its leaders when this
    /// returns: retry the first stream creation for a few seconds.
    pub fn start(n: usize) -> std::io::Result<NatsCluster> {
        let free = || -> std::io::Result<u16> {
            Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
        };
        let routes = (0..n)
            .map(|_| free())
            .collect::<std::io::Result<Vec<u16>>>()?;
        let mut servers = Vec::with_capacity(n);
        for (i, &port) in routes.iter().enumerate() {
            let mut b = Builder::default().jetstream();
            b.cluster = Some((format!("troupe-test-{i}"), port, routes.clone()));
            servers.push(b.start()?);
        }
        Ok(NatsCluster { servers })
    }

    /// Starts the cluster for a test, or `None` where nats-server is
    /// missing (see [`Builder::start_or_skip`]).
    pub fn start_or_skip(n: usize) -> Option<NatsCluster> {
        // Says (once) why it skips, or panics under TROUPE_REQUIRE_NATS=1.
        drop(NatsServer::builder().start_or_skip()?);
        match Self::start(n) {
            Ok(cluster) => Some(cluster),
            Err(e) => panic!("the nats-server cluster did not start: {e}"),
        }
    }

    /// Member `i`'s client URL.
    pub fn url(&self, i: usize) -> String {
        self.servers[i].url()
    }

    /// Every member's client URL, comma-separated.
    pub fn urls(&self) -> String {
        self.servers
            .iter()
            .map(|s| s.url())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Member `i`, to kill or restart.
    pub fn server(&mut self, i: usize) -> &mut NatsServer {
        &mut self.servers[i]
    }
}

impl NatsServer {
    /// A [`Builder`] for a server with JetStream, a user, or a max payload.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// Starts a plain server (no JetStream, no authentication, max payload
    /// 1 MiB); see [`Builder::start`].
    pub fn start() -> std::io::Result<NatsServer> {
        Builder::default().start()
    }

    /// Starts a plain server for a test, or `None` where nats-server is
    /// missing; see [`Builder::start_or_skip`].
    pub fn start_or_skip() -> Option<NatsServer> {
        Builder::default().start_or_skip()
    }

    fn launch(&mut self) -> std::io::Result<()> {
        let bin = find_binary()
            .map_err(|missing| std::io::Error::new(std::io::ErrorKind::NotFound, missing))?;
        let conf = self.dir.join("nats.conf");
        std::fs::write(&conf, config_text(&self.config, self.port, &self.dir))?;
        let script = format!(
            "\"{}\" -c \"{}\" >/dev/null 2>&1 & p=$!; echo $p; cat >/dev/null; kill $p 2>/dev/null; wait $p",
            bin.display(),
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
                        bin.display(),
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

    /// The server process's id while it runs (for a benchmark that
    /// counts the server's CPU time beside its own).
    pub fn pid(&self) -> Option<u32> {
        self.pid
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

    /// Starts it again on the same port, with the same settings and the
    /// same JetStream store (after [`stop`](Self::stop) or [`kill`](Self::kill)).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_names_every_setting() {
        let config = NatsServer::builder()
            .jetstream()
            .max_payload(4096)
            .user("app", "s3cret")
            .config("debug: false");
        let text = config_text(&config, 4333, Path::new("/tmp/x"));
        assert!(text.contains("listen: 127.0.0.1:4333\n"), "{text}");
        assert!(
            text.contains("jetstream { store_dir: \"/tmp/x/js\" }"),
            "{text}"
        );
        assert!(text.contains("max_payload: 4096\n"), "{text}");
        assert!(
            text.contains("user: \"app\", password: \"s3cret\""),
            "{text}"
        );
        assert!(text.ends_with("debug: false\n"), "{text}");
    }

    #[test]
    fn a_plain_config_only_listens() {
        let text = config_text(&Builder::default(), 1, Path::new("/x"));
        assert_eq!(text, "listen: 127.0.0.1:1\n");
    }

    #[test]
    fn starts_stops_and_restarts_on_the_same_port() {
        let Some(mut server) = NatsServer::builder().jetstream().start_or_skip() else {
            return;
        };
        let port = server.port();
        assert!(TcpStream::connect(("127.0.0.1", port)).is_ok());
        server.kill();
        assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
        server.restart().unwrap();
        assert_eq!(server.port(), port);
        assert!(TcpStream::connect(("127.0.0.1", port)).is_ok());
        let dir = server.dir.clone();
        drop(server);
        assert!(!dir.exists());
        assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
    }
}
