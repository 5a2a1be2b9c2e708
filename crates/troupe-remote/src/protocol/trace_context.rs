//! The trace context a tell or ask frame may carry: a W3C `traceparent`
//! and, where the sender has one, its `tracestate`.
//!
//! A frame carries one only when its header's flags byte (offset 3) has
//! [`FLAG_TRACE`]; then its body starts with this block, and the postcard
//! body follows it (the header's body length covers both):
//!
//! ```text
//! size field
//!  1   traceparent length, always 55
//! 55   traceparent: "00-" 32 hex "-" 16 hex "-" 2 hex (lowercase; W3C
//!      Trace Context level 1, version 00)
//!  2   tracestate length, u16 little-endian, at most 512
//!  n   tracestate: visible ASCII (0x20..=0x7e)
//! ```
//!
//! A frame without the flag pays nothing. The block is read as hostile
//! input: every length is checked against what is left, the traceparent's
//! format is validated (version 00, hex digits, trace id and parent id not
//! all zero) and the tracestate's bytes and length are bounded. A frame
//! whose block fails is refused as a bad frame
//! ([`FrameError::TraceContext`](crate::envelope::FrameError::TraceContext)),
//! counted and logged like any other.
//!
//! Which frames get a block is the `otel` feature's business
//! (`protocol/otel.rs`): the sender's span has a valid, sampled
//! OpenTelemetry context. Without that feature no frame carries one and a
//! received block is validated and then ignored.

/// The header flag (byte 3) saying the body starts with a trace block.
pub const FLAG_TRACE: u8 = 0x01;
/// The length of a version-00 `traceparent`.
pub const TRACEPARENT_LEN: usize = 55;
/// The longest `tracestate` a frame may carry (W3C: 32 members of at most
/// 256 bytes are allowed; vendors are asked to keep it under 512).
pub const MAX_TRACESTATE: usize = 512;

/// A frame's trace context, borrowed from the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceContext<'a> {
    /// The W3C `traceparent` (validated, 55 bytes).
    pub traceparent: &'a str,
    /// The W3C `tracestate`, empty if none.
    pub tracestate: &'a str,
}

impl TraceContext<'_> {
    /// The bytes of this block on the wire.
    pub fn wire_len(&self) -> usize {
        1 + TRACEPARENT_LEN + 2 + self.tracestate.len()
    }

    /// Appends the block; `None` (nothing written) if the context is not
    /// valid (a wrong traceparent, a tracestate too long or not visible
    /// ASCII).
    pub fn encode(&self, out: &mut Vec<u8>) -> Option<()> {
        if !valid_traceparent(self.traceparent.as_bytes())
            || !valid_tracestate(self.tracestate.as_bytes())
        {
            return None;
        }
        out.push(TRACEPARENT_LEN as u8);
        out.extend_from_slice(self.traceparent.as_bytes());
        out.extend_from_slice(&(self.tracestate.len() as u16).to_le_bytes());
        out.extend_from_slice(self.tracestate.as_bytes());
        Some(())
    }
}

/// Splits a flagged body into its trace block and the postcard body after
/// it; `None` if the block is malformed or runs past the body.
pub fn decode(body: &[u8]) -> Option<(TraceContext<'_>, &[u8])> {
    let (&tp_len, rest) = body.split_first()?;
    if tp_len as usize != TRACEPARENT_LEN || rest.len() < TRACEPARENT_LEN + 2 {
        return None;
    }
    let (tp, rest) = rest.split_at(TRACEPARENT_LEN);
    let ts_len = u16::from_le_bytes([rest[0], rest[1]]) as usize;
    let rest = &rest[2..];
    if ts_len > MAX_TRACESTATE || ts_len > rest.len() {
        return None;
    }
    let (ts, body) = rest.split_at(ts_len);
    if !valid_traceparent(tp) || !valid_tracestate(ts) {
        return None;
    }
    // Both are ASCII, checked above.
    let traceparent = std::str::from_utf8(tp).ok()?;
    let tracestate = std::str::from_utf8(ts).ok()?;
    Some((
        TraceContext {
            traceparent,
            tracestate,
        },
        body,
    ))
}

fn lower_hex(b: &[u8]) -> bool {
    b.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

/// Version 00: `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`,
/// neither id all zeros.
fn valid_traceparent(tp: &[u8]) -> bool {
    tp.len() == TRACEPARENT_LEN
        && &tp[..3] == b"00-"
        && tp[35] == b'-'
        && tp[52] == b'-'
        && lower_hex(&tp[3..35])
        && lower_hex(&tp[36..52])
        && lower_hex(&tp[53..55])
        && tp[3..35].iter().any(|&c| c != b'0')
        && tp[36..52].iter().any(|&c| c != b'0')
}

fn valid_tracestate(ts: &[u8]) -> bool {
    ts.len() <= MAX_TRACESTATE && ts.iter().all(|c| (0x20..=0x7e).contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn block(tp: &str, ts: &str) -> Vec<u8> {
        let mut v = vec![tp.len() as u8];
        v.extend_from_slice(tp.as_bytes());
        v.extend_from_slice(&(ts.len() as u16).to_le_bytes());
        v.extend_from_slice(ts.as_bytes());
        v
    }

    #[test]
    fn round_trip() {
        let tc = TraceContext {
            traceparent: TP,
            tracestate: "congo=t61rcWkgMzE",
        };
        let mut out = Vec::new();
        tc.encode(&mut out).unwrap();
        assert_eq!(out.len(), tc.wire_len());
        out.extend_from_slice(b"body");
        assert_eq!(decode(&out), Some((tc, &b"body"[..])));
    }

    #[test]
    fn refuses_malformed_blocks() {
        let bad_tps = [
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736+00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01x",
        ];
        for tp in bad_tps {
            assert_eq!(decode(&block(tp, "")), None, "{tp}");
        }
        assert_eq!(decode(&block(TP, "a\u{7f}b")), None);
        assert_eq!(decode(&block(TP, &"a".repeat(MAX_TRACESTATE + 1))), None);
        assert!(decode(&block(TP, &"a".repeat(MAX_TRACESTATE))).is_some());
        // Every truncation of a good block is refused.
        let good = block(TP, "k=v");
        for n in 0..good.len() {
            assert_eq!(decode(&good[..n]), None, "{n}");
        }
        // A tracestate length past the end.
        let mut long = block(TP, "");
        long[1 + TRACEPARENT_LEN] = 9;
        assert_eq!(decode(&long), None);
    }

    #[test]
    fn a_flagged_frame_carries_its_context_and_a_bad_block_is_refused() {
        use crate::envelope::{decode_frame, encode_frame_traced, FrameError, Header, Kind};
        let tc = TraceContext {
            traceparent: TP,
            tracestate: "",
        };
        let h = Header::new(Kind::Tell, 1, 2, 3);
        let mut out = Vec::new();
        encode_frame_traced(&mut out, h, Some(&tc), &42u32, 1024).unwrap();
        assert_eq!(out[3], FLAG_TRACE);
        let (f, rest) = decode_frame(&out, 1024).unwrap();
        assert!(rest.is_empty());
        assert_eq!(f.trace, Some(tc));
        assert_eq!(crate::envelope::decode_body::<u32>(f.body).unwrap(), 42);

        // Unflagged: no context, the same body.
        let mut plain = Vec::new();
        encode_frame_traced(&mut plain, h, None, &42u32, 1024).unwrap();
        assert_eq!(plain[3], 0);
        assert_eq!(decode_frame(&plain, 1024).unwrap().0.trace, None);

        // The flag on a frame without a block: refused, not misread.
        plain[3] = FLAG_TRACE;
        assert_eq!(decode_frame(&plain, 1024), Err(FrameError::TraceContext));

        // An invalid context is left out rather than sent.
        let bad = TraceContext {
            traceparent: "00-nothex",
            tracestate: "",
        };
        let mut out = Vec::new();
        encode_frame_traced(&mut out, h, Some(&bad), &42u32, 1024).unwrap();
        assert_eq!(out[3], 0);
        assert_eq!(decode_frame(&out, 1024).unwrap().0.trace, None);
    }
}
