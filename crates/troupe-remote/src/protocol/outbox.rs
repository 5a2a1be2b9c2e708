//! Coalescing and the sender's half of a link: one outbox per peer node
//! gathers the frames of every tell bound there, numbers them, and one
//! flusher task publishes them as few NATS messages; the peer's acks are
//! accounted here.
//!
//! Protocol:
//! 1. `tell` locks the outbox and gives the tell the link's next sequence
//!    number (1, 2, 3...; under the lock, so number order is wire order). If
//!    the open batch is empty it first writes the batch's link frame (epoch,
//!    first number, node name; see `envelope`), then writes the tell's frame
//!    straight into the open batch. If the batch would pass `batch_bytes` it
//!    seals the frames before this tell as a finished batch, and the new open
//!    batch starts with its own link frame (first = this tell's number)
//!    followed by the tell. If no wake-up is pending it sets `signalled` and
//!    notifies the flusher (after unlocking).
//! 2. The flusher wakes, takes every sealed batch and the open one under the
//!    lock, clears `signalled`, unlocks, and publishes them in order.
//!    While it publishes, new tells fill a fresh batch: the longer NATS takes,
//!    the more a burst coalesces; a lone tell still goes out at once. A batch
//!    whose publish fails is counted in `frames_lost` and its numbers are
//!    recorded in the ledger as failed, so an ack never counts them again.
//! 3. The peer acks `(base, upto, received, dropped)` for the link; the
//!    [`Ledger`] turns each ack into deltas of confirmed, refused and lost
//!    tells. A link that has unconfirmed tells and no new tell since the last
//!    tick of the node's link task gets a *probe* (a batch holding only a link
//!    frame, first = the next number), so the peer learns how far the sender
//!    has counted and a tail lost in an outage is revealed; an unanswered
//!    probe doubles the gap to the next one, up to `MAX_PROBE_GAP` ticks.
//! 4. A tell that asked for a receipt (`push_confirmed`) is pushed as in
//!    step 1 with the receipt flag, and its waiter filed in the link's
//!    [`Book`] under the state lock; every link frame carries the flag too
//!    (this node reads receipts). The peer's receipts frames, and the acks
//!    after them, resolve the waiters (see `receipts.rs`).
//! 5. The peer declared down ([`Outbox::peer_down`]): every tell not yet
//!    accounted is counted lost (`frames_lost`, and `tells_lost_to_down`),
//!    and its waiters resolve `Lost`.
//!
//! Invariants:
//! - Frames leave in the order `tell` accepted them (one flusher, batches in
//!   order), so tells from one node to one actor arrive in order, and the
//!   tells of one batch have consecutive numbers starting at its link frame's
//!   `first`.
//! - A batch is never larger than `batch_bytes` (≤ the server's max payload)
//!   unless it holds a single tell, whose body the node bounds so that the
//!   tell and its link frame fit the max payload.
//! - `queued` counts accepted bytes not yet taken by the flusher; `tell`
//!   refuses with `Full` above `queue_bytes`, which bounds memory.
//! - No wake-up is lost: `signalled` is cleared under the lock in the same
//!   critical section that empties the outbox, and `Notify` keeps a permit
//!   when the flusher is not yet waiting.
//! - Accounting: every accepted tell (number `1..next_seq`) is in exactly one
//!   of the ledger's confirmed, refused, lost, failed, or else unconfirmed
//!   (the gauge `next_seq - 1 - accounted`). The ledger's lock is never held
//!   while taking the state's, nor the other way round; the book's is taken
//!   under the state's (to file a waiter before its tell can be acked),
//!   never the other way round, and never with the ledger's.
//! - A plain tell pays nothing for receipts: one flag byte written into a
//!   link frame, no lock or allocation more.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::Notify;

use crate::protocol::auth::ClusterKey;
use crate::protocol::envelope::{
    append_seal, encode_frame_traced, encode_link, link_frame_len, EncodeError, Header, LinkAck,
    Receipts, FLAG_RECEIPT, SEAL_FRAME_LEN,
};
use crate::protocol::ledger::Ledger;
use crate::protocol::otel;
use crate::protocol::receipts::{Book, Outcome};
use crate::protocol::stats::Counters;
use crate::protocol::trace_context::TraceContext;
use crate::transport::Transport;

/// A finished batch: its bytes, the number of its first tell, how many tells.
struct Batch {
    bytes: Vec<u8>,
    first: u64,
    tells: u64,
}

struct State {
    open: Vec<u8>,
    open_tells: u64,
    /// The number of the open batch's first tell (as written in its link frame).
    open_first: u64,
    sealed: Vec<Batch>,
    queued: usize,
    signalled: bool,
    closed: bool,
    /// The flusher holds batches it has not finished publishing.
    publishing: bool,
    /// The number the next accepted tell gets; `next_seq - 1` were accepted.
    next_seq: u64,
    /// A tell was accepted since the link task's last tick.
    pushed: bool,
}

/// Why an outbox refused a frame.
pub(crate) enum Refusal {
    Closed,
    Full,
    Encode(EncodeError),
}

pub(crate) struct Outbox {
    subject: Arc<str>,
    /// This node's epoch and name, written in every link frame.
    epoch: u64,
    node: Arc<str>,
    link_len: usize,
    batch_bytes: usize,
    queue_bytes: usize,
    state: Mutex<State>,
    ledger: Mutex<Ledger>,
    /// The receipts this link waits for (see `receipts.rs`).
    book: Mutex<Book>,
    notify: Notify,
    /// Seals every batch, when the node has a cluster key (the node keeps
    /// `batch_bytes` a seal frame short of the max payload).
    key: Option<ClusterKey>,
}

impl Outbox {
    pub(crate) fn new(
        subject: Arc<str>,
        epoch: u64,
        node: Arc<str>,
        batch_bytes: usize,
        queue_bytes: usize,
        key: Option<ClusterKey>,
        counters: Arc<Counters>,
    ) -> Self {
        Outbox {
            subject,
            epoch,
            link_len: link_frame_len(&node),
            node,
            batch_bytes,
            queue_bytes,
            state: Mutex::new(State {
                open: Vec::new(),
                open_tells: 0,
                open_first: 1,
                sealed: Vec::new(),
                queued: 0,
                signalled: false,
                closed: false,
                publishing: false,
                next_seq: 1,
                pushed: false,
            }),
            ledger: Mutex::new(Ledger::default()),
            book: Mutex::new(Book::new(counters)),
            notify: Notify::new(),
            key,
        }
    }

    pub(crate) fn subject(&self) -> &Arc<str> {
        &self.subject
    }

    /// Appends one tell frame of `value`, giving it the link's next number
    /// (and, feature `otel`, the caller's trace context: `protocol::otel`).
    pub(crate) fn push<T: Serialize>(
        &self,
        header: Header,
        value: &T,
        max_body: usize,
    ) -> Result<(), Refusal> {
        otel::with_outgoing(|trace| {
            self.push_traced(header, trace, value, max_body, None)
                .map(|_| ())
        })
    }

    /// As [`push`](Self::push), for a tell that asks for its receipt: the
    /// waiter, resolved by the peer's receipts, acks, or `deadline` (see
    /// `receipts.rs`). `Full` also when the link holds
    /// [`MAX_WAITING`](crate::protocol::receipts::MAX_WAITING) waiters.
    pub(crate) fn push_confirmed<T: Serialize>(
        &self,
        header: Header,
        value: &T,
        max_body: usize,
        deadline: std::time::Instant,
    ) -> Result<oneshot::Receiver<Outcome>, Refusal> {
        otel::with_outgoing(|trace| {
            self.push_traced(header, trace, value, max_body, Some(deadline))
        })
        .map(|rx| rx.unwrap_or_else(|| oneshot::channel().1))
    }

    fn push_traced<T: Serialize>(
        &self,
        header: Header,
        trace: Option<&TraceContext<'_>>,
        value: &T,
        max_body: usize,
        receipt: Option<std::time::Instant>,
    ) -> Result<Option<oneshot::Receiver<Outcome>>, Refusal> {
        let mut st = self.state.lock();
        if st.closed {
            return Err(Refusal::Closed);
        }
        if st.queued >= self.queue_bytes {
            return Err(Refusal::Full);
        }
        // Under the state lock, so no other tell takes the room.
        let mut book = match receipt {
            Some(_) => {
                let book = self.book.lock();
                if !book.has_room() {
                    return Err(Refusal::Full);
                }
                Some(book)
            }
            None => None,
        };
        let seq = st.next_seq;
        let start = st.open.len();
        let mut link = 0;
        if start == 0 {
            link = self.link(&mut st.open, seq);
            st.open_first = seq;
        }
        let frame_start = st.open.len();
        let n = match encode_frame_traced(&mut st.open, header, trace, value, max_body) {
            Ok(n) => n,
            Err(e) => {
                st.open.truncate(start);
                return Err(Refusal::Encode(e));
            }
        };
        if book.is_some() {
            st.open[frame_start + 3] |= FLAG_RECEIPT;
        }
        if st.open_tells > 0 && st.open.len() > self.batch_bytes {
            // Seal the tells before this one; this tell opens the next
            // batch, behind a link frame of its own.
            let mut next = Vec::with_capacity(self.batch_bytes.max(self.link_len + n));
            link = self.link(&mut next, seq);
            next.extend_from_slice(&st.open[frame_start..]);
            st.open.truncate(frame_start);
            let bytes = std::mem::replace(&mut st.open, next);
            let tells = std::mem::replace(&mut st.open_tells, 0);
            let first = std::mem::replace(&mut st.open_first, seq);
            st.sealed.push(Batch {
                bytes,
                first,
                tells,
            });
        }
        st.open_tells += 1;
        st.next_seq = seq + 1;
        st.pushed = true;
        st.queued += n + link;
        let wake = !st.signalled;
        st.signalled = true;
        let rx = match (book.as_mut(), receipt) {
            (Some(book), Some(deadline)) => Some(book.wait(seq, deadline)),
            _ => None,
        };
        drop(book);
        drop(st);
        if wake {
            self.notify.notify_one();
        }
        Ok(rx)
    }

    /// Writes a link frame for a batch whose first number is `first`,
    /// flagged: this node reads receipts frames.
    fn link(&self, out: &mut Vec<u8>, first: u64) -> usize {
        let start = out.len();
        let n = encode_link(out, self.epoch, first, &self.node);
        if n > 0 {
            out[start + 3] |= FLAG_RECEIPT;
        }
        n
    }

    /// Queues a probe (a batch holding only a link frame whose first is the
    /// next number) unless a batch is already open, which carries a link
    /// frame of its own. Returns whether it queued one.
    pub(crate) fn push_probe(&self) -> bool {
        let mut st = self.state.lock();
        if st.closed || !st.open.is_empty() {
            return false;
        }
        let seq = st.next_seq;
        st.open_first = seq;
        let n = self.link(&mut st.open, seq);
        st.queued += n;
        let wake = !st.signalled;
        st.signalled = true;
        drop(st);
        if wake {
            self.notify.notify_one();
        }
        true
    }

    /// Whether frames wait for the flusher.
    pub(crate) fn pending(&self) -> bool {
        let st = self.state.lock();
        st.queued > 0 || st.publishing
    }

    /// Tells accepted so far on this link.
    fn accepted(&self) -> u64 {
        self.state.lock().next_seq - 1
    }

    /// Tells accepted and not yet accounted (confirmed, refused, lost or failed).
    pub(crate) fn unconfirmed(&self) -> u64 {
        let accepted = self.accepted();
        self.ledger.lock().unconfirmed(accepted)
    }

    /// The link task's tick: whether this link wants a probe now. It does
    /// when tells are unconfirmed and none was accepted since the last tick
    /// (a new batch would carry a link frame anyway), spaced out while the
    /// peer does not answer.
    pub(crate) fn wants_probe(&self) -> bool {
        let (pushed, accepted) = {
            let mut st = self.state.lock();
            (std::mem::take(&mut st.pushed), st.next_seq - 1)
        };
        self.ledger.lock().wants_probe(pushed, accepted)
    }

    /// Accounts the peer's ack; pushes the deltas into the node's counters.
    pub(crate) fn on_ack(&self, ack: &LinkAck, counters: &Counters) {
        let accepted = self.accepted();
        let result = self.ledger.lock().on_ack(ack, accepted);
        let d = match result {
            Ok(d) => d,
            Err(why) => {
                tracing::debug!(peer = %ack.receiver, ?why, ?ack, "ignored a link ack");
                return;
            }
        };
        counters.tells_confirmed.fetch_add(d.confirmed, Relaxed);
        counters.tells_refused_by_peer.fetch_add(d.refused, Relaxed);
        counters.frames_lost.fetch_add(d.lost, Relaxed);
        if d.hole > 0 {
            tracing::warn!(
                peer = %ack.receiver,
                tells = d.hole,
                base = ack.base,
                "the peer's link state starts after tells it never confirmed (it restarted, or they were lost): counted lost"
            );
        }
        if d.lost > d.hole {
            tracing::warn!(peer = %ack.receiver, tells = d.lost - d.hole, upto = ack.upto, "the peer's ack reveals tells lost in transit");
        }
        if d.late > 0 {
            tracing::warn!(peer = %ack.receiver, tells = d.late, "tells already counted lost arrived late");
        }
        // After the counters: a caller woken by its receipt sees them.
        self.book.lock().on_ack(ack);
    }

    /// Reads a receipts frame from the peer (before the ack it precedes).
    pub(crate) fn on_receipts(&self, rc: &Receipts) {
        let accepted = self.accepted();
        match self.book.lock().on_receipts(rc, accepted) {
            Ok(_) => {}
            Err(()) => {
                tracing::debug!(peer = %rc.receiver, base = rc.base, "ignored a receipts frame with impossible numbers")
            }
        }
    }

    /// The link task's tick: resolves the receipts past their deadline.
    pub(crate) fn expire_receipts(&self, now: std::time::Instant) {
        let mut book = self.book.lock();
        if book.waiting() > 0 {
            book.expire(now);
        }
    }

    /// Receipts this link waits for.
    pub(crate) fn receipts_waiting(&self) -> usize {
        self.book.lock().waiting()
    }

    /// The peer was declared down: every tell accepted and not yet
    /// accounted is counted lost, and its receipt says so. Returns how many.
    pub(crate) fn peer_down(&self, counters: &Counters) -> u64 {
        let accepted = self.accepted();
        let lost = self.ledger.lock().declare_down(accepted);
        counters.frames_lost.fetch_add(lost, Relaxed);
        counters.tells_lost_to_down.fetch_add(lost, Relaxed);
        self.book.lock().down();
        lost
    }

    /// Refuses further frames; the flusher sends what is queued and ends.
    pub(crate) fn close(&self) {
        self.state.lock().closed = true;
        self.notify.notify_one();
    }

    /// The flusher task: publishes batches until the outbox is closed and empty.
    pub(crate) async fn flusher(
        self: Arc<Self>,
        transport: Arc<dyn Transport>,
        counters: Arc<Counters>,
    ) {
        loop {
            self.notify.notified().await;
            let (batches, closed) = {
                let mut st = self.state.lock();
                st.signalled = false;
                let mut batches = std::mem::take(&mut st.sealed);
                if !st.open.is_empty() {
                    let cap = st.open.len().min(self.batch_bytes);
                    let bytes = std::mem::replace(&mut st.open, Vec::with_capacity(cap));
                    batches.push(Batch {
                        bytes,
                        first: st.open_first,
                        tells: std::mem::replace(&mut st.open_tells, 0),
                    });
                }
                st.queued = 0;
                st.publishing = true;
                (batches, st.closed)
            };
            for Batch {
                mut bytes,
                first,
                tells,
            } in batches
            {
                if let Some(key) = &self.key {
                    bytes.reserve_exact(SEAL_FRAME_LEN);
                    append_seal(&mut bytes, key, &self.subject);
                }
                match transport.publish(&self.subject, bytes.into()).await {
                    Ok(()) if tells == 0 => {
                        counters.probes_sent.fetch_add(1, Relaxed);
                    }
                    Ok(()) => {
                        counters.frames_sent.fetch_add(tells, Relaxed);
                        counters.batches_sent.fetch_add(1, Relaxed);
                    }
                    Err(_) if tells == 0 => {}
                    Err(e) => {
                        // Recorded before the next batch goes out, so no ack
                        // revealing these numbers can be accounted first.
                        self.ledger.lock().record_failed(first, tells);
                        counters.frames_lost.fetch_add(tells, Relaxed);
                        self.book.lock().failed(first, tells);
                        tracing::warn!(subject = %self.subject, frames = tells, error = %e, "lost a batch of tells");
                    }
                }
            }
            self.state.lock().publishing = false;
            if closed {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::envelope::{decode_body, Frames, Kind};

    /// The link frames and first numbers of the batches an outbox holds.
    fn links(o: &Outbox) -> Vec<(u64, u64)> {
        let st = o.state.lock();
        let mut all: Vec<&[u8]> = st.sealed.iter().map(|b| &b.bytes[..]).collect();
        all.push(&st.open);
        all.iter()
            .map(|bytes| {
                let frames: Vec<_> = Frames::new(bytes, 1 << 20).map(|f| f.unwrap()).collect();
                assert_eq!(
                    frames[0].kind,
                    Kind::Link,
                    "a batch starts with a link frame"
                );
                assert_eq!(frames[0].type_id, 7);
                assert_eq!(decode_body::<&str>(frames[0].body), Ok("a"));
                assert!(frames[1..].iter().all(|f| f.kind == Kind::Tell));
                (frames[0].correlation, frames.len() as u64 - 1)
            })
            .collect()
    }

    #[test]
    fn a_sealed_overflow_starts_the_next_batch_with_its_own_link_frame() {
        // Room for the link frame (34 bytes) and three 33-byte tells.
        let o = Outbox::new(
            "s".into(),
            7,
            "a".into(),
            34 + 3 * 33,
            1 << 20,
            None,
            Default::default(),
        );
        let h = Header::new(Kind::Tell, 1, 2, 0);
        for i in 0..7u8 {
            o.push(h, &i, 100).ok().unwrap();
        }
        assert_eq!(links(&o), vec![(1, 3), (4, 3), (7, 1)]);
        {
            let st = o.state.lock();
            assert!(st.sealed.iter().all(|b| b.bytes.len() <= 34 + 3 * 33));
            let firsts: Vec<_> = st.sealed.iter().map(|b| (b.first, b.tells)).collect();
            assert_eq!(firsts, vec![(1, 3), (4, 3)]);
            assert_eq!((st.open_first, st.open_tells, st.next_seq), (7, 1, 8));
        }
        // A refused tell takes no number and leaves the batch as it was.
        assert!(matches!(
            o.push(h, &vec![0u8; 200], 100),
            Err(Refusal::Encode(_))
        ));
        assert_eq!(o.accepted(), 7);
        assert!(!o.push_probe(), "a batch is open: its link frame does");
        assert_eq!(o.unconfirmed(), 7);
    }

    #[test]
    fn a_probe_is_a_lone_link_frame_with_the_next_number() {
        let o = Outbox::new(
            "s".into(),
            7,
            "a".into(),
            1024,
            1 << 20,
            None,
            Default::default(),
        );
        let h = Header::new(Kind::Tell, 1, 2, 0);
        o.push(h, &1u8, 100).ok().unwrap();
        o.push(h, &2u8, 100).ok().unwrap();
        o.state.lock().open.clear(); // as if the flusher took it
        assert!(o.push_probe());
        assert_eq!(links(&o), vec![(3, 0)]);
    }
}
