//! The journal message of one append, written and read back: a postcard
//! `Batch` of the command's events, so the events of one command are
//! stored all or none.
//!
//! Invariants: [`encode_batch`] writes the bytes a `Batch` of the same
//! events encodes to, into one buffer of exactly that size; a [`Replay`]
//! takes events in order from the one it expects, skips those before it
//! and refuses a gap, except before the first message it reads (the
//! events before it deleted: the caller sees where the journal starts).

use crate::error::PersistError;
use crate::id::PersistenceId;
use crate::journal::{from_bytes, EventRecord};
use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// One journal message: the events of one append.
#[derive(Serialize, Deserialize)]
pub(super) struct Batch {
    pub(super) events: Vec<EventRecord>,
}

/// A [`Batch`] encoded from borrowed events (the same bytes).
#[derive(Serialize)]
struct BatchRef<'a> {
    events: &'a [EventRecord],
}

/// The message of one append: `events` as a [`Batch`], in one buffer of
/// exactly its size (so the `Bytes` made of it allocates nothing more).
pub(super) fn encode_batch(
    id: &PersistenceId,
    events: &[EventRecord],
) -> Result<Bytes, PersistError> {
    let batch = BatchRef { events };
    let encode = |e: postcard::Error| PersistError::Encode {
        id: id.to_string(),
        reason: e.to_string(),
    };
    let size = postcard::serialize_with_flavor(&batch, postcard::ser_flavors::Size::default())
        .map_err(encode)?;
    let bytes = postcard::to_extend(&batch, Vec::with_capacity(size)).map_err(encode)?;
    Ok(bytes.into())
}

/// The events a replay has collected, and the next one it expects.
pub(super) struct Replay<'a> {
    pub(super) id: &'a PersistenceId,
    pub(super) next: u64,
    pub(super) out: Vec<EventRecord>,
    /// A message was taken (a gap after it is damage, not deletion).
    pub(super) seen: bool,
}

impl Replay<'_> {
    /// Takes one journal message's events from `next` on, refusing gaps.
    pub(super) fn take(&mut self, payload: &[u8]) -> Result<(), PersistError> {
        let batch: Batch = from_bytes(self.id, payload)?;
        if !std::mem::replace(&mut self.seen, true) {
            // The subject's first message: earlier events are deleted.
            if let Some(first) = batch.events.first() {
                self.next = self.next.max(first.seq);
            }
        }
        for e in batch.events {
            if e.seq < self.next {
                continue;
            }
            if e.seq != self.next {
                return Err(PersistError::Corrupt {
                    id: self.id.to_string(),
                    reason: format!("event #{} follows #{}", e.seq, self.next - 1),
                });
            }
            self.next += 1;
            self.out.push(e);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_borrowed_batch_encodes_to_the_bytes_of_a_batch() {
        let id = PersistenceId::new("k", "e").unwrap();
        let events: Vec<EventRecord> = (1..=3)
            .map(|seq| EventRecord {
                seq,
                name: "test.Event".into(),
                fingerprint: 0xfeed_f00d + seq,
                payload: vec![seq as u8; 200 * seq as usize],
            })
            .collect();
        let bytes = encode_batch(&id, &events).unwrap();
        let owned = postcard::to_stdvec(&Batch {
            events: events.clone(),
        })
        .unwrap();
        assert_eq!(&bytes[..], &owned[..]);
        let back: Batch = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back.events, events);
    }
}
