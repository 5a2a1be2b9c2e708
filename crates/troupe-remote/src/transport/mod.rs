//! The transport seam: the one layer that knows how bytes travel.
//!
//! The protocol above (`protocol/`: envelope, link/ack
//! accounting, the ask server, the inbox loop) and the API above it
//! ([`Node`](crate::Node), [`RemoteRef`](crate::RemoteRef), `expose`) speak
//! only of [`Transport`]: subjects, publish, subscribe, request/reply. Two
//! transports implement it:
//!
//! - [`nats`]: a connection to a NATS server (async-nats). The only module
//!   of the crate that names an async-nats type.
//! - [`memory`]: a process-local subject router, with NATS's wildcards and
//!   request/reply, for tests of the protocol without a server.
//!
//! # What a transport promises
//! - **Subjects** are NATS-style: dot-separated tokens; a subscription's
//!   pattern may hold `*` (exactly one token) and `>` (one or more tokens,
//!   last only).
//! - **Order**: the messages one connection publishes to one subject reach
//!   each subscriber in publish order (the link protocol numbers tells and
//!   relies on it to tell a gap from a reordering).
//! - **At most once**: a message may be lost (no subscriber, a dropped
//!   connection); it is never duplicated. The link protocol accounts for
//!   loss; the transport does not retry.
//! - **Request/reply**: [`Transport::request`] publishes with a fresh reply
//!   subject and waits for the first message there; no subscriber to the
//!   subject at all is [`RequestError::NoResponders`], at once.
//! - **Key-value buckets** ([`kv`]): revisioned keys with conditional
//!   writes, a max age and a watch ([`Transport::key_value`]), the store
//!   of the cluster's registry.
//! - **Connection state** is one flag, read on every tell
//!   ([`Transport::is_connected`]) and watched by asks in flight
//!   ([`Transport::watch_connection`]), which end with `Disconnected` when
//!   it drops.
//!
//! Futures returned here borrow the transport and are `Send`; they run on
//! the node's tokio runtime.

use std::any::Any;
use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::FutureExt;

pub mod kv;
pub mod memory;
mod memory_kv;
pub mod nats;
mod nats_kv;
pub mod permissions;

use kv::{Bucket, BucketConfig, KvError};
use permissions::Forbidden;

/// A message as a subscriber receives it.
#[derive(Clone, Debug)]
pub struct Message {
    /// The subject it was published to.
    pub subject: String,
    /// Where a reply goes, for a request.
    pub reply: Option<String>,
    /// The bytes.
    pub payload: Bytes,
}

/// The messages of one subscription, in arrival order; ends when the
/// subscription or the connection does.
pub type Subscription = BoxStream<'static, Message>;

/// Why a transport operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransportError {
    /// Not connected (or closed): nothing was sent.
    Disconnected,
    /// The payload is above the transport's [`Transport::max_payload`].
    TooLarge(usize),
    /// The server's permissions forbid this connection a subject.
    Forbidden(Forbidden),
    /// Anything else the transport reports, in its words.
    Other(String),
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportError::Disconnected => write!(f, "the transport is not connected"),
            TransportError::TooLarge(n) => {
                write!(f, "a payload of {n} bytes is above the transport's limit")
            }
            TransportError::Forbidden(forbidden) => write!(f, "{forbidden}"),
            TransportError::Other(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for TransportError {}

/// Why a request got no reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestError {
    /// No reply within the timeout.
    TimedOut,
    /// Nobody subscribes to the subject.
    NoResponders,
    /// The connection dropped or refused the request.
    Disconnected,
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestError::TimedOut => write!(f, "no reply in time"),
            RequestError::NoResponders => write!(f, "nobody serves that subject"),
            RequestError::Disconnected => write!(f, "the connection is down"),
        }
    }
}

impl std::error::Error for RequestError {}

/// A connection to a subject-based message bus; see the module docs for the
/// promises an implementation keeps.
pub trait Transport: Send + Sync + 'static {
    /// Publishes `payload` to `subject`.
    fn publish<'a>(
        &'a self,
        subject: &'a str,
        payload: Bytes,
    ) -> BoxFuture<'a, Result<(), TransportError>>;

    /// Subscribes to `subject` (a pattern: `*` and `>` as in NATS). Once
    /// this returns, messages published by any connection are delivered
    /// (after a [`flush`](Self::flush) for a remote server).
    fn subscribe<'a>(
        &'a self,
        subject: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>>;

    /// Publishes `payload` to `subject` with a reply subject of its own and
    /// waits (at most `timeout`) for the first reply.
    fn request<'a>(
        &'a self,
        subject: &'a str,
        payload: Bytes,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Bytes, RequestError>>;

    /// As [`request`](Self::request), but the whole reply: its subject
    /// (the request's reply inbox, over which a sealed reply is sealed)
    /// and payload.
    fn request_message<'a>(
        &'a self,
        subject: &'a str,
        payload: Bytes,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Message, RequestError>>;

    /// Opens the key-value bucket `config.name`, creating it if it is
    /// missing (see [`kv`]). By default the transport has none.
    fn key_value<'a>(&'a self, config: &'a BucketConfig) -> BoxFuture<'a, Result<Bucket, KvError>> {
        let _ = config;
        futures::future::ready(Err(KvError::Unsupported)).boxed()
    }

    /// Waits until what this connection published has left it (a server
    /// holds it).
    fn flush(&self) -> BoxFuture<'_, Result<(), TransportError>>;

    /// Sends what is buffered, ends the subscriptions and closes.
    fn close(&self) -> BoxFuture<'_, ()>;

    /// Checks, before a node of `cluster` serves, that this connection may
    /// subscribe to and publish on its `inbox` and on reply subjects (over
    /// NATS: the echo probe of [`permissions`]); a forbidden subject is
    /// [`TransportError::Forbidden`]. By default there is nothing to check.
    fn check_access<'a>(
        &'a self,
        cluster: &'a str,
        inbox: &'a str,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        let _ = (cluster, inbox);
        futures::future::ready(Ok(())).boxed()
    }

    /// The largest payload one message may carry.
    fn max_payload(&self) -> usize;

    /// Whether the connection is up now (a cheap read: it is made on every
    /// tell).
    fn is_connected(&self) -> bool;

    /// The connection state, watched: `false` while it is down.
    fn watch_connection(&self) -> tokio::sync::watch::Receiver<bool>;

    /// The transport as `Any`, so code that knows which transport it made
    /// can reach its own API (e.g. [`nats::NatsTransport::client`]).
    fn as_any(&self) -> &dyn Any;
}

/// A shared transport is a transport: a test can keep a handle on the
/// connection it gives a node (to take it down, say).
impl<T: Transport> Transport for std::sync::Arc<T> {
    fn publish<'a>(
        &'a self,
        subject: &'a str,
        payload: Bytes,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        (**self).publish(subject, payload)
    }
    fn subscribe<'a>(
        &'a self,
        subject: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        (**self).subscribe(subject)
    }
    fn request<'a>(
        &'a self,
        subject: &'a str,
        payload: Bytes,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Bytes, RequestError>> {
        (**self).request(subject, payload, timeout)
    }
    fn request_message<'a>(
        &'a self,
        subject: &'a str,
        payload: Bytes,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Message, RequestError>> {
        (**self).request_message(subject, payload, timeout)
    }
    fn key_value<'a>(&'a self, config: &'a BucketConfig) -> BoxFuture<'a, Result<Bucket, KvError>> {
        (**self).key_value(config)
    }
    fn flush(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        (**self).flush()
    }
    fn close(&self) -> BoxFuture<'_, ()> {
        (**self).close()
    }
    fn check_access<'a>(
        &'a self,
        cluster: &'a str,
        inbox: &'a str,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        (**self).check_access(cluster, inbox)
    }
    fn max_payload(&self) -> usize {
        (**self).max_payload()
    }
    fn is_connected(&self) -> bool {
        (**self).is_connected()
    }
    fn watch_connection(&self) -> tokio::sync::watch::Receiver<bool> {
        (**self).watch_connection()
    }
    fn as_any(&self) -> &dyn Any {
        (**self).as_any()
    }
}

/// Whether `subject` matches the subscription `pattern` (NATS rules: `*`
/// matches one token, a last `>` one or more).
pub fn subject_matches(pattern: &str, subject: &str) -> bool {
    let mut s = subject.split('.');
    let mut p = pattern.split('.');
    loop {
        match (p.next(), s.next()) {
            (Some(">"), Some(_)) => return p.next().is_none(),
            (Some("*"), Some(_)) => {}
            (Some(a), Some(b)) if a == b => {}
            (None, None) => return true,
            _ => return false,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::subject_matches;

    /// A current-thread runtime for the transports' unit tests.
    pub(crate) fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn wildcards_match_as_in_nats() {
        assert!(subject_matches("a.b.c", "a.b.c"));
        assert!(!subject_matches("a.b.c", "a.b"));
        assert!(!subject_matches("a.b", "a.b.c"));
        assert!(subject_matches("a.*.c", "a.x.c"));
        assert!(!subject_matches("a.*.c", "a.x.y.c"));
        assert!(subject_matches("a.>", "a.b"));
        assert!(subject_matches("a.>", "a.b.c.d"));
        assert!(!subject_matches("a.>", "a"));
        assert!(subject_matches("*.>", "x.y"));
        assert!(!subject_matches("a.b", "a.c"));
    }
}
