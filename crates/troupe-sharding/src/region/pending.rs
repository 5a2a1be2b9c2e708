//! An envelope on its way through the region, and what it keeps while it
//! waits (in the buffer, or for its entity's stop): when it was first
//! buffered, and the span it arrived in. Written by the region actor only.

use std::time::{Duration, Instant};

use troupe::ReplyTo;

use crate::envelope::{Refusal, ShardAsk, ShardReply, ShardTell};

/// An envelope on its way, with what it keeps while it waits.
pub(crate) enum Pending {
    Tell(ShardTell, Held),
    Ask(ShardAsk, ReplyTo<ShardReply>, Held),
}

/// What an envelope keeps while it waits (in the buffer, or for its
/// entity's stop): empty on the direct path, which reads no clock and
/// clones no span.
#[derive(Default)]
pub(crate) struct Held {
    /// When it was first buffered.
    pub(super) since: Option<Instant>,
    /// An ask's: when its asker stops waiting (`ShardAsk::budget_ms` from
    /// its arrival here). It waits no longer, and is forwarded with what
    /// is left.
    pub(super) deadline: Option<Instant>,
    /// The span it arrived in (the sender's, or the `receive` span of a
    /// remote tell), entered again when it is routed later, so that the
    /// entity's message, or the forward, continues the sender's trace.
    pub(super) span: Option<tracing::Span>,
    /// Counted against the buffer's bound already: by the node's inbox
    /// when it confirmed it to its sender (direct.rs), or by the buffer
    /// when it first took it. The buffer takes it even when full.
    pub(super) reserved: bool,
}

impl Held {
    /// What an ask keeps: its asker's deadline, `budget_ms` from now.
    pub(super) fn ask(budget_ms: u32) -> Self {
        Held {
            deadline: Instant::now().checked_add(Duration::from_millis(u64::from(budget_ms))),
            ..Held::default()
        }
    }

    /// What a remote tell the inbox confirmed keeps.
    pub(super) fn reserved() -> Self {
        Held {
            reserved: true,
            ..Held::default()
        }
    }
}

impl Pending {
    pub(super) fn entity(&self) -> &str {
        match self {
            Pending::Tell(t, _) => &t.entity,
            Pending::Ask(a, _, _) => &a.entity,
        }
    }
    pub(super) fn hops(&self) -> u8 {
        match self {
            Pending::Tell(t, _) => t.hops,
            Pending::Ask(a, _, _) => a.hops,
        }
    }
    pub(super) fn held(&mut self) -> &mut Held {
        match self {
            Pending::Tell(_, h) | Pending::Ask(_, _, h) => h,
        }
    }
    pub(super) fn reserved(&self) -> bool {
        match self {
            Pending::Tell(_, h) | Pending::Ask(_, _, h) => h.reserved,
        }
    }
    /// Whether it has waited too long, at `now`: in the buffer for
    /// `timeout` or more, or (an ask) past its asker's deadline.
    pub(super) fn overdue(&self, now: Instant, timeout: Duration) -> bool {
        let h = match self {
            Pending::Tell(_, h) | Pending::Ask(_, _, h) => h,
        };
        h.since.is_some_and(|t| now.duration_since(t) >= timeout)
            || h.deadline.is_some_and(|d| now >= d)
    }
    /// Keeps the span it arrived in, for a later `Region::reroute`.
    pub(super) fn keep_span(&mut self) {
        self.held().span.get_or_insert_with(tracing::Span::current);
    }
    pub(super) fn stamp(&mut self) {
        self.held().since.get_or_insert_with(Instant::now);
        self.keep_span();
    }
    /// Refuses it: an ask is answered `why`. Every envelope the region
    /// does not deliver or forward leaves through here (after its counter).
    pub(super) fn refuse(self, why: Refusal) {
        if let Pending::Ask(_, reply, _) = self {
            reply.reply(ShardReply::Refused(why));
        }
    }
}
