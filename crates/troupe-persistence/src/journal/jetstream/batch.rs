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

/// The header that carries a message's tags (docs/journal-format.md).
pub(super) const TAGS_HEADER: &str = "Troupe-Tags";

/// The `Troupe-Tags` header of an append: one comma-separated list per
/// event, in the batch's order, separated by `;` (so a batch of `n`
/// events has `n - 1` semicolons); `None` when no event has a tag (no
/// header, nothing allocated).
pub(super) fn tags_header(events: &[EventRecord]) -> Option<String> {
    if events.iter().all(|e| e.tags.is_empty()) {
        return None;
    }
    let mut out = String::new();
    for (i, e) in events.iter().enumerate() {
        if i > 0 {
            out.push(';');
        }
        for (j, tag) in e.tags.iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            out.push_str(tag);
        }
    }
    Some(out)
}

/// Whether a `Troupe-Tags` header names `tag` (for any event): read
/// without decoding the message's body.
pub(super) fn header_has_tag(header: &str, tag: &str) -> bool {
    header.split([';', ',']).any(|t| t == tag)
}

/// Each event's tags from a `Troupe-Tags` header (hostile: checked
/// against the batch's event count and the tag rules).
pub(super) fn parse_tags(
    id: &PersistenceId,
    header: Option<&str>,
    events: usize,
) -> Result<Vec<Vec<std::borrow::Cow<'static, str>>>, PersistError> {
    let Some(header) = header else {
        return Ok(vec![Vec::new(); events]);
    };
    let corrupt = |reason: String| PersistError::Corrupt {
        id: id.to_string(),
        reason,
    };
    let lists: Vec<&str> = header.split(';').collect();
    if lists.len() != events {
        return Err(corrupt(format!(
            "the {TAGS_HEADER} header has {} lists for {events} events",
            lists.len()
        )));
    }
    let mut out = Vec::with_capacity(events);
    for list in lists {
        let tags: Vec<std::borrow::Cow<'static, str>> = if list.is_empty() {
            Vec::new()
        } else {
            list.split(',').map(|t| t.to_string().into()).collect()
        };
        crate::journal::check_tags(id, &tags)
            .map_err(|e| corrupt(format!("the {TAGS_HEADER} header: {e}")))?;
        out.push(tags);
    }
    Ok(out)
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

    /// The vector of docs/journal-format.md, byte for byte.
    #[test]
    fn the_documented_vector() {
        let id = PersistenceId::new("k", "e").unwrap();
        let events: Vec<EventRecord> = [(7, 0x05), (8, 0x2a)]
            .into_iter()
            .map(|(seq, byte)| EventRecord {
                seq,
                name: "doc.Added".into(),
                fingerprint: 0x1234,
                payload: vec![byte],
                tags: vec!["order".into()],
            })
            .collect();
        let hex: Vec<String> = encode_batch(&id, &events)
            .unwrap()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            hex.join(" "),
            "02 07 09 64 6f 63 2e 41 64 64 65 64 b4 24 01 05 \
             08 09 64 6f 63 2e 41 64 64 65 64 b4 24 01 2a"
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        );
        assert_eq!(tags_header(&events).as_deref(), Some("order;order"));
    }

    #[test]
    fn tags_go_to_the_header_and_back() {
        let id = PersistenceId::new("k", "e").unwrap();
        let mut events: Vec<EventRecord> = (1..=3)
            .map(|seq| EventRecord {
                seq,
                name: "test.Event".into(),
                fingerprint: 1,
                payload: vec![],
                tags: Vec::new(),
            })
            .collect();
        assert_eq!(tags_header(&events), None);
        events[0].tags = vec!["order".into(), "vip".into()];
        events[2].tags = vec!["order".into()];
        let header = tags_header(&events).unwrap();
        assert_eq!(header, "order,vip;;order");
        assert!(header_has_tag(&header, "vip"));
        assert!(!header_has_tag(&header, "vi"));
        let back = parse_tags(&id, Some(&header), 3).unwrap();
        let want: Vec<Vec<std::borrow::Cow<'static, str>>> =
            events.iter().map(|e| e.tags.clone()).collect();
        assert_eq!(back, want);
        // Hostile headers: a wrong count, a bad tag.
        assert!(parse_tags(&id, Some(&header), 2).is_err());
        assert!(parse_tags(&id, Some("a b;;"), 3).is_err());
        assert!(parse_tags(&id, Some(";;a,"), 3).is_err());
    }

    #[test]
    fn a_borrowed_batch_encodes_to_the_bytes_of_a_batch() {
        let id = PersistenceId::new("k", "e").unwrap();
        let events: Vec<EventRecord> = (1..=3)
            .map(|seq| EventRecord {
                seq,
                name: "test.Event".into(),
                fingerprint: 0xfeed_f00d + seq,
                payload: vec![seq as u8; 200 * seq as usize],
                tags: Vec::new(),
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
