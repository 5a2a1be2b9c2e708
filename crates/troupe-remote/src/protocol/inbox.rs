//! The inbox loop: every message to this node's inbox subject, opened,
//! framed and dispatched.
//!
//! A message with a reply subject is a request (an ask or a ping: see
//! `serve.rs`); one without is a batch: link frames, tells and acks.
//! Invariants:
//! - Nothing read off the wire panics the loop: every frame ends in one
//!   counter of [`NodeStats`](crate::NodeStats), bad ones are logged at a
//!   limited rate, and a panic in handling (a bug) is caught, counted in
//!   `panics`, and the loop goes on.
//! - With a cluster key, only messages sealed with it are read; a request
//!   without a good seal is answered `BadFrame`.
//! - A batch is read under one read lock of the target table; tells are
//!   handed to their actors with `try_tell`, so the loop never blocks on a
//!   mailbox. The actors a batch schedules are handed to their pools once,
//!   at its end (`troupe::batch_wakes`): a tell handler must not wait for
//!   an actor.
//! - A tell's fingerprint is checked against the handler's before its body
//!   is decoded (see [`schema`](crate::schema)).
//! - A batch counts its frames and deliveries and adds them to the node's
//!   counters once, at its end ([`BatchCounts`]).
//! - A batch looks up each tell's actor and handlers by `(target, type)`,
//!   and keeps the last pair found ([`Last`]): a run of tells to one actor
//!   and type (a sharding region's envelopes, a burst to one actor) pays
//!   for two hashed lookups once, not per frame. The table cannot change
//!   within a batch (its read lock is held throughout).
//! - A tell flagged for a receipt gets one, with its fate, in its link's
//!   state (see `links.rs`); a batch without such tells allocates nothing.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use futures::StreamExt;

use crate::protocol::core::{is_token, Core};
use crate::protocol::envelope::{decode_body, open_sealed, Fate, Frame, Frames, Kind, Status};
use crate::protocol::links::LinkRun;
use crate::protocol::message::TypeEntry;
use crate::protocol::otel;
use crate::protocol::schema::{self, SchemaMismatch, SchemaSide};
use crate::protocol::serve::{Handlers, IdMap, Target, TellOutcome};
use crate::protocol::stats::{bump, bump_and_log, Counters};
use crate::transport::{Message, Subscription};

impl Core {
    /// Reads the inbox until the subscription ends or the node is dropped.
    pub(super) async fn inbox_loop(weak: Weak<Core>, mut sub: Subscription) {
        while let Some(msg) = sub.next().await {
            let Some(core) = weak.upgrade() else { break };
            // A bug on some input must not make the node deaf: the message
            // is dropped, counted and logged, and the loop goes on. (The
            // decoders are total; this is the second line.)
            let caught =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| core.on_message(msg)));
            if caught.is_err() {
                bump(&core.counters.panics);
                tracing::error!(node = %core.name, "handling an inbox message panicked; dropped it");
            }
        }
    }

    fn on_message(self: &Arc<Self>, msg: Message) {
        let payload = match &self.key {
            None => &msg.payload[..],
            Some(key) => match open_sealed(&msg.payload, key, &msg.subject) {
                Some(frames) => frames,
                None => {
                    if bump_and_log(&self.counters.unauthenticated) {
                        let count = self.counters.unauthenticated.load(Ordering::Relaxed);
                        tracing::warn!(node = %self.name, bytes = msg.payload.len(), count, "dropped a message without a good seal (not from a node of this cluster)");
                    }
                    if let Some(reply) = msg.reply {
                        self.reply_status(reply, Status::BadFrame, 0, 0, 0);
                    }
                    return;
                }
            },
        };
        match msg.reply {
            Some(reply) => self.on_request(payload, reply),
            // The actors a batch finds idle are handed to their pools, and
            // the workers woken, once, at its end: not one injector push
            // and one wake-up per tell.
            None => troupe::batch_wakes(|| self.on_batch(payload)),
        }
    }

    pub(super) fn bad_frame(&self, err: &dyn std::fmt::Display, len: usize) {
        if bump_and_log(&self.counters.bad_frames) {
            let count = self.counters.bad_frames.load(Ordering::Relaxed);
            tracing::warn!(node = %self.name, bytes = len, error = %err, count, "dropped a bad frame");
        }
    }

    fn on_batch(&self, payload: &[u8]) {
        let targets = self.targets.read();
        let mut last: Option<Last<'_>> = None;
        let mut run: Option<LinkRun<'_>> = None;
        let mut counts = BatchCounts {
            counters: &self.counters,
            frames: 0,
            delivered: 0,
        };
        for frame in Frames::new(payload, self.max_frame_body) {
            let frame = match frame {
                Ok(f) => f,
                Err(e) => {
                    self.bad_frame(&e, payload.len());
                    break;
                }
            };
            counts.frames += 1;
            match frame.kind {
                Kind::Tell => {}
                Kind::Link => {
                    bump(&self.counters.link_frames);
                    if let Some(r) = run.take() {
                        self.end_run(r);
                    }
                    match decode_body::<&str>(frame.body) {
                        Ok(sender) if is_token(sender) && frame.correlation > 0 => {
                            run = Some(LinkRun {
                                sender,
                                epoch: frame.type_id,
                                first: frame.correlation,
                                tells: 0,
                                dropped: 0,
                                // A link frame flagged so: the sender reads
                                // receipts frames (see `receipts.rs`).
                                reads_receipts: frame.receipt,
                                receipts: Vec::new(),
                            })
                        }
                        _ => {
                            self.bad_frame(&"a link frame with a bad name or number", payload.len())
                        }
                    }
                    continue;
                }
                Kind::Ack => {
                    bump(&self.counters.link_frames);
                    self.on_ack(&frame, payload.len());
                    continue;
                }
                Kind::Receipts => {
                    bump(&self.counters.link_frames);
                    self.on_receipts(&frame, payload.len());
                    continue;
                }
                // A keyed sender's seal, read by a node without a key (a
                // keyed node checked and took it off before).
                Kind::Seal => continue,
                _ => {
                    self.bad_frame(
                        &format_args!("a {:?} frame outside a request", frame.kind),
                        payload.len(),
                    );
                    continue;
                }
            }
            let fate = self.deliver(&targets, &mut last, &frame, run.as_ref().map(|r| r.sender));
            let delivered = fate == Fate::Delivered;
            counts.delivered += u64::from(delivered);
            match run.as_mut() {
                Some(r) => {
                    if frame.receipt {
                        // `first >= 1` and `tells` counts this batch's
                        // frames, so the number cannot wrap in practice;
                        // saturating all the same (it came off the wire).
                        let seq = r.first.saturating_add(r.tells);
                        r.receipts.push((seq, fate as u8));
                    }
                    r.tells += 1;
                    r.dropped += u64::from(!delivered);
                }
                None => bump(&self.counters.unlinked),
            }
        }
        drop(targets);
        if let Some(r) = run {
            self.end_run(r);
        }
    }

    /// Whether a received tell's or ask's fingerprint `theirs` agrees with
    /// `ours`; if not, the mismatch is counted, logged (rate-limited) and
    /// kept. 0 on either side is not checked.
    pub(super) fn schema_agrees(
        &self,
        h: &Handlers,
        ours: u64,
        theirs: u64,
        sender: Option<&str>,
        ask: bool,
    ) -> bool {
        if ours == schema::UNCHECKED || theirs == schema::UNCHECKED || ours == theirs {
            return true;
        }
        let entry = h.entry.unwrap_or(TypeEntry {
            id: 0,
            name: "?",
            rust_type: "?",
        });
        self.schema_mismatch(SchemaMismatch {
            name: entry.name.to_string(),
            ask,
            here: SchemaSide {
                node: self.name.to_string(),
                rust_type: Some(entry.rust_type.to_string()),
                fingerprint: ours,
            },
            there: SchemaSide {
                node: sender.unwrap_or_default().to_string(),
                rust_type: None,
                fingerprint: theirs,
            },
        });
        false
    }

    /// Counts, logs (at the 1st, 2nd, 4th... occurrence) and keeps a
    /// schema mismatch.
    pub(super) fn schema_mismatch(&self, m: SchemaMismatch) {
        if bump_and_log(&self.counters.schema_mismatches) {
            let count = self.counters.schema_mismatches.load(Ordering::Relaxed);
            tracing::error!(node = %self.name, count, "{m}");
        }
        *self.last_mismatch.lock() = Some(m);
    }

    /// Hands one tell to its actor; says what became of it. `last`:
    /// the batch's last lookup, reused when this frame has its target and
    /// type.
    fn deliver<'t>(
        &self,
        targets: &'t IdMap<Target>,
        last: &mut Option<Last<'t>>,
        frame: &Frame<'_>,
        sender: Option<&str>,
    ) -> Fate {
        let (target, handlers) = match last {
            Some(l) if l.target_id == frame.target && l.type_id == frame.type_id => {
                (l.target, l.handlers)
            }
            _ => {
                let Some(target) = targets.get(&frame.target) else {
                    if bump_and_log(&self.counters.unknown_target) {
                        tracing::warn!(node = %self.name, target = format_args!("{:#018x}", frame.target), "tell for an actor not exposed here");
                    }
                    return Fate::UnknownTarget;
                };
                let handlers = target.by_type.get(&frame.type_id);
                *last = Some(Last {
                    target_id: frame.target,
                    type_id: frame.type_id,
                    target,
                    handlers,
                });
                (target, handlers)
            }
        };
        let tell = handlers.and_then(|h| h.tell_for(frame.encoding));
        if let (Some(h), Some(_)) = (handlers, tell) {
            if !self.schema_agrees(h, h.tell_schema, frame.correlation, sender, false) {
                return Fate::SchemaMismatch;
            }
        }
        let Some(tell) = tell else {
            if bump_and_log(&self.counters.unknown_type) {
                tracing::warn!(node = %self.name, actor = %target.name, type_id = format_args!("{:#018x}", frame.type_id), "tell of a type the actor does not take remotely");
            }
            return Fate::UnknownType;
        };
        // Feature `otel`: the remote sender's trace continues here.
        let _span = otel::receive_span(frame.trace.as_ref(), &self.name, &target.name);
        match tell(frame.body) {
            // Counted by the batch (`BatchCounts`).
            TellOutcome::Delivered => Fate::Delivered,
            TellOutcome::Refused => {
                bump(&self.counters.refused);
                tracing::debug!(node = %self.name, actor = %target.name, "the actor refused a remote tell (full or stopped)");
                Fate::Refused
            }
            TellOutcome::Undecodable => {
                if bump_and_log(&self.counters.undecodable) {
                    tracing::warn!(node = %self.name, actor = %target.name, "a remote tell's body did not decode to its type");
                }
                Fate::Undecodable
            }
        }
    }
}

/// A batch's received frames and delivered tells, added to the node's
/// `frames_received` and `delivered` once, when the batch ends (also
/// when a handler's panic unwinds it): two locked adds per batch instead
/// of two per frame, which were the inbox loop's hottest instructions.
/// A reader of the counters sees a batch's frames at once, after it.
struct BatchCounts<'c> {
    counters: &'c Counters,
    frames: u64,
    delivered: u64,
}

impl Drop for BatchCounts<'_> {
    fn drop(&mut self) {
        if self.frames > 0 {
            self.counters
                .frames_received
                .fetch_add(self.frames, Ordering::Relaxed);
        }
        if self.delivered > 0 {
            self.counters
                .delivered
                .fetch_add(self.delivered, Ordering::Relaxed);
        }
    }
}

/// A batch's last tell lookup: the actor and handlers found for
/// `(target_id, type_id)` (`handlers` `None`: the actor takes no such type).
struct Last<'t> {
    target_id: u64,
    type_id: u64,
    target: &'t Target,
    handlers: Option<&'t Handlers>,
}
