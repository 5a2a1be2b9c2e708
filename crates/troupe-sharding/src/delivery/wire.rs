//! The producer protocol's two messages: [`Deliver`], a batch of one
//! producer's messages to one entity (asked), and [`Confirmation`], the
//! entity's answer once it has handled (or stored) them.
//!
//! Invariants a sender keeps and a receiver checks:
//! - `msgs` are the producer's messages `first`, `first + 1`, ... to this
//!   entity in its stream `epoch`, consecutive, in order;
//! - every message of the stream below `first` was confirmed before;
//! - `first + msgs.len() - 1` does not overflow ([`Deliver::last`] is
//!   `None` where it would, and a consumer refuses such a delivery);
//! - the producer id is 1 to [`MAX_PRODUCER_ID`] bytes of letters,
//!   digits, `_` or `-` (it names the durable queue's bucket).
//!
//! Both travel as an ask of the sharding ([`crate::envelope::ShardAsk`]),
//! so they take the ask's route, deadline and refusals.

use serde::{Deserialize, Serialize};
use troupe_remote::{RemoteAsk, RemoteMessage};

/// The longest producer id.
pub const MAX_PRODUCER_ID: usize = 64;

/// The stable name every [`Deliver`] type shares; each one's type id is
/// that of `troupe.sharding.Deliver.v1/` followed by its message type's name.
pub const DELIVER: &str = "troupe.sharding.Deliver.v1";

/// Messages `first..` of one producer's stream to one entity, asked; the
/// entity answers a [`Confirmation`].
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Deliver<M> {
    /// The producer's id.
    pub producer: String,
    /// The stream's epoch: a new one each time the producer starts a
    /// stream to this entity (strictly increasing per producer id).
    pub epoch: u64,
    /// The sequence number of `msgs[0]` (from 1 in each epoch).
    pub first: u64,
    /// The messages, in sequence order.
    pub msgs: Vec<M>,
}

impl<M> Deliver<M> {
    /// The sequence number of the last message; `None` if there is none
    /// or it would overflow.
    pub fn last(&self) -> Option<u64> {
        let n = u64::try_from(self.msgs.len()).ok()?.checked_sub(1)?;
        self.first.checked_add(n)
    }
}

/// The type id of `Deliver<M>` for the message type named `name`.
pub const fn deliver_id(name: &str) -> u64 {
    const PREFIX: u64 = troupe_remote::type_id("troupe.sharding.Deliver.v1/");
    troupe_remote::type_id_extend(PREFIX, name)
}

impl<M: RemoteMessage> RemoteMessage for Deliver<M> {
    const NAME: &'static str = DELIVER;
    const TYPE_ID: u64 = deliver_id(M::NAME);
}

impl<M: RemoteMessage> RemoteAsk for Deliver<M> {
    type Reply = Confirmation;
}

/// An entity's answer to a [`Deliver`].
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmation {
    /// Every message of the stream up to `upto` has been handled (for a
    /// persistent entity: its events stored), each once.
    Handled {
        /// The highest sequence number handled.
        upto: u64,
    },
    /// The entity has heard from this producer in a newer epoch (`current`):
    /// this stream's messages were all confirmed before that one began,
    /// so nothing of this delivery was handled (again).
    Stale {
        /// The epoch the entity holds for the producer.
        current: u64,
    },
    /// Nothing of it was handled now (the entity's store failed, or the
    /// delivery was malformed): send it again.
    Failed,
}

/// Whether `id` is a valid producer id.
pub fn valid_producer_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_PRODUCER_ID
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_is_checked() {
        let d = |first, n| Deliver {
            producer: "p".into(),
            epoch: 1,
            first,
            msgs: vec![0u8; n],
        };
        assert_eq!(d(1, 3).last(), Some(3));
        assert_eq!(d(5, 1).last(), Some(5));
        assert_eq!(d(1, 0).last(), None);
        assert_eq!(d(u64::MAX, 2).last(), None);
        assert_eq!(d(u64::MAX, 1).last(), Some(u64::MAX));
    }

    #[test]
    fn producer_ids_are_bounded_names() {
        assert!(valid_producer_id("orders-7_a"));
        assert!(!valid_producer_id(""));
        assert!(!valid_producer_id("a.b"));
        assert!(!valid_producer_id(&"x".repeat(MAX_PRODUCER_ID + 1)));
        assert!(valid_producer_id(&"x".repeat(MAX_PRODUCER_ID)));
    }
}
