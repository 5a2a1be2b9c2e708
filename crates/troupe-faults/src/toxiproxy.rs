//! A client of toxiproxy's HTTP API (the server is `toxiproxy-server`,
//! from the Go module `github.com/Shopify/toxiproxy/v2`): proxies between
//! a node and a NATS server, and the toxics the nemesis adds to them.
//!
//! - a partition is a `timeout` toxic with timeout 0 on both directions:
//!   the proxy holds every byte and closes nothing, as a blackholed route
//!   does;
//! - latency is a `latency` toxic (delay and jitter, in ms) downstream and
//!   upstream;
//! - bandwidth is a `bandwidth` toxic (KB/s) on both directions;
//! - a reset is a `reset_peer` toxic: every connection is reset (RST) and
//!   new ones are reset at once, until the toxic is removed.
//!
//! The API is plain HTTP/1.1 on loopback; one request per connection.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// The API at `127.0.0.1:<port>`.
#[derive(Clone, Debug)]
pub struct Toxiproxy {
    port: u16,
}

impl Toxiproxy {
    /// The API of a toxiproxy-server listening on `port`.
    pub fn new(port: u16) -> Toxiproxy {
        Toxiproxy { port }
    }

    fn request(&self, method: &str, path: &str, body: &str) -> Result<String, String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(Duration::from_secs(5)))
            .map_err(|e| e.to_string())?;
        let req = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
        let mut out = String::new();
        s.read_to_string(&mut out).map_err(|e| e.to_string())?;
        let status: u16 = out
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| format!("no HTTP status in {out:?}"))?;
        if (200..300).contains(&status) {
            Ok(out)
        } else {
            Err(format!("{method} {path}: {status}: {out}"))
        }
    }

    /// Creates proxy `name` from `127.0.0.1:listen` to `127.0.0.1:upstream`.
    pub fn create(&self, name: &str, listen: u16, upstream: u16) -> Result<(), String> {
        let body = format!(
            r#"{{"name":"{name}","listen":"127.0.0.1:{listen}","upstream":"127.0.0.1:{upstream}","enabled":true}}"#
        );
        self.request("POST", "/proxies", &body).map(drop)
    }

    /// Points proxy `name` at `127.0.0.1:upstream` (toxiproxy restarts the
    /// proxy: its connections are closed, and the clients reconnect).
    pub fn set_upstream(&self, name: &str, upstream: u16) -> Result<(), String> {
        let body = format!(r#"{{"upstream":"127.0.0.1:{upstream}"}}"#);
        self.request("POST", &format!("/proxies/{name}"), &body)
            .map(drop)
    }

    /// Adds toxic `toxic` (`type`, attributes as JSON) on `stream`
    /// (`upstream` or `downstream`) of proxy `proxy`.
    pub fn add(
        &self,
        proxy: &str,
        toxic: &str,
        kind: &str,
        stream: &str,
        attributes: &str,
    ) -> Result<(), String> {
        let body = format!(
            r#"{{"name":"{toxic}","type":"{kind}","stream":"{stream}","toxicity":1.0,"attributes":{attributes}}}"#
        );
        self.request("POST", &format!("/proxies/{proxy}/toxics"), &body)
            .map(drop)
    }

    /// Removes toxic `toxic` of proxy `proxy`.
    pub fn remove(&self, proxy: &str, toxic: &str) -> Result<(), String> {
        self.request("DELETE", &format!("/proxies/{proxy}/toxics/{toxic}"), "")
            .map(drop)
    }

    /// Removes every toxic of every proxy (`POST /reset`).
    pub fn reset_all(&self) -> Result<(), String> {
        self.request("POST", "/reset", "").map(drop)
    }
}
