//! The portable body encoding: CBOR (RFC 8949) through ciborium, for
//! message types that processes in other languages send and read.
//!
//! A frame's body is postcard by default: compact, but driven by the Rust
//! types, so only a Rust peer (or a hand-written postcard encoder that
//! knows the shape) can write it. A type exposed with
//! [`Exposure::tell_portable`](crate::Exposure::tell_portable) or
//! [`ask_portable`](crate::Exposure::ask_portable) also takes bodies in
//! CBOR, which every language reads with a well-kept library (cbor2 in
//! Python, fxamacker/cbor in Go, cbor-x in TypeScript). CBOR rather than
//! MessagePack: it is an IETF standard with a deterministic encoding
//! (RFC 8949 §4.2), ciborium is already in the workspace
//! (troupe-persistence's codec), and its text/byte string split matches
//! serde's `str`/`bytes`.
//!
//! # How a frame says which
//!
//! Header flag bit 2 ([`FLAG_CBOR`]) set: the body (after the trace block,
//! if any) is CBOR; clear: postcard. A reply to a CBOR ask is CBOR, so a
//! client never meets postcard in a reply body. The schema fingerprint in
//! the correlation field is the same value in both encodings (it digests
//! the serde shape, and the shape is the encoding's input, not its
//! output), and it is checked as for postcard.
//!
//! # What CBOR a serde shape becomes (ciborium's mapping)
//!
//! struct → map of field name (text) to value, in declaration order;
//! tuple and tuple struct → array; newtype struct → its value; unit and
//! unit struct → null; `Option` → null or the value; unit variant → its
//! name (text); newtype / tuple / struct variant → a one-entry map from
//! the variant's name to its value / array / map; `str` and `char` → text;
//! `bytes` → byte string; sequences → array; maps → map; integers → CBOR
//! integers in their shortest form; floats as given (`f32` as single).
//!
//! Invariants:
//! - A type that is not portable has no CBOR handler: a CBOR frame for it
//!   is refused as `UnknownType`, and its postcard path does nothing more
//!   than test one flag bit (the header's `encoding` field).
//! - A CBOR body must decode to its type with no byte left over, as a
//!   postcard one must; nesting deeper than ciborium's limit (256) is
//!   refused, never a stack overflow; lengths are never trusted for an
//!   allocation (ciborium reads strings in segments).

use std::fmt;

use serde::de::DeserializeOwned;
use serde::Serialize;

/// The header flag bit of a frame whose body is CBOR.
pub const FLAG_CBOR: u8 = 0x04;

/// How a frame's body is encoded (header flag bit 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Encoding {
    /// postcard: compact, driven by the Rust types (the default).
    #[default]
    Postcard = 0,
    /// CBOR: self-describing, for other languages ([`FLAG_CBOR`]).
    Cbor = 1,
}

impl Encoding {
    /// The encoding a header's flags byte says.
    pub fn of_flags(flags: u8) -> Encoding {
        if flags & FLAG_CBOR == 0 {
            Encoding::Postcard
        } else {
            Encoding::Cbor
        }
    }

    /// The flag bits this encoding sets.
    pub fn flags(self) -> u8 {
        match self {
            Encoding::Postcard => 0,
            Encoding::Cbor => FLAG_CBOR,
        }
    }
}

/// Why a CBOR body did not decode.
#[derive(Debug)]
pub struct CborError(String);

impl fmt::Display for CborError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CBOR body: {}", self.0)
    }
}

impl std::error::Error for CborError {}

/// The scratch size ciborium's own `from_reader` uses: the longest
/// borrowed string or field name it reads.
const SCRATCH_LEN: usize = 4096;

thread_local! {
    static SCRATCH: std::cell::RefCell<Box<[u8; SCRATCH_LEN]>> =
        std::cell::RefCell::new(Box::new([0; SCRATCH_LEN]));
}

/// Appends the CBOR encoding of `value` to `out`.
pub fn encode_cbor<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) -> Result<(), CborError> {
    ciborium::into_writer(value, out).map_err(|e| CborError(e.to_string()))
}

/// Decodes a CBOR body to `T`, refusing trailing bytes.
///
/// ```
/// use troupe_remote::portable::{decode_cbor, encode_cbor};
/// let mut out = Vec::new();
/// encode_cbor(&("tea", 2u32), &mut out).unwrap();
/// assert_eq!(out, [0x82, 0x63, b't', b'e', b'a', 0x02]);
/// assert_eq!(decode_cbor::<(String, u32)>(&out).unwrap(), ("tea".into(), 2));
/// out.push(0);
/// assert!(decode_cbor::<(String, u32)>(&out).is_err());
/// ```
pub fn decode_cbor<T: DeserializeOwned>(body: &[u8]) -> Result<T, CborError> {
    let mut rest = body;
    // ciborium's `from_reader` zeroes a fresh 4 KiB scratch buffer per
    // call (borrowed strings and field names are read into it): a memset
    // per tell. A buffer per thread is reused instead; a decode nested in
    // another (a `Deserialize` that decodes CBOR itself) takes a fresh one.
    let value = SCRATCH
        .with(|cell| match cell.try_borrow_mut() {
            Ok(mut scratch) => {
                ciborium::from_reader_with_buffer::<T, _>(&mut rest, &mut scratch[..])
            }
            Err(_) => ciborium::from_reader::<T, _>(&mut rest),
        })
        .map_err(|e| CborError(e.to_string()))?;
    if rest.is_empty() {
        Ok(value)
    } else {
        Err(CborError(format!("{} bytes after the value", rest.len())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Add {
        item: String,
        qty: u32,
    }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    enum E {
        Unit,
        New(u8),
        Rec { a: bool },
    }

    fn enc<T: Serialize>(v: &T) -> Vec<u8> {
        let mut out = Vec::new();
        encode_cbor(v, &mut out).unwrap();
        out
    }

    /// The mapping the module docs promise, byte by byte.
    #[test]
    fn shapes_map_to_cbor_as_documented() {
        let add = Add {
            item: "t".into(),
            qty: 300,
        };
        // {"item": "t", "qty": 300}
        assert_eq!(
            enc(&add),
            [
                0xa2, 0x64, b'i', b't', b'e', b'm', 0x61, b't', 0x63, b'q', b't', b'y', 0x19, 0x01,
                0x2c
            ]
        );
        assert_eq!(enc(&E::Unit), [0x64, b'U', b'n', b'i', b't']);
        assert_eq!(enc(&E::New(7)), [0xa1, 0x63, b'N', b'e', b'w', 0x07]);
        assert_eq!(
            enc(&E::Rec { a: true }),
            [0xa1, 0x63, b'R', b'e', b'c', 0xa1, 0x61, b'a', 0xf5]
        );
        assert_eq!(enc(&()), [0xf6]);
        assert_eq!(enc(&None::<u8>), [0xf6]);
        assert_eq!(enc(&Some(1u8)), [0x01]);
        assert_eq!(enc(&-1i32), [0x20]);
        assert_eq!(decode_cbor::<Add>(&enc(&add)).unwrap(), add);
        assert_eq!(
            decode_cbor::<E>(&enc(&E::Rec { a: true })).unwrap(),
            E::Rec { a: true }
        );
    }

    #[test]
    fn hostile_bodies_are_errors_not_panics() {
        // Trailing byte, truncated text, a huge claimed length, deep nesting.
        assert!(decode_cbor::<u8>(&[0x01, 0x00]).is_err());
        assert!(decode_cbor::<String>(&[0x63, b'a']).is_err());
        assert!(
            decode_cbor::<String>(&[0x7b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).is_err()
        );
        assert!(
            decode_cbor::<Vec<u8>>(&[0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff])
                .is_err()
        );
        let deep = vec![0x81u8; 100_000];
        assert!(decode_cbor::<serde_json_like::Any>(&deep).is_err());
        assert!(
            decode_cbor::<u32>(&[0x1b, 0, 0, 0, 1, 0, 0, 0, 0]).is_err(),
            "out of range"
        );
    }

    mod serde_json_like {
        /// Any CBOR value, nested (for the depth test).
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        #[allow(dead_code)]
        pub enum Any {
            List(Vec<Any>),
            Int(u64),
        }
    }
}
