//! Persistence ids: which entity a journal, a snapshot or a durable state
//! belongs to, as a kind (`"cart"`) and an id (`"user-42"`).
//!
//! Invariant: both parts are non-empty and made of ASCII letters, digits,
//! `-`, `_` and `=` only, so that each is one NATS subject token and a
//! valid JetStream KV key part (`cart.user-42`). [`PersistenceId::new`]
//! refuses anything else; nothing downstream escapes names.

use crate::error::PersistError;
use std::fmt;

/// The longest kind or id accepted, in bytes.
pub const MAX_PART_LEN: usize = 128;

/// An entity's identity in the stores: a kind and an id.
///
/// ```
/// use troupe_persistence::PersistenceId;
/// let id = PersistenceId::new("cart", "user-42").unwrap();
/// assert_eq!(id.to_string(), "cart.user-42");
/// assert!(PersistenceId::new("cart", "a.b").is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PersistenceId {
    kind: String,
    id: String,
}

impl PersistenceId {
    /// The id `id` of kind `kind`; an error naming the bad part if either
    /// is empty, longer than [`MAX_PART_LEN`], or holds a character other
    /// than ASCII letters, digits, `-`, `_` and `=`.
    pub fn new(kind: impl Into<String>, id: impl Into<String>) -> Result<Self, PersistError> {
        let (kind, id) = (kind.into(), id.into());
        check("kind", &kind)?;
        check("id", &id)?;
        Ok(PersistenceId { kind, id })
    }

    /// The kind (`"cart"`).
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The id within the kind (`"user-42"`).
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl fmt::Display for PersistenceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.kind, self.id)
    }
}

/// Whether `s` is a valid kind, id or namespace part.
pub(crate) fn check(what: &str, s: &str) -> Result<(), PersistError> {
    let reason = if s.is_empty() {
        Some("it is empty".to_string())
    } else if s.len() > MAX_PART_LEN {
        Some(format!("it is longer than {MAX_PART_LEN} bytes"))
    } else {
        s.chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '=')))
            .map(|c| format!("it holds {c:?}; use ASCII letters, digits, '-', '_' and '=' only"))
    };
    match reason {
        None => Ok(()),
        Some(reason) => Err(PersistError::InvalidId {
            id: format!("{what} {s:?}"),
            reason,
        }),
    }
}
