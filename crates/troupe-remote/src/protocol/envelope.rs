//! The wire format: frames of a fixed 32-byte header and a postcard body,
//! packed back to back into one NATS message.
//!
//! ```text
//! offset size field
//!  0      1   version      FORMAT_VERSION (2); anything else: the frame is refused
//!  1      1   kind         1 tell, 2 ask, 3 reply, 4 ping, 5 link, 6 ack, 7 seal,
//!                          8 receipts
//!  2      1   status       replies: Status as u8; 0 elsewhere
//!  3      1   flags        bit 0: the body starts with a trace block (see
//!                          `trace_context`); bit 1 (tells): the sender wants
//!                          this tell's receipt ([`FLAG_RECEIPT`]); bit 2:
//!                          the body is CBOR, not postcard (see
//!                          [`portable`](crate::portable)); other bits 0,
//!                          ignored on read
//!  4      4   body length  u32 little-endian, bytes following the header
//!  8      8   type id      u64 LE: RemoteMessage::TYPE_ID of the body;
//!                          link and ack: the sending node's epoch
//! 16      8   target id    u64 LE: type_id(exposed actor name); 0 for link and ack
//! 24      8   correlation  u64 LE: tell: the schema fingerprint of its type;
//!                          ask: that of its type and reply type, echoed by
//!                          the reply (0: not given, not checked; see
//!                          `schema`); link: the sequence number of the
//!                          batch's first tell; ack: `upto`
//! 32      n   body         [trace block, if flagged] then the postcard
//!                          (or, flag bit 2, CBOR) encoding of the
//!                          message (n = body length)
//! ```
//!
//! # Links: sequence numbers and acknowledgements
//!
//! Tells from node A to node B travel on a *link* (A's outbox for B). A
//! numbers its tells 1, 2, 3... per link, in the order `tell` accepted them,
//! which is the order they go on the wire. Every batch A publishes starts
//! with a **link frame** (kind 5): type id = A's *epoch* (a random u64
//! chosen each time A connects, so a restarted process under the same name
//! starts a new link), correlation = the sequence number of the batch's first
//! tell, body = A's node name (postcard string). The tells of one batch have
//! consecutive numbers, so a tell frame carries none. A batch holding only a
//! link frame is a *probe*: its "first" is the next number A will use, which
//! tells B how far A has counted even when the tells before it were lost.
//!
//! B keeps, per sender name, `{epoch, base, upto, received, dropped}` (see
//! `node.rs`) and periodically sends A an **ack frame** (kind 6) as a plain
//! publish to A's inbox: type id = the epoch acknowledged, correlation =
//! `upto` (the highest number B has seen on the link), body = postcard of
//! `(receiver name, base, received, dropped)` ([`LinkAck`]). From it A
//! accounts every number in `base..=upto`: delivered, refused by B, or lost
//! (the numbers B never saw); see `outbox.rs`.
//!
//! # Receipts
//!
//! A tell whose flags carry [`FLAG_RECEIPT`] asks B for its own outcome
//! (`RemoteRef::tell_confirmed`). B notes `(number, fate)` for each such
//! tell in the link's state and sends them, in number order, in a
//! **receipts frame** (kind 8) placed *right before* the ack frame in the
//! same message: type id = the epoch acknowledged, correlation = `total`
//! (receipts B has issued in this link state, so A can tell that a message
//! of receipts was lost), body = postcard of `(receiver name, base,
//! overflowed, [(number, fate)])` ([`Receipts`], fates: [`Fate`]). Only a
//! sender whose link frames carry [`FLAG_RECEIPT`] (it reads receipts
//! frames) is sent one, then with every ack. See
//! `receipts.rs` for how A resolves a receipt.
//!
//! Invariants:
//! - A NATS message on a node's subject carries one or more whole frames;
//!   an ask (a NATS request) carries exactly one ask frame, its reply exactly
//!   one reply frame. A batch of tells starts with exactly one link frame; an
//!   ack travels alone.
//! - The decoder never trusts a length: a frame whose body would run past the
//!   end of the message is `Truncated`, one longer than the limit is
//!   `Oversized`; after either the rest of the message cannot be re-framed
//!   and is dropped (counted once). Decoding never panics on any input (see
//!   the million-frame property test in `tests/decoder_fuzz.rs`).
//! - A body must decode to its type with no bytes left over.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::protocol::portable::{self, Encoding};
use crate::protocol::trace_context::{self, TraceContext, FLAG_TRACE};

/// The flag bit of a tell whose sender wants its receipt (see "Receipts"
/// in the module docs).
pub const FLAG_RECEIPT: u8 = 0x02;

/// The format version written in every frame's first byte.
pub const FORMAT_VERSION: u8 = 2;
/// The header's size in bytes.
pub const HEADER_LEN: usize = 32;

/// What a frame is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// A fire-and-forget message.
    Tell = 1,
    /// A request; travels alone as a NATS request with a reply inbox.
    Ask = 2,
    /// The answer to an ask, sent to the ask's reply inbox.
    Reply = 3,
    /// A liveness probe to a node (answered with an empty OK reply).
    Ping = 4,
    /// Opens every batch of tells: the sender's epoch and name and the
    /// sequence number of the batch's first tell (see the module docs).
    Link = 5,
    /// A receiver's account of one link, sent back to the sender's inbox.
    Ack = 6,
    /// The last frame of a message from a node with a cluster key: the
    /// HMAC-SHA256 of the subject and the frames before it (see
    /// [`auth`](crate::auth)).
    Seal = 7,
    /// The outcomes of tells that asked for a receipt, sent before the ack
    /// they belong to (see [`Receipts`]).
    Receipts = 8,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Tell,
            2 => Kind::Ask,
            3 => Kind::Reply,
            4 => Kind::Ping,
            5 => Kind::Link,
            6 => Kind::Ack,
            7 => Kind::Seal,
            8 => Kind::Receipts,
            _ => return None,
        })
    }
}

/// The outcome carried by a reply frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    /// The body is the reply.
    Ok = 0,
    /// No actor is exposed under the target id on that node.
    UnknownTarget = 1,
    /// The target does not take this type (or not as an ask).
    UnknownType = 2,
    /// The actor has stopped.
    Stopped = 3,
    /// The actor's bounded mailbox was full.
    MailboxFull = 4,
    /// The actor dropped the request without replying.
    NoReply = 5,
    /// The actor did not answer within the serving node's limit.
    Timeout = 6,
    /// The request frame could not be decoded.
    BadFrame = 7,
    /// The serving node's shape of the ask's type (or of its reply) differs
    /// from the asker's; the body is postcard of `(rust type, fingerprint)`
    /// of the serving side (see [`schema`](crate::schema)).
    SchemaMismatch = 8,
}

impl Status {
    fn from_u8(b: u8) -> Status {
        match b {
            0 => Status::Ok,
            1 => Status::UnknownTarget,
            2 => Status::UnknownType,
            3 => Status::Stopped,
            4 => Status::MailboxFull,
            5 => Status::NoReply,
            6 => Status::Timeout,
            8 => Status::SchemaMismatch,
            _ => Status::BadFrame,
        }
    }
}

/// A decoded frame header and its body, borrowed from the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// What it is.
    pub kind: Kind,
    /// Replies: the outcome.
    pub status: Status,
    /// The body's type id.
    pub type_id: u64,
    /// The target actor's id.
    pub target: u64,
    /// Asks and replies: the correlation id.
    pub correlation: u64,
    /// The body (after the trace block, if any), in `encoding`.
    pub body: &'a [u8],
    /// How the body is encoded (header flag bit 2).
    pub encoding: Encoding,
    /// The sender's trace context, if the frame carries one.
    pub trace: Option<TraceContext<'a>>,
    /// Tells: the sender wants this tell's receipt ([`FLAG_RECEIPT`]).
    pub receipt: bool,
}

/// Why bytes are not a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// Fewer than 32 bytes where a header should start.
    ShortHeader(usize),
    /// The version byte is not [`FORMAT_VERSION`].
    Version(u8),
    /// The kind byte is not a known [`Kind`].
    Kind(u8),
    /// The body length runs past the end of the message.
    Truncated {
        /// Body bytes the header promised.
        need: usize,
        /// Bytes left in the message.
        have: usize,
    },
    /// The body length is above the limit.
    Oversized(usize),
    /// The frame is flagged as carrying a trace context, and its trace
    /// block is malformed (see `trace_context`).
    TraceContext,
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::ShortHeader(n) => write!(f, "{n} bytes cannot hold a 32-byte frame header"),
            FrameError::Version(v) => write!(
                f,
                "frame format version {v}, this node speaks {FORMAT_VERSION}"
            ),
            FrameError::Kind(k) => write!(f, "unknown frame kind {k}"),
            FrameError::Truncated { need, have } => {
                write!(f, "truncated frame: body of {need} bytes, {have} left")
            }
            FrameError::Oversized(n) => {
                write!(f, "oversized frame: body of {n} bytes is above the limit")
            }
            FrameError::TraceContext => write!(f, "malformed trace context block"),
        }
    }
}

impl std::error::Error for FrameError {}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Decodes the frame at the start of `buf`; returns it and the bytes after
/// it. `max_body` bounds the body length.
pub fn decode_frame(buf: &[u8], max_body: usize) -> Result<(Frame<'_>, &[u8]), FrameError> {
    if buf.len() < HEADER_LEN {
        return Err(FrameError::ShortHeader(buf.len()));
    }
    if buf[0] != FORMAT_VERSION {
        return Err(FrameError::Version(buf[0]));
    }
    let kind = Kind::from_u8(buf[1]).ok_or(FrameError::Kind(buf[1]))?;
    let status = Status::from_u8(buf[2]);
    let len = u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]) as usize;
    if len > max_body {
        return Err(FrameError::Oversized(len));
    }
    let rest = &buf[HEADER_LEN..];
    if len > rest.len() {
        return Err(FrameError::Truncated {
            need: len,
            have: rest.len(),
        });
    }
    let (body, after) = rest.split_at(len);
    let (trace, body) = if buf[3] & FLAG_TRACE == 0 {
        (None, body)
    } else {
        let (tc, body) = trace_context::decode(body).ok_or(FrameError::TraceContext)?;
        (Some(tc), body)
    };
    Ok((
        Frame {
            kind,
            status,
            type_id: u64_at(buf, 8),
            target: u64_at(buf, 16),
            correlation: u64_at(buf, 24),
            body,
            encoding: Encoding::of_flags(buf[3]),
            trace,
            receipt: buf[3] & FLAG_RECEIPT != 0,
        },
        after,
    ))
}

/// Iterates the frames of one NATS message; stops at the first error
/// (which it yields), since nothing after a bad length can be re-framed.
pub struct Frames<'a> {
    rest: &'a [u8],
    max_body: usize,
    failed: bool,
}

impl<'a> Frames<'a> {
    /// The frames of `buf`, bodies at most `max_body` bytes.
    pub fn new(buf: &'a [u8], max_body: usize) -> Self {
        Frames {
            rest: buf,
            max_body,
            failed: false,
        }
    }
}

impl<'a> Iterator for Frames<'a> {
    type Item = Result<Frame<'a>, FrameError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.rest.is_empty() {
            return None;
        }
        match decode_frame(self.rest, self.max_body) {
            Ok((frame, rest)) => {
                self.rest = rest;
                Some(Ok(frame))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// Why a message could not be encoded.
#[derive(Debug)]
pub enum EncodeError {
    /// serde/postcard refused the value.
    Serialize(postcard::Error),
    /// serde/ciborium refused the value (a portable frame).
    Cbor(portable::CborError),
    /// The body is longer than the limit (the server's max payload less the header).
    TooLarge(usize),
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::Serialize(e) => write!(f, "the message cannot be serialized: {e}"),
            EncodeError::Cbor(e) => write!(f, "the message cannot be serialized: {e}"),
            EncodeError::TooLarge(n) => {
                write!(f, "a body of {n} bytes is above the server's max payload")
            }
        }
    }
}

/// A postcard flavor appending to a borrowed `Vec`, so a frame is written
/// straight into the batch it travels in (no intermediate buffer).
struct Append<'a>(&'a mut Vec<u8>);

/// The longest run [`Append`] copies without `memmove`.
const SHORT_RUN: usize = 16;

impl postcard::ser_flavors::Flavor for Append<'_> {
    type Output = ();

    #[inline]
    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        self.0.push(data);
        Ok(())
    }

    /// Runs of up to [`SHORT_RUN`] bytes (a varint, a short id or name)
    /// are pushed byte by byte: `extend_from_slice` of a length unknown at
    /// compile time calls `memmove`, which cost more than the copy (2-3
    /// calls per tell, 4-8% of the sending thread's samples).
    #[inline]
    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        if data.len() <= SHORT_RUN {
            self.0.reserve(data.len());
            for &b in data {
                self.0.push(b);
            }
        } else {
            self.0.extend_from_slice(data);
        }
        Ok(())
    }

    fn finalize(self) -> postcard::Result<()> {
        Ok(())
    }
}

/// The header fields of a frame being written.
#[derive(Clone, Copy, Debug)]
pub struct Header {
    /// What it is.
    pub kind: Kind,
    /// Replies: the outcome; `Status::Ok` elsewhere.
    pub status: Status,
    /// The body's type id.
    pub type_id: u64,
    /// The target actor's id.
    pub target: u64,
    /// Asks and replies: the correlation id; 0 for tells.
    pub correlation: u64,
    /// How the body is written: postcard, or CBOR for a portable type.
    pub encoding: Encoding,
}

impl Header {
    /// A header with status `Ok` (every frame but an error reply).
    pub fn new(kind: Kind, type_id: u64, target: u64, correlation: u64) -> Self {
        Header {
            kind,
            status: Status::Ok,
            type_id,
            target,
            correlation,
            encoding: Encoding::Postcard,
        }
    }

    /// This header, with its body written in `encoding`.
    pub fn encoded(mut self, encoding: Encoding) -> Self {
        self.encoding = encoding;
        self
    }
}

/// Appends one frame (header and body of `value`, in the header's
/// encoding) to `out`. On error `out` is left exactly as it was.
pub fn encode_frame<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    header: Header,
    value: &T,
    max_body: usize,
) -> Result<usize, EncodeError> {
    encode_frame_traced(out, header, None, value, max_body)
}

/// As [`encode_frame`], with the sender's trace context (if any, and if
/// valid: an invalid one is left out) written before the postcard body
/// and flagged in the header.
pub fn encode_frame_traced<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    header: Header,
    trace: Option<&TraceContext<'_>>,
    value: &T,
    max_body: usize,
) -> Result<usize, EncodeError> {
    let start = out.len();
    out.extend_from_slice(&[
        FORMAT_VERSION,
        header.kind as u8,
        header.status as u8,
        header.encoding.flags(),
        0,
        0,
        0,
        0,
    ]);
    out.extend_from_slice(&header.type_id.to_le_bytes());
    out.extend_from_slice(&header.target.to_le_bytes());
    out.extend_from_slice(&header.correlation.to_le_bytes());
    if let Some(tc) = trace {
        if tc.encode(out).is_some() {
            out[start + 3] |= FLAG_TRACE;
        }
    }
    // One predictable branch for a postcard type: all a type that is not
    // portable pays for the portable encoding.
    let written = match header.encoding {
        Encoding::Postcard => {
            postcard::serialize_with_flavor(value, Append(out)).map_err(EncodeError::Serialize)
        }
        Encoding::Cbor => portable::encode_cbor(value, out).map_err(EncodeError::Cbor),
    };
    if let Err(e) = written {
        out.truncate(start);
        return Err(e);
    }
    let body = out.len() - start - HEADER_LEN;
    if body > max_body || body > u32::MAX as usize {
        out.truncate(start);
        return Err(EncodeError::TooLarge(body));
    }
    out[start + 4..start + 8].copy_from_slice(&(body as u32).to_le_bytes());
    Ok(out.len() - start)
}

/// The bytes a link frame for node `name` takes: its header and its body.
pub fn link_frame_len(name: &str) -> usize {
    // postcard writes a string as a varint length (7 bits a byte), then its bytes.
    let len_bytes = (usize::BITS - (name.len() | 1).leading_zeros()).div_ceil(7) as usize;
    HEADER_LEN + len_bytes + name.len()
}

/// Appends the link frame that opens a batch: `epoch` of the sending node
/// `name`, `first` = the sequence number of the batch's first tell (or, for
/// a probe, the next one). Writes straight into `out`; allocates nothing
/// beyond `out`'s growth.
pub fn encode_link(out: &mut Vec<u8>, epoch: u64, first: u64, name: &str) -> usize {
    let h = Header::new(Kind::Link, epoch, 0, first);
    // A string always serializes, and the limit is not checked here: the
    // node bounds its name's length by the server's max payload.
    encode_frame(out, h, name, usize::MAX).unwrap_or(0)
}

/// What an ack frame says about one link (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkAck {
    /// The sender's epoch this account is for (header type id).
    pub epoch: u64,
    /// The highest sequence number the receiver has seen (header correlation).
    pub upto: u64,
    /// The receiving node's name.
    pub receiver: String,
    /// The first sequence number the receiver's state for this link saw.
    pub base: u64,
    /// Tell frames that arrived on the link since `base`.
    pub received: u64,
    /// Of those, the ones not delivered (refused, unknown target or type,
    /// undecodable).
    pub dropped: u64,
}

impl LinkAck {
    /// Appends this ack as one frame.
    pub fn encode(&self, out: &mut Vec<u8>) -> usize {
        let h = Header::new(Kind::Ack, self.epoch, 0, self.upto);
        let body = (
            self.receiver.as_str(),
            self.base,
            self.received,
            self.dropped,
        );
        encode_frame(out, h, &body, usize::MAX).unwrap_or(0)
    }

    /// Reads an ack from its frame.
    pub fn decode(frame: &Frame<'_>) -> Result<LinkAck, postcard::Error> {
        let (receiver, base, received, dropped) =
            decode_body::<(String, u64, u64, u64)>(frame.body)?;
        Ok(LinkAck {
            epoch: frame.type_id,
            upto: frame.correlation,
            receiver,
            base,
            received,
            dropped,
        })
    }
}

/// What became of one tell that asked for a receipt, as its receiver
/// reports it (a byte on the wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Fate {
    /// Handed to the actor's mailbox.
    Delivered = 0,
    /// The actor refused it (its bounded mailbox was full, or it stopped).
    Refused = 1,
    /// No actor is exposed under the target id there.
    UnknownTarget = 2,
    /// The actor does not take this type remotely.
    UnknownType = 3,
    /// The receiver's shape of the type differs from the sender's.
    SchemaMismatch = 4,
    /// The body did not decode to its type there.
    Undecodable = 5,
}

impl Fate {
    /// The fate a byte stands for; `None` for a byte no receiver writes.
    pub fn from_u8(b: u8) -> Option<Fate> {
        Some(match b {
            0 => Fate::Delivered,
            1 => Fate::Refused,
            2 => Fate::UnknownTarget,
            3 => Fate::UnknownType,
            4 => Fate::SchemaMismatch,
            5 => Fate::Undecodable,
            _ => return None,
        })
    }
}

/// A receipts frame (kind 8): the fates of the tells that asked for one,
/// in number order, since the receiver's last ack (see "Receipts" in the
/// module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receipts {
    /// The sender's epoch acknowledged.
    pub epoch: u64,
    /// Receipts the receiver issued in this link state, these included.
    pub total: u64,
    /// The receiver's name.
    pub receiver: String,
    /// The base of the receiver's link state (as in its [`LinkAck`]).
    pub base: u64,
    /// The receiver could not keep every receipt of this link state (more
    /// than it holds between two acks): the sender cannot tell a lost
    /// tell from one whose receipt was not kept.
    pub overflowed: bool,
    /// `(number, fate byte)`, ascending.
    pub list: Vec<(u64, u8)>,
}

impl Receipts {
    /// Appends the frame to `out`; the bytes written.
    pub fn encode(&self, out: &mut Vec<u8>) -> usize {
        let h = Header::new(Kind::Receipts, self.epoch, 0, self.total);
        let body = (
            self.receiver.as_str(),
            self.base,
            self.overflowed,
            &self.list,
        );
        encode_frame(out, h, &body, usize::MAX).unwrap_or(0)
    }

    /// Reads a receipts frame's body.
    pub fn decode(frame: &Frame<'_>) -> Result<Receipts, postcard::Error> {
        let (receiver, base, overflowed, list) =
            decode_body::<(String, u64, bool, Vec<(u64, u8)>)>(frame.body)?;
        Ok(Receipts {
            epoch: frame.type_id,
            total: frame.correlation,
            receiver,
            base,
            overflowed,
            list,
        })
    }
}

/// The bytes of a seal frame: a header and the 32-byte seal.
pub const SEAL_FRAME_LEN: usize = HEADER_LEN + crate::protocol::auth::SEAL_LEN;

/// A seal frame's header: kind 7, a 32-byte body, every other field 0.
fn seal_header() -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[0] = FORMAT_VERSION;
    h[1] = Kind::Seal as u8;
    h[4..8].copy_from_slice(&(crate::protocol::auth::SEAL_LEN as u32).to_le_bytes());
    h
}

/// Appends the seal frame of the frames in `out`, published on `subject`.
pub fn append_seal(out: &mut Vec<u8>, key: &crate::protocol::auth::ClusterKey, subject: &str) {
    let tag = key.tag(subject, out);
    out.extend_from_slice(&seal_header());
    out.extend_from_slice(&tag);
}

/// The frames of a sealed message if it ends with a good seal frame for
/// `subject`; `None` otherwise.
pub fn open_sealed<'a>(
    payload: &'a [u8],
    key: &crate::protocol::auth::ClusterKey,
    subject: &str,
) -> Option<&'a [u8]> {
    let at = payload.len().checked_sub(SEAL_FRAME_LEN)?;
    let (frames, seal) = payload.split_at(at);
    let (header, tag) = seal.split_at(HEADER_LEN);
    (header == seal_header() && key.verify(subject, frames, tag)).then_some(frames)
}

/// Decodes a body to `T`, refusing trailing bytes. `T` may borrow from the
/// body (a link frame's sender name decodes as `&str`, without allocating).
pub fn decode_body<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, postcard::Error> {
    let (value, rest) = postcard::take_from_bytes::<T>(body)?;
    if rest.is_empty() {
        Ok(value)
    } else {
        Err(postcard::Error::DeserializeUnexpectedEnd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame's body is postcard's encoding, whichever way `Append`
    /// copies a run: strings and byte strings of 0 to 40 bytes (either
    /// side of `SHORT_RUN`) and varints of every length.
    #[test]
    fn bodies_are_postcard_bytes_on_both_sides_of_the_short_run() {
        for len in 0..=40usize {
            let text: String = (0..len)
                .map(|i| char::from(b'a' + (i % 26) as u8))
                .collect();
            body_is_postcard(&text);
            let bytes: Vec<u8> = (0..len as u8).collect();
            body_is_postcard(&bytes);
            body_is_postcard(&(text.clone(), len as u64, text));
        }
        for shift in 0..64 {
            body_is_postcard(&(1u64 << shift));
            body_is_postcard(&((1u64 << shift) - 1));
        }
        body_is_postcard(&u64::MAX);
    }

    /// Appends a frame of `body` after 5 bytes already there: they are
    /// kept, and the frame's body is postcard's encoding of `body`.
    fn body_is_postcard<T: Serialize>(body: &T) {
        let h = Header::new(Kind::Tell, 1, 2, 3);
        let mut out = vec![0xee; 5];
        let n = encode_frame(&mut out, h, body, usize::MAX).unwrap();
        assert_eq!(n, out.len() - 5);
        assert_eq!(&out[..5], &[0xee; 5], "what was there is kept");
        assert_eq!(
            &out[5 + HEADER_LEN..],
            &postcard::to_allocvec(body).unwrap()[..]
        );
    }

    #[test]
    fn header_layout_is_as_documented() {
        let mut out = Vec::new();
        let header = Header::new(
            Kind::Ask,
            0x0102030405060708,
            0x1112131415161718,
            0x2122232425262728,
        );
        let n = encode_frame(&mut out, header, &(7u8, 300u16), 1 << 20).unwrap();
        assert_eq!(n, out.len());
        assert_eq!(&out[..4], &[2, 2, 0, 0]);
        assert_eq!(&out[4..8], &3u32.to_le_bytes()); // 7, varint(300) = 2 bytes
        assert_eq!(&out[8..16], &0x0102030405060708u64.to_le_bytes());
        assert_eq!(&out[16..24], &0x1112131415161718u64.to_le_bytes());
        assert_eq!(&out[24..32], &0x2122232425262728u64.to_le_bytes());
        let (frame, rest) = decode_frame(&out, 1 << 20).unwrap();
        assert!(rest.is_empty());
        assert_eq!(frame.kind, Kind::Ask);
        assert_eq!(decode_body::<(u8, u16)>(frame.body).unwrap(), (7, 300));
    }

    #[test]
    fn frames_walk_a_batch_and_stop_at_a_bad_length() {
        let h = Header::new(Kind::Tell, 1, 2, 0);
        let mut out = Vec::new();
        encode_frame(&mut out, h, &1u32, 100).unwrap();
        encode_frame(&mut out, h, &2u32, 100).unwrap();
        let got: Vec<u32> = Frames::new(&out, 100)
            .map(|f| decode_body(f.unwrap().body).unwrap())
            .collect();
        assert_eq!(got, vec![1, 2]);
        out.truncate(out.len() - 1);
        let results: Vec<_> = Frames::new(&out, 100).collect();
        assert_eq!(results.len(), 2);
        assert!(matches!(
            results[1],
            Err(FrameError::Truncated { need: 1, have: 0 })
        ));
    }

    #[test]
    fn too_large_leaves_the_buffer_unchanged() {
        let h = Header::new(Kind::Tell, 1, 2, 0);
        let mut out = vec![9u8; 5];
        let err = encode_frame(&mut out, h, &vec![0u8; 100], 50).unwrap_err();
        assert!(matches!(err, EncodeError::TooLarge(101)));
        assert_eq!(out, vec![9u8; 5]);
    }

    #[test]
    fn link_frame_layout_is_as_documented() {
        let mut out = vec![9u8];
        let n = encode_link(&mut out, 0xE90C, 77, "node-a");
        assert_eq!(n, link_frame_len("node-a"));
        assert_eq!(n, HEADER_LEN + 1 + 6);
        let f = &out[1..];
        assert_eq!(&f[..4], &[FORMAT_VERSION, 5, 0, 0]);
        assert_eq!(&f[4..8], &7u32.to_le_bytes());
        assert_eq!(&f[8..16], &0xE90Cu64.to_le_bytes()); // epoch
        assert_eq!(&f[16..24], &0u64.to_le_bytes()); // no target
        assert_eq!(&f[24..32], &77u64.to_le_bytes()); // first sequence number
        assert_eq!(&f[32..], b"\x06node-a");
        let (frame, rest) = decode_frame(f, 100).unwrap();
        assert!(rest.is_empty());
        assert_eq!(frame.kind, Kind::Link);
        assert_eq!(decode_body::<&str>(frame.body), Ok("node-a"));
    }

    #[test]
    fn an_ack_round_trips() {
        let ack = LinkAck {
            epoch: 5,
            upto: 1000,
            receiver: "b".into(),
            base: 3,
            received: 990,
            dropped: 4,
        };
        let mut out = Vec::new();
        ack.encode(&mut out);
        assert_eq!(out[1], Kind::Ack as u8);
        assert_eq!(&out[24..32], &1000u64.to_le_bytes());
        let (frame, rest) = decode_frame(&out, 100).unwrap();
        assert!(rest.is_empty());
        assert_eq!(LinkAck::decode(&frame).unwrap(), ack);
    }

    #[test]
    fn a_seal_frame_covers_the_subject_and_every_byte_before_it() {
        let key = crate::protocol::auth::ClusterKey::new(b"k");
        let mut out = Vec::new();
        encode_link(&mut out, 1, 1, "a");
        let plain = out.clone();
        append_seal(&mut out, &key, "s");
        assert_eq!(out.len(), plain.len() + SEAL_FRAME_LEN);
        assert_eq!(open_sealed(&out, &key, "s"), Some(&plain[..]));
        assert_eq!(open_sealed(&out, &key, "t"), None);
        assert_eq!(open_sealed(&plain, &key, "s"), None);
        let mut flipped = out.clone();
        flipped[9] ^= 1; // the epoch
        assert_eq!(open_sealed(&flipped, &key, "s"), None);
        let other = crate::protocol::auth::ClusterKey::new(b"other");
        assert_eq!(open_sealed(&out, &other, "s"), None);
        // A node without a key walks the frames: the seal is the last one.
        let kinds: Vec<Kind> = Frames::new(&out, 100).map(|f| f.unwrap().kind).collect();
        assert_eq!(kinds, vec![Kind::Link, Kind::Seal]);
    }

    #[test]
    fn trailing_bytes_in_a_body_are_refused() {
        assert!(decode_body::<u8>(&[1, 2]).is_err());
        assert_eq!(decode_body::<u8>(&[1]).unwrap(), 1);
    }
}
