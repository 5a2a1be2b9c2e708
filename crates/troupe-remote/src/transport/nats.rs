//! The NATS transport: a [`Transport`] over one async-nats connection.
//!
//! With `nats_kv.rs` (its JetStream key-value buckets) and `permissions.rs`,
//! the only place in the workspace's libraries that names an async-nats
//! type (`.ci/layers.py` refuses it elsewhere in remote and cluster).
//! Invariants:
//! - The connection state flag and its watch are written only by the
//!   client's event callback: `Connected` sets them, `Disconnected` and
//!   `Closed` clear them, so asks in flight end at once rather than wait
//!   for their timeout across a reconnect.
//! - Reply inboxes live under `troupe.<cluster>._INBOX`, so one
//!   `troupe.<cluster>.>` permission fences a cluster.
//! - `max_payload` is the server's, read once at connect.
//! - Server errors that are permission violations are recorded in the
//!   connection's [`Violations`] (see [`permissions`]); `check_access`
//!   runs the echo probe that turns a forbidden subject into an error at
//!   connect.

use std::any::Any;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_nats::{Client, ConnectOptions, Event, RequestErrorKind};
use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};

use super::kv::{Bucket, BucketConfig, KvError};
use super::permissions::{self, Violations};
use super::{Message, RequestError, Subscription, Transport, TransportError};

type OptionsFn = Box<dyn FnOnce(ConnectOptions) -> ConnectOptions + Send>;

/// How to connect to a NATS server: the URL, credentials, and any other
/// async-nats option.
///
/// ```no_run
/// # use troupe_remote::{Node, transport::nats::NatsOptions};
/// let node = Node::builder("nats://127.0.0.1:4222", "shop-1").insecure()
///     .nats(|o: NatsOptions| o.connect_options(|c| c.subscription_capacity(1 << 16)))
///     .connect()?;
/// # Ok::<(), troupe_remote::NodeError>(())
/// ```
#[must_use]
pub struct NatsOptions {
    url: String,
    credentials_file: Option<PathBuf>,
    options: Vec<OptionsFn>,
}

impl NatsOptions {
    /// Options for the server at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        NatsOptions {
            url: url.into(),
            credentials_file: None,
            options: Vec::new(),
        }
    }

    /// The server's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Authenticates with a NATS credentials file (JWT + nkey seed).
    pub fn credentials_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.credentials_file = Some(path.into());
        self
    }

    /// Authenticates with a user and password.
    pub fn user_password(self, user: impl Into<String>, password: impl Into<String>) -> Self {
        let (user, password) = (user.into(), password.into());
        self.connect_options(move |o| o.user_and_password(user, password))
    }

    /// Authenticates with an nkey seed (`SU...`).
    pub fn nkey(self, seed: impl Into<String>) -> Self {
        let seed = seed.into();
        self.connect_options(move |o| o.nkey(seed))
    }

    /// Bounds each attempt to reach the server.
    pub fn connection_timeout(self, t: Duration) -> Self {
        self.connect_options(move |o| o.connection_timeout(t))
    }

    /// Any other async-nats connect option (token, user and password, TLS,
    /// reconnect policy...), applied after the node's own, in the order
    /// given.
    pub fn connect_options(
        mut self,
        f: impl FnOnce(ConnectOptions) -> ConnectOptions + Send + 'static,
    ) -> Self {
        self.options.push(Box::new(f));
        self
    }

    /// Connects as `node` of `cluster` (the client's name, and the prefix of
    /// its reply inboxes).
    pub async fn connect(self, cluster: &str, node: &str) -> Result<NatsTransport, TransportError> {
        let connected = Arc::new(AtomicBool::new(true));
        let (state_tx, state) = tokio::sync::watch::channel(true);
        let mut opts = match &self.credentials_file {
            Some(p) => ConnectOptions::with_credentials_file(p.clone())
                .await
                .map_err(|e| {
                    TransportError::Other(format!("credentials file {}: {e}", p.display()))
                })?,
            None => ConnectOptions::new(),
        };
        let flag = connected.clone();
        let name: Arc<str> = node.into();
        let violations = Arc::new(Violations::default());
        let noting = violations.clone();
        opts = opts
            .name(format!("troupe/{cluster}/{node}"))
            .custom_inbox_prefix(format!("troupe.{cluster}._INBOX"))
            .event_callback(move |event| {
                let (flag, name, state_tx) = (flag.clone(), name.clone(), state_tx.clone());
                if let Event::ServerError(e) = &event {
                    noting.note(&name, e);
                }
                async move {
                    match event {
                        Event::Connected => {
                            flag.store(true, Ordering::Release);
                            state_tx.send_replace(true);
                            tracing::info!(node = %name, "connected to the NATS server");
                        }
                        Event::Disconnected | Event::Closed => {
                            flag.store(false, Ordering::Release);
                            state_tx.send_replace(false);
                            tracing::warn!(node = %name, %event, "lost the NATS server");
                        }
                        other => tracing::debug!(node = %name, event = %other, "NATS event"),
                    }
                }
            });
        for f in self.options {
            opts = f(opts);
        }
        let client = opts
            .connect(self.url.as_str())
            .await
            .map_err(|e| TransportError::Other(format!("{}: {e}", self.url)))?;
        Ok(NatsTransport {
            max_payload: client.server_info().max_payload,
            client,
            connected,
            state,
            violations,
        })
    }
}

/// A [`Transport`] over a NATS connection.
pub struct NatsTransport {
    client: Client,
    connected: Arc<AtomicBool>,
    state: tokio::sync::watch::Receiver<bool>,
    max_payload: usize,
    violations: Arc<Violations>,
}

impl NatsTransport {
    /// The async-nats client, for traffic beside the actors (JetStream, raw
    /// subjects). Reach it from a node with
    /// `node.transport().as_any().downcast_ref::<NatsTransport>()`.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The permission violations the server reported on this connection
    /// (see [`permissions`]).
    pub fn violations(&self) -> &Arc<Violations> {
        &self.violations
    }
}

impl NatsTransport {
    /// One request and its whole reply (`request` keeps the payload).
    async fn send_request(
        &self,
        subject: &str,
        payload: Bytes,
        timeout: Duration,
    ) -> Result<async_nats::Message, RequestError> {
        let req = async_nats::Request::new()
            .payload(payload)
            .timeout(Some(timeout));
        self.client
            .send_request(async_nats::Subject::from(subject), req)
            .await
            .map_err(|e| match e.kind() {
                RequestErrorKind::TimedOut => RequestError::TimedOut,
                RequestErrorKind::NoResponders => RequestError::NoResponders,
                _ => RequestError::Disconnected,
            })
    }
}

impl Transport for NatsTransport {
    fn publish<'a>(
        &'a self,
        subject: &'a str,
        payload: Bytes,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        async move {
            self.client
                .publish(async_nats::Subject::from(subject), payload)
                .await
                .map_err(|e| TransportError::Other(e.to_string()))
        }
        .boxed()
    }

    fn subscribe<'a>(
        &'a self,
        subject: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        async move {
            let sub = self
                .client
                .subscribe(async_nats::Subject::from(subject))
                .await
                .map_err(|e| TransportError::Other(e.to_string()))?;
            let stream = sub.map(|m| Message {
                subject: m.subject.into_string(),
                reply: m.reply.map(|r| r.into_string()),
                payload: m.payload,
            });
            Ok(stream.boxed())
        }
        .boxed()
    }

    fn request<'a>(
        &'a self,
        subject: &'a str,
        payload: Bytes,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Bytes, RequestError>> {
        async move { Ok(self.send_request(subject, payload, timeout).await?.payload) }.boxed()
    }

    fn request_message<'a>(
        &'a self,
        subject: &'a str,
        payload: Bytes,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Message, RequestError>> {
        async move {
            let m = self.send_request(subject, payload, timeout).await?;
            Ok(Message {
                subject: m.subject.into_string(),
                reply: m.reply.map(|r| r.into_string()),
                payload: m.payload,
            })
        }
        .boxed()
    }

    fn key_value<'a>(&'a self, config: &'a BucketConfig) -> BoxFuture<'a, Result<Bucket, KvError>> {
        super::nats_kv::open(self.client.clone(), config).boxed()
    }

    fn flush(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        async move {
            self.client
                .flush()
                .await
                .map_err(|e| TransportError::Other(e.to_string()))
        }
        .boxed()
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        async move {
            let _ = self.client.drain().await;
        }
        .boxed()
    }

    fn check_access<'a>(
        &'a self,
        cluster: &'a str,
        inbox: &'a str,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        permissions::probe(&self.client, &self.violations, cluster, inbox).boxed()
    }

    fn max_payload(&self) -> usize {
        self.max_payload
    }

    fn is_connected(&self) -> bool {
        self.connected.load(Ordering::Acquire)
    }

    fn watch_connection(&self) -> tokio::sync::watch::Receiver<bool> {
        self.state.clone()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
