//! The asking side: one ask or ping frame sent as a request, its reply
//! decoded.
//!
//! Invariants:
//! - An ask ends with exactly one of: the reply, or an
//!   [`AskError`](troupe::AskError) saying why not; `Disconnected` at once
//!   when the transport's connection drops while the ask waits (a client
//!   would otherwise keep it waiting across a reconnect, until its timeout).
//! - A reply is accepted only as a single `Reply` frame echoing the ask's
//!   correlation (its schema fingerprint); anything else is counted in
//!   `bad_replies` and ends the ask with `NoReply`.
//! - A `SchemaMismatch` reply is recorded with both sides' names, as a
//!   received mismatch is.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use troupe::AskError;

use crate::protocol::core::{is_token, node_subject, Core};
use crate::protocol::envelope::{append_seal, decode_body, decode_frame, encode_frame};
use crate::protocol::envelope::{Header, Kind, Status, HEADER_LEN, SEAL_FRAME_LEN};
use crate::protocol::error::ask_error_of;
use crate::protocol::message::TypeEntry;
use crate::protocol::schema::{SchemaMismatch, SchemaSide};
use crate::protocol::stats::bump_and_log;
use crate::transport::RequestError;

impl Core {
    /// Sends one ask frame to `subject` as a request and decodes the reply.
    /// `ty`: the ask's type, named in a schema mismatch the peer reports.
    pub(crate) async fn request<R: serde::de::DeserializeOwned>(
        self: Arc<Self>,
        subject: Arc<str>,
        frame: Bytes,
        correlation: u64,
        timeout: Duration,
        ty: Option<TypeEntry>,
    ) -> Result<R, AskError> {
        let frame = match &self.key {
            None => frame,
            Some(key) => {
                let mut sealed = Vec::with_capacity(frame.len() + SEAL_FRAME_LEN);
                sealed.extend_from_slice(&frame);
                append_seal(&mut sealed, key, &subject);
                sealed.into()
            }
        };
        let mut link = self.link_state.clone();
        let sent = tokio::select! {
            biased;
            r = self.transport.request(&subject, frame, timeout) => r,
            _ = link.wait_for(|up| !*up) => return Err(AskError::Disconnected),
        };
        let payload = match sent {
            Ok(p) => p,
            Err(RequestError::TimedOut) => return Err(AskError::Timeout),
            Err(RequestError::NoResponders) => return Err(AskError::NoResponders),
            Err(RequestError::Disconnected) => return Err(AskError::Disconnected),
        };
        let bad = |why: &dyn std::fmt::Display| {
            if bump_and_log(&self.counters.bad_replies) {
                tracing::warn!(node = %self.name, error = %why, "a bad reply to an ask");
            }
            AskError::NoReply
        };
        match decode_frame(&payload, self.max_frame_body.max(payload.len())) {
            Ok((f, rest))
                if rest.is_empty() && f.kind == Kind::Reply && f.correlation == correlation =>
            {
                if f.status == Status::SchemaMismatch {
                    let peer = subject.rsplit_once(".node.").map_or("", |(_, n)| n);
                    self.peer_mismatch(peer, ty, correlation, decode_body(f.body).ok());
                }
                if f.status != Status::Ok {
                    return Err(ask_error_of(f.status));
                }
                decode_body(f.body).map_err(|e| bad(&e))
            }
            Ok(_) => Err(bad(&"not the reply frame of this ask")),
            Err(e) => Err(bad(&e)),
        }
    }

    /// Records the schema mismatch a peer reported for an ask of ours.
    fn peer_mismatch(
        &self,
        peer: &str,
        ty: Option<TypeEntry>,
        ours: u64,
        theirs: Option<(String, u64)>,
    ) {
        let entry = ty.unwrap_or(TypeEntry {
            id: 0,
            name: "?",
            rust_type: "?",
        });
        self.schema_mismatch(SchemaMismatch {
            name: entry.name.to_string(),
            ask: true,
            here: SchemaSide {
                node: self.name.to_string(),
                rust_type: Some(entry.rust_type.to_string()),
                fingerprint: ours,
            },
            there: SchemaSide {
                node: peer.to_string(),
                rust_type: theirs.as_ref().map(|t| t.0.clone()),
                fingerprint: theirs.map_or(0, |t| t.1),
            },
        });
    }

    /// Asks node `node` of this cluster whether it is there.
    pub(crate) async fn ping(
        self: Arc<Self>,
        node: String,
        timeout: Duration,
    ) -> Result<(), AskError> {
        if !is_token(&node) {
            return Err(AskError::NoResponders);
        }
        let subject = node_subject(&self.cluster, &node);
        let mut frame = Vec::with_capacity(HEADER_LEN);
        let _ = encode_frame(&mut frame, Header::new(Kind::Ping, 0, 0, 0), &(), 0);
        self.request::<()>(subject.into(), frame.into(), 0, timeout, None)
            .await
    }
}
