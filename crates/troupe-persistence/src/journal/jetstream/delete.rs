//! Deleting the oldest events of an entity: a purge of its subject below
//! a stream sequence.
//!
//! Protocol of `delete_through(id, seq)`:
//! 1. The entity's last message is never deleted: the next append is
//!    checked against its stream sequence, and a recovery reads the last
//!    event number off it.
//! 2. If every event before the last message's first is at or below
//!    `seq`, the purge bound is the last message's stream sequence (no
//!    other message is read).
//! 3. Else the messages are read from the subject's first one on (direct
//!    gets) until the first that holds an event after `seq`; the purge
//!    bound is its stream sequence. Earlier deletions removed what is
//!    before, so each message is read about once over an entity's life.
//! 4. `purge` with the subject as filter and the bound as `sequence`
//!    removes that subject's messages below the bound, no other subject's.
//!
//! Invariant: a message holding an event after `seq` is never deleted, so
//! a recovery from a snapshot at `seq` or later still finds every event
//! after it.

use super::{from_bytes, Batch, Shared};
use crate::error::PersistError;
use crate::id::PersistenceId;
use async_nats::header::NATS_SEQUENCE;

impl Shared {
    /// Deletes `id`'s messages whose events are all at or below `seq`,
    /// the last message apart; returns the number of the newest event no
    /// longer stored (0: none is deleted).
    pub(super) async fn delete_through(
        &self,
        id: &PersistenceId,
        seq: u64,
    ) -> Result<u64, PersistError> {
        let subject = self.cached_subject(id);
        let (first_of_last, last_seq, last_stream_seq) = self.last_message(id, &subject).await?;
        self.remember(id, (last_seq, last_stream_seq), &subject);
        if last_stream_seq == 0 {
            return Ok(0);
        }
        let through = first_of_last.saturating_sub(1);
        let (bound, deleted) = if seq >= through {
            (last_stream_seq, through)
        } else {
            self.scan_through(id, &subject, seq, last_stream_seq)
                .await?
        };
        if deleted == 0 {
            return Ok(0);
        }
        self.stream
            .purge()
            .filter(subject.to_string())
            .sequence(bound)
            .await
            .map_err(|e| Self::unavailable(id, "cannot delete the events", e))?;
        Ok(deleted)
    }

    /// Reads `subject`'s messages from its first until one holds an event
    /// after `seq` (or the last, at `end`): (that message's stream
    /// sequence, the newest event before it).
    async fn scan_through(
        &self,
        id: &PersistenceId,
        subject: &str,
        seq: u64,
        end: u64,
    ) -> Result<(u64, u64), PersistError> {
        const WHAT: &str = "cannot read a message to delete";
        let (mut at, mut deleted) = (1, 0);
        while at < end {
            let msg = tokio::time::timeout(
                self.timeout,
                self.stream.direct_get_next_for_subject(subject, Some(at)),
            )
            .await
            .map_err(|e| Self::unavailable(id, WHAT, e))?
            .map_err(|e| Self::unavailable(id, WHAT, e))?;
            let stream_seq = msg
                .headers
                .as_ref()
                .and_then(|h| h.get(NATS_SEQUENCE))
                .and_then(|v| v.as_str().parse::<u64>().ok())
                .ok_or_else(|| Self::unavailable(id, WHAT, "a reply without Nats-Sequence"))?;
            if stream_seq >= end {
                break;
            }
            let batch: Batch = from_bytes(id, &msg.payload)?;
            if deleted == 0 {
                deleted = batch.events.first().map_or(0, |e| e.seq.saturating_sub(1));
            }
            match batch.events.last() {
                Some(e) if e.seq > seq => return Ok((stream_seq, deleted)),
                Some(e) => deleted = e.seq,
                None => {}
            }
            at = stream_seq + 1;
        }
        Ok((end, deleted))
    }
}
