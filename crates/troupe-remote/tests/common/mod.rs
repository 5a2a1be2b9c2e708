//! Shared test actors and message types.
#![allow(dead_code)]

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use troupe::{Actor, Context, ReplyTo};
use troupe_remote::remote;

#[remote("test.Add")]
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Add(pub u64);

#[remote("test.Sum", reply = u64)]
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Sum;

#[remote("test.Blob")]
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Blob(#[serde(with = "serde_bytes_compat")] pub Vec<u8>);

/// Vec<u8> as a postcard byte string (one length, then the bytes).
pub mod serde_bytes_compat {
    use serde::{Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        <Vec<u8>>::deserialize(d)
    }
}

/// Silent: never answers (drops nothing, holds the reply forever).
#[remote("test.Silent", reply = u64)]
#[derive(Serialize, Deserialize, Debug)]
pub struct Silent;

pub enum CounterMsg {
    Add(Add),
    Blob(Blob),
    Sum(Sum, ReplyTo<u64>),
    Silent(Silent, ReplyTo<u64>),
}

impl From<Add> for CounterMsg {
    fn from(a: Add) -> Self {
        CounterMsg::Add(a)
    }
}
impl From<Blob> for CounterMsg {
    fn from(b: Blob) -> Self {
        CounterMsg::Blob(b)
    }
}

pub struct Counter {
    pub sum: u64,
    /// The last `Add` value and how many `Add`s did not follow it by one.
    pub last: u64,
    pub disorder: Arc<AtomicU64>,
    pub seen: Arc<AtomicU64>,
    pub held: Vec<ReplyTo<u64>>,
}

impl Counter {
    pub fn new(seen: Arc<AtomicU64>) -> Self {
        Counter {
            sum: 0,
            last: 0,
            disorder: Arc::new(AtomicU64::new(0)),
            seen,
            held: Vec::new(),
        }
    }
}

impl Actor for Counter {
    type Msg = CounterMsg;
    fn handle(&mut self, msg: CounterMsg, _: &mut Context<'_, Self>) {
        match msg {
            CounterMsg::Add(Add(n)) => {
                if n != self.last + 1 {
                    self.disorder.fetch_add(1, Ordering::Relaxed);
                }
                self.last = n;
                self.sum += n;
                self.seen.fetch_add(1, Ordering::Relaxed);
            }
            CounterMsg::Blob(b) => {
                self.sum += b.0.len() as u64;
                self.seen.fetch_add(1, Ordering::Relaxed);
            }
            CounterMsg::Sum(_, r) => {
                r.reply(self.sum);
            }
            CounterMsg::Silent(_, r) => self.held.push(r),
        }
    }
}

/// What many node tests start from: a system of `threads` workers, a
/// [`Counter`] on it with its `seen` count, and node `b` connected to
/// the nats-server at `url` (nothing exposed yet).
pub fn counter_on_b(
    url: &str,
    threads: usize,
) -> (
    troupe::ActorSystem,
    Arc<AtomicU64>,
    troupe::ActorRef<Counter>,
    troupe_remote::Node,
) {
    let system = troupe::ActorSystem::builder().threads(threads).build();
    let seen = Arc::new(AtomicU64::new(0));
    let counter = system.spawn(Counter::new(seen.clone()));
    let b = troupe_remote::Node::builder(url, "b")
        .insecure()
        .connect()
        .unwrap();
    (system, seen, counter, b)
}

/// What a `tell_with` handler answers for its `try_tell`.
pub fn told<M>(sent: Result<(), troupe::SendError<M>>) -> troupe_remote::TellOutcome {
    match sent {
        Ok(()) => troupe_remote::TellOutcome::Delivered,
        Err(_) => troupe_remote::TellOutcome::Refused,
    }
}

/// Waits until `f` holds or `limit` passes; returns whether it held.
pub fn wait_until(limit: std::time::Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    f()
}
