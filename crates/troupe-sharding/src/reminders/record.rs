//! A stored reminder: its key and its value in the kind's bucket.
//!
//! Key: `r.<hex id>.<hex name>` (hex keeps any id within the bucket's key
//! alphabet). Value: postcard `(FORMAT, id, name, due_ms, every_ms)`:
//! the next due time in milliseconds since the Unix epoch, and the period
//! (0: once). A value is read from the network: the decoder refuses
//! trailing bytes, an unknown format, a bad id or name, and a key that is
//! not the one its value names.

use serde::{Deserialize, Serialize};

/// The one value format so far.
const FORMAT: u8 = 1;

/// The most bytes of a reminder's name.
pub const MAX_NAME: usize = 64;

/// One reminder of one entity.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Record {
    pub id: String,
    pub name: String,
    /// The next due time, ms since the Unix epoch.
    pub due_ms: u64,
    /// The period in ms; 0: fires once.
    pub every_ms: u64,
}

/// Whether `name` may name a reminder: 1 to [`MAX_NAME`] bytes.
pub(crate) fn name_ok(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_NAME
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The key of reminder `name` of entity `id`.
pub(crate) fn key(id: &str, name: &str) -> String {
    format!("r.{}.{}", hex(id.as_bytes()), hex(name.as_bytes()))
}

impl Record {
    pub fn encode(&self) -> Vec<u8> {
        postcard::to_allocvec(&(FORMAT, &self.id, &self.name, self.due_ms, self.every_ms))
            .unwrap_or_default()
    }

    /// The record stored under `key`, if `bytes` is a valid one for it.
    pub fn decode(key_: &str, bytes: &[u8]) -> Option<Record> {
        let ((format, id, name, due_ms, every_ms), rest): ((u8, String, String, u64, u64), _) =
            postcard::take_from_bytes(bytes).ok()?;
        let ok = rest.is_empty()
            && format == FORMAT
            && crate::envelope::check(id.as_bytes(), 0)
            && name_ok(&name)
            && key(&id, &name) == key_;
        ok.then_some(Record {
            id,
            name,
            due_ms,
            every_ms,
        })
    }

    /// The due time after this one's that is later than `now_ms` (`None`
    /// for a one-shot): missed periods are skipped, not fired in a burst.
    pub fn next_after(&self, now_ms: u64) -> Option<u64> {
        if self.every_ms == 0 {
            return None;
        }
        let next = self.due_ms.saturating_add(self.every_ms);
        if next > now_ms {
            return Some(next);
        }
        let behind = now_ms - self.due_ms;
        let periods = behind / self.every_ms + 1;
        Some(
            self.due_ms
                .saturating_add(periods.saturating_mul(self.every_ms)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec() -> Record {
        Record {
            id: "cart-7".into(),
            name: "expire".into(),
            due_ms: 1_000,
            every_ms: 100,
        }
    }

    #[test]
    fn a_record_round_trips_under_its_own_key_only() {
        let r = rec();
        let k = key(&r.id, &r.name);
        assert_eq!(Record::decode(&k, &r.encode()), Some(r.clone()));
        assert_eq!(Record::decode(&key("cart-8", "expire"), &r.encode()), None);
        let mut long = r.encode();
        long.push(0);
        assert_eq!(Record::decode(&k, &long), None, "trailing bytes");
        assert_eq!(Record::decode(&k, &[]), None);
        assert_eq!(Record::decode(&k, &[9, 1, 2]), None);
    }

    #[test]
    fn missed_periods_are_skipped() {
        let r = rec();
        assert_eq!(r.next_after(1_050), Some(1_100));
        assert_eq!(r.next_after(1_100), Some(1_200));
        assert_eq!(r.next_after(1_950), Some(2_000));
        let once = Record { every_ms: 0, ..r };
        assert_eq!(once.next_after(5_000), None);
    }

    #[test]
    fn keys_keep_to_the_bucket_alphabet() {
        let k = key("a b/c.*>", "n");
        assert!(k
            .bytes()
            .all(|b| b.is_ascii_hexdigit() || b == b'.' || b == b'r'));
    }
}
