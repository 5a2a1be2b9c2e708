//! What a sharding did, counted: [`ShardingStats`] and the atomics behind it.
//!
//! Writers: the region actor (activations, passivations, deliveries,
//! buffering, bad input), the node's inbox (direct deliveries, tells it
//! refuses for a full buffer), the coordinator (claims, hand-overs, store
//! errors) and entity references (tells and asks sent; tells on a
//! [`PerThread`] counter, a cell per sending thread). Every message
//! that is not delivered lands in exactly one of `buffer_full`, `expired`,
//! `hops_exceeded`, `bad_envelopes`, `unknown_types`, `undecodable`,
//! `entity_gone` or `entities_refused`; every message delivered into a
//! mailbox and not handled there is `redelivered` to the next instance
//! or counted in `mailbox_dropped`.

use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_utils::CachePadded;
use thread_local::ThreadLocal;

macro_rules! counters {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        /// A snapshot of one node's sharding counters.
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        pub struct ShardingStats {
            $($(#[$doc])* pub $name: u64,)*
        }

        #[derive(Default)]
        pub(crate) struct Counters {
            $(pub(crate) $name: AtomicU64,)*
            /// Tells sent by entity references, per sending thread
            /// (added to `tells` in the snapshot).
            pub(crate) tells_sent: PerThread,
        }

        impl Counters {
            fn load(&self) -> ShardingStats {
                ShardingStats {
                    $($name: self.$name.load(Ordering::Relaxed),)*
                }
            }
        }
    };
}

counters! {
    /// Entities started on this node.
    activations,
    /// Entities stopped here for idleness.
    passivations,
    /// Entities stopped here for a hand-over or a lost shard.
    handover_stops,
    /// Entities killed here because a leave's hand-over timed out (what
    /// their mailboxes held is in the actor system's `dropped`).
    handover_kills,
    /// Entities running here now.
    entities_active,
    /// Shards this node owns now.
    shards_owned,
    /// Shards claimed (free or released ones).
    claims,
    /// Shards claimed from a node that was down.
    takeovers,
    /// Shards released to another node after their entities stopped.
    handovers,
    /// Shards this node found owned by another (fenced out).
    shards_lost,
    /// Activations refused because the fencing token was no longer current.
    fencing_refusals,
    /// Claims or releases that lost a revision race.
    conflicts,
    /// Ownership store calls that failed.
    store_errors,
    /// Tells sent by entity references on this node.
    tells,
    /// Asks sent by entity references on this node.
    asks,
    /// Of `tells`: those sent with a receipt (`EntityRef::tell_confirmed`).
    tells_confirmed_sent,
    /// Messages handed to a local entity's mailbox. What a mailbox still
    /// holds when its entity stops itself or panics goes to the next
    /// instance (`redelivered`); what it holds when the entity is killed
    /// (a lost shard, a leave) is counted in `mailbox_dropped`.
    delivered,
    /// Of `delivered`, remote tells the node's inbox handed to their
    /// entity directly, without the region's thread (written by the
    /// node's inbox loop alone, one task).
    delivered_direct,
    /// Envelopes forwarded to another node's region.
    forwarded,
    /// Envelopes buffered while their shard had no owner here.
    buffered,
    /// Envelopes refused because the buffer was full (asks answered
    /// `Unavailable`, local tells handed back as `SendError::Full`, remote
    /// tells refused by the inbox, which their sender's link counts as
    /// refused by the peer).
    buffer_full,
    /// Envelopes refused unhandled for waiting too long: buffered past the
    /// buffer timeout, asks past their asker's deadline, and what a
    /// stopping region could not forward (asks answered `Expired`, or
    /// `Unavailable` from a stopping region).
    expired,
    /// Envelopes refused because they had been forwarded `MAX_HOPS`
    /// times and reached a region that does not own their shard either
    /// (asks answered `TooManyHops`).
    hops_exceeded,
    /// Envelopes with a bad id or hop count.
    bad_envelopes,
    /// Envelopes of a message type this sharding does not take.
    unknown_types,
    /// Payloads that did not decode.
    undecodable,
    /// Tells lost because a just-activated entity had stopped before its
    /// first message reached it (a running entity that stops as a tell
    /// reaches it has the tell routed again, to its next instance).
    entity_gone,
    /// Envelopes refused because the entity table was full
    /// (`max_entities` active entities, and as many stopping ones besides).
    entities_refused,
    /// Messages a stopped entity instance left in its mailbox (it stopped
    /// itself, or panicked) handed to its next instance.
    redelivered,
    /// Messages an entity's mailbox held that no instance will handle:
    /// its shard was lost (its new owner cannot be handed them), a leave
    /// killed it, its region stopped, or it stopped before handling
    /// anything. Also in the actor system's `dropped_messages`.
    mailbox_dropped,
    /// Of `passivations`: least recently used entities passivated to make
    /// room for another (`max_entities`).
    evictions,
}

impl Counters {
    /// A snapshot. The direct path counts a delivery in `delivered_direct`
    /// alone (a load and a store per message on the inbox loop, its one
    /// writer); it is added to `delivered` here.
    pub(crate) fn snapshot(&self) -> ShardingStats {
        let mut s = self.load();
        s.delivered = s.delivered.saturating_add(s.delivered_direct);
        s.tells = s.tells.saturating_add(self.tells_sent.sum());
        s
    }

    pub(crate) fn add(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds one and says whether to log this one: the 1st, 2nd, 4th,
    /// 8th..., so a flood of lost envelopes cannot flood the log too (the
    /// counter keeps the exact number).
    pub(crate) fn bump_and_log(c: &AtomicU64) -> bool {
        c.fetch_add(1, Ordering::Relaxed)
            .wrapping_add(1)
            .is_power_of_two()
    }

    /// Adds one to a counter that only one thread at a time writes (one
    /// task, or one actor): a load and a store, without the locked
    /// read-modify-write. A second writer would lose counts.
    pub(crate) fn add_single_writer(c: &AtomicU64) {
        c.store(c.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    }
}

/// A counter that many threads add to, each on a cell of its own
/// (`thread_local::ThreadLocal`: one cell per live thread, kept for the
/// next thread that reuses the id): a thread's add is a load and a store
/// on its own cell, no locked read-modify-write and no line shared with
/// other writers. Read by summing the cells.
#[derive(Default)]
pub(crate) struct PerThread {
    cells: ThreadLocal<CachePadded<AtomicU64>>,
}

impl PerThread {
    /// Adds one, on this thread's cell (this thread is its only writer).
    pub(crate) fn add(&self) {
        let c = self.cells.get_or_default();
        c.store(c.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
    }

    /// The sum of the cells.
    pub(crate) fn sum(&self) -> u64 {
        self.cells
            .iter()
            .fold(0u64, |a, c| a.saturating_add(c.load(Ordering::Relaxed)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_thread_s_adds_are_summed() {
        let c = PerThread::default();
        std::thread::scope(|s| {
            for _ in 0..19 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        c.add();
                    }
                });
            }
        });
        assert_eq!(c.sum(), 19_000);
        // Threads that reuse an exited thread's cell add to it.
        for _ in 0..3 {
            std::thread::spawn(|| ()).join().unwrap();
            std::thread::scope(|s| {
                s.spawn(|| c.add());
            });
        }
        assert_eq!(c.sum(), 19_003);
    }
}
