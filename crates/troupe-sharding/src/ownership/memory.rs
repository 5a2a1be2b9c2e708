//! An in-memory [`OwnershipStore`]: one map behind a mutex, with the
//! revision rules of a JetStream KV bucket (one revision counter for the
//! whole store, checked writes). Shared by every node of one test process.

use std::collections::HashMap;

use parking_lot::Mutex;

use super::{decode_ids, decode_remembered, encode_ids, members_key, owner_key};
use super::{remember_fenced, remembered_key};
use super::{OwnershipStore, ShardOwner, StoreError};

/// An in-memory ownership store. Clone the `Arc` into each node's sharding.
#[derive(Default)]
pub struct MemoryOwnership {
    inner: Mutex<State>,
}

#[derive(Default)]
struct State {
    revision: u64,
    values: HashMap<String, (Vec<u8>, u64)>,
    /// When set, every call fails (a store outage in tests).
    down: bool,
}

impl MemoryOwnership {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes every later call fail (`true`) or work again (`false`).
    pub fn set_down(&self, down: bool) {
        self.inner.lock().down = down;
    }

    fn write(&self, key: String, value: Vec<u8>, expected: Option<u64>) -> Result<u64, StoreError> {
        let mut s = self.inner.lock();
        if s.down {
            return Err(StoreError::Unavailable("store down".into()));
        }
        let current = s.values.get(&key).map_or(0, |v| v.1);
        if let Some(e) = expected {
            if e != current {
                return Err(StoreError::Conflict);
            }
        }
        s.revision += 1;
        let r = s.revision;
        s.values.insert(key, (value, r));
        Ok(r)
    }

    fn read(&self, key: &str) -> Result<Option<(Vec<u8>, u64)>, StoreError> {
        let s = self.inner.lock();
        if s.down {
            return Err(StoreError::Unavailable("store down".into()));
        }
        Ok(s.values.get(key).cloned())
    }
}

fn record(v: Option<(Vec<u8>, u64)>) -> ShardOwner {
    match v {
        None => ShardOwner::NONE,
        Some((value, revision)) => ShardOwner::parse(&value, revision),
    }
}

impl OwnershipStore for MemoryOwnership {
    fn owners(&self, kind: &str, shards: u32) -> Result<Vec<ShardOwner>, StoreError> {
        (0..shards).map(|s| self.owner(kind, s)).collect()
    }

    fn owner(&self, kind: &str, shard: u32) -> Result<ShardOwner, StoreError> {
        Ok(record(self.read(&owner_key(kind, shard))?))
    }

    fn claim(&self, kind: &str, shard: u32, node: &str, expected: u64) -> Result<u64, StoreError> {
        self.write(
            owner_key(kind, shard),
            node.as_bytes().to_vec(),
            Some(expected),
        )
    }

    fn release(&self, kind: &str, shard: u32, token: u64) -> Result<u64, StoreError> {
        self.write(owner_key(kind, shard), Vec::new(), Some(token))
    }

    fn remembered(&self, kind: &str, shard: u32) -> Result<Vec<String>, StoreError> {
        match self.read(&remembered_key(kind, shard))? {
            None => Ok(Vec::new()),
            Some((b, _)) => decode_remembered(&b)
                .map(|(_, ids)| ids)
                .ok_or_else(|| StoreError::Unavailable("undecodable remembered ids".into())),
        }
    }

    fn remember(
        &self,
        kind: &str,
        shard: u32,
        token: u64,
        ids: &[String],
    ) -> Result<(), StoreError> {
        let key = remembered_key(kind, shard);
        remember_fenced(
            token,
            ids,
            || self.read(&key),
            |v, expected| self.write(key.clone(), v, Some(expected)),
        )
    }

    fn members(&self, kind: &str) -> Result<(Vec<String>, u64), StoreError> {
        match self.read(&members_key(kind))? {
            None => Ok((Vec::new(), 0)),
            Some((b, rev)) => decode_ids(&b)
                .map(|ids| (ids, rev))
                .ok_or_else(|| StoreError::Unavailable("undecodable member list".into())),
        }
    }

    fn set_members(&self, kind: &str, nodes: &[String], expected: u64) -> Result<u64, StoreError> {
        let b = encode_ids(nodes)
            .ok_or_else(|| StoreError::Unavailable("member list too long".into()))?;
        self.write(members_key(kind), b, Some(expected))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_and_releases_are_revision_checked() {
        let st = MemoryOwnership::new();
        assert_eq!(st.owner("cart", 1).unwrap(), ShardOwner::NONE);
        let t1 = st.claim("cart", 1, "n1", 0).unwrap();
        // A second creator loses.
        assert_eq!(st.claim("cart", 1, "n2", 0), Err(StoreError::Conflict));
        assert_eq!(
            st.owner("cart", 1).unwrap(),
            ShardOwner {
                node: Some("n1".into()),
                incarnation: 0,
                revision: t1
            }
        );
        // An owner id names the incarnation too.
        let t = st
            .claim("cart", 2, &super::super::owner_id("n1", 7), 0)
            .unwrap();
        let r = st.owner("cart", 2).unwrap();
        assert!(r.is("n1", 7) && !r.is("n1", 8) && r.revision == t);
        // A stale release loses; the owner's works.
        assert_eq!(st.release("cart", 1, t1 + 1), Err(StoreError::Conflict));
        let r = st.release("cart", 1, t1).unwrap();
        assert!(r > t1);
        assert_eq!(st.owner("cart", 1).unwrap().node, None);
        // The next claim needs the released revision and gets a larger token.
        assert_eq!(st.claim("cart", 1, "n2", t1), Err(StoreError::Conflict));
        let t2 = st.claim("cart", 1, "n2", r).unwrap();
        assert!(t2 > r);
        // The old owner's token is dead.
        assert_eq!(st.release("cart", 1, t1), Err(StoreError::Conflict));
    }

    #[test]
    fn remembered_ids_round_trip_and_outages_fail() {
        let st = MemoryOwnership::new();
        st.remember("cart", 3, 1, &["a".into(), "b".into()])
            .unwrap();
        assert_eq!(st.remembered("cart", 3).unwrap(), vec!["a", "b"]);
        assert!(st.remembered("cart", 4).unwrap().is_empty());
        st.set_down(true);
        assert!(matches!(
            st.owner("cart", 3),
            Err(StoreError::Unavailable(_))
        ));
        st.set_down(false);
        assert!(decode_ids(&[0xff, 0xff]).is_none());
    }

    /// D5: the list is written with its owner's token and a write under
    /// an older token is refused, so a deposed owner that still runs
    /// cannot overwrite the new owner's list (it was a plain put).
    #[test]
    fn a_deposed_owner_cannot_overwrite_the_new_owners_list() {
        let st = MemoryOwnership::new();
        st.remember("cart", 3, 5, &["old".into()]).unwrap();
        st.remember("cart", 3, 9, &["new".into()]).unwrap();
        assert_eq!(
            st.remember("cart", 3, 5, &["stale".into()]),
            Err(StoreError::Conflict)
        );
        assert_eq!(st.remembered("cart", 3).unwrap(), vec!["new"]);
        // The owner itself writes on; a list of the old format (no token)
        // is read and may be overwritten.
        st.remember("cart", 3, 9, &["new".into(), "more".into()])
            .unwrap();
        assert_eq!(st.remembered("cart", 3).unwrap(), vec!["new", "more"]);
        let bare = encode_ids(&["bare".into()]).unwrap();
        st.write(remembered_key("cart", 4), bare, None).unwrap();
        assert_eq!(st.remembered("cart", 4).unwrap(), vec!["bare"]);
        st.remember("cart", 4, 1, &["x".into()]).unwrap();
        assert_eq!(st.remembered("cart", 4).unwrap(), vec!["x"]);
        assert!(decode_remembered(&[0, 1, 0xff]).is_none());
    }

    #[test]
    fn members_join_and_leave() {
        let st = MemoryOwnership::new();
        super::super::update_members(&st, "cart", "n1", true).unwrap();
        super::super::update_members(&st, "cart", "n2", true).unwrap();
        super::super::update_members(&st, "cart", "n1", true).unwrap();
        assert_eq!(st.members("cart").unwrap().0, vec!["n2", "n1"]);
        super::super::update_members(&st, "cart", "n2", false).unwrap();
        assert_eq!(st.members("cart").unwrap().0, vec!["n1"]);
        let (_, rev) = st.members("cart").unwrap();
        assert_eq!(
            st.set_members("cart", &[], rev - 1),
            Err(StoreError::Conflict)
        );
    }
}
