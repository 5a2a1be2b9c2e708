//! The metrics endpoint: a small HTTP server (tiny_http) on its own thread
//! answering `GET /metrics` with a `prometheus-client` registry (by default
//! one holding the system's [`MetricsCollector`](super::MetricsCollector),
//! the same text as [`SystemHandle::metrics_text`]) in the Prometheus text
//! format (`text/plain; version=0.0.4`), anything else with 404.
//!
//! Invariants: the server thread never touches a worker or a mailbox; a
//! scrape encodes the registry, whose collector reads the metrics (see the
//! parent module).
//! Dropping the [`MetricsServer`] (or calling [`MetricsServer::stop`])
//! unblocks and joins the thread, freeing the port.

use super::prometheus::encode_registry;
use crate::system::SystemHandle;
use prometheus_client::registry::Registry;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

/// A running metrics endpoint; stops when dropped.
pub struct MetricsServer {
    server: Arc<tiny_http::Server>,
    addr: SocketAddr,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Serves `registry` at `http://{addr}/metrics` in the Prometheus text
    /// format, from a thread of its own, until the returned server is
    /// dropped: one endpoint for a user's own metrics and Troupe's (register
    /// [`SystemHandle::metrics_collector`] in it).
    ///
    /// ```
    /// use troupe::observability::{prometheus_client::registry::Registry, MetricsServer};
    /// let system = troupe::ActorSystem::builder().threads(1).metrics(true).build();
    /// let mut registry = Registry::default();
    /// registry.register_collector(Box::new(system.metrics_collector()));
    /// let server = MetricsServer::serve(registry, "127.0.0.1:0").unwrap();
    /// assert_ne!(server.addr().port(), 0);
    /// ```
    pub fn serve(registry: Registry, addr: &str) -> io::Result<MetricsServer> {
        let server = tiny_http::Server::http(addr).map_err(io::Error::other)?;
        let addr = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| io::Error::other("metrics server bound to a non-IP address"))?;
        let server = Arc::new(server);
        let srv = server.clone();
        let thread = std::thread::Builder::new()
            .name("troupe-metrics".into())
            .spawn(move || {
                // The last scrape's size: the next one is sized to it.
                let mut last_len = 0;
                for request in srv.incoming_requests() {
                    let path = request.url().split('?').next().unwrap_or("");
                    let response = if path == "/metrics" || path == "/" {
                        let header = tiny_http::Header::from_bytes(
                            &b"Content-Type"[..],
                            prometheus_client::encoding::prometheus_text::CONTENT_TYPE.as_bytes(),
                        )
                        .expect("a valid static header");
                        let text = encode_registry(&registry, last_len + last_len / 8);
                        last_len = text.len();
                        tiny_http::Response::from_string(text).with_header(header)
                    } else {
                        tiny_http::Response::from_string("not found: try /metrics\n")
                            .with_status_code(404)
                    };
                    if let Err(e) = request.respond(response) {
                        tracing::debug!(%e, "metrics scrape: could not respond");
                    }
                }
            })?;
        Ok(MetricsServer {
            server,
            addr,
            thread: Some(thread),
        })
    }

    /// The address it listens on (useful after binding port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops serving and joins the server thread.
    pub fn stop(mut self) {
        self.shut();
    }

    fn shut(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.shut();
    }
}

impl std::fmt::Debug for MetricsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsServer")
            .field("addr", &self.addr)
            .finish()
    }
}

impl SystemHandle {
    /// Serves this system's metrics at `http://{addr}/metrics` in the
    /// Prometheus text format, from a thread of its own, until the returned
    /// server is dropped. Pass port 0 to pick a free port
    /// ([`MetricsServer::addr`] tells which).
    ///
    /// ```
    /// let system = troupe::ActorSystem::builder().threads(1).metrics(true).build();
    /// let server = system.serve_metrics("127.0.0.1:0").unwrap();
    /// assert_ne!(server.addr().port(), 0);
    /// ```
    pub fn serve_metrics(&self, addr: &str) -> io::Result<MetricsServer> {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(self.metrics_collector()));
        MetricsServer::serve(registry, addr)
    }
}
