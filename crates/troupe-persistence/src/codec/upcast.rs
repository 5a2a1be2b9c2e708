//! Upcasters: per stored (name, shape fingerprint), how a record written
//! by an older type becomes a value of the current one.
//!
//! An upcaster for `Old` decodes the record's body as `Old`, in whichever
//! encoding the record says it holds (a postcard record and a CBOR record
//! of the same shape both match), then converts it with the user's
//! function. The table is small and built once per actor; a lookup is a
//! scan comparing the shape (a `u64`) first, then the name.
//!
//! Invariant: an upcaster is chosen only by an exact (name, shape) match,
//! so it never sees bytes of a shape it was not written for; a record
//! that matches but does not decode as `Old` is `Corrupt`.

use super::encoding::Stored;
use crate::error::PersistError;
use crate::id::PersistenceId;
use serde::de::DeserializeOwned;
use std::fmt;

type Decode<T> = Box<dyn Fn(&PersistenceId, &Stored<'_>) -> Result<T, PersistError> + Send + Sync>;

/// One upcaster: the (name, shape) it reads, and how.
struct Upcaster<T> {
    /// The stored stable name (events); empty for snapshots.
    name: &'static str,
    /// `fingerprint::<Old>()`.
    shape: u64,
    /// The `Old` type's name, for `Debug`.
    rust_type: &'static str,
    decode: Decode<T>,
}

/// The upcasters to `T`, in the order added.
pub(crate) struct Upcasters<T> {
    table: Vec<Upcaster<T>>,
}

impl<T> Default for Upcasters<T> {
    fn default() -> Self {
        Upcasters { table: Vec::new() }
    }
}

impl<T: 'static> Upcasters<T> {
    /// Adds: records of `name` with `Old`'s shape become `f(old)`. A later
    /// upcaster for the same (name, shape) replaces the earlier one.
    pub(crate) fn add<Old, F>(&mut self, name: &'static str, f: F)
    where
        Old: DeserializeOwned + 'static,
        F: Fn(Old) -> T + Send + Sync + 'static,
    {
        let shape = troupe_remote::schema::fingerprint::<Old>();
        self.table.retain(|u| !(u.shape == shape && u.name == name));
        self.table.push(Upcaster {
            name,
            shape,
            rust_type: std::any::type_name::<Old>(),
            decode: Box::new(move |id, stored| stored.decode::<Old>(id).map(&f)),
        });
    }

    /// Upcasts `stored` (written under `name`) if an upcaster reads its
    /// (name, shape); `None` if none does.
    pub(crate) fn upcast(
        &self,
        id: &PersistenceId,
        name: &str,
        stored: &Stored<'_>,
    ) -> Option<Result<T, PersistError>> {
        self.table
            .iter()
            .find(|u| u.shape == stored.shape && u.name == name)
            .map(|u| (u.decode)(id, stored))
    }

    /// Whether any upcaster reads records stored under `name`.
    pub(crate) fn reads_name(&self, name: &str) -> bool {
        self.table.iter().any(|u| u.name == name)
    }
}

impl<T> fmt::Debug for Upcasters<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(
                self.table
                    .iter()
                    .map(|u| format!("{} {:#018x} ({})", u.name, u.shape, u.rust_type)),
            )
            .finish()
    }
}
