//! Waiting for room: a tell that an entity's bounded mailbox refused
//! because it was full waits in the buffer, and is tried again as soon as
//! the entity may have made room, not only on the next tick.
//!
//! The region cannot be told when a mailbox pops (the entity is the
//! user's actor), so it polls, cheaply: one timer at a time
//! (`RegionMsg::Room`), first after [`FIRST`], doubled after each try
//! that delivered nothing, back to [`FIRST`] after one that delivered
//! something, never longer than the tick. A try routes again only the
//! buffered envelopes of the entities whose mailbox refused (`full`), in
//! their order; the others keep their places in the buffer. So a bounded
//! mailbox of `n` takes about `n` envelopes per millisecond from the
//! buffer while its entity keeps up, where a retry per tick took `n` per
//! tick (and a slow machine let the rest expire).
//!
//! Invariants:
//! - An id is in `full` only while at least one of its envelopes was sent
//!   back to the buffer by its full mailbox since the last try; a stale
//!   id (the tick's retry delivered them) costs one empty try.
//! - At most one `Room` timer is pending (`room`); the region schedules
//!   it after handling a message, when `full` is not empty.

use std::collections::VecDeque;
use std::mem;
use std::sync::atomic::Ordering;
use std::time::Duration;

use troupe::{timer, Actor};

use super::pending::Pending;
use super::{Region, RegionMsg};

/// The first wait before a full mailbox is tried again.
pub(super) const FIRST: Duration = Duration::from_millis(1);

impl<A: Actor> Region<A> {
    /// `msg`'s entity is alive but its bounded mailbox is full: `msg`
    /// waits in the buffer, and the entity is tried again soon.
    pub(super) fn wait_for_room(&mut self, msg: Pending) {
        if !self.full.contains(msg.entity()) {
            self.full.insert(msg.entity().to_string());
        }
        self.buffer(msg);
    }

    /// After each message: the next try, if a mailbox refused and none is
    /// scheduled.
    pub(super) fn schedule_room(&mut self) {
        if self.full.is_empty() || self.room.is_some() {
            return;
        }
        if let Some(me) = &self.myself {
            self.room = Some(timer::send_delayed(me, self.room_delay, RegionMsg::Room));
        }
    }

    /// `RegionMsg::Room`: routes again the buffered envelopes of the
    /// entities whose mailbox refused, in order, and sets the next wait.
    pub(super) fn try_room(&mut self) {
        self.room = None;
        let full = mem::take(&mut self.full);
        if full.is_empty() {
            return;
        }
        let (mine, rest): (VecDeque<Pending>, VecDeque<Pending>) = self
            .pending
            .drain(..)
            .partition(|m| full.contains(m.entity()));
        self.pending = rest;
        for id in &full {
            self.buffered_ids.remove(id);
        }
        let tried = mine.len();
        let kept = self.pending.len();
        for m in mine {
            self.reroute(m);
        }
        let back = self.pending.len() - kept;
        self.room_delay = if back < tried {
            FIRST
        } else {
            (self.room_delay * 2).min(self.shared.config.tick)
        };
        self.shared
            .pending
            .store(self.pending.len(), Ordering::Release);
    }
}
