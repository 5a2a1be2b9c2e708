//! Pipelined appends: a persistent actor's commands decided while earlier
//! ones are still being stored, their events written by one writer task
//! per actor, in order, and each command's replies sent only once its
//! events (and every earlier command's) are stored.
//!
//! Protocol, between the actor (one side) and its writer task:
//! 1. The actor decides a command on its state, which already holds the
//!    events of the commands in flight (decided, not yet stored), applies
//!    the command's events, computes its replies' values from the state
//!    as they leave it ([`Deferred::read`]), and queues a [`Pending`]: the
//!    encoded events, numbered on from the last one queued, and the
//!    replies. A command without events is queued too when others are in
//!    flight: its reply read a state that holds them.
//! 2. The writer takes the queued commands in order, as many as are
//!    waiting (up to the pipeline's depth and [`GROUP_BYTES`]), and
//!    stores their events as one append after the first one's expected
//!    number: the commands of one append are stored all or none, so each
//!    command's are too. One append of an entity is in flight at a time:
//!    JetStream checks each against its predecessor's stream sequence,
//!    known only once that one is acknowledged.
//! 3. When the append is confirmed, the writer sends the replies
//!    ([`Deferred::finish`] with `Ok`) and counts the commands done.
//! 4. When it fails, that append's commands get the error, and so does
//!    every later command queued (they were decided on a state that held
//!    the failed events): the writer is *failed* and stores nothing more
//!    until the actor has seen it. The actor, at its next command, waits
//!    until every queued command is done, clears the failure, and reloads
//!    its state from the stores before deciding anything.
//! 5. The actor waits (an `await` in its handler) when `depth` commands
//!    are in flight, and before a command whose callbacks read the state
//!    after storing (`Effect::then`) or that snapshots: then nothing is in
//!    flight but it, and the callbacks and the snapshot see stored state
//!    only.
//!
//! Invariants: nothing leaves (reply or callback) before the events of
//! its command and of every earlier one are stored; events are stored in
//! the order decided, without gaps; a failed append stores none of its
//! commands' events and no later command's.

use crate::error::PersistError;
use crate::id::PersistenceId;
use crate::journal::{EventRecord, Journal};
use parking_lot::Mutex;
use std::sync::Arc;
use tokio::sync::{mpsc, watch};

/// The most event bytes (payloads and names) one pipelined append
/// carries, whatever the depth: well under JetStream's default 1 MiB
/// message limit. A single command's events are never split.
pub(crate) const GROUP_BYTES: usize = 256 * 1024;

/// A reply whose value is read off the state when its command is decided
/// and sent once the command is stored.
pub(crate) trait Deferred<S>: Send {
    /// Reads the value to send from `state`, right after the command's
    /// events are applied.
    fn read(&mut self, state: &S);
    /// Sends the value read (`Ok`) or the error.
    fn finish(self: Box<Self>, outcome: Result<(), &PersistError>);
}

/// One command decided and queued for the writer.
pub(crate) struct Pending<S> {
    /// The number of the last event before this command's.
    pub(crate) expected: u64,
    pub(crate) records: Vec<EventRecord>,
    pub(crate) replies: Vec<Box<dyn Deferred<S>>>,
    /// It has events to store (a failure counts as a failed write).
    pub(crate) writes: bool,
    /// It has no callback: a failure is only counted and logged.
    pub(crate) unanswered: bool,
}

/// What the writer tells the actor.
struct Flow {
    /// The first failure since the actor last cleared it: while set, the
    /// writer fails every command it takes.
    failed: Mutex<Option<PersistError>>,
}

/// The actor's side of its pipeline (see the module docs).
pub(crate) struct Pipeline<S> {
    queue: mpsc::UnboundedSender<Pending<S>>,
    flow: Arc<Flow>,
    /// Commands done (stored or failed), written by the writer.
    done: watch::Receiver<u64>,
    /// Commands queued so far.
    sent: u64,
}

impl<S: Send + 'static> Pipeline<S> {
    /// Starts the writer task on the current tokio runtime; `None` outside
    /// one.
    pub(crate) fn start(
        journal: Arc<dyn Journal>,
        id: PersistenceId,
        depth: usize,
    ) -> Option<Self> {
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        let (queue, rx) = mpsc::unbounded_channel();
        let (done_tx, done) = watch::channel(0);
        let flow = Arc::new(Flow {
            failed: Mutex::new(None),
        });
        runtime.spawn(write(journal, id, flow.clone(), rx, done_tx, depth.max(1)));
        Some(Pipeline {
            queue,
            flow,
            done,
            sent: 0,
        })
    }

    /// Commands queued and not done yet.
    pub(crate) fn in_flight(&self) -> u64 {
        self.sent.saturating_sub(*self.done.borrow())
    }

    /// The failure the writer met, if any (not cleared).
    pub(crate) fn failure(&self) -> Option<PersistError> {
        self.flow.failed.lock().clone()
    }

    /// Clears the failure; call only with nothing in flight.
    pub(crate) fn clear_failure(&self) {
        *self.flow.failed.lock() = None;
    }

    /// Queues `pending` for the writer; `Err` gives it back if the writer
    /// is gone (its runtime stopped).
    pub(crate) fn send(&mut self, pending: Pending<S>) -> Result<(), Pending<S>> {
        self.queue.send(pending).map_err(|e| e.0)?;
        self.sent += 1;
        Ok(())
    }

    /// Waits until at most `n` commands are in flight; `false` if the
    /// writer is gone.
    pub(crate) async fn wait_until(&mut self, n: u64) -> bool {
        let target = self.sent.saturating_sub(n);
        self.done.wait_for(|&done| done >= target).await.is_ok()
    }
}

/// The writer task: takes the queued commands in order and stores them
/// (see the module docs); ends when the actor drops its pipeline and the
/// queue is empty.
async fn write<S>(
    journal: Arc<dyn Journal>,
    id: PersistenceId,
    flow: Arc<Flow>,
    mut queue: mpsc::UnboundedReceiver<Pending<S>>,
    done: watch::Sender<u64>,
    depth: usize,
) {
    let mut group: Vec<Pending<S>> = Vec::with_capacity(depth);
    let mut count = 0u64;
    while let Some(first) = queue.recv().await {
        let mut bytes = size(&first.records);
        group.push(first);
        while group.len() < depth && bytes < GROUP_BYTES {
            match queue.try_recv() {
                Ok(p) => {
                    bytes += size(&p.records);
                    group.push(p);
                }
                Err(_) => break,
            }
        }
        let failed = flow.failed.lock().clone();
        let outcome = match failed {
            Some(e) => Err(e),
            None => {
                let expected = group[0].expected;
                let mut records = Vec::new();
                for p in &mut group {
                    if records.is_empty() {
                        records = std::mem::take(&mut p.records);
                    } else {
                        records.append(&mut p.records);
                    }
                }
                if records.is_empty() {
                    Ok(())
                } else {
                    journal.append(&id, expected, records).await.map(|_| ())
                }
            }
        };
        if let Err(e) = &outcome {
            flow.failed.lock().get_or_insert_with(|| e.clone());
        }
        count += group.len() as u64;
        for p in group.drain(..) {
            if let (Err(e), true) = (&outcome, p.writes) {
                crate::stats::write_failed(&id, e, p.unanswered);
            }
            for r in p.replies {
                r.finish(outcome.as_ref().map(|_| ()));
            }
        }
        done.send_replace(count);
    }
}

/// What `records` add to an append, about.
fn size(records: &[EventRecord]) -> usize {
    records
        .iter()
        .map(|r| r.payload.len() + r.name.len() + 16)
        .sum()
}
