//! An in-memory transport: a process-local subject router with NATS's
//! wildcards and request/reply, real enough to run the whole protocol
//! (nodes, links and acks, asks) in one process without a server.
//!
//! ```
//! use std::time::Duration;
//! use troupe_remote::transport::memory::MemoryNetwork;
//! use troupe_remote::Node;
//!
//! let net = MemoryNetwork::new();
//! let a = Node::builder_on(net.connect(), "a").insecure().connect()?;
//! let b = Node::builder_on(net.connect(), "b").insecure().connect()?;
//! assert!(a.ping("b", Duration::from_secs(1)).is_ok());
//! # drop(b);
//! # Ok::<(), troupe_remote::NodeError>(())
//! ```
//!
//! Invariants:
//! - `publish` hands the message to every matching subscription before it
//!   returns, under the router's lock, so one connection's messages to one
//!   subject reach each subscriber in order, and a subscription made
//!   before a publish returns sees it.
//! - A subscription whose stream was dropped is removed at the next
//!   publish; closing a connection removes its subscriptions, which ends
//!   their streams.
//! - [`MemoryNetwork::drop_when`] decides, per message, whether it is lost
//!   (counted as published, as NATS would): the tests' way to lose tells
//!   in transit.
//! - [`MemoryNetwork::partition`] splits the connections into sides: a
//!   message reaches only subscriptions on its publisher's side (a request
//!   across finds no responders), while the key-value buckets stay shared
//!   by all: the tests' way to make two groups of nodes that cannot hear
//!   each other but both reach the store.
//! - Key-value buckets live in the network, shared by its connections,
//!   and outlive them (see `memory_kv.rs`).
//! - A connection taken down with [`MemoryTransport::set_connected`]
//!   refuses to publish and request, and receives nothing, until it is up
//!   again; its subscriptions survive, as NATS's do across a reconnect.

use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use parking_lot::Mutex;
use tokio::sync::mpsc;

use super::kv::{Bucket, BucketConfig, KvError};
use super::{subject_matches, Message, RequestError, Subscription, Transport, TransportError};

/// The default largest payload, as a NATS server's default (1 MiB).
pub const DEFAULT_MAX_PAYLOAD: usize = 1024 * 1024;

type Fault = Box<dyn FnMut(&str, &[u8]) -> bool + Send>;

struct Sub {
    conn: u64,
    pattern: String,
    tx: mpsc::UnboundedSender<Message>,
}

struct Router {
    subs: Mutex<Vec<Sub>>,
    /// Connections now down: they receive nothing.
    down: Mutex<Vec<u64>>,
    next: AtomicU64,
    max_payload: usize,
    fault: Mutex<Option<Fault>>,
    /// The side of each connection in a partition (none: one network).
    sides: Mutex<HashMap<u64, usize>>,
    /// The key-value buckets, by name (see `memory_kv.rs`).
    buckets: Mutex<HashMap<String, Bucket>>,
}

impl Router {
    /// Delivers to every matching subscription; the number reached.
    fn route(&self, from: u64, subject: &str, reply: Option<&str>, payload: &Bytes) -> usize {
        if let Some(f) = self.fault.lock().as_mut() {
            if f(subject, payload) {
                // Lost in transit; the publisher cannot tell.
                return usize::MAX;
            }
        }
        let down = self.down.lock().clone();
        let sides = self.sides.lock().clone();
        let side = sides.get(&from).copied();
        let apart = |conn: u64| match (side, sides.get(&conn)) {
            (Some(a), Some(b)) => a != *b,
            _ => false,
        };
        let mut subs = self.subs.lock();
        subs.retain(|s| !s.tx.is_closed());
        let mut reached = 0;
        for s in subs.iter() {
            if subject_matches(&s.pattern, subject) && !down.contains(&s.conn) && !apart(s.conn) {
                let msg = Message {
                    subject: subject.to_string(),
                    reply: reply.map(str::to_string),
                    payload: payload.clone(),
                };
                if s.tx.send(msg).is_ok() {
                    reached += 1;
                }
            }
        }
        reached
    }
}

/// A process-local message bus; [`connect`](Self::connect) gives a
/// connection to it. Clones share the bus.
#[derive(Clone)]
pub struct MemoryNetwork {
    router: Arc<Router>,
}

impl Default for MemoryNetwork {
    fn default() -> Self {
        MemoryNetwork::with_max_payload(DEFAULT_MAX_PAYLOAD)
    }
}

impl MemoryNetwork {
    /// A bus whose messages may hold up to [`DEFAULT_MAX_PAYLOAD`] bytes.
    pub fn new() -> Self {
        MemoryNetwork::default()
    }

    /// A bus with another payload limit.
    pub fn with_max_payload(max_payload: usize) -> Self {
        MemoryNetwork {
            router: Arc::new(Router {
                subs: Mutex::new(Vec::new()),
                down: Mutex::new(Vec::new()),
                next: AtomicU64::new(1),
                max_payload,
                fault: Mutex::new(None),
                sides: Mutex::new(HashMap::new()),
                buckets: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// A new connection to the bus.
    pub fn connect(&self) -> MemoryTransport {
        let (state_tx, state) = tokio::sync::watch::channel(true);
        MemoryTransport {
            router: self.router.clone(),
            conn: self.router.next.fetch_add(1, Ordering::Relaxed),
            connected: AtomicBool::new(true),
            state_tx,
            state,
            inbox: AtomicU64::new(0),
        }
    }

    /// Loses every message (publish or request) for which `lose(subject,
    /// payload)` says `true`, until [`heal`](Self::heal).
    pub fn drop_when(&self, lose: impl FnMut(&str, &[u8]) -> bool + Send + 'static) {
        *self.router.fault.lock() = Some(Box::new(lose));
    }

    /// Loses nothing from now on.
    pub fn heal(&self) {
        *self.router.fault.lock() = None;
    }

    /// Splits the connections ([`MemoryTransport::id`]) into `sides`: from
    /// now on a message reaches only subscriptions on its publisher's
    /// side (connections in no side reach and are reached by all), and the
    /// key-value buckets stay shared, until
    /// [`heal_partition`](Self::heal_partition).
    pub fn partition(&self, sides: &[&[u64]]) {
        let mut map = self.router.sides.lock();
        map.clear();
        for (i, side) in sides.iter().enumerate() {
            for &conn in *side {
                map.insert(conn, i);
            }
        }
    }

    /// Ends the partition: every connection reaches every other again.
    pub fn heal_partition(&self) {
        self.router.sides.lock().clear();
    }
}

/// One connection to a [`MemoryNetwork`].
pub struct MemoryTransport {
    router: Arc<Router>,
    conn: u64,
    connected: AtomicBool,
    state_tx: tokio::sync::watch::Sender<bool>,
    state: tokio::sync::watch::Receiver<bool>,
    inbox: AtomicU64,
}

impl MemoryTransport {
    /// This connection's number, for [`MemoryNetwork::partition`].
    pub fn id(&self) -> u64 {
        self.conn
    }

    /// Takes the connection down (`false`) or up again, as a server outage
    /// would: while down it sends and receives nothing.
    pub fn set_connected(&self, up: bool) {
        self.connected.store(up, Ordering::Release);
        {
            let mut down = self.router.down.lock();
            down.retain(|&c| c != self.conn);
            if !up {
                down.push(self.conn);
            }
        }
        self.state_tx.send_replace(up);
    }

    fn sub(&self, pattern: &str) -> mpsc::UnboundedReceiver<Message> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.router.subs.lock().push(Sub {
            conn: self.conn,
            pattern: pattern.to_string(),
            tx,
        });
        rx
    }
}

fn stream_of(mut rx: mpsc::UnboundedReceiver<Message>) -> Subscription {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed()
}

impl Transport for MemoryTransport {
    fn publish<'a>(
        &'a self,
        subject: &'a str,
        payload: Bytes,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        let r = if !self.is_connected() {
            Err(TransportError::Disconnected)
        } else if payload.len() > self.router.max_payload {
            Err(TransportError::TooLarge(payload.len()))
        } else {
            self.router.route(self.conn, subject, None, &payload);
            Ok(())
        };
        futures::future::ready(r).boxed()
    }

    fn subscribe<'a>(
        &'a self,
        subject: &'a str,
    ) -> BoxFuture<'a, Result<Subscription, TransportError>> {
        let r = if self.is_connected() {
            Ok(stream_of(self.sub(subject)))
        } else {
            Err(TransportError::Disconnected)
        };
        futures::future::ready(r).boxed()
    }

    fn request<'a>(
        &'a self,
        subject: &'a str,
        payload: Bytes,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Bytes, RequestError>> {
        self.request_message(subject, payload, timeout)
            .map(|r| r.map(|m| m.payload))
            .boxed()
    }

    fn request_message<'a>(
        &'a self,
        subject: &'a str,
        payload: Bytes,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Message, RequestError>> {
        async move {
            if !self.is_connected() {
                return Err(RequestError::Disconnected);
            }
            let n = self.inbox.fetch_add(1, Ordering::Relaxed);
            let inbox = format!("_INBOX.mem.{}.{n}", self.conn);
            let mut rx = self.sub(&inbox);
            if self
                .router
                .route(self.conn, subject, Some(&inbox), &payload)
                == 0
            {
                return Err(RequestError::NoResponders);
            }
            match tokio::time::timeout(timeout, rx.recv()).await {
                Ok(Some(m)) => Ok(m),
                Ok(None) => Err(RequestError::Disconnected),
                Err(_) => Err(RequestError::TimedOut),
            }
        }
        .boxed()
    }

    fn key_value<'a>(&'a self, config: &'a BucketConfig) -> BoxFuture<'a, Result<Bucket, KvError>> {
        let r = if self.is_connected() {
            let mut buckets = self.router.buckets.lock();
            let bucket = buckets
                .entry(config.name.clone())
                .or_insert_with(|| super::memory_kv::bucket(config.max_age));
            Ok(bucket.clone())
        } else {
            Err(KvError::Transport(TransportError::Disconnected))
        };
        futures::future::ready(r).boxed()
    }

    fn flush(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        let r = if self.is_connected() {
            Ok(())
        } else {
            Err(TransportError::Disconnected)
        };
        futures::future::ready(r).boxed()
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        self.connected.store(false, Ordering::Release);
        self.state_tx.send_replace(false);
        self.router.subs.lock().retain(|s| s.conn != self.conn);
        futures::future::ready(()).boxed()
    }

    fn max_payload(&self) -> usize {
        self.router.max_payload
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

impl Drop for MemoryTransport {
    fn drop(&mut self) {
        self.router.subs.lock().retain(|s| s.conn != self.conn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::tests::rt;
    use futures::StreamExt;

    #[test]
    fn messages_reach_matching_subscribers_in_order() {
        rt().block_on(async {
            let net = MemoryNetwork::new();
            let (a, b) = (net.connect(), net.connect());
            let mut exact = b.subscribe("t.x.node.b").await.unwrap();
            let mut wild = b.subscribe("t.*.node.>").await.unwrap();
            let mut other = b.subscribe("t.y.>").await.unwrap();
            for i in 0..3u8 {
                a.publish("t.x.node.b", Bytes::from(vec![i])).await.unwrap();
            }
            for i in 0..3u8 {
                assert_eq!(exact.next().await.unwrap().payload[..], [i]);
                assert_eq!(wild.next().await.unwrap().payload[..], [i]);
            }
            a.publish("t.y.z", Bytes::new()).await.unwrap();
            assert_eq!(other.next().await.unwrap().subject, "t.y.z");
        });
    }

    #[test]
    fn a_partition_keeps_each_side_to_itself_until_healed() {
        rt().block_on(async {
            let net = MemoryNetwork::new();
            let (a, b, c) = (net.connect(), net.connect(), net.connect());
            let mut on_b = b.subscribe("t.>").await.unwrap();
            let mut on_c = c.subscribe("t.>").await.unwrap();
            let _svc = b.subscribe("svc").await.unwrap();
            net.partition(&[&[a.id(), b.id()], &[c.id()]]);
            a.publish("t.1", Bytes::from_static(b"1")).await.unwrap();
            c.publish("t.2", Bytes::from_static(b"2")).await.unwrap();
            assert_eq!(on_b.next().await.unwrap().subject, "t.1");
            assert_eq!(on_c.next().await.unwrap().subject, "t.2");
            let t = Duration::from_millis(50);
            let across = c.request("svc", Bytes::new(), t).await;
            assert_eq!(
                across,
                Err(RequestError::NoResponders),
                "b is on the other side"
            );
            net.heal_partition();
            a.publish("t.3", Bytes::from_static(b"3")).await.unwrap();
            assert_eq!(on_b.next().await.unwrap().subject, "t.3");
            assert_eq!(on_c.next().await.unwrap().subject, "t.3");
        });
    }

    #[test]
    fn a_request_gets_its_reply_or_says_why_not() {
        rt().block_on(async {
            let net = MemoryNetwork::new();
            let (a, b) = (net.connect(), net.connect());
            let t = Duration::from_secs(5);
            let none = a.request("svc", Bytes::new(), t).await;
            assert_eq!(none, Err(RequestError::NoResponders));
            let mut sub = b.subscribe("svc").await.unwrap();
            let server = async {
                let m = sub.next().await.unwrap();
                let reply = m.reply.unwrap();
                b.publish(&reply, Bytes::from_static(b"pong"))
                    .await
                    .unwrap();
                sub
            };
            let (r, mut sub) = futures::join!(a.request("svc", Bytes::new(), t), server);
            assert_eq!(r.unwrap(), Bytes::from_static(b"pong"));
            let slow = a.request("svc", Bytes::new(), Duration::from_millis(10));
            assert_eq!(slow.await, Err(RequestError::TimedOut));
            assert!(sub.next().await.unwrap().reply.is_some());
        });
    }

    #[test]
    fn faults_lose_messages_and_a_down_connection_refuses() {
        rt().block_on(async {
            let net = MemoryNetwork::with_max_payload(4);
            let (a, b) = (net.connect(), net.connect());
            let mut sub = b.subscribe("s").await.unwrap();
            net.drop_when(|_, p| p == b"x");
            a.publish("s", Bytes::from_static(b"x")).await.unwrap();
            a.publish("s", Bytes::from_static(b"y")).await.unwrap();
            assert_eq!(sub.next().await.unwrap().payload[..], *b"y");
            net.heal();
            let big = a.publish("s", Bytes::from_static(b"12345")).await;
            assert_eq!(big, Err(TransportError::TooLarge(5)));
            a.set_connected(false);
            assert!(!*a.watch_connection().borrow());
            let down = a.publish("s", Bytes::new()).await;
            assert_eq!(down, Err(TransportError::Disconnected));
            a.set_connected(true);
            a.close().await;
            b.close().await;
            assert!(sub.next().await.is_none(), "closing ends the stream");
        });
    }
}
