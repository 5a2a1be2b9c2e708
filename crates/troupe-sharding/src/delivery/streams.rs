//! The producer's book of streams: per entity, the messages sent and not
//! yet confirmed, in sequence order, and whether a delivery is out.
//!
//! States of one stream, in order:
//! 1. *Opened* on the first message to an entity with no stream: a new
//!    epoch (strictly above every epoch this producer gave before), next
//!    sequence number 1.
//! 2. *Queued*: [`Streams::push`] numbers the message and queues it.
//! 3. *Out*: [`Streams::take_batch`] hands out a delivery of the oldest
//!    unconfirmed messages (at most `batch`); one delivery per stream is
//!    out at a time, so deliveries of one stream leave in order and a
//!    retry always starts at the lowest unconfirmed message.
//! 4. *Confirmed*: [`Streams::confirm`] drops every message up to the
//!    confirmed number; *failed*: [`Streams::failed`] puts the stream back
//!    to wait for its retry.
//! 5. *Closed*: a stream with nothing unconfirmed and nothing out is
//!    dropped, so the book holds at most one stream per unconfirmed
//!    message (the window bounds it). A later message opens a new epoch;
//!    ghosts of the old one are then stale at the entity.
//!
//! Invariant: a stream's queue holds consecutive numbers; everything of
//! its epoch below the head was confirmed.

use std::collections::{HashMap, VecDeque};
use std::time::Instant;

/// One unconfirmed message.
pub(crate) struct Pending<M> {
    pub seq: u64,
    pub msg: M,
    /// When it was accepted (for the confirmation latency).
    pub at: Instant,
    /// Its key in the durable queue, if any.
    pub key: Option<String>,
    /// Restored from the durable queue (sent by an earlier run).
    pub restored: bool,
}

/// One stream (see the module docs).
pub(crate) struct Stream<M> {
    pub epoch: u64,
    pub next: u64,
    pub pending: VecDeque<Pending<M>>,
    /// A delivery is out (its reply or its timeout is awaited).
    pub out: bool,
    /// A retry is scheduled (the stream waits for its timer).
    pub waiting: bool,
    /// Consecutive failed deliveries (for the back-off).
    pub failures: u32,
}

/// The book of streams.
pub(crate) struct Streams<M> {
    streams: HashMap<String, Stream<M>>,
    /// The last epoch given.
    epoch: u64,
}

/// What a confirmation changed.
pub(crate) struct Confirmed<M> {
    /// The messages it confirmed, oldest first.
    pub done: Vec<Pending<M>>,
}

impl<M> Streams<M> {
    /// An empty book whose epochs start above `floor`.
    pub(crate) fn new(floor: u64) -> Self {
        Streams {
            streams: HashMap::new(),
            epoch: floor,
        }
    }

    /// A new epoch: the wall clock's microseconds, or one above the last
    /// one given, whichever is higher.
    fn new_epoch(&mut self) -> u64 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
            .unwrap_or(0);
        self.epoch = now.max(self.epoch.saturating_add(1));
        self.epoch
    }

    /// Numbers `msg` for `entity` (opening a stream if there is none):
    /// its epoch and sequence number.
    pub(crate) fn push(&mut self, entity: &str, msg: M, at: Instant) -> (u64, u64) {
        let (epoch, seq) = self.reserve(entity);
        self.push_reserved(entity, seq, msg, at, None);
        (epoch, seq)
    }

    /// Takes `entity`'s next number (opening a stream if there is none)
    /// without queuing anything yet: [`push_reserved`](Self::push_reserved)
    /// queues it, [`rewind`](Self::rewind) gives it (and those after it)
    /// back.
    pub(crate) fn reserve(&mut self, entity: &str) -> (u64, u64) {
        if !self.streams.contains_key(entity) {
            let epoch = self.new_epoch();
            self.streams.insert(
                entity.to_string(),
                Stream {
                    epoch,
                    next: 1,
                    pending: VecDeque::new(),
                    out: false,
                    waiting: false,
                    failures: 0,
                },
            );
        }
        let Some(s) = self.streams.get_mut(entity) else {
            return (0, 0);
        };
        let seq = s.next;
        s.next = s.next.saturating_add(1);
        (s.epoch, seq)
    }

    /// Queues `msg` under the number `seq` that [`reserve`](Self::reserve)
    /// gave (numbers are queued in the order reserved).
    pub(crate) fn push_reserved(
        &mut self,
        entity: &str,
        seq: u64,
        msg: M,
        at: Instant,
        key: Option<String>,
    ) {
        if let Some(s) = self.streams.get_mut(entity) {
            s.pending.push_back(Pending {
                seq,
                msg,
                at,
                key,
                restored: false,
            });
        }
    }

    /// Gives back the numbers from `seq` on (they were reserved and never
    /// queued); a stream left with nothing closes.
    pub(crate) fn rewind(&mut self, entity: &str, seq: u64) {
        if let Some(s) = self.streams.get_mut(entity) {
            s.next = s.next.min(seq);
            if s.pending.is_empty() && !s.out {
                self.streams.remove(entity);
            }
        }
    }

    /// `entity` answered `Stale` (it holds epoch `current` of this
    /// producer): the restored messages (of an older run, confirmed then)
    /// are done; the others move to a new epoch above `current`, numbered
    /// from 1: their (new epoch, new number, old key) for the queue.
    #[allow(clippy::type_complexity)]
    pub(crate) fn stale(
        &mut self,
        entity: &str,
        current: u64,
    ) -> (Vec<Pending<M>>, Vec<(u64, u64, String)>) {
        let floor = current.max(self.epoch);
        self.epoch = floor;
        let epoch = self.new_epoch();
        let Some(s) = self.streams.get_mut(entity) else {
            return (Vec::new(), Vec::new());
        };
        s.out = false;
        s.failures = 0;
        let (done, keep): (Vec<_>, Vec<_>) = s.pending.drain(..).partition(|p| p.restored);
        let mut moved = Vec::new();
        s.epoch = epoch;
        s.next = 1;
        for mut p in keep {
            p.seq = s.next;
            s.next += 1;
            if let Some(k) = p.key.take() {
                moved.push((epoch, p.seq, k));
            }
            s.pending.push_back(p);
        }
        if s.pending.is_empty() {
            self.streams.remove(entity);
        }
        (done, moved)
    }

    /// `entity`'s queued message `seq`.
    pub(crate) fn message(&self, entity: &str, seq: u64) -> Option<&M> {
        self.streams
            .get(entity)?
            .pending
            .iter()
            .find(|p| p.seq == seq)
            .map(|p| &p.msg)
    }

    /// Restores a stored message (a restart with the durable queue):
    /// messages of one entity must come in (epoch, seq) order. What is of
    /// an older epoch than the entity's newest is returned (it was
    /// confirmed before a newer stream began: delete it).
    pub(crate) fn restore(&mut self, entity: &str, epoch: u64, p: Pending<M>) -> Vec<Pending<M>> {
        self.epoch = self.epoch.max(epoch);
        let s = self
            .streams
            .entry(entity.to_string())
            .or_insert_with(|| Stream {
                epoch,
                next: p.seq,
                pending: VecDeque::new(),
                out: false,
                waiting: false,
                failures: 0,
            });
        if epoch < s.epoch {
            return vec![p];
        }
        let mut old = Vec::new();
        if epoch > s.epoch {
            // Older entries were confirmed before this epoch began.
            s.epoch = epoch;
            s.next = p.seq;
            old.extend(s.pending.drain(..));
        }
        s.next = p.seq.saturating_add(1).max(s.next);
        s.pending.push_back(p);
        old
    }

    /// Sets the key of `entity`'s message `seq` in the durable queue.
    pub(crate) fn set_key(&mut self, entity: &str, seq: u64, key: String) {
        if let Some(p) = self
            .streams
            .get_mut(entity)
            .and_then(|s| s.pending.iter_mut().rev().find(|p| p.seq == seq))
        {
            p.key = Some(key);
        }
    }

    /// Whether `entity`'s stream can send a delivery now.
    #[cfg(test)]
    pub(crate) fn ready(&self, entity: &str) -> bool {
        self.streams
            .get(entity)
            .is_some_and(|s| !s.out && !s.waiting && !s.pending.is_empty())
    }

    /// The entities whose streams can send now.
    pub(crate) fn all_ready(&self) -> Vec<String> {
        self.streams
            .iter()
            .filter(|(_, s)| !s.out && !s.waiting && !s.pending.is_empty())
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Hands out `entity`'s next delivery: (epoch, first, the messages,
    /// whether it is a retry). Marks the stream out.
    pub(crate) fn take_batch(
        &mut self,
        entity: &str,
        batch: usize,
    ) -> Option<(u64, u64, Vec<M>, bool)>
    where
        M: Clone,
    {
        let s = self.streams.get_mut(entity)?;
        if s.out || s.waiting {
            return None;
        }
        let first = s.pending.front()?.seq;
        let msgs: Vec<M> = s
            .pending
            .iter()
            .take(batch.max(1))
            .map(|p| p.msg.clone())
            .collect();
        s.out = true;
        Some((s.epoch, first, msgs, s.failures > 0))
    }

    /// `entity`'s delivery came back confirmed up to `upto`: drops those
    /// messages, closes the stream if nothing is left.
    pub(crate) fn confirm(&mut self, entity: &str, upto: u64) -> Confirmed<M> {
        let mut done = Vec::new();
        let Some(s) = self.streams.get_mut(entity) else {
            return Confirmed { done };
        };
        s.out = false;
        s.failures = 0;
        while s.pending.front().is_some_and(|p| p.seq <= upto) {
            if let Some(p) = s.pending.pop_front() {
                done.push(p);
            }
        }
        if s.pending.is_empty() {
            self.streams.remove(entity);
        }
        Confirmed { done }
    }

    /// `entity`'s delivery failed: the stream waits for its retry. The
    /// number of consecutive failures.
    pub(crate) fn failed(&mut self, entity: &str) -> u32 {
        match self.streams.get_mut(entity) {
            Some(s) => {
                s.out = false;
                s.waiting = true;
                s.failures = s.failures.saturating_add(1);
                s.failures
            }
            None => 0,
        }
    }

    /// `entity`'s retry timer fired.
    pub(crate) fn wake(&mut self, entity: &str) {
        if let Some(s) = self.streams.get_mut(entity) {
            s.waiting = false;
        }
    }

    /// Streams open now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.streams.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Steps 1-5 in order, on one stream.
    #[test]
    fn a_stream_sends_in_order_and_retries_from_its_head() {
        let now = Instant::now();
        let mut b = Streams::new(0);
        let (e, s1) = b.push("x", 'a', now);
        assert_eq!(s1, 1);
        assert_eq!(b.push("x", 'b', now), (e, 2));
        let (ep, first, msgs, retry) = b.take_batch("x", 10).expect("a batch");
        assert_eq!((ep, first, msgs, retry), (e, 1, vec!['a', 'b'], false));
        // One delivery out at a time.
        assert!(b.take_batch("x", 10).is_none());
        b.push("x", 'c', now);
        assert_eq!(b.failed("x"), 1);
        assert!(!b.ready("x"));
        b.wake("x");
        let (_, first, msgs, retry) = b.take_batch("x", 2).expect("the retry");
        assert_eq!((first, msgs, retry), (1, vec!['a', 'b'], true));
        assert_eq!(b.confirm("x", 1).done.len(), 1);
        let (_, first, msgs, retry) = b.take_batch("x", 10).expect("the rest");
        assert_eq!((first, msgs, retry), (2, vec!['b', 'c'], false));
        assert_eq!(b.confirm("x", 3).done.len(), 2);
        assert_eq!(b.len(), 0, "a stream with nothing unconfirmed closes");
        // The next message opens a newer epoch, from 1.
        let (e2, s) = b.push("x", 'd', now);
        assert!(e2 > e);
        assert_eq!(s, 1);
    }

    #[test]
    fn restored_messages_continue_their_stream() {
        let now = Instant::now();
        let p = |seq| Pending {
            seq,
            msg: seq,
            at: now,
            key: None,
            restored: true,
        };
        let mut b = Streams::new(0);
        assert_eq!(b.restore("x", 2, p(8)).len(), 0);
        // A newer epoch: the older one's leftovers are handed back for
        // deletion, as is anything older that comes after.
        assert_eq!(b.restore("x", 7, p(4)).len(), 1);
        assert!(b.restore("x", 7, p(5)).is_empty());
        assert_eq!(b.restore("x", 3, p(9)).len(), 1);
        assert_eq!(b.push("x", 6, now), (7, 6));
        let (_, first, msgs, _) = b.take_batch("x", 10).expect("a batch");
        assert_eq!((first, msgs), (4, vec![4, 5, 6]));
        // New streams get epochs above every restored one.
        assert!(b.push("y", 1, now).0 > 7);
        // Stale at the entity: the restored two are done, the new one
        // moves to an epoch above the entity's, as number 1.
        let (done, _) = b.stale("x", u64::MAX / 2);
        assert_eq!(done.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![4, 5]);
        let (e, first, msgs, _) = b.take_batch("x", 10).expect("the moved one");
        assert!(e > u64::MAX / 2);
        assert_eq!((first, msgs), (1, vec![6]));
    }

    #[test]
    fn a_rewound_number_is_given_again() {
        let now = Instant::now();
        let mut b = Streams::new(0);
        let (e, s1) = b.reserve("x");
        b.push_reserved("x", s1, 'a', now, None);
        let (_, s2) = b.reserve("x");
        let (_, s3) = b.reserve("x");
        assert_eq!((s2, s3), (2, 3));
        b.rewind("x", s2);
        assert_eq!(b.reserve("x"), (e, 2));
        // A stream with nothing queued closes when rewound.
        let (_, y1) = b.reserve("y");
        b.rewind("y", y1);
        assert_eq!(b.len(), 1);
    }
}
