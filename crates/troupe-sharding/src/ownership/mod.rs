//! Who owns each shard: the [`OwnershipStore`] seam, an in-memory store
//! for tests ([`MemoryOwnership`]) and the one on a key-value bucket of
//! the cluster's transport ([`bucket::BucketOwnership`]: JetStream KV over
//! NATS, a map on the memory transport).
//!
//! The record of shard `s` of sharding type `kind` is one key whose value
//! is the owner's identity, `node/incarnation` ([`owner_id`]; empty:
//! released; a bare node name, written before incarnations were stored,
//! reads as incarnation 0) and whose revision is the **fencing token**.
//! A record names one process, not a name: a later process under the same
//! name (a restart, or a rejoin after a false down) is not its owner and
//! claims it anew, so the earlier one, if it still runs, sees the record
//! change and loses the shard. Invariants the stores keep:
//! - every write is revision-checked: [`claim`](OwnershipStore::claim)
//!   creates the key (expected revision 0) or updates it from the revision
//!   the claimer read; [`release`](OwnershipStore::release) updates it
//!   from the owner's token. A write from a stale revision fails with
//!   [`StoreError::Conflict`], so two nodes never both hold a successful
//!   claim on one revision: one owner per shard at a time;
//! - a token only grows: a new claim always has a larger one, so a node
//!   that checks `(owner, revision) == (itself, token)` before an
//!   activation ([`crate::region`]) cannot activate on an ownership it
//!   has lost;
//! - the remembered entity ids of a shard are kept apart from its owner
//!   record, stored with the token of the owner that wrote them, and
//!   written only by a revision-checked write that refuses a token older
//!   than the stored one ([`remember`](OwnershipStore::remember)): a
//!   deposed owner, still running cut off, cannot overwrite the list of
//!   the shard's new owner.

pub mod bucket;
mod memory;

pub use memory::MemoryOwnership;

use std::fmt;

/// The owner record of one shard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardOwner {
    /// The owning node; `None` if released or never claimed.
    pub node: Option<String>,
    /// The owning node's incarnation ([`Cluster::incarnation`](troupe_cluster::Cluster::incarnation));
    /// 0 if released, or written by a version that stored only the name.
    pub incarnation: u64,
    /// The record's revision (the fencing token); 0 if never written.
    pub revision: u64,
}

impl ShardOwner {
    /// A shard never claimed.
    pub const NONE: ShardOwner = ShardOwner {
        node: None,
        incarnation: 0,
        revision: 0,
    };

    /// The record whose value is `value` at `revision`.
    pub fn parse(value: &[u8], revision: u64) -> ShardOwner {
        let text = std::str::from_utf8(value).ok().filter(|t| !t.is_empty());
        let (node, incarnation) = match text {
            None => (None, 0),
            Some(t) => match t.split_once('/') {
                Some((n, i)) => match i.parse::<u64>() {
                    Ok(i) => (Some(n.to_string()), i),
                    Err(_) => (Some(t.to_string()), 0),
                },
                None => (Some(t.to_string()), 0),
            },
        };
        ShardOwner {
            node,
            incarnation,
            revision,
        }
    }

    /// Whether this record names `node` in `incarnation` (one process).
    pub fn is(&self, node: &str, incarnation: u64) -> bool {
        self.node.as_deref() == Some(node) && self.incarnation == incarnation
    }
}

/// The value a claim writes: `node/incarnation` (node names are tokens,
/// with no `/`).
pub fn owner_id(node: &str, incarnation: u64) -> String {
    format!("{node}/{incarnation}")
}

/// Why a store operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// The record changed since the revision the write expected.
    Conflict,
    /// The store could not be reached or answered an error.
    Unavailable(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Conflict => f.write_str("the shard record changed since it was read"),
            StoreError::Unavailable(e) => write!(f, "the ownership store failed: {e}"),
        }
    }
}

impl std::error::Error for StoreError {}

/// Where shard ownership is recorded. Blocking calls, made from the
/// coordinator's thread and the region actor (which runs on a thread of
/// its own).
pub trait OwnershipStore: Send + Sync + 'static {
    /// The record of every shard `0..shards` of `kind`, indexed by shard.
    fn owners(&self, kind: &str, shards: u32) -> Result<Vec<ShardOwner>, StoreError>;
    /// The record of one shard.
    fn owner(&self, kind: &str, shard: u32) -> Result<ShardOwner, StoreError>;
    /// Makes `node` (an [`owner_id`], `node/incarnation`, or a bare name)
    /// the owner of `shard` if the record is still at `expected` (0:
    /// absent); returns the new revision, the token.
    fn claim(&self, kind: &str, shard: u32, node: &str, expected: u64) -> Result<u64, StoreError>;
    /// Releases `shard` if the record is still at `token`; returns the
    /// new revision.
    fn release(&self, kind: &str, shard: u32, token: u64) -> Result<u64, StoreError>;
    /// The entity ids remembered for `shard`.
    fn remembered(&self, kind: &str, shard: u32) -> Result<Vec<String>, StoreError>;
    /// Replaces the ids remembered for `shard` by its owner under fencing
    /// token `token`; [`StoreError::Conflict`] if the list stored was
    /// written under a newer token (another node owns the shard now).
    fn remember(
        &self,
        kind: &str,
        shard: u32,
        token: u64,
        ids: &[String],
    ) -> Result<(), StoreError>;
    /// The nodes that host `kind` (joined and not left), with the
    /// record's revision (0: none yet).
    fn members(&self, kind: &str) -> Result<(Vec<String>, u64), StoreError>;
    /// Replaces the member list if its record is still at `expected`.
    fn set_members(&self, kind: &str, nodes: &[String], expected: u64) -> Result<u64, StoreError>;
}

/// The most names a member list keeps; the oldest go first.
pub const MAX_MEMBERS: usize = 1024;

/// Adds (`join = true`) or removes `node` in `kind`'s member list, retrying
/// lost revision races a few times.
pub fn update_members(
    store: &dyn OwnershipStore,
    kind: &str,
    node: &str,
    join: bool,
) -> Result<(), StoreError> {
    let mut last = StoreError::Conflict;
    for _ in 0..16 {
        let (mut nodes, rev) = store.members(kind)?;
        nodes.retain(|n| n != node);
        if join {
            nodes.push(node.to_string());
            let extra = nodes.len().saturating_sub(MAX_MEMBERS);
            nodes.drain(..extra);
        }
        match store.set_members(kind, &nodes, rev) {
            Ok(_) => return Ok(()),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// The key of shard `shard`'s owner record.
pub(crate) fn owner_key(kind: &str, shard: u32) -> String {
    format!("{kind}.owner.{shard}")
}

/// The key of shard `shard`'s remembered entities.
pub(crate) fn remembered_key(kind: &str, shard: u32) -> String {
    format!("{kind}.entities.{shard}")
}

/// The key of `kind`'s member list.
pub(crate) fn members_key(kind: &str) -> String {
    format!("{kind}.members")
}

/// The most bytes of remembered ids one shard keeps (a JetStream KV value
/// must fit one message).
pub const MAX_REMEMBERED_BYTES: usize = 512 * 1024;

/// Decodes remembered ids; `None` if the bytes are not a list of valid ids.
pub(crate) fn decode_ids(bytes: &[u8]) -> Option<Vec<String>> {
    if bytes.is_empty() {
        return Some(Vec::new());
    }
    let ids: Vec<String> = postcard::from_bytes(bytes).ok()?;
    ids.iter()
        .all(|id| crate::envelope::check(id.as_bytes(), 0))
        .then_some(ids)
}

/// Encodes remembered ids; `None` if they exceed [`MAX_REMEMBERED_BYTES`].
pub(crate) fn encode_ids(ids: &[String]) -> Option<Vec<u8>> {
    let b = postcard::to_allocvec(ids).ok()?;
    (b.len() <= MAX_REMEMBERED_BYTES).then_some(b)
}

/// The first bytes of a remembered list stored with its writer's token:
/// an older value (a bare list) never starts so (an empty list is the one
/// byte 0).
const FENCED: [u8; 2] = [0, 1];

/// Encodes remembered ids with the writer's token.
pub(crate) fn encode_remembered(token: u64, ids: &[String]) -> Option<Vec<u8>> {
    let mut b = FENCED.to_vec();
    b.extend(postcard::to_allocvec(&(token, ids)).ok()?);
    (b.len() <= MAX_REMEMBERED_BYTES + FENCED.len() + 10).then_some(b)
}

/// Decodes a remembered list: the writer's token (0 for a bare list
/// written before tokens were stored) and the ids.
pub(crate) fn decode_remembered(bytes: &[u8]) -> Option<(u64, Vec<String>)> {
    let Some(rest) = bytes.strip_prefix(&FENCED[..]) else {
        return decode_ids(bytes).map(|ids| (0, ids));
    };
    let ((token, ids), left): ((u64, Vec<String>), _) = postcard::take_from_bytes(rest).ok()?;
    (left.is_empty()
        && ids
            .iter()
            .all(|id| crate::envelope::check(id.as_bytes(), 0)))
    .then_some((token, ids))
}

/// The fenced write of a remembered list through a store's `read` (value
/// and revision) and revision-checked `write` (expected revision, 0:
/// absent): refused if the stored list has a newer token, retried a few
/// times when another write slips in between.
pub(crate) fn remember_fenced(
    token: u64,
    ids: &[String],
    read: impl Fn() -> Result<Option<(Vec<u8>, u64)>, StoreError>,
    write: impl Fn(Vec<u8>, u64) -> Result<u64, StoreError>,
) -> Result<(), StoreError> {
    let value = encode_remembered(token, ids)
        .ok_or_else(|| StoreError::Unavailable("too many remembered ids".into()))?;
    for _ in 0..8 {
        let expected = match read()? {
            None => 0,
            Some((b, rev)) => {
                // An undecodable value is overwritten by the owner.
                if decode_remembered(&b).is_some_and(|(t, _)| t > token) {
                    return Err(StoreError::Conflict);
                }
                rev
            }
        };
        match write(value.clone(), expected) {
            Ok(_) => return Ok(()),
            Err(StoreError::Conflict) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Conflict)
}
