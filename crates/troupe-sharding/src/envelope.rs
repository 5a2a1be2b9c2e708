//! What regions say to each other: an entity id with one message for it.
//!
//! A tell or an ask to an entity travels as a [`ShardTell`] or
//! [`ShardAsk`] to the region actor of the node that owns (or is believed
//! to own) the entity's shard. The user's message rides inside as
//! `payload`: its postcard bytes, with its stable type id, so one pair of
//! remote types serves every sharding type and every message type.
//!
//! Everything here comes off the network and is hostile. [`check`] is the
//! gate every envelope meets before anything else reads it: the id must be
//! 1 to [`MAX_ID_BYTES`] bytes, the hop count at most [`MAX_HOPS`]; the
//! payload's size is already bounded by the node's frame limit. The shard
//! is never read off the wire: each node computes it from the id.

use serde::{Deserialize, Serialize};
use troupe::AskError;
use troupe_remote::remote;

/// The longest entity id, in bytes.
pub const MAX_ID_BYTES: usize = 256;
/// How many times an envelope may be forwarded between regions before it
/// is buffered where it is (a stale routing table on two nodes cannot
/// bounce it forever).
pub const MAX_HOPS: u8 = 3;

/// One tell for entity `entity`.
#[remote("troupe.sharding.Tell")]
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct ShardTell {
    /// The entity id.
    pub entity: String,
    /// The stable type id of the message in `payload`.
    pub type_id: u64,
    /// Forwards so far.
    pub hops: u8,
    /// The message, postcard-encoded.
    pub payload: Vec<u8>,
}

/// A [`ShardTell`] read borrowed from the frame it came in: the same wire
/// shape (postcard writes a `String` as a `&str` and a `Vec<u8>` as a
/// `&[u8]`: a length, then the bytes), decoded without allocating.
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardTellView<'a> {
    /// The entity id.
    pub entity: &'a str,
    /// The stable type id of the message in `payload`.
    pub type_id: u64,
    /// Forwards so far.
    pub hops: u8,
    /// The message, postcard-encoded.
    pub payload: &'a [u8],
}

impl ShardTellView<'_> {
    /// The owned envelope, for the region's path.
    pub fn to_tell(&self) -> ShardTell {
        ShardTell {
            entity: self.entity.to_string(),
            type_id: self.type_id,
            hops: self.hops,
            payload: self.payload.to_vec(),
        }
    }
}

/// A [`ShardTell`] as the sender writes it: the id borrowed, the message
/// encoded in place of the payload's bytes. It encodes to exactly the
/// bytes of the `ShardTell` whose payload is `msg`'s postcard encoding
/// (postcard writes a byte string as its length, a varint, then the
/// bytes; here the length is `len`, computed beforehand, and the bytes are
/// `msg` encoded by the same serializer), so the message is encoded once,
/// straight into the outgoing frame.
pub(crate) struct ShardTellOut<'a, M> {
    /// The entity id.
    pub entity: &'a str,
    /// The stable type id of `msg`.
    pub type_id: u64,
    /// Forwards so far.
    pub hops: u8,
    /// The length of `msg`'s postcard encoding
    /// (`postcard::experimental::serialized_size`).
    pub len: usize,
    /// The message.
    pub msg: &'a M,
}

/// The payload field of a [`ShardTellOut`]: the length, then the message.
struct Nested<'a, M> {
    len: usize,
    msg: &'a M,
}

impl<M: Serialize> Serialize for Nested<'_, M> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTuple;
        // A postcard tuple has no prefix of its own; a usize is written as
        // the same varint as a byte string's length.
        let mut t = s.serialize_tuple(2)?;
        t.serialize_element(&self.len)?;
        t.serialize_element(self.msg)?;
        t.end()
    }
}

impl<M: Serialize> Serialize for ShardTellOut<'_, M> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut t = s.serialize_struct("ShardTell", 4)?;
        t.serialize_field("entity", self.entity)?;
        t.serialize_field("type_id", &self.type_id)?;
        t.serialize_field("hops", &self.hops)?;
        t.serialize_field(
            "payload",
            &Nested {
                len: self.len,
                msg: self.msg,
            },
        )?;
        t.end()
    }
}

impl<M: Serialize> troupe_remote::EncodesAs<ShardTell> for ShardTellOut<'_, M> {}

/// One ask for entity `entity`; answered with a [`ShardReply`].
#[remote("troupe.sharding.Ask", reply = ShardReply)]
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct ShardAsk {
    /// The entity id.
    pub entity: String,
    /// The stable type id of the request in `payload`.
    pub type_id: u64,
    /// Forwards so far.
    pub hops: u8,
    /// The request, postcard-encoded.
    pub payload: Vec<u8>,
}

/// The answer to a [`ShardAsk`]: the reply's postcard bytes, or why none.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub enum ShardReply {
    /// The entity's reply, postcard-encoded.
    Ok(Vec<u8>),
    /// No reply, and why.
    Refused(Refusal),
}

/// Why an ask to an entity got no reply.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The envelope failed [`check`] (id length, hops).
    BadEnvelope,
    /// The sharding type does not take this message type.
    UnknownType,
    /// The payload did not decode as the message type.
    Undecodable,
    /// The shard had no owner within the buffer timeout, or the buffer was full.
    Unavailable,
    /// The entity stopped before replying.
    Stopped,
    /// The entity dropped the request without replying.
    NoReply,
}

impl Refusal {
    /// The ask error a caller sees.
    pub fn to_ask_error(self) -> AskError {
        match self {
            Refusal::Unavailable => AskError::NoResponders,
            Refusal::Stopped => AskError::ActorStopped,
            Refusal::BadEnvelope | Refusal::UnknownType | Refusal::Undecodable => AskError::NoReply,
            Refusal::NoReply => AskError::NoReply,
        }
    }

    /// The refusal that stands for a local ask error.
    pub fn from_ask_error(e: AskError) -> Refusal {
        match e {
            AskError::ActorStopped => Refusal::Stopped,
            AskError::MailboxFull => Refusal::Unavailable,
            _ => Refusal::NoReply,
        }
    }
}

/// Whether an envelope's id and hop count are acceptable.
pub fn check(entity: &str, hops: u8) -> bool {
    !entity.is_empty() && entity.len() <= MAX_ID_BYTES && hops <= MAX_HOPS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_hops_are_bounded() {
        assert!(check("user-42", 0));
        assert!(!check("", 0));
        assert!(check(&"x".repeat(MAX_ID_BYTES), MAX_HOPS));
        assert!(!check(&"x".repeat(MAX_ID_BYTES + 1), 0));
        assert!(!check("a", MAX_HOPS + 1));
    }

    #[test]
    fn the_borrowed_view_reads_the_owned_envelope() {
        let env = ShardTell {
            entity: "cart-7".into(),
            type_id: u64::MAX - 3,
            hops: 2,
            payload: (0..=255).collect(),
        };
        let bytes = postcard::to_allocvec(&env).unwrap();
        let view: ShardTellView<'_> = troupe_remote::envelope::decode_body(&bytes).unwrap();
        assert_eq!(view.entity, "cart-7");
        assert_eq!(view.payload, &env.payload[..]);
        let back = view.to_tell();
        assert_eq!(postcard::to_allocvec(&back).unwrap(), bytes);
        for n in 0..bytes.len() {
            assert!(postcard::from_bytes::<ShardTellView<'_>>(&bytes[..n]).is_err());
        }
        // Trailing bytes are refused.
        let mut long = bytes.clone();
        long.push(0);
        assert!(troupe_remote::envelope::decode_body::<ShardTellView<'_>>(&long).is_err());
    }

    #[test]
    fn the_sender_s_envelope_encodes_as_the_owned_one() {
        #[derive(Serialize)]
        struct Msg {
            n: u64,
            s: String,
            v: Vec<u16>,
        }
        let long = "x".repeat(300);
        let msgs = [
            Msg {
                n: 0,
                s: String::new(),
                v: vec![],
            },
            Msg {
                n: u64::MAX,
                s: "cart".into(),
                v: vec![1, 300, 65535],
            },
            // A payload of 300+ bytes: a two-byte length.
            Msg {
                n: 7,
                s: long,
                v: (0..100).collect(),
            },
        ];
        for (i, m) in msgs.iter().enumerate() {
            let payload = postcard::to_allocvec(m).unwrap();
            let owned = ShardTell {
                entity: format!("user-{i}"),
                type_id: u64::MAX - i as u64,
                hops: 0,
                payload,
            };
            let out = ShardTellOut {
                entity: &owned.entity,
                type_id: owned.type_id,
                hops: 0,
                len: postcard::experimental::serialized_size(m).unwrap(),
                msg: m,
            };
            assert_eq!(
                postcard::to_allocvec(&out).unwrap(),
                postcard::to_allocvec(&owned).unwrap()
            );
        }
    }

    #[test]
    fn a_truncated_envelope_does_not_decode() {
        let env = ShardTell {
            entity: "e".into(),
            type_id: 7,
            hops: 0,
            payload: vec![1, 2, 3],
        };
        let bytes = postcard::to_allocvec(&env).unwrap();
        for n in 0..bytes.len() {
            assert!(postcard::from_bytes::<ShardTell>(&bytes[..n]).is_err());
        }
    }
}
