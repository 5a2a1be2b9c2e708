//! Key-value buckets: the transport's store for state beside the actors
//! (the cluster's registry).
//!
//! A bucket is opened through [`Transport::key_value`](super::Transport::key_value);
//! over NATS it is a JetStream KV bucket, in memory a map with the same
//! rules. What a bucket promises:
//! - **Revisions**: every write (put, create, update, delete) gets the
//!   bucket's next revision, one sequence for all keys; a watch and `get`
//!   report the revision of what they return.
//! - **Create** writes only if the key has no live value
//!   ([`KvError::Exists`] otherwise); **update** and a delete with an
//!   expected revision write only if the key's last revision is that one
//!   ([`KvError::WrongRevision`] otherwise): the conditional writes the
//!   registry's ownership rules rest on.
//! - **Max age**: a value older than the bucket's `max_age` is gone (no
//!   delete is announced for it), the backstop for owners that died.
//! - **Watch**: [`KvBucket::watch_all`] yields every write made after it
//!   started, in revision order, as [`KvEntry`]s; it ends when the
//!   transport loses it (a server restart), and the watcher starts a new
//!   one and re-reads a snapshot (`keys` + `get`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::stream::BoxStream;

use super::TransportError;

/// How to open (or create) a bucket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BucketConfig {
    /// The bucket's name: letters, digits, `-` and `_`.
    pub name: String,
    /// How long a value lives (zero: for ever).
    pub max_age: Duration,
    /// Copies the server keeps of the bucket (over NATS: the JetStream
    /// replicas of its stream, 1 to 5; 3 on a 3-server cluster survives
    /// one server's death). Used only when the bucket is created: an
    /// existing bucket keeps the count it was made with. The memory
    /// transport ignores it.
    pub replicas: usize,
}

/// What a watched write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvOp {
    /// A value was put.
    Put,
    /// The key was deleted (or purged).
    Delete,
}

/// One key's value, or one watched write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KvEntry {
    /// The key.
    pub key: String,
    /// The value (empty for a delete).
    pub value: Bytes,
    /// The bucket's revision of this write.
    pub revision: u64,
    /// Put or delete.
    pub op: KvOp,
}

/// Why a bucket operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KvError {
    /// `create` found a live value under the key.
    Exists,
    /// The key's last revision is not the one expected.
    WrongRevision,
    /// This transport has no key-value store.
    Unsupported,
    /// The transport failed (disconnected, forbidden...).
    Transport(TransportError),
    /// Anything else the store reports, in its words.
    Other(String),
}

impl fmt::Display for KvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KvError::Exists => write!(f, "the key holds a value already"),
            KvError::WrongRevision => write!(f, "the key changed meanwhile"),
            KvError::Unsupported => write!(f, "this transport has no key-value store"),
            KvError::Transport(e) => write!(f, "{e}"),
            KvError::Other(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for KvError {}

/// The writes a watch sees, in revision order; ends when the watch is lost.
pub type KvWatch = BoxStream<'static, KvEntry>;

/// The live keys of a bucket when it was asked.
pub type KvKeys = BoxStream<'static, String>;

/// A shared handle on one bucket.
pub type Bucket = Arc<dyn KvBucket>;

/// One key-value bucket; see the module docs for its promises.
pub trait KvBucket: Send + Sync + 'static {
    /// The key's live value, if any. Over NATS any replica of the bucket
    /// may answer (JetStream direct get), possibly from a state behind
    /// the stream leader's: fine for a cache, not for a decision.
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<KvEntry>, KvError>>;

    /// As [`get`](Self::get), answered by the one copy every write goes
    /// through (over NATS the stream's leader, `STREAM.MSG.GET`), so it
    /// sees every write acknowledged before it was asked: the read for a
    /// decision (who owns what, a fencing check). The default is `get`,
    /// right for a store with one copy.
    fn get_leader<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<KvEntry>, KvError>> {
        self.get(key)
    }

    /// Writes `value` under `key`; the new revision.
    fn put<'a>(&'a self, key: &'a str, value: Bytes) -> BoxFuture<'a, Result<u64, KvError>>;

    /// Writes `value` only if `key` has no live value; the new revision.
    fn create<'a>(&'a self, key: &'a str, value: Bytes) -> BoxFuture<'a, Result<u64, KvError>>;

    /// Writes `value` only if `key`'s last revision is `revision`.
    fn update<'a>(
        &'a self,
        key: &'a str,
        value: Bytes,
        revision: u64,
    ) -> BoxFuture<'a, Result<u64, KvError>>;

    /// Deletes `key`; with `expected`, only if its last revision is that.
    fn delete<'a>(
        &'a self,
        key: &'a str,
        expected: Option<u64>,
    ) -> BoxFuture<'a, Result<(), KvError>>;

    /// The live keys now.
    fn keys(&self) -> BoxFuture<'_, Result<KvKeys, KvError>>;

    /// Every write from now on.
    fn watch_all(&self) -> BoxFuture<'_, Result<KvWatch, KvError>>;
}
