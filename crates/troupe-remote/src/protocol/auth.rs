//! Cluster authentication: a shared secret key, and HMAC-SHA256 seals.
//!
//! NATS authenticates *clients*; any client with rights on a cluster's
//! subjects could publish a well-formed link frame, ack, ask, heartbeat,
//! control request or registry value. With a [`ClusterKey`] set on every
//! node ([`NodeBuilder::secret`](crate::NodeBuilder::secret),
//! `ClusterBuilder::secret`), a node obeys only messages *sealed* with
//! that key:
//!
//! - the seal is HMAC-SHA256 over the subject the message is published on,
//!   a zero byte, and the payload: a seal is good for one subject only, so
//!   a message cannot be moved to another node's inbox or control subject;
//! - troupe-remote writes it as a last *seal frame* (kind 7, a 32-byte
//!   body) after the frames of every message it publishes to a node's
//!   inbox (batches of tells, probes, acks, asks, pings); the cluster
//!   appends the 32 bytes to its postcard payloads (heartbeats, goodbyes,
//!   stop events, control requests and replies) and to registry values
//!   (sealed over `kv:<key>`);
//! - a keyed node refuses, counts (`NodeStats::unauthenticated`,
//!   `ClusterStats::unauthenticated`) and logs at a limited rate every
//!   message without a good seal; a request gets a `bad frame` /
//!   `BadRequest` answer. Nothing else happens: no tell is delivered, no
//!   link state made, no peer declared up, down or restarted, no actor
//!   killed, no registry entry taken;
//! - the check is constant-time (`hmac`'s `verify_slice`).
//!
//! What it does not do (documented limits): it does not encrypt (use TLS
//! to the server); replies to asks travel unsealed to the asker's private
//! inbox; a client that can *subscribe* to a cluster's subjects can record
//! a sealed message and publish it again on the same subject. Replays are
//! harmless for link frames and acks (a replayed batch's numbers are not
//! new; acks older than the ledger are ignored) but a replayed heartbeat
//! of a dead incarnation can delay its down detection; fence subscriptions
//! with NATS permissions. A node without a key ignores seal frames, and
//! keyed and unkeyed nodes do not understand each other: set the key on
//! every node of a cluster.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The length of a seal (an HMAC-SHA256 tag).
pub const SEAL_LEN: usize = 32;

/// A cluster's shared secret, ready to seal and check messages.
///
/// ```
/// use troupe_remote::auth::ClusterKey;
/// let key = ClusterKey::new(b"a long random secret, shared by the nodes");
/// let sealed = key.seal("troupe.c.hb.n1", b"payload");
/// assert_eq!(key.open("troupe.c.hb.n1", &sealed), Some(&b"payload"[..]));
/// assert_eq!(key.open("troupe.c.hb.n2", &sealed), None); // another subject
/// let other = ClusterKey::new(b"another secret");
/// assert_eq!(other.open("troupe.c.hb.n1", &sealed), None);
/// ```
#[derive(Clone)]
pub struct ClusterKey {
    mac: Hmac<Sha256>,
}

impl std::fmt::Debug for ClusterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClusterKey(..)") // never the secret
    }
}

impl ClusterKey {
    /// A key from the shared secret (any length; 32 random bytes or more
    /// is right for HMAC-SHA256).
    pub fn new(secret: impl AsRef<[u8]>) -> Self {
        // HMAC takes a key of any length: `new_from_slice` cannot fail.
        let mac = match Hmac::<Sha256>::new_from_slice(secret.as_ref()) {
            Ok(m) => m,
            Err(_) => unreachable!("HMAC accepts keys of any length"),
        };
        ClusterKey { mac }
    }

    fn keyed(&self, subject: &str, payload: &[u8]) -> Hmac<Sha256> {
        let mut mac = self.mac.clone();
        mac.update(subject.as_bytes());
        mac.update(&[0]);
        mac.update(payload);
        mac
    }

    /// The seal of `payload` published on `subject`.
    pub fn tag(&self, subject: &str, payload: &[u8]) -> [u8; SEAL_LEN] {
        self.keyed(subject, payload).finalize().into_bytes().into()
    }

    /// Whether `tag` is the seal of `payload` on `subject` (constant time).
    pub fn verify(&self, subject: &str, payload: &[u8], tag: &[u8]) -> bool {
        self.keyed(subject, payload).verify_slice(tag).is_ok()
    }

    /// `payload` followed by its seal.
    pub fn seal(&self, subject: &str, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(payload.len() + SEAL_LEN);
        out.extend_from_slice(payload);
        out.extend_from_slice(&self.tag(subject, payload));
        out
    }

    /// The payload of a sealed message, if its seal is good for `subject`.
    pub fn open<'a>(&self, subject: &str, sealed: &'a [u8]) -> Option<&'a [u8]> {
        let at = sealed.len().checked_sub(SEAL_LEN)?;
        let (payload, tag) = sealed.split_at(at);
        self.verify(subject, payload, tag).then_some(payload)
    }
}
