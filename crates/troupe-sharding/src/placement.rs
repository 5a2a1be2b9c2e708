//! Where a shard lives: the stable hash of an entity id, and the owner a
//! set of live nodes agrees on for each shard.
//!
//! Invariants:
//! - [`shard_of`] is FNV-1a 64 of the id's UTF-8 bytes modulo the shard
//!   count (the same function as [`troupe_remote::type_id`]): it depends on
//!   the bytes only, never on the process, the build or `DefaultHasher`'s
//!   seed, so every node and every release maps an id to the same shard.
//! - [`desired_owner`] is rendezvous (highest random weight) hashing over
//!   the live node names: every node that sees the same set of names picks
//!   the same owner, and when one node joins or leaves only the shards it
//!   wins or held move (about `1/n` of them), the others stay put.
//! - Placement only says who *should* own a shard; who *does* is what the
//!   ownership store holds ([`crate::ownership`]).

/// FNV-1a 64 of `bytes`.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The shard of entity `id` among `shards` (which must be at least 1).
///
/// ```
/// use troupe_sharding::placement::shard_of;
/// assert_eq!(shard_of("user-42", 64), shard_of("user-42", 64));
/// assert!(shard_of("user-42", 64) < 64);
/// ```
pub fn shard_of(id: impl AsRef<[u8]>, shards: u32) -> u32 {
    let n = u64::from(shards.max(1));
    let h = fnv1a(id.as_ref());
    // For a power of two the mask is the remainder, without the division
    // (the default 64 shards; the inbox computes it for every tell).
    let s = if n.is_power_of_two() {
        h & (n - 1)
    } else {
        h % n
    };
    s as u32
}

/// A 64-bit mix (splitmix64's finalizer), so that nearby inputs give
/// unrelated weights.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The node that should own `shard` among `nodes` (rendezvous hashing);
/// `None` if `nodes` is empty. Ties (equal weights) go to the smaller name,
/// so the answer does not depend on the order of `nodes`.
pub fn desired_owner(nodes: &[String], shard: u32) -> Option<&str> {
    nodes
        .iter()
        .map(|n| (mix(fnv1a(n.as_bytes()) ^ mix(u64::from(shard) + 1)), n))
        .max_by(|a, b| a.0.cmp(&b.0).then_with(|| b.1.cmp(a.1)))
        .map(|(_, n)| n.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shard_is_the_remainder_for_every_count() {
        for n in (1..=300).chain([1 << 10, (1 << 10) + 1, u32::MAX - 1, u32::MAX]) {
            for i in 0..200 {
                let id = format!("entity-{i}");
                let want = (fnv1a(id.as_bytes()) % u64::from(n)) as u32;
                assert_eq!(shard_of(&id, n), want, "{id} of {n}");
            }
        }
        assert_eq!(shard_of("x", 0), 0);
    }

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_shard_of_an_id_is_fixed() {
        // Pinned values: a change of the hash would move every entity.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"user-42"), troupe_remote::type_id("user-42"));
        assert_eq!(shard_of("anything", 1), 0);
        assert_eq!(shard_of("x", 0), 0);
    }

    #[test]
    fn the_owner_does_not_depend_on_the_order_of_nodes() {
        let a = names(&["n1", "n2", "n3"]);
        let b = names(&["n3", "n1", "n2"]);
        for s in 0..256 {
            assert_eq!(desired_owner(&a, s), desired_owner(&b, s));
        }
        assert_eq!(desired_owner(&[], 3), None);
    }

    #[test]
    fn a_joining_node_takes_shards_only_for_itself() {
        let three = names(&["n1", "n2", "n3"]);
        let four = names(&["n1", "n2", "n3", "n4"]);
        let mut moved = 0;
        let mut count = [0usize; 4];
        for s in 0..1024 {
            let before = desired_owner(&three, s).unwrap();
            let after = desired_owner(&four, s).unwrap();
            if before != after {
                assert_eq!(after, "n4", "shard {s} moved between old nodes");
                moved += 1;
            }
            count[after[1..].parse::<usize>().unwrap() - 1] += 1;
        }
        // About a quarter moves; each node gets a fair share.
        assert!((150..=370).contains(&moved), "{moved} of 1024 moved");
        for c in count {
            assert!((150..=370).contains(&c), "{count:?}");
        }
    }
}
