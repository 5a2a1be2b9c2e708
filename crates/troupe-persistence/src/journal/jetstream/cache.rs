//! The JetStream store's per-entity caches (last position and subject,
//! snapshot hint): bounded, and only shortcuts, so emptying one costs a server
//! round trip or a longer replay, never a wrong answer.

use crate::id::PersistenceId;
use async_nats::Subject;
use parking_lot::Mutex;
use std::collections::HashMap;

/// What the store knows of an entity's journal (a cache entry).
pub(super) struct Position {
    /// The last event number and its stream sequence, as last seen.
    pub(super) seq: u64,
    pub(super) stream_seq: u64,
    /// The entity's journal subject, formatted once.
    pub(super) subject: Subject,
}

/// The most entities each of the store's caches holds; at that size a new
/// entity empties the cache (every entry is only a shortcut).
pub(super) const CACHED: usize = 65_536;

/// Caches `value` for `id` in `cache`, cloning the id only for an entity
/// not cached yet, and emptying a full cache first.
pub(super) fn cache<V>(cache: &Mutex<HashMap<PersistenceId, V>>, id: &PersistenceId, value: V) {
    let mut cache = cache.lock();
    if let Some(v) = cache.get_mut(id) {
        *v = value;
        return;
    }
    if cache.len() >= CACHED {
        cache.clear();
    }
    cache.insert(id.clone(), value);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_cache_is_emptied_before_a_new_entity_enters() {
        let map = Mutex::new(HashMap::new());
        let id = |i: usize| PersistenceId::new("k", format!("e{i}")).unwrap();
        for i in 0..CACHED {
            cache(&map, &id(i), (i as u64, 1));
        }
        // Updating a cached entity keeps every entry.
        cache(&map, &id(0), (7, 7));
        assert_eq!(map.lock().len(), CACHED);
        assert_eq!(map.lock().get(&id(0)), Some(&(7, 7)));
        cache(&map, &id(CACHED), (1, 1));
        assert_eq!(map.lock().len(), 1);
        assert_eq!(map.lock().get(&id(CACHED)), Some(&(1, 1)));
    }
}
