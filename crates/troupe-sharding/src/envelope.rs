//! What regions say to each other: an entity id with one message for it.
//!
//! An entity reference's tell travels to the region actor of the node
//! that owns (or is believed to own) the entity's shard as an
//! [`EntityTell<M>`]: a remote type of its own per message type, holding
//! the id and the message itself (4 bytes besides the message for the id
//! `e17`: what an entity tell costs over a plain remote tell on the
//! wire). A region that forwards an envelope to another region, and every
//! ask, use [`ShardTell`] and [`ShardAsk`]: the user's message rides
//! inside as `payload`, its postcard bytes, with its [`Tag`] (its stable
//! type id folded to 32 bits) and the hop count, so one pair of remote
//! types serves every message type (10 bytes besides the payload for the
//! id `e17`).
//!
//! Everything here comes off the network and is hostile. [`check`] is the
//! gate every envelope meets before anything else reads it: the id must be
//! 1 to [`MAX_ID_BYTES`] bytes, the hop count at most [`MAX_HOPS`]; the
//! payload's size is already bounded by the node's frame limit. The shard
//! is never read off the wire: each node computes it from the id.

use serde::{Deserialize, Serialize};
use troupe::AskError;
use troupe_remote::{remote, RemoteMessage};

/// The longest entity id, in bytes.
pub const MAX_ID_BYTES: usize = 256;
/// How many times an envelope may be forwarded between regions: a region
/// that does not own its shard refuses it after that many
/// ([`Refusal::TooManyHops`]), so stale routing tables on two nodes cannot
/// bounce it forever.
pub const MAX_HOPS: u8 = 3;

/// Which message type a payload holds, within one sharding type: the
/// stable type id ([`RemoteMessage::TYPE_ID`](troupe_remote::RemoteMessage))
/// folded to 32 bits, written as 4 bytes (little-endian).
///
/// Tags are unique among one sharding type's tell types and among its ask
/// types: [`ShardingBuilder::start`](crate::ShardingBuilder::start)
/// refuses two types whose tags are equal, and a sender tells or asks
/// only a type its own table holds under that very type id. A node whose
/// table differs (another build) and sends a type the receiver does not
/// take is refused as an unknown type, unless the two types' 32-bit tags
/// are equal (about one chance in 4 billion per pair of types).
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tag([u8; 4]);

impl Tag {
    /// The tag of the type whose stable type id is `type_id`.
    pub const fn of(type_id: u64) -> Tag {
        Tag(((type_id ^ (type_id >> 32)) as u32).to_le_bytes())
    }
}

/// One tell for entity `entity`.
#[remote("troupe.sharding.Tell.v2")]
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct ShardTell {
    /// The entity id.
    pub entity: String,
    /// The type of the message in `payload`.
    pub tag: Tag,
    /// Forwards so far.
    pub hops: u8,
    /// The message, postcard-encoded.
    pub payload: Vec<u8>,
}

/// A [`ShardTell`] read borrowed from the frame it came in: the same wire
/// shape (postcard writes a `String` as a `&[u8]` and a `Vec<u8>` as a
/// `&[u8]`: a length, then the bytes), decoded without allocating. The id
/// is its bytes, not yet checked as UTF-8: the direct path looks it up
/// as bytes (every id it holds is a `String`), the region's path checks
/// it ([`to_tell`](Self::to_tell)).
#[derive(Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardTellView<'a> {
    /// The entity id's bytes.
    pub entity: &'a [u8],
    /// The type of the message in `payload`.
    pub tag: Tag,
    /// Forwards so far.
    pub hops: u8,
    /// The message, postcard-encoded.
    pub payload: &'a [u8],
}

impl<'a> ShardTellView<'a> {
    /// Reads a [`ShardTell`]'s bytes borrowed, by hand: exactly what
    /// postcard's decoding of this view accepts (a varint length and the
    /// id's bytes, the tag's 4 bytes, the hop count, a varint length and
    /// the payload, nothing after; a varint of at most 10 bytes whose last
    /// byte holds at most the 64th bit, not necessarily the shortest), and
    /// nothing else (`parse_agrees_with_postcard` checks both on a million
    /// inputs). The inbox reads every entity tell with it: serde's visitor
    /// read the tag a byte at a time, about a tenth of the direct path.
    pub fn parse(body: &'a [u8]) -> Option<Self> {
        let (entity, rest) = take_bytes(body)?;
        let (tag, rest) = rest.split_first_chunk::<4>()?;
        let (&hops, rest) = rest.split_first()?;
        let (payload, rest) = take_bytes(rest)?;
        rest.is_empty().then_some(ShardTellView {
            entity,
            tag: Tag(*tag),
            hops,
            payload,
        })
    }

    /// The owned envelope, for the region's path; `None` if the id is not
    /// UTF-8 (as `ShardTell` would not decode).
    pub fn to_tell(&self) -> Option<ShardTell> {
        Some(ShardTell {
            entity: std::str::from_utf8(self.entity).ok()?.to_string(),
            tag: self.tag,
            hops: self.hops,
            payload: self.payload.to_vec(),
        })
    }
}

/// A postcard varint (at most 10 bytes, the last holding at most the
/// 64th bit) and what follows it.
fn take_varint(b: &[u8]) -> Option<(u64, &[u8])> {
    let mut out = 0u64;
    for i in 0..10 {
        let byte = *b.get(i)?;
        out |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            if i == 9 && byte > 1 {
                return None;
            }
            return Some((out, b.get(i + 1..)?));
        }
    }
    None
}

/// A postcard byte string (a varint length, then the bytes) and what
/// follows it.
fn take_bytes(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let (n, rest) = take_varint(b)?;
    let n = usize::try_from(n).ok()?;
    (n <= rest.len()).then(|| rest.split_at(n))
}

/// One tell of message type `M` for entity `entity`, as an entity
/// reference sends it to the owner's region: a remote type of its own
/// per message type (stable name [`ENTITY_TELL`], type id
/// [`entity_tell_id`] of `M`'s name), so that the message travels as
/// itself, not as bytes inside bytes. Against a [`ShardTell`] the frame
/// drops the tag (the frame's type id says it), the hop count (it is 0:
/// a region forwards a [`ShardTell`]) and the payload's length (`msg` is
/// the rest of the body); the sender encodes `msg` once,
/// straight into the frame, without first sizing it; the frame's schema
/// fingerprint is `EntityTell<M>`'s, which covers `M`'s shape; and the
/// owner's inbox finds the decoder by the frame's type (the same lookup
/// as any remote tell's), not by a tag. 4 bytes besides `msg` for the id
/// `e17` (a `ShardTell` takes 10).
///
/// A region forwarding an envelope to another region sends a
/// [`ShardTell`] (hops counted); a node takes both.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct EntityTell<M> {
    /// The entity id.
    pub entity: String,
    /// The message.
    pub msg: M,
}

/// The stable name every [`EntityTell`] type shares; each one's type id
/// is [`entity_tell_id`] of its message type's name.
pub const ENTITY_TELL: &str = "troupe.sharding.EntityTell.v1";

/// The type id of `EntityTell<M>` for the message type named `name`:
/// `type_id(ENTITY_TELL + "/" + name)`.
pub const fn entity_tell_id(name: &str) -> u64 {
    const PREFIX: u64 = troupe_remote::type_id("troupe.sharding.EntityTell.v1/");
    troupe_remote::type_id_extend(PREFIX, name)
}

impl<M: RemoteMessage> RemoteMessage for EntityTell<M> {
    const NAME: &'static str = ENTITY_TELL;
    const TYPE_ID: u64 = entity_tell_id(M::NAME);
}

/// An [`EntityTell`] read borrowed from its frame: the id's bytes (not
/// yet checked as UTF-8, as in [`ShardTellView`]) and the message's bytes
/// (the rest of the body; its decoder demands that it decodes to the
/// end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntityTellView<'a> {
    /// The entity id's bytes.
    pub entity: &'a [u8],
    /// The message's postcard bytes.
    pub msg: &'a [u8],
}

impl<'a> EntityTellView<'a> {
    /// Reads an [`EntityTell`]'s id off its body, by hand (a varint
    /// length and the id's bytes), and leaves the rest as the message's
    /// bytes. `None` if the body is shorter than the id.
    pub fn parse(body: &'a [u8]) -> Option<Self> {
        let (entity, msg) = take_bytes(body)?;
        Some(EntityTellView { entity, msg })
    }

    /// The [`ShardTell`] the region takes for it, its payload `msg`
    /// (tagged as `M`, no forwards yet); `None` if the id is not UTF-8
    /// (as an `EntityTell` would not decode).
    pub fn to_tell<M: RemoteMessage>(&self) -> Option<ShardTell> {
        Some(ShardTell {
            entity: std::str::from_utf8(self.entity).ok()?.to_string(),
            tag: Tag::of(M::TYPE_ID),
            hops: 0,
            payload: self.msg.to_vec(),
        })
    }
}

/// An [`EntityTell`] as the sender writes it: the id borrowed, the
/// message borrowed. It encodes to exactly the bytes of the
/// `EntityTell<M>` holding the same id and message (the same two fields
/// in order; the id as postcard writes a string, its length then its
/// bytes), so the message is encoded once, straight into the frame.
pub(crate) struct EntityTellOut<'a, M> {
    /// The entity id's bytes (a `str`'s).
    pub entity: &'a [u8],
    /// The message.
    pub msg: &'a M,
}

impl<M: Serialize> Serialize for EntityTellOut<'_, M> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut t = s.serialize_struct("EntityTell", 2)?;
        t.serialize_field("entity", &IdBytes(self.entity))?;
        t.serialize_field("msg", self.msg)?;
        t.end()
    }
}

impl<M: RemoteMessage> troupe_remote::EncodesAs<EntityTell<M>> for EntityTellOut<'_, M> {}

/// An id's bytes, written as one byte string: postcard writes it exactly
/// as the `str` it came from (length, then bytes).
struct IdBytes<'a>(&'a [u8]);

impl Serialize for IdBytes<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

/// One ask for entity `entity`; answered with a [`ShardReply`].
///
/// It carries its asker's deadline as the time left when it was sent
/// (`budget_ms`: a duration, since the nodes' clocks differ): a region
/// that holds it (in its buffer, or for its entity's stop) refuses it
/// once that time has passed, and forwards it with what is left, so no
/// one waits past the asker's deadline.
#[remote("troupe.sharding.Ask.v3", reply = ShardReply)]
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct ShardAsk {
    /// The entity id.
    pub entity: String,
    /// The type of the request in `payload`.
    pub tag: Tag,
    /// Forwards so far.
    pub hops: u8,
    /// How long the asker still waited when this envelope was sent, in
    /// milliseconds (rounded up, saturated at `u32::MAX`).
    pub budget_ms: u32,
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

/// Why an envelope was not delivered, or an ask got no reply. New
/// reasons go last: the variant's index is its wire form.
///
/// Not handled by the entity (safe to send again): `BadEnvelope`,
/// `UnknownType`, `Undecodable`, `Unavailable`, `Expired`, `TooManyHops`.
/// Unknown (the entity may have handled it): `Stopped`, `NoReply`,
/// `Timeout`.
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
    /// It waited in a region's buffer for an owner past the buffer
    /// timeout (or, for an ask, past its asker's deadline) and was never
    /// handed to its entity.
    Expired,
    /// It was forwarded [`MAX_HOPS`] times and the region it reached
    /// does not own its shard either (routing tables disagree); it was
    /// never handed to its entity.
    TooManyHops,
    /// A forwarded ask's reply did not come before its asker's deadline:
    /// the entity may have handled it.
    Timeout,
}

impl Refusal {
    /// The ask error a caller sees: `NoResponders` for every reason that
    /// means "not handled" ([`not_handled`](Self::not_handled)), so that
    /// one error tells a caller it may send again.
    pub fn to_ask_error(self) -> AskError {
        match self {
            // Never handed to the entity: "not handled".
            Refusal::Unavailable
            | Refusal::Expired
            | Refusal::TooManyHops
            | Refusal::BadEnvelope
            | Refusal::UnknownType
            | Refusal::Undecodable => AskError::NoResponders,
            Refusal::Stopped => AskError::ActorStopped,
            Refusal::NoReply => AskError::NoReply,
            Refusal::Timeout => AskError::Timeout,
        }
    }

    /// The refusal that stands for an ask error (a local one, or a
    /// forwarded ask's): a timeout stays a timeout, "nobody serves it"
    /// stays "not handled", anything else may have run.
    pub fn from_ask_error(e: AskError) -> Refusal {
        match e {
            AskError::ActorStopped => Refusal::Stopped,
            AskError::MailboxFull | AskError::NoResponders => Refusal::Unavailable,
            AskError::Timeout => Refusal::Timeout,
            _ => Refusal::NoReply,
        }
    }

    /// Whether the entity surely did not handle the envelope: sending it
    /// again cannot run it twice.
    pub fn not_handled(self) -> bool {
        !matches!(self, Refusal::Stopped | Refusal::NoReply | Refusal::Timeout)
    }
}

/// An ask's budget for `timeout`: its milliseconds, rounded up,
/// saturated at `u32::MAX`.
pub fn budget_ms(timeout: std::time::Duration) -> u32 {
    let ms = timeout.as_nanos().div_ceil(1_000_000);
    u32::try_from(ms).unwrap_or(u32::MAX)
}

/// Whether an envelope's id (its bytes) and hop count are acceptable.
pub fn check(entity: &[u8], hops: u8) -> bool {
    !entity.is_empty() && entity.len() <= MAX_ID_BYTES && hops <= MAX_HOPS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_hops_are_bounded() {
        assert!(check(b"user-42", 0));
        assert!(!check(b"", 0));
        assert!(check("x".repeat(MAX_ID_BYTES).as_bytes(), MAX_HOPS));
        assert!(!check("x".repeat(MAX_ID_BYTES + 1).as_bytes(), 0));
        assert!(!check(b"a", MAX_HOPS + 1));
    }

    #[test]
    fn the_borrowed_view_reads_the_owned_envelope() {
        let env = ShardTell {
            entity: "cart-7".into(),
            tag: Tag::of(u64::MAX - 3),
            hops: 2,
            payload: (0..=255).collect(),
        };
        let bytes = postcard::to_allocvec(&env).unwrap();
        let view: ShardTellView<'_> = troupe_remote::envelope::decode_body(&bytes).unwrap();
        assert_eq!(view.entity, b"cart-7");
        assert_eq!(view.tag, env.tag);
        assert_eq!(view.payload, &env.payload[..]);
        let back = view.to_tell().expect("a UTF-8 id");
        assert_eq!(postcard::to_allocvec(&back).unwrap(), bytes);
        for n in 0..bytes.len() {
            assert!(postcard::from_bytes::<ShardTellView<'_>>(&bytes[..n]).is_err());
        }
        // Trailing bytes are refused.
        let mut long = bytes.clone();
        long.push(0);
        assert!(troupe_remote::envelope::decode_body::<ShardTellView<'_>>(&long).is_err());
    }

    #[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
    struct Msg {
        n: u64,
        s: String,
        v: Vec<u16>,
    }

    #[remote("test.sharding.Msg")]
    #[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
    struct Named(u8);

    fn msgs() -> Vec<Msg> {
        vec![
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
            // 300+ bytes.
            Msg {
                n: 7,
                s: "x".repeat(300),
                v: (0..100).collect(),
            },
        ]
    }

    /// The sender's borrowed envelope encodes as the owned `EntityTell`,
    /// and the view reads back what went in: ids of 0 to 300 bytes (one-
    /// and two-byte lengths).
    #[test]
    fn the_sender_s_envelope_encodes_as_the_owned_one() {
        for (i, m) in msgs().into_iter().enumerate() {
            for id_len in [0, 1, 3, 127, 128, 300] {
                let owned = EntityTell {
                    entity: format!("u{i}").repeat(id_len)[..id_len].to_string(),
                    msg: m.clone(),
                };
                let out = EntityTellOut {
                    entity: owned.entity.as_bytes(),
                    msg: &m,
                };
                let bytes = postcard::to_allocvec(&out).unwrap();
                assert_eq!(bytes, postcard::to_allocvec(&owned).unwrap());
                let view = EntityTellView::parse(&bytes).unwrap();
                assert_eq!(view.entity, owned.entity.as_bytes());
                let back: Msg = troupe_remote::envelope::decode_body(view.msg).unwrap();
                assert_eq!(back, m);
                let tell = view.to_tell::<Named>().unwrap();
                assert_eq!(tell.tag, Tag::of(Named::TYPE_ID));
                assert_eq!((tell.entity, tell.hops), (owned.entity, 0));
                assert_eq!(tell.payload, postcard::to_allocvec(&m).unwrap());
            }
        }
        // Shorter than the id.
        for short in [&[][..], &[1], &[3, b'e', b'1'], &[0x80]] {
            assert_eq!(EntityTellView::parse(short), None, "{short:?}");
        }
        assert_eq!(
            EntityTellView::parse(&[1, b'e', 2]),
            Some(EntityTellView {
                entity: b"e",
                msg: &[2]
            })
        );
    }

    /// Each message type's `EntityTell` has a type id of its own: the
    /// stable id of the shared name, a slash and the message's name.
    #[test]
    fn an_entity_tell_s_type_id_is_its_message_s() {
        assert_eq!(
            EntityTell::<Named>::TYPE_ID,
            troupe_remote::type_id(&format!("{ENTITY_TELL}/test.sharding.Msg"))
        );
        assert_eq!(
            entity_tell_id(""),
            troupe_remote::type_id(&format!("{ENTITY_TELL}/"))
        );
        assert_ne!(entity_tell_id("a"), entity_tell_id("b"));
        assert_ne!(EntityTell::<Named>::TYPE_ID, ShardTell::TYPE_ID);
    }

    #[test]
    fn an_entity_tell_s_envelope_is_small() {
        let bytes = postcard::to_allocvec(&EntityTellOut {
            entity: b"e17",
            msg: &[7u8; 8],
        })
        .unwrap();
        // id 1 + 3.
        assert_eq!(bytes.len() - 8, 4);
    }

    /// The hand-written reader and postcard's decoding of the view agree
    /// on every input: well-formed envelopes (ids and payloads of 0 to 300
    /// bytes, one- and two-byte lengths), each truncated, extended and
    /// with a byte changed, long and non-shortest varints, and random
    /// bytes; a million inputs in all.
    #[test]
    fn parse_agrees_with_postcard() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let agree = |b: &[u8]| {
            let by_hand = ShardTellView::parse(b);
            let by_postcard = troupe_remote::envelope::decode_body::<ShardTellView<'_>>(b).ok();
            assert_eq!(by_hand, by_postcard, "{b:?}");
        };
        let mut inputs = 0;
        while inputs < 1_000_000 {
            let id_len = [0, 1, 3, 127, 128, 300][(next() % 6) as usize];
            let pay_len = [0, 1, 8, 127, 128, 300][(next() % 6) as usize];
            let env = ShardTell {
                entity: "x".repeat(id_len),
                tag: Tag::of(next()),
                hops: next() as u8,
                payload: (0..pay_len).map(|_| next() as u8).collect(),
            };
            let bytes = postcard::to_allocvec(&env).unwrap();
            agree(&bytes);
            for n in [0, 1, bytes.len() / 2, bytes.len().saturating_sub(1)] {
                agree(&bytes[..n]);
            }
            let mut longer = bytes.clone();
            longer.push(next() as u8);
            agree(&longer);
            for _ in 0..8 {
                let mut changed = bytes.clone();
                let at = (next() as usize) % changed.len();
                changed[at] = next() as u8;
                agree(&changed);
            }
            let random: Vec<u8> = (0..next() % 40).map(|_| next() as u8).collect();
            agree(&random);
            inputs += 15;
        }
        // Varints: not the shortest, ten bytes, an eleventh, bits past the
        // 64th (which would wrap to a length of 0).
        let zero_in_ten = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00];
        let wraps_to_zero = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02];
        for prefix in [
            &[0x80, 0x00][..],
            &[0x81, 0x80, 0x00],
            &zero_in_ten,
            &wraps_to_zero,
            &[0x80; 9],
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
            &[0x80; 10],
            &[0x80; 11],
        ] {
            let mut b = prefix.to_vec();
            b.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
            agree(&b);
            let mut id = vec![1, b'e', 1, 2, 3, 4, 0];
            id.extend_from_slice(prefix);
            agree(&id);
            id.push(0);
            agree(&id);
        }
    }

    #[test]
    fn a_tell_s_envelope_is_small() {
        let env = ShardTell {
            entity: "e17".into(),
            tag: Tag::of(troupe_remote::type_id("shop.cart.Add")),
            hops: 0,
            payload: vec![7; 8],
        };
        let bytes = postcard::to_allocvec(&env).unwrap();
        // id 1 + 3, tag 4, hops 1, payload length 1.
        assert_eq!(bytes.len() - env.payload.len(), 10);
        assert_eq!(&bytes[4..8], &env.tag.0);
    }

    #[test]
    fn tags_fold_the_whole_type_id() {
        assert_eq!(Tag::of(0x0000_0001_0000_0000), Tag(1u32.to_le_bytes()));
        assert_eq!(Tag::of(0x1234_5678), Tag(0x1234_5678u32.to_le_bytes()));
        assert_ne!(Tag::of(1), Tag::of(2));
        assert_ne!(Tag::of(1 << 32), Tag::of(2 << 32));
    }

    #[test]
    fn an_id_that_is_not_utf8_goes_nowhere() {
        let env = ShardTell {
            entity: "ab".into(),
            tag: Tag::of(7),
            hops: 0,
            payload: vec![1],
        };
        let mut bytes = postcard::to_allocvec(&env).unwrap();
        bytes[1] = 0xff;
        let view: ShardTellView<'_> = troupe_remote::envelope::decode_body(&bytes).unwrap();
        assert_eq!(view.entity, &[0xff, b'b']);
        assert!(view.to_tell().is_none());
        assert!(postcard::from_bytes::<ShardTell>(&bytes).is_err());
    }

    #[test]
    fn a_truncated_envelope_does_not_decode() {
        let env = ShardTell {
            entity: "e".into(),
            tag: Tag::of(7),
            hops: 0,
            payload: vec![1, 2, 3],
        };
        let bytes = postcard::to_allocvec(&env).unwrap();
        for n in 0..bytes.len() {
            assert!(postcard::from_bytes::<ShardTell>(&bytes[..n]).is_err());
        }
    }
}
