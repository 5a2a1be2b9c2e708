//! [`ActorId`]: process-unique, handed out without a shared counter.

use std::cell::Cell;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// A process-unique actor id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ActorId(pub(crate) u64);

/// Ids are handed out in per-thread blocks, so spawning touches no shared
/// counter but once per block.
const ID_BLOCK: u64 = 1024;
static NEXT_ID_BLOCK: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// (next id, end of this thread's block of ids)
    static IDS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

impl ActorId {
    /// The id as a number.
    pub fn as_u64(self) -> u64 {
        self.0
    }

    /// A fresh id.
    pub(crate) fn next() -> ActorId {
        IDS.with(|ids| {
            let (mut next, mut end) = ids.get();
            if next == end {
                next = NEXT_ID_BLOCK.fetch_add(1, Ordering::Relaxed) * ID_BLOCK;
                end = next + ID_BLOCK;
            }
            ids.set((next + 1, end));
            ActorId(next)
        })
    }
}

impl fmt::Display for ActorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{}>", self.0)
    }
}
