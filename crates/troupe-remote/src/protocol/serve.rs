//! The ask server: requests to this node's inbox (asks and pings), and the
//! handlers an exposed actor installs.
//!
//! Invariants:
//! - Every request gets exactly one reply frame: the actor's reply, or a
//!   status saying why not (`UnknownTarget`, `UnknownType`, `BadFrame`,
//!   `SchemaMismatch` with this side's type and fingerprint, `Timeout`
//!   after the serve timeout, and the actor's own errors).
//! - A request holds exactly one frame (and, from a keyed sender read by a
//!   node without a key, its seal); anything else is `BadFrame`.
//! - The reply is awaited off the inbox loop, in a task, except for a
//!   short spin (`ask_spin`) that sends a fast actor's reply without the
//!   I/O thread sleeping and being woken. Only an ask served alone spins
//!   (`serving` was 0): while others wait, their frames and replies need
//!   the thread.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use crate::protocol::core::Core;
use crate::protocol::envelope::{decode_frame, encode_frame, Frame, Header, Kind, Status};
use crate::protocol::envelope::{HEADER_LEN, SEAL_FRAME_LEN};
use crate::protocol::message::TypeEntry;
use crate::protocol::otel;
use crate::protocol::portable::Encoding;
use crate::protocol::stats::bump;

/// What became of one remote tell: the answer of a tell handler
/// ([`Exposure::tell_with`](crate::Exposure::tell_with)), counted by the
/// node in [`NodeStats`](crate::NodeStats).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TellOutcome {
    /// Handed to the actor (counted `delivered`).
    Delivered,
    /// The body did not decode (counted `undecodable`, logged at a limited rate).
    Undecodable,
    /// The actor did not take it: full or stopped (counted `refused`).
    Refused,
}

/// Decodes a tell's body and hands it to the actor.
pub(crate) type TellFn = Box<dyn Fn(&[u8]) -> TellOutcome + Send + Sync>;
/// Decodes an ask, sends it to the actor; the future gives the reply frame.
pub(crate) type AskFn =
    Box<dyn Fn(&Frame<'_>, usize) -> Result<BoxFuture<'static, Vec<u8>>, Status> + Send + Sync>;

/// The handlers of one remote type of one exposed actor.
#[derive(Default)]
pub(crate) struct Handlers {
    pub tell: Option<TellFn>,
    pub ask: Option<AskFn>,
    /// The same, for CBOR bodies: set only for a portable type
    /// ([`Exposure::tell_portable`](crate::Exposure::tell_portable)).
    pub tell_portable: Option<TellFn>,
    pub ask_portable: Option<AskFn>,
    /// The type's shape, for the schema export: the message's, and an
    /// ask's reply's.
    pub describe: Option<fn() -> crate::protocol::schema::TypeShape>,
    pub describe_reply: Option<fn() -> crate::protocol::schema::TypeShape>,
    /// The type's stable name and Rust type, for a schema mismatch's report.
    pub entry: Option<TypeEntry>,
    /// The schema fingerprints of the type as told, and as asked (with its
    /// reply); [`schema::UNCHECKED`](crate::schema::UNCHECKED) when it
    /// could not be traced.
    pub tell_schema: u64,
    pub ask_schema: u64,
}

impl Handlers {
    /// The tell handler for a body in `encoding`, if the type takes one.
    #[inline]
    pub fn tell_for(&self, encoding: Encoding) -> Option<&TellFn> {
        match encoding {
            Encoding::Postcard => self.tell.as_ref(),
            Encoding::Cbor => self.tell_portable.as_ref(),
        }
    }

    /// The ask handler for a body in `encoding`, if the type takes one.
    pub fn ask_for(&self, encoding: Encoding) -> Option<&AskFn> {
        match encoding {
            Encoding::Postcard => self.ask.as_ref(),
            Encoding::Cbor => self.ask_portable.as_ref(),
        }
    }

    fn asks(&self, encoding: Encoding) -> bool {
        self.ask_for(encoding).is_some()
    }
}

/// A table by u64 id (an exposed actor's `type_id(name)`, a message's
/// `TYPE_ID`), read per received tell with ids that come off the network.
/// Its entries are made here only (`expose`); a keyed hash seeded at
/// random per process (foldhash), cheaper than std's SipHash, which cost
/// the inbox two hashes per tell.
pub(crate) type IdMap<V> = HashMap<u64, V, foldhash::fast::RandomState>;

/// An exposed actor: its name and its handlers by type id.
pub(crate) struct Target {
    pub name: String,
    pub by_type: IdMap<Handlers>,
}

/// A reply frame holding only a status.
pub(crate) fn status_frame(status: Status, t: u64, target: u64, corr: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + 1);
    let h = Header {
        kind: Kind::Reply,
        status,
        type_id: t,
        target,
        correlation: corr,
        encoding: Encoding::Postcard,
    };
    // An empty body in either encoding: `()` is no byte in postcard, and a
    // status reply to a CBOR ask carries no body either.
    let _ = encode_frame(&mut out, h, &(), usize::MAX);
    out
}

impl Core {
    pub(super) fn on_request(self: &Arc<Self>, payload: &[u8], reply: String) {
        let frame = match decode_frame(payload, self.max_frame_body) {
            Ok((frame, [])) => frame,
            // A keyed sender's seal, read by a node without a key.
            Ok((frame, rest)) if rest.len() == SEAL_FRAME_LEN && rest[1] == Kind::Seal as u8 => {
                frame
            }
            Ok(_) => {
                self.bad_frame(&"a request holding more than one frame", payload.len());
                return self.reply_status(reply, Status::BadFrame, 0, 0, 0);
            }
            Err(e) => {
                self.bad_frame(&e, payload.len());
                return self.reply_status(reply, Status::BadFrame, 0, 0, 0);
            }
        };
        bump(&self.counters.frames_received);
        let (t, target, corr) = (frame.type_id, frame.target, frame.correlation);
        match frame.kind {
            Kind::Ping => return self.reply_status(reply, Status::Ok, 0, 0, corr),
            Kind::Ask => {}
            _ => {
                self.bad_frame(
                    &format_args!("a {:?} frame as a request", frame.kind),
                    payload.len(),
                );
                return self.reply_status(reply, Status::BadFrame, t, target, corr);
            }
        }
        let started = {
            let targets = self.targets.read();
            match targets.get(&target) {
                None => {
                    bump(&self.counters.unknown_target);
                    Err(Status::UnknownTarget)
                }
                Some(tg) => match tg.by_type.get(&t).filter(|h| h.asks(frame.encoding)) {
                    None => {
                        bump(&self.counters.unknown_type);
                        Err(Status::UnknownType)
                    }
                    Some(h) if !self.schema_agrees(h, h.ask_schema, corr, None, true) => {
                        let rust_type = h.entry.map_or("?", |e| e.rust_type);
                        let mut out = Vec::with_capacity(HEADER_LEN + rust_type.len() + 10);
                        let head = Header {
                            kind: Kind::Reply,
                            status: Status::SchemaMismatch,
                            type_id: t,
                            target,
                            correlation: corr,
                            encoding: frame.encoding,
                        };
                        let ours = (rust_type, h.ask_schema);
                        let _ = encode_frame(&mut out, head, &ours, usize::MAX);
                        drop(targets);
                        return self.reply(reply, out);
                    }
                    Some(h) => match h.ask_for(frame.encoding) {
                        Some(ask) => {
                            // Feature `otel`: the asker's trace continues here.
                            let _span =
                                otel::receive_span(frame.trace.as_ref(), &self.name, &tg.name);
                            ask(&frame, self.max_frame_body)
                        }
                        None => Err(Status::UnknownType),
                    },
                },
            }
        };
        match started {
            Ok(mut fut) => {
                bump(&self.counters.asks_served);
                let limit = self.serve_timeout;
                let me = self.clone();
                // Spin only for an ask served alone: with others waiting,
                // the thread has their frames and replies to see to, and
                // each spin held all of them up (up to `ask_spin` per ask,
                // most of the I/O thread under 100 asks outstanding).
                let serving = Serving::start(self);
                let spin = if serving.alone {
                    self.ask_spin
                } else {
                    Duration::ZERO
                };
                let ready = spin_poll(&mut fut, spin);
                self.handle.spawn(async move {
                    let _serving = serving;
                    let bytes = match ready {
                        Some(bytes) => bytes,
                        None => match tokio::time::timeout(limit, fut).await {
                            Ok(bytes) => bytes,
                            Err(_) => status_frame(Status::Timeout, t, target, corr),
                        },
                    };
                    if let Err(e) = me.transport.publish(&reply, bytes.into()).await {
                        tracing::warn!(node = %me.name, error = %e, "could not send a reply");
                    }
                });
            }
            Err(status) => {
                if status == Status::BadFrame {
                    bump(&self.counters.undecodable);
                }
                self.reply_status(reply, status, t, target, corr)
            }
        }
    }

    pub(super) fn reply_status(
        self: &Arc<Self>,
        reply: String,
        status: Status,
        t: u64,
        target: u64,
        corr: u64,
    ) {
        self.reply(reply, status_frame(status, t, target, corr));
    }

    fn reply(self: &Arc<Self>, reply: String, bytes: Vec<u8>) {
        let me = self.clone();
        self.handle.spawn(async move {
            let _ = me.transport.publish(&reply, bytes.into()).await;
        });
    }
}

/// One served ask whose reply is not sent yet, counted in the node's
/// `serving` while it lives.
struct Serving {
    core: Arc<Core>,
    /// No other ask was being served when this one started.
    alone: bool,
}

impl Serving {
    fn start(core: &Arc<Core>) -> Serving {
        let before = core.serving.fetch_add(1, Ordering::Relaxed);
        Serving {
            core: core.clone(),
            alone: before == 0,
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.core.serving.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Polls a served ask's reply, spinning for at most `spin`: a fast actor's
/// reply is then sent without this thread going to sleep and being woken
/// (on a VM whose CPUs halt when idle, each wake-up costs tens of µs).
fn spin_poll(fut: &mut BoxFuture<'static, Vec<u8>>, spin: Duration) -> Option<Vec<u8>> {
    if spin.is_zero() {
        return None;
    }
    let waker = futures::task::noop_waker();
    let mut cx = std::task::Context::from_waker(&waker);
    let start = std::time::Instant::now();
    loop {
        if let std::task::Poll::Ready(bytes) = fut.as_mut().poll(&mut cx) {
            return Some(bytes);
        }
        if start.elapsed() >= spin {
            return None;
        }
        std::hint::spin_loop();
    }
}
