//! Remote message types: stable names, compile-time type ids, and the
//! per-node registry that refuses two types claiming one id.
//!
//! Invariants:
//! - A type id is `type_id(NAME)`, FNV-1a 64 of the stable name's bytes,
//!   computed at compile time (`const fn`). It depends only on the name, never
//!   on the Rust path, the compiler or the crate version, so two builds of two
//!   programs agree on it.
//! - Only types implementing [`RemoteMessage`] can be sent
//!   ([`RemoteRef`](crate::RemoteRef) bounds on it), so an unregistered type
//!   is a compile error, not a run-time surprise.
//! - A [`TypeRegistry`] maps each id to exactly one (stable name, Rust type).
//!   Registering a second Rust type under an id already held (the same name
//!   declared twice, or an FNV collision between two names) is refused with
//!   [`NodeError::TypeClash`], which names both.

use std::collections::HashMap;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::NodeError;

/// FNV-1a 64 of `name`: the stable 64-bit type id of a remote message type.
///
/// ```
/// const ID: u64 = troupe_remote::type_id("shop.cart.Add");
/// assert_eq!(ID, troupe_remote::type_id("shop.cart.Add"));
/// assert_ne!(ID, troupe_remote::type_id("shop.cart.Remove"));
/// ```
pub const fn type_id(name: &str) -> u64 {
    type_id_extend(0xcbf2_9ce4_8422_2325, name)
}

/// The type id of a name that starts with the name whose id is `prefix`
/// and goes on with `rest`: `type_id_extend(type_id(a), b) == type_id(a + b)`
/// (FNV-1a goes byte by byte), for ids derived from another type's name
/// at compile time, where strings cannot be joined.
///
/// ```
/// use troupe_remote::{type_id, type_id_extend};
/// const ID: u64 = type_id_extend(type_id("box/"), "shop.cart.Add");
/// assert_eq!(ID, type_id("box/shop.cart.Add"));
/// ```
pub const fn type_id_extend(prefix: u64, rest: &str) -> u64 {
    let bytes = rest.as_bytes();
    let mut hash = prefix;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    hash
}

/// A message type that may cross processes. Implement it with
/// [`#[remote("stable.name")]`](macro@crate::remote), not by hand (the
/// macro checks the name and keeps `TYPE_ID == type_id(NAME)`).
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use troupe_remote::{remote, RemoteMessage};
///
/// #[remote("shop.cart.Add")]
/// #[derive(Serialize, Deserialize)]
/// struct Add { item: String, qty: u32 }
///
/// assert_eq!(Add::NAME, "shop.cart.Add");
/// assert_eq!(Add::TYPE_ID, troupe_remote::type_id("shop.cart.Add"));
/// ```
pub trait RemoteMessage: Serialize + DeserializeOwned + Send + 'static {
    /// The stable name, e.g. `"shop.cart.Add"`.
    const NAME: &'static str;
    /// `type_id(NAME)`, computed at compile time.
    const TYPE_ID: u64;
}

/// A remote message that is asked (answered with a [`RemoteAsk::Reply`]).
/// Declare it with `#[remote("name", reply = ReplyType)]`.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use troupe_remote::{remote, RemoteAsk};
///
/// #[remote("shop.cart.Total", reply = u64)]
/// #[derive(Serialize, Deserialize)]
/// struct Total;
///
/// fn reply_of<Q: RemoteAsk>() -> &'static str { std::any::type_name::<Q::Reply>() }
/// assert_eq!(reply_of::<Total>(), "u64");
/// ```
pub trait RemoteAsk: RemoteMessage {
    /// What the actor answers.
    type Reply: Serialize + DeserializeOwned + Send + 'static;
}

/// Which stable name and Rust type hold a type id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TypeEntry {
    /// The 64-bit id.
    pub id: u64,
    /// The stable name it was computed from.
    pub name: &'static str,
    /// The Rust type (`std::any::type_name`), for error messages.
    pub rust_type: &'static str,
}

impl TypeEntry {
    /// The entry of `M`.
    pub fn of<M: RemoteMessage>() -> Self {
        TypeEntry {
            id: M::TYPE_ID,
            name: M::NAME,
            rust_type: std::any::type_name::<M>(),
        }
    }
}

/// The remote message types a node knows, one Rust type per id.
///
/// ```
/// use serde::{Deserialize, Serialize};
/// use troupe_remote::{remote, NodeError, TypeRegistry};
///
/// mod a { #[troupe_remote::remote("shop.Item")] #[derive(serde::Serialize, serde::Deserialize)] pub struct Item; }
/// mod b { #[troupe_remote::remote("shop.Item")] #[derive(serde::Serialize, serde::Deserialize)] pub struct Item; }
///
/// let mut types = TypeRegistry::default();
/// types.register::<a::Item>().unwrap();
/// types.register::<a::Item>().unwrap(); // the same type again is fine
/// let err = types.register::<b::Item>().unwrap_err();
/// assert!(matches!(err, NodeError::TypeClash { .. }));
/// assert!(err.to_string().contains("a::Item") && err.to_string().contains("b::Item"));
/// ```
#[derive(Default, Debug, Clone)]
pub struct TypeRegistry {
    by_id: HashMap<u64, TypeEntry>,
}

impl TypeRegistry {
    /// Registers `M`; refuses it if another Rust type holds its id.
    pub fn register<M: RemoteMessage>(&mut self) -> Result<(), NodeError> {
        self.insert(TypeEntry::of::<M>())
    }

    /// Registers an entry; refuses it if another Rust type holds its id.
    pub fn insert(&mut self, entry: TypeEntry) -> Result<(), NodeError> {
        match self.by_id.get(&entry.id) {
            Some(held) if held.rust_type == entry.rust_type && held.name == entry.name => Ok(()),
            Some(held) => Err(NodeError::TypeClash {
                id: entry.id,
                first: *held,
                second: entry,
            }),
            None => {
                self.by_id.insert(entry.id, entry);
                Ok(())
            }
        }
    }

    /// The entry holding `id`, if any.
    pub fn get(&self, id: u64) -> Option<&TypeEntry> {
        self.by_id.get(&id)
    }

    /// How many types are registered.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::type_id;

    #[test]
    fn fnv1a_matches_reference_vectors() {
        // Published FNV-1a 64 test vectors.
        assert_eq!(type_id(""), 0xcbf29ce484222325);
        assert_eq!(type_id("a"), 0xaf63dc4c8601ec8c);
        assert_eq!(type_id("foobar"), 0x85944171f73967e8);
    }
}
