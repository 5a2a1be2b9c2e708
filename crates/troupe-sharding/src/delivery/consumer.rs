//! The entity's side of the producer protocol: a [`Delivery`] (what the
//! entity's handler gets) and the [`Consumer`] table that deduplicates.
//!
//! Rules, for one delivery of producer `p`, epoch `e`, messages
//! `first..=last`, against the table's record `(epoch, upto)` for `p`:
//! 1. *Stale.* `e` is below the record's epoch: nothing is handled, the
//!    answer is [`Confirmation::Stale`]. (A producer starts a new epoch
//!    with an entity only once everything of the old one is confirmed, so
//!    a stale delivery is a ghost of a retry.)
//! 2. *New epoch* (or no record): the record becomes `(e, first - 1)`:
//!    everything below `first` was confirmed, by this entity.
//! 3. *Duplicates.* Messages with a sequence number up to `upto` were
//!    handled before: skipped.
//! 4. *Fresh.* The rest are handled, in order, each once; the record
//!    becomes `(e, last)` and the answer is `Handled { upto: last }`.
//!
//! So an entity handles each producer's messages in sequence order, with
//! no gap and no repeat, whatever the network does with retries (a
//! delivery always starts at the producer's lowest unconfirmed message).
//!
//! **Bounded.** The table keeps at most [`MAX_PRODUCERS`] producers. Each
//! record carries the table's logical clock (one tick per recorded
//! delivery); when a new producer would exceed the bound, the record heard
//! from least recently is forgotten (counted in [`Consumer::forgotten`]).
//! The rule uses no wall clock, so a persistent entity that records in
//! `apply` rebuilds the same table on every replay. A forgotten producer
//! that retries a message it delivered before sees it handled again: keep
//! fewer live producers per entity than the bound.
//!
//! **Where the table lives.** In an in-memory entity, in its state: it dies
//! with the activation, like the rest of the state, so a retry that reaches
//! a new activation (after a crash or a passivation) is handled by it (at
//! least once). In a persistent entity, in its persisted state, recorded
//! by `apply` from events that carry `(producer, epoch, seq)`: recovery
//! rebuilds it, and a command delivered twice stores its events once
//! (exactly-once effect; the crate docs show the pattern).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use troupe::{Actor, ReplyTo};
use troupe_remote::RemoteMessage;

use crate::delivery::wire::{Confirmation, Deliver};
use crate::sharding::ShardingBuilder;

/// The most producers one [`Consumer`] remembers.
pub const MAX_PRODUCERS: usize = 256;

/// What a [`Consumer`] remembers of one producer.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    epoch: u64,
    upto: u64,
    /// The table's clock when this record last changed.
    at: u64,
}

/// The deduplication table of one entity: per producer, the epoch and the
/// highest sequence number handled (see the module docs for the rules).
/// Serializable, to live in a persistent entity's state.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, Eq)]
pub struct Consumer {
    producers: BTreeMap<String, Seen>,
    clock: u64,
    forgotten: u64,
}

/// What the rules make of one delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    Stale(u64),
    /// Skip this many leading messages (duplicates), handle the rest.
    Skip(usize),
    /// Malformed (no message, or its last number overflows).
    Bad,
}

impl Consumer {
    /// An empty table.
    pub fn new() -> Consumer {
        Consumer::default()
    }

    /// The highest sequence number handled of `producer`'s stream, and
    /// its epoch.
    pub fn seen(&self, producer: &str) -> Option<(u64, u64)> {
        self.producers.get(producer).map(|s| (s.epoch, s.upto))
    }

    /// Producers remembered now.
    pub fn len(&self) -> usize {
        self.producers.len()
    }

    /// Whether no producer is remembered.
    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }

    /// Records forgotten to keep the bound.
    pub fn forgotten(&self) -> u64 {
        self.forgotten
    }

    fn plan<M>(&self, d: &Deliver<M>) -> Plan {
        if d.last().is_none() {
            return Plan::Bad;
        }
        match self.producers.get(&d.producer) {
            Some(s) if d.epoch < s.epoch => Plan::Stale(s.epoch),
            Some(s) if d.epoch == s.epoch => {
                let handled = s.upto.saturating_sub(d.first.saturating_sub(1));
                let skip = usize::try_from(handled).unwrap_or(usize::MAX);
                Plan::Skip(skip.min(d.msgs.len()))
            }
            _ => Plan::Skip(0),
        }
    }

    /// Records that `producer`'s message `seq` of stream `epoch` was
    /// handled. Call it once per handled message, in order (a persistent
    /// entity: from `apply`, for each event that carries the three).
    /// Numbers at or below what is recorded change nothing.
    pub fn record(&mut self, producer: &str, epoch: u64, seq: u64) {
        self.clock = self.clock.wrapping_add(1);
        let at = self.clock;
        if let Some(s) = self.producers.get_mut(producer) {
            if epoch > s.epoch {
                *s = Seen {
                    epoch,
                    upto: seq,
                    at,
                };
            } else if epoch == s.epoch && seq > s.upto {
                s.upto = seq;
                s.at = at;
            }
            return;
        }
        if self.producers.len() >= MAX_PRODUCERS {
            // The least recently heard from; ties broken by name.
            let oldest = self
                .producers
                .iter()
                .min_by_key(|(_, s)| s.at)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.producers.remove(&k);
                self.forgotten = self.forgotten.saturating_add(1);
            }
        }
        self.producers.insert(
            producer.to_string(),
            Seen {
                epoch,
                upto: seq,
                at,
            },
        );
    }
}

/// One delivery to an entity: a batch of a producer's messages and the
/// handle to confirm them. The entity's handler either calls
/// [`handle`](Self::handle) (an in-memory entity), or reads
/// [`fresh`](Self::fresh), stores events that carry each message's
/// `(producer, epoch, seq)` and then [`confirm`](Self::confirm)s (a
/// persistent one). Dropped unanswered, the producer hears `NoReply` and
/// sends it again.
pub struct Delivery<M: Send + 'static> {
    deliver: Deliver<M>,
    reply: ReplyTo<Confirmation>,
}

impl<M: Send + 'static> std::fmt::Debug for Delivery<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Delivery({} epoch {} from {}, {} messages)",
            self.deliver.producer,
            self.deliver.epoch,
            self.deliver.first,
            self.deliver.msgs.len()
        )
    }
}

impl<M: Send + 'static> Delivery<M> {
    /// A delivery of `deliver`, answered through `reply`.
    pub fn new(deliver: Deliver<M>, reply: ReplyTo<Confirmation>) -> Self {
        Delivery { deliver, reply }
    }

    /// The producer's id.
    pub fn producer(&self) -> &str {
        &self.deliver.producer
    }

    /// The stream's epoch.
    pub fn epoch(&self) -> u64 {
        self.deliver.epoch
    }

    /// How many messages the delivery carries (at most the producer's
    /// window), handled before or not.
    pub fn len(&self) -> usize {
        self.deliver.msgs.len()
    }

    /// Whether it carries none (a malformed delivery: `confirm` answers
    /// `Failed`).
    pub fn is_empty(&self) -> bool {
        self.deliver.msgs.is_empty()
    }

    /// The messages not yet handled by the entity whose table is
    /// `consumer`, with their sequence numbers, in order; `None` if
    /// nothing of this delivery may be handled (stale, or malformed):
    /// answer with [`confirm`](Self::confirm) all the same, which says so.
    pub fn fresh<'a>(&'a self, consumer: &Consumer) -> Option<impl Iterator<Item = (u64, &'a M)>> {
        let Plan::Skip(skip) = consumer.plan(&self.deliver) else {
            return None;
        };
        let first = self.deliver.first;
        Some(
            self.deliver
                .msgs
                .iter()
                .enumerate()
                .skip(skip)
                .map(move |(i, m)| (first.saturating_add(i as u64), m)),
        )
    }

    /// Answers the producer once what [`fresh`](Self::fresh) gave is
    /// handled or stored (and recorded in `consumer`): `Handled` up to the
    /// last message, or `Stale` / `Failed` where `fresh` gave `None`.
    pub fn confirm(self, consumer: &Consumer) {
        let answer = match consumer.plan(&self.deliver) {
            Plan::Bad => Confirmation::Failed,
            Plan::Stale(current) => Confirmation::Stale { current },
            Plan::Skip(_) => match self.deliver.last() {
                Some(upto) => Confirmation::Handled { upto },
                None => Confirmation::Failed,
            },
        };
        self.reply.reply(answer);
    }

    /// Answers that nothing was handled now (the entity's store failed):
    /// the producer sends it again.
    pub fn fail(self) {
        self.reply.reply(Confirmation::Failed);
    }

    /// The in-memory entity's whole step: runs `f` on each fresh message,
    /// in order, records each in `consumer`, and confirms. Returns how many
    /// `f` handled.
    pub fn handle(self, consumer: &mut Consumer, mut f: impl FnMut(M)) -> usize {
        let plan = consumer.plan(&self.deliver);
        let Delivery { deliver, reply } = self;
        let answer = match (plan, deliver.last()) {
            (Plan::Skip(skip), Some(upto)) => {
                let mut handled = 0;
                for (i, m) in deliver.msgs.into_iter().enumerate().skip(skip) {
                    f(m);
                    handled += 1;
                    consumer.record(
                        &deliver.producer,
                        deliver.epoch,
                        deliver.first.saturating_add(i as u64),
                    );
                }
                if handled == 0 {
                    // All duplicates: keep the record fresh (the epoch
                    // may be new to this table).
                    consumer.record(&deliver.producer, deliver.epoch, upto);
                }
                reply.reply(Confirmation::Handled { upto });
                return handled;
            }
            (Plan::Stale(current), _) => Confirmation::Stale { current },
            _ => Confirmation::Failed,
        };
        reply.reply(answer);
        0
    }
}

/// Registers the producer protocol's deliveries of `M` on a sharding type:
/// `builder.deliveries::<M>(Msg::Delivery)`, the entity then gets each
/// [`Delivery<M>`] as a message.
pub trait Deliveries<A: Actor>: Sized {
    /// Entities take [`Delivery<M>`]s of producers of `M`, made into their
    /// message by `make`.
    fn deliveries<M: RemoteMessage>(
        self,
        make: impl Fn(Delivery<M>) -> A::Msg + Send + Sync + 'static,
    ) -> Self;
}

impl<A: Actor> Deliveries<A> for ShardingBuilder<A> {
    fn deliveries<M: RemoteMessage>(
        self,
        make: impl Fn(Delivery<M>) -> A::Msg + Send + Sync + 'static,
    ) -> Self {
        self.ask::<Deliver<M>>(move |d, reply| make(Delivery::new(d, reply)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(producer: &str, epoch: u64, first: u64, msgs: Vec<u32>) -> Deliver<u32> {
        Deliver {
            producer: producer.into(),
            epoch,
            first,
            msgs,
        }
    }

    /// Rules 2-4: a retry overlapping what was handled skips the overlap.
    #[test]
    fn duplicates_are_skipped_and_the_rest_handled_in_order() {
        let mut c = Consumer::new();
        assert_eq!(c.plan(&d("p", 1, 1, vec![1, 2, 3])), Plan::Skip(0));
        for s in 1..=3 {
            c.record("p", 1, s);
        }
        assert_eq!(c.seen("p"), Some((1, 3)));
        assert_eq!(c.plan(&d("p", 1, 1, vec![1, 2, 3])), Plan::Skip(3));
        assert_eq!(c.plan(&d("p", 1, 2, vec![2, 3, 4, 5])), Plan::Skip(2));
        assert_eq!(c.plan(&d("p", 1, 4, vec![4])), Plan::Skip(0));
        // Another producer is another stream.
        assert_eq!(c.plan(&d("q", 1, 1, vec![1])), Plan::Skip(0));
    }

    /// Rules 1 and 2: an older epoch is stale, a newer one starts over.
    #[test]
    fn epochs_order_streams() {
        let mut c = Consumer::new();
        c.record("p", 5, 10);
        assert_eq!(c.plan(&d("p", 4, 11, vec![1])), Plan::Stale(5));
        assert_eq!(c.plan(&d("p", 6, 1, vec![1])), Plan::Skip(0));
        c.record("p", 6, 1);
        assert_eq!(c.seen("p"), Some((6, 1)));
        // A lower number of an older epoch changes nothing.
        c.record("p", 5, 99);
        assert_eq!(c.seen("p"), Some((6, 1)));
    }

    #[test]
    fn malformed_deliveries_handle_nothing() {
        let c = Consumer::new();
        assert_eq!(c.plan(&d("p", 1, 1, vec![])), Plan::Bad);
        assert_eq!(c.plan(&d("p", 1, u64::MAX, vec![1, 2])), Plan::Bad);
    }

    /// The bound: the producer heard from least recently goes first, and
    /// the same records give the same table (a replay rebuilds it).
    #[test]
    fn the_table_forgets_the_least_recent_producer() {
        let mut c = Consumer::new();
        for i in 0..MAX_PRODUCERS {
            c.record(&format!("p{i}"), 1, 1);
        }
        c.record("p0", 1, 2);
        c.record("new", 1, 1);
        assert_eq!(c.len(), MAX_PRODUCERS);
        assert_eq!(c.forgotten(), 1);
        assert!(c.seen("p1").is_none(), "p1 was the least recent");
        assert_eq!(c.seen("p0"), Some((1, 2)));
        let mut again = Consumer::new();
        for i in 0..MAX_PRODUCERS {
            again.record(&format!("p{i}"), 1, 1);
        }
        again.record("p0", 1, 2);
        again.record("new", 1, 1);
        assert_eq!(again, c);
    }
}
