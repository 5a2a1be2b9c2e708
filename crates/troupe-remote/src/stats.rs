//! Counters a node keeps about its traffic, bad input included.
//!
//! Every frame a node receives ends in exactly one of: `delivered`,
//! `asks_served`, `refused` (the local actor was full or stopped),
//! `unknown_target`, `unknown_type`, `undecodable`, or, for frames that could
//! not even be framed, `bad_frames` (once per NATS message, since nothing after
//! a bad length can be re-framed). The counters only grow; they are relaxed
//! atomics, read as a snapshot that is consistent per field, not across fields.
//! Bad input is logged (`tracing::warn!`) at its 1st, 2nd, 4th, 8th...
//! occurrence per counter, so a flood of garbage cannot flood the log.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

#[derive(Default, Debug)]
pub(crate) struct Counters {
    pub frames_sent: AtomicU64,
    pub batches_sent: AtomicU64,
    pub frames_lost: AtomicU64,
    pub frames_received: AtomicU64,
    pub delivered: AtomicU64,
    pub asks_served: AtomicU64,
    pub refused: AtomicU64,
    pub unknown_target: AtomicU64,
    pub unknown_type: AtomicU64,
    pub undecodable: AtomicU64,
    pub bad_frames: AtomicU64,
    pub bad_replies: AtomicU64,
}

pub(crate) fn bump(c: &AtomicU64) {
    c.fetch_add(1, Relaxed);
}

/// Counts one more and says whether this one should be logged: the 1st,
/// 2nd, 4th, 8th... so a peer flooding a node with bad frames cannot flood
/// its log too (the counter keeps the exact number).
pub(crate) fn bump_and_log(c: &AtomicU64) -> bool {
    (c.fetch_add(1, Relaxed) + 1).is_power_of_two()
}

/// A snapshot of a node's counters; see the module docs for what each counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// Frames handed to NATS (tells, in batches).
    pub frames_sent: u64,
    /// NATS messages those frames travelled in (`frames_sent / batches_sent`
    /// is the coalescing factor).
    pub batches_sent: u64,
    /// Frames whose publish failed after `tell` accepted them (connection
    /// closed under them); logged.
    pub frames_lost: u64,
    /// Frames received that could be framed.
    pub frames_received: u64,
    /// Tells handed to a local actor.
    pub delivered: u64,
    /// Asks handed to a local actor.
    pub asks_served: u64,
    /// Frames the local actor refused (full mailbox or stopped).
    pub refused: u64,
    /// Frames for a target not exposed here.
    pub unknown_target: u64,
    /// Frames whose type the target does not take.
    pub unknown_type: u64,
    /// Frames whose body did not decode to their type.
    pub undecodable: u64,
    /// NATS messages that held garbage: bad version, kind, or length.
    pub bad_frames: u64,
    /// Replies to this node's asks that did not decode.
    pub bad_replies: u64,
}

impl Counters {
    pub(crate) fn snapshot(&self) -> NodeStats {
        NodeStats {
            frames_sent: self.frames_sent.load(Relaxed),
            batches_sent: self.batches_sent.load(Relaxed),
            frames_lost: self.frames_lost.load(Relaxed),
            frames_received: self.frames_received.load(Relaxed),
            delivered: self.delivered.load(Relaxed),
            asks_served: self.asks_served.load(Relaxed),
            refused: self.refused.load(Relaxed),
            unknown_target: self.unknown_target.load(Relaxed),
            unknown_type: self.unknown_type.load(Relaxed),
            undecodable: self.undecodable.load(Relaxed),
            bad_frames: self.bad_frames.load(Relaxed),
            bad_replies: self.bad_replies.load(Relaxed),
        }
    }
}
