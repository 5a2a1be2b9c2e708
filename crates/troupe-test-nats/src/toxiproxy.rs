//! A `toxiproxy-server` child process: a real TCP fault proxy to put
//! between one node and its nats-server, so a test can cut that node off
//! (a partition its peers see as silence, no socket closed) and heal it.
//!
//! [`Toxiproxy::start_or_skip`] starts the server on a free loopback port
//! (its HTTP API) under the same `sh` guard as [`NatsServer`](crate::NatsServer),
//! so it never outlives the test. [`Toxiproxy::proxy`] opens a proxy to an
//! upstream address and returns a [`Proxy`], whose [`cut`](Proxy::cut)
//! adds a `timeout` toxic (timeout 0: nothing gets through either way and
//! the connection stays open) on both streams and [`heal`](Proxy::heal)
//! removes them.
//!
//! Where the binary is missing the test is skipped with one line on
//! stderr; with `TROUPE_REQUIRE_TOXIPROXY=1` (CI sets it once its install
//! step runs) a missing binary panics instead. The binary is
//! `$TROUPE_TOXIPROXY_SERVER`, else `toxiproxy-server` on `PATH`. Install:
//! `go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.5.0`, then copy
//! `$(go env GOPATH)/bin/server` to a `toxiproxy-server` on `PATH`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Once;
use std::time::{Duration, Instant};

/// The variable that turns a skip for a missing toxiproxy-server into a failure.
pub const REQUIRE_VAR: &str = "TROUPE_REQUIRE_TOXIPROXY";

/// The variable that names the toxiproxy-server binary, ahead of `PATH`.
pub const BINARY_VAR: &str = "TROUPE_TOXIPROXY_SERVER";

/// A running `toxiproxy-server`; stopped when dropped.
pub struct Toxiproxy {
    port: u16,
    guard: Option<(Child, ChildStdin)>,
}

/// One proxy of a [`Toxiproxy`]: listens on [`port`](Self::port) and
/// forwards to its upstream.
pub struct Proxy {
    api: u16,
    name: String,
    port: u16,
}

fn find_binary() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os(BINARY_VAR).map(PathBuf::from) {
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("${BINARY_VAR} = {} is not a file", p.display()))
        };
    }
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|dir| dir.join("toxiproxy-server"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            format!(
                "toxiproxy-server not found on PATH; install it with `go install \
                 github.com/Shopify/toxiproxy/v2/cmd/server@v2.5.0` and copy the `server` \
                 binary to `toxiproxy-server` on PATH, or set ${BINARY_VAR}"
            )
        })
}

/// Whether `TROUPE_REQUIRE_TOXIPROXY=1` is set.
pub fn required() -> bool {
    std::env::var(REQUIRE_VAR).is_ok_and(|v| v == "1")
}

/// One HTTP/1.1 request to the API on `port`; the status and the body.
fn http(port: u16, method: &str, path: &str, body: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    let status = out
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = out.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    Ok((status, body.to_string()))
}

fn failed(what: &str, status: u16, body: &str) -> std::io::Error {
    std::io::Error::other(format!("toxiproxy {what}: HTTP {status}: {body}"))
}

impl Toxiproxy {
    /// Starts the server, or `None` (one line on stderr) where the binary
    /// is missing.
    ///
    /// # Panics
    ///
    /// If the binary is missing and `TROUPE_REQUIRE_TOXIPROXY=1`, or if it
    /// was found but did not start.
    pub fn start_or_skip() -> Option<Toxiproxy> {
        let bin = match find_binary() {
            Ok(b) => b,
            Err(missing) => {
                if required() {
                    panic!("{missing} ({REQUIRE_VAR}=1: a missing toxiproxy-server is a failure)");
                }
                static SAID: Once = Once::new();
                SAID.call_once(|| {
                    let _ = writeln!(
                        std::io::stderr(),
                        "skipping the tests that need toxiproxy-server: {missing}"
                    );
                });
                return None;
            }
        };
        match Self::start(bin) {
            Ok(t) => Some(t),
            Err(e) => panic!("toxiproxy-server did not start: {e}"),
        }
    }

    fn start(bin: PathBuf) -> std::io::Result<Toxiproxy> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let script = format!(
            "\"{}\" -host 127.0.0.1 -port {port} >/dev/null 2>&1 & p=$!; echo $p; cat >/dev/null; kill $p 2>/dev/null; wait $p",
            bin.display()
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
        let t = Toxiproxy {
            port,
            guard: Some((child, stdin)),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !matches!(http(port, "GET", "/version", ""), Ok((200, _))) {
            if Instant::now() > deadline {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("toxiproxy-server did not answer on port {port} within 10 s"),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(t)
    }

    /// A proxy named `name` from a free loopback port to `upstream`
    /// (`host:port`).
    pub fn proxy(&self, name: &str, upstream: &str) -> std::io::Result<Proxy> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let body = format!(
            r#"{{"name":"{name}","listen":"127.0.0.1:{port}","upstream":"{upstream}","enabled":true}}"#
        );
        let (status, reply) = http(self.port, "POST", "/proxies", &body)?;
        if status != 201 {
            return Err(failed("create proxy", status, &reply));
        }
        Ok(Proxy {
            api: self.port,
            name: name.to_string(),
            port,
        })
    }
}

impl Proxy {
    /// The port the proxy listens on (connect here instead of upstream).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Cuts the link both ways: nothing gets through, no socket closes.
    pub fn cut(&self) -> std::io::Result<()> {
        for stream in ["upstream", "downstream"] {
            let body = format!(
                r#"{{"name":"cut_{stream}","type":"timeout","stream":"{stream}","toxicity":1.0,"attributes":{{"timeout":0}}}}"#
            );
            let path = format!("/proxies/{}/toxics", self.name);
            let (status, reply) = http(self.api, "POST", &path, &body)?;
            if status != 200 {
                return Err(failed("add toxic", status, &reply));
            }
        }
        Ok(())
    }

    /// Heals a [`cut`](Self::cut).
    pub fn heal(&self) -> std::io::Result<()> {
        for stream in ["upstream", "downstream"] {
            let path = format!("/proxies/{}/toxics/cut_{stream}", self.name);
            let (status, reply) = http(self.api, "DELETE", &path, "")?;
            if status != 204 {
                return Err(failed("remove toxic", status, &reply));
            }
        }
        Ok(())
    }
}

impl Drop for Toxiproxy {
    fn drop(&mut self) {
        if let Some((mut child, stdin)) = self.guard.take() {
            drop(stdin);
            let _ = child.wait();
        }
    }
}
