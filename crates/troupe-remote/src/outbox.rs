//! Coalescing: one outbox per peer node gathers the frames of every tell
//! bound there, and one flusher task publishes them as few NATS messages.
//!
//! Protocol:
//! 1. `tell` locks the outbox, writes the frame straight into the open batch,
//!    and if the batch would pass `batch_bytes` seals the frames before it
//!    as a finished batch. If no wake-up is pending it sets `signalled` and
//!    notifies the flusher (after unlocking).
//! 2. The flusher wakes, takes every sealed batch and the open one under the
//!    lock, clears `signalled`, unlocks, and publishes them in order.
//!    While it publishes, new tells fill a fresh batch: the longer NATS takes,
//!    the more a burst coalesces; a lone tell still goes out at once.
//!
//! Invariants:
//! - Frames leave in the order `tell` accepted them (one flusher, batches in
//!   order), so tells from one node to one actor arrive in order.
//! - A batch is never larger than `batch_bytes` (≤ the server's max payload)
//!   unless it holds a single frame, which `encode_frame` already bounded by
//!   the max payload.
//! - `queued` counts accepted bytes not yet taken by the flusher; `tell`
//!   refuses with `Full` above `queue_bytes`, which bounds memory.
//! - No wake-up is lost: `signalled` is cleared under the lock in the same
//!   critical section that empties the outbox, and `Notify` keeps a permit
//!   when the flusher is not yet waiting.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use async_nats::{Client, Subject};
use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::Notify;

use crate::envelope::{encode_frame, EncodeError, Header};
use crate::stats::Counters;

#[derive(Default)]
struct State {
    open: Vec<u8>,
    open_frames: u64,
    sealed: Vec<(Vec<u8>, u64)>,
    queued: usize,
    signalled: bool,
    closed: bool,
    /// The flusher holds batches it has not finished publishing.
    publishing: bool,
}

/// Why an outbox refused a frame.
pub(crate) enum Refusal {
    Closed,
    Full,
    Encode(EncodeError),
}

pub(crate) struct Outbox {
    subject: Subject,
    batch_bytes: usize,
    queue_bytes: usize,
    state: Mutex<State>,
    notify: Notify,
}

impl Outbox {
    pub(crate) fn new(subject: Subject, batch_bytes: usize, queue_bytes: usize) -> Self {
        Outbox {
            subject,
            batch_bytes,
            queue_bytes,
            state: Mutex::new(State::default()),
            notify: Notify::new(),
        }
    }

    pub(crate) fn subject(&self) -> &Subject {
        &self.subject
    }

    /// Appends one frame of `value`.
    pub(crate) fn push<T: Serialize>(
        &self,
        header: Header,
        value: &T,
        max_body: usize,
    ) -> Result<(), Refusal> {
        let mut st = self.state.lock();
        if st.closed {
            return Err(Refusal::Closed);
        }
        if st.queued >= self.queue_bytes {
            return Err(Refusal::Full);
        }
        let start = st.open.len();
        let n = encode_frame(&mut st.open, header, value, max_body).map_err(Refusal::Encode)?;
        if start > 0 && st.open.len() > self.batch_bytes {
            // Seal the frames before this one; this frame opens the next batch.
            let tail = st.open[start..].to_vec();
            st.open.truncate(start);
            let head = std::mem::replace(&mut st.open, tail);
            let frames = std::mem::replace(&mut st.open_frames, 0);
            st.sealed.push((head, frames));
        }
        st.open_frames += 1;
        st.queued += n;
        let wake = !st.signalled;
        st.signalled = true;
        drop(st);
        if wake {
            self.notify.notify_one();
        }
        Ok(())
    }

    /// Whether frames wait for the flusher.
    pub(crate) fn pending(&self) -> bool {
        let st = self.state.lock();
        st.queued > 0 || st.publishing
    }

    /// Refuses further frames; the flusher sends what is queued and ends.
    pub(crate) fn close(&self) {
        self.state.lock().closed = true;
        self.notify.notify_one();
    }

    /// The flusher task: publishes batches until the outbox is closed and empty.
    pub(crate) async fn flusher(self: Arc<Self>, client: Client, counters: Arc<Counters>) {
        loop {
            self.notify.notified().await;
            let (batches, closed) = {
                let mut st = self.state.lock();
                st.signalled = false;
                let mut batches = std::mem::take(&mut st.sealed);
                if !st.open.is_empty() {
                    let cap = st.open.len().min(self.batch_bytes);
                    let open = std::mem::replace(&mut st.open, Vec::with_capacity(cap));
                    batches.push((open, std::mem::replace(&mut st.open_frames, 0)));
                }
                st.queued = 0;
                st.publishing = true;
                (batches, st.closed)
            };
            for (bytes, frames) in batches {
                match client.publish(self.subject.clone(), bytes.into()).await {
                    Ok(()) => {
                        counters.frames_sent.fetch_add(frames, Relaxed);
                        counters.batches_sent.fetch_add(1, Relaxed);
                    }
                    Err(e) => {
                        counters.frames_lost.fetch_add(frames, Relaxed);
                        tracing::warn!(subject = %self.subject, frames, error = %e, "lost a batch of tells");
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
