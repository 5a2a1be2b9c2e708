//! The two encodings of a stored value, and how a record says which one
//! it holds.
//!
//! * [`Encoding::Postcard`] (compact): the record's `fingerprint` field is
//!   the value's shape fingerprint and its payload the postcard bytes. This
//!   is the format every record had before CBOR existed, unchanged.
//! * [`Encoding::Cbor`] (self-describing): the record's `fingerprint`
//!   field is the marker [`CBOR`]; the payload is the value's shape
//!   fingerprint (8 bytes, little-endian), then one CBOR item with field
//!   and variant names (ciborium's serde encoding: a struct is a map keyed
//!   by field names, a variant is its name).
//!
//! Why the marker sits in the fingerprint field: the stored layout of a
//! record (`EventRecord`, `Snapshot`, the JetStream batch) stays as it
//! was, so every journal written before reads as before; and a build that
//! does not know CBOR reads a CBOR record as a shape it does not know, the
//! clear `SchemaMismatch`, never a misread. The marker is a 64-bit hash
//! like every fingerprint: a shape whose fingerprint equals it is as
//! likely as two shapes sharing a fingerprint, the risk fingerprints
//! already take.
//!
//! Invariants: [`Stored::parse`] never panics on any bytes (a CBOR record
//! shorter than its 8-byte prefix is `Corrupt`); both decoders refuse
//! trailing bytes.

use crate::error::PersistError;
use crate::id::PersistenceId;
use crate::journal::{from_bytes, to_bytes};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::cell::RefCell;

/// The fingerprint field of a record in the self-describing encoding
/// (`troupe_remote::type_id("troupe.persistence.cbor")`): its shape's
/// fingerprint leads the payload instead.
pub const CBOR: u64 = troupe_remote::type_id("troupe.persistence.cbor");

/// How new events and snapshots are written (records of either encoding
/// are always read).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// postcard: the smallest records and the fastest to write and read;
    /// it carries no field names, so every change of shape needs an
    /// upcaster (see [the rules](crate::codec#which-changes-need-an-upcaster)).
    #[default]
    Postcard,
    /// CBOR with field and variant names: bigger and slower, but a record
    /// written by an older shape decodes into the current one where the
    /// names still match (an added optional field, a new variant).
    Cbor,
}

/// A stored value, its encoding told apart: what a decoder looks at.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stored<'a> {
    /// How `body` is encoded.
    pub(crate) encoding: Encoding,
    /// The shape fingerprint of the type that wrote it.
    pub(crate) shape: u64,
    /// The encoded value.
    pub(crate) body: &'a [u8],
}

impl<'a> Stored<'a> {
    /// Tells a record's encoding and shape from its fingerprint field and
    /// payload.
    pub(crate) fn parse(
        id: &PersistenceId,
        fingerprint: u64,
        payload: &'a [u8],
    ) -> Result<Self, PersistError> {
        if fingerprint != CBOR {
            return Ok(Stored {
                encoding: Encoding::Postcard,
                shape: fingerprint,
                body: payload,
            });
        }
        let Some((shape, body)) = payload.split_first_chunk::<8>() else {
            return Err(PersistError::Corrupt {
                id: id.to_string(),
                reason: format!(
                    "a CBOR record of {} bytes, shorter than its shape",
                    payload.len()
                ),
            });
        };
        Ok(Stored {
            encoding: Encoding::Cbor,
            shape: u64::from_le_bytes(*shape),
            body,
        })
    }

    /// Decodes the body as `T`.
    pub(crate) fn decode<T: DeserializeOwned>(
        &self,
        id: &PersistenceId,
    ) -> Result<T, PersistError> {
        match self.encoding {
            Encoding::Postcard => from_bytes(id, self.body),
            Encoding::Cbor => from_cbor(id, self.body),
        }
    }
}

/// `value` in `encoding`, as (the record's fingerprint field, its payload);
/// `shape` is `value`'s shape fingerprint.
pub(crate) fn encode<T: Serialize + ?Sized>(
    id: &PersistenceId,
    encoding: Encoding,
    shape: u64,
    value: &T,
) -> Result<(u64, Vec<u8>), PersistError> {
    match encoding {
        Encoding::Postcard => Ok((shape, to_bytes(id, value)?)),
        Encoding::Cbor => {
            let mut out = Vec::with_capacity(64);
            out.extend_from_slice(&shape.to_le_bytes());
            ciborium::into_writer(value, &mut out).map_err(|e| PersistError::Encode {
                id: id.to_string(),
                reason: e.to_string(),
            })?;
            Ok((CBOR, out))
        }
    }
}

/// ciborium's scratch space (text up to this size is read in place; a
/// field or variant name must fit): its own default size.
const SCRATCH: usize = 4096;

thread_local! {
    /// One scratch per thread, so a decode does not clear 4 KiB of stack
    /// (ciborium's `from_reader` does, per value).
    static CBOR_SCRATCH: RefCell<[u8; SCRATCH]> = const { RefCell::new([0; SCRATCH]) };
}

/// `T` from one CBOR item, refusing trailing bytes.
fn from_cbor<T: DeserializeOwned>(id: &PersistenceId, mut bytes: &[u8]) -> Result<T, PersistError> {
    let corrupt = |reason: String| PersistError::Corrupt {
        id: id.to_string(),
        reason,
    };
    let decoded = CBOR_SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut scratch) => ciborium::de::from_reader_with_buffer(&mut bytes, &mut scratch[..]),
        // A decode within a decode (a `Deserialize` that decodes CBOR
        // itself): a scratch of its own.
        Err(_) => ciborium::de::from_reader_with_buffer(&mut bytes, &mut [0; SCRATCH]),
    });
    let value = decoded.map_err(|e| corrupt(format!("does not decode as CBOR: {e}")))?;
    if !bytes.is_empty() {
        return Err(corrupt(format!("{} trailing bytes", bytes.len())));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    enum Event {
        Opened { owner: String },
        Deposited(u64),
    }

    fn id() -> PersistenceId {
        PersistenceId::new("k", "e").unwrap()
    }

    #[test]
    fn both_encodings_read_back_and_say_which_they_are() {
        let e = Event::Opened {
            owner: "ada".into(),
        };
        for encoding in [Encoding::Postcard, Encoding::Cbor] {
            let (fingerprint, payload) = encode(&id(), encoding, 0x1234, &e).unwrap();
            let stored = Stored::parse(&id(), fingerprint, &payload).unwrap();
            assert_eq!(stored.encoding, encoding);
            assert_eq!(stored.shape, 0x1234);
            assert_eq!(stored.decode::<Event>(&id()).unwrap(), e);
        }
    }

    #[test]
    fn a_cbor_record_carries_its_names() {
        let (_, payload) = encode(&id(), Encoding::Cbor, 1, &Event::Deposited(7)).unwrap();
        let text = String::from_utf8_lossy(&payload);
        assert!(text.contains("Deposited"), "{text}");
    }

    #[test]
    fn short_or_trailing_cbor_is_corrupt_not_a_panic() {
        for n in 0..8 {
            let short = vec![0u8; n];
            assert!(matches!(
                Stored::parse(&id(), CBOR, &short),
                Err(PersistError::Corrupt { .. })
            ));
        }
        let (_, mut payload) = encode(&id(), Encoding::Cbor, 1, &Event::Deposited(7)).unwrap();
        payload.push(0);
        let stored = Stored::parse(&id(), CBOR, &payload).unwrap();
        let err = stored.decode::<Event>(&id()).unwrap_err();
        assert!(err.to_string().contains("1 trailing bytes"), "{err}");
    }

    #[test]
    fn the_marker_is_no_shape() {
        assert_ne!(CBOR, 0);
        assert_ne!(CBOR, troupe_remote::schema::fingerprint::<Event>());
    }
}
