//! The JetStream store's per-entity caches (last position, snapshot
//! hint): bounded, and only shortcuts, so emptying one costs a server
//! round trip or a longer replay, never a wrong answer.

use crate::id::PersistenceId;
use parking_lot::Mutex;
use std::collections::HashMap;

/// The most entities each of the store's caches holds; at that size a new
/// entity empties the cache (every entry is only a shortcut).
pub(super) const CACHED: usize = 65_536;

/// Caches `value` for `id` in `cache`, cloning the id only for an entity
/// not cached yet, and emptying a full cache first.
pub(super) fn cache(
    cache: &Mutex<HashMap<PersistenceId, (u64, u64)>>,
    id: &PersistenceId,
    value: (u64, u64),
) {
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
