//! The direct path: a remote tell to an entity that is active here is
//! handed to the entity by the node's inbox loop, without the hop to the
//! region's thread.
//!
//! The region publishes a table of its active entities ([`Direct`]). The
//! inbox's tell handlers ([`inbound_typed`] for an entity reference's
//! [`EntityTell`](crate::envelope::EntityTell), one per message type;
//! [`inbound`] for a region's forwarded [`ShardTell`]) read the envelope
//! borrowed from the frame ([`EntityTellView`], [`ShardTellView`]) and
//! deliver it directly when all of these hold, else hand the owned
//! envelope to the region (`RegionMsg::Inbound`):
//! - no envelope the inbox handed to the region is still unhandled there
//!   (`inflight == 0`) and the region's buffer is empty (`pending == 0`);
//! - the delivery lease the region holds is valid now (`lease_until`,
//!   written by the region on each `Verified`: the region's deadline,
//!   moved earlier by the coarse clock's margin, so the direct path never
//!   delivers later than the region would; inside a batch "now" is a
//!   clock read at most [`CLOCK_REUSE`] direct tells old, which the
//!   margin covers);
//! - the entity has an entry in its shard's map, the payload's type is
//!   known and decodes, and the entity's mailbox takes it (`try_tell`).
//!
//! Writers: the region alone inserts and removes entries and writes the
//! lease; the inbox sets an entry's `touched` flag (activity, read and
//! cleared by the region on `Tick` for passivation); the inbox and this
//! node's entity references increment `inflight` for each envelope they
//! hand to the region (a locked add; the region decrements it once it
//! has routed the envelope); the inbox loop alone increments
//! `delivered_direct` and reads the clock into the table (one task: the
//! handlers here are the node's tell handlers for the region, run by the
//! node's one inbox loop; loads and stores, no locked add).
//!
//! Invariants (with region/mod.rs's, which stay true):
//! - An entry exists only for an `Active` instance of an owned shard that
//!   is not being released. The region inserts it at the end of the
//!   handler that activated the instance, after it has handed the
//!   instance everything it held for it (the envelopes that waited for the
//!   previous instance's stop, the buffer). It removes it, under the
//!   table's write lock, *before* it stops, kills or forgets the instance
//!   (release, loss, passivation, an instance that stopped by itself) and
//!   before it drops the shard.
//! - The inbox tells the entity under the table's read lock, so once the
//!   region's removal returns no direct tell follows, and every one before
//!   it is in the mailbox ahead of the stop (a stop drains the mailbox).
//!   Inside an inbox batch (`troupe::batch_wakes`) the read lock is taken
//!   at the batch's first direct tell and released at its end
//!   (`troupe::hold_in_batch`), or at its next direct tell once the region
//!   waits for the write lock (`wanted`): the region waits at most until
//!   then. The region (the only writer) runs on its own thread and never
//!   inside a batch; the inbox never waits for the region inside one (it
//!   hands envelopes over with `try_tell`), so neither waits for the other
//!   in a circle.
//! - Per-sender FIFO: a sender's envelopes reach this node through one
//!   inbox loop, in order. Once one of them went to the region
//!   (`inflight > 0`), every later one follows it there until the region
//!   has routed them all; envelopes the region keeps (buffer, waiting for
//!   a stop) keep the direct path shut (`pending > 0`, or no entry) until
//!   the region has delivered them. The region stores `pending` before it
//!   decrements `inflight` (release), and the inbox reads `inflight`
//!   (acquire) before `pending`.
//! - Every envelope is counted once: `delivered` (and `delivered_direct`)
//!   on this path, `buffer_full` when the inbox refuses it, or by the
//!   region on its path.
//! - An envelope the inbox confirms is never refused by the region for a
//!   full buffer: the inbox hands one over only while `inflight + pending`
//!   is below the buffer's bound, and refuses it otherwise
//!   (`TellOutcome::Refused`, which the link reports to the sender as
//!   refused by the peer); the region's buffer always takes an envelope
//!   the inbox handed over (`Held::reserved`). Every envelope in the
//!   buffer or on its way there is counted in `pending` or `inflight`
//!   (the region raises `pending` before it lowers `inflight`, and never
//!   lowers it below what the buffer holds), so the buffer grows past its
//!   bound only by the envelopes whose checks raced with each other (one
//!   per checking thread) and by those that waited for an entity's stop
//!   (counted in neither while they wait) and are buffered after it.
//! - It never activates: at most one instance and the fencing check stay
//!   the region's.
//!
//! Cost per message on this path: a borrowed decode, three
//! atomic loads, a coarse clock read (`Clock`) per [`CLOCK_REUSE`]
//! tells of a batch (one per tell cost 4 ns), a look at the batch's
//! holds (the read lock itself once per batch: two locked operations per
//! tell, 3% of all the CPU an entity tell costs, before 2026-11-27), a
//! keyed hash lookup, the payload's decode, the entity's `try_tell` and a
//! counter's load and store. Nothing is allocated here beyond what the
//! user's message decode allocates.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use hashbrown::HashTable;
use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use smallvec::SmallVec;
use troupe::{hold_in_batch, let_go_in_batch, Actor, ActorRef, BatchHold};
use troupe_remote::envelope::decode_body;
use troupe_remote::{RemoteMessage, TellOutcome};

use super::{Region, RegionMsg};
use crate::envelope::{check, EntityTellView, ShardTell, ShardTellView};
use crate::shared::{Hand, Handed, Shared};
use crate::stats::Counters;

/// One entity the inbox may tell directly.
struct Entry<A: Actor> {
    /// The entity's id (its bytes), inline up to 24 bytes.
    id: SmallVec<[u8; 24]>,
    actor: ActorRef<A>,
    /// Set on each direct tell (if not set already); the region reads and
    /// clears it as activity on `Tick` (passivation, [`Direct::touched`]).
    /// Kept in the entry: no other line to load per tell.
    touched: AtomicBool,
}

/// The entities the inbox may tell directly, by id (its bytes: the inbox
/// looks up the id as it came, unchecked as UTF-8; every id kept is a
/// `String`'s bytes, so an id that is not UTF-8 is never found), of every
/// owned shard in one table: the inbox needs no shard to find one (one map
/// per shard cost the inbox the id's shard hash and a map of its own per
/// shard to touch).
///
/// The ids come off the network: a keyed hash (foldhash, seeded at random
/// per process), cheaper than SipHash on short ids. The table compares
/// ids itself ([`same_id`]) and keeps them inline in its entries: a
/// `HashMap<Box<[u8]>, _>` followed a pointer to each key and called
/// `memcmp` for it (1.7% of an entity tell's CPU with 64 entities).
struct Map<A: Actor> {
    entries: HashTable<Entry<A>>,
    hasher: foldhash::fast::RandomState,
}

impl<A: Actor> Map<A> {
    fn new() -> Self {
        Map {
            entries: HashTable::new(),
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    fn get(&self, id: &[u8]) -> Option<&Entry<A>> {
        self.entries
            .find(self.hasher.hash_one(id), |e| same_id(&e.id, id))
    }

    fn insert(&mut self, entry: Entry<A>) {
        let hash = self.hasher.hash_one(&entry.id[..]);
        match self.entries.find_mut(hash, |e| same_id(&e.id, &entry.id)) {
            Some(e) => *e = entry,
            None => {
                let hasher = &self.hasher;
                self.entries
                    .insert_unique(hash, entry, |e| hasher.hash_one(&e.id[..]));
            }
        }
    }

    fn remove(&mut self, id: &[u8]) {
        let hash = self.hasher.hash_one(id);
        if let Ok(e) = self.entries.find_entry(hash, |e| same_id(&e.id, id)) {
            e.remove();
        }
    }

    fn clear(&mut self) {
        self.entries.clear();
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

/// Whether two ids are the same bytes: compared here with word loads
/// (ids are short; a call to `memcmp` cost more than the comparison).
/// Every byte is covered: the last word of each length overlaps the
/// words before it, and up to 3 bytes are the first, middle and last.
fn same_id(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let w8 = |s: &[u8], i: usize| {
        s.get(i..i + 8)
            .and_then(|w| <[u8; 8]>::try_from(w).ok())
            .map(u64::from_ne_bytes)
    };
    let w4 = |s: &[u8], i: usize| {
        s.get(i..i + 4)
            .and_then(|w| <[u8; 4]>::try_from(w).ok())
            .map(u32::from_ne_bytes)
    };
    match n {
        0..=3 => a.first() == b.first() && a.get(n / 2) == b.get(n / 2) && a.last() == b.last(),
        4..=7 => w4(a, 0) == w4(b, 0) && w4(a, n - 4) == w4(b, n - 4),
        _ => (0..n - 8).step_by(8).all(|i| w8(a, i) == w8(b, i)) && w8(a, n - 8) == w8(b, n - 8),
    }
}

/// The entities the inbox may tell directly, behind a lock whose read
/// side an inbox batch takes once ([`Direct::read`]).
struct Table<A: Actor> {
    map: RwLock<Map<A>>,
    /// The region waits for the write lock: a batch that holds the read
    /// side lets go at its next direct tell instead of at its end.
    wanted: AtomicBool,
    /// The clock as the batch holding the read side last read it
    /// ([`Table::recent_now`]); written by the inbox loop alone.
    seen: AtomicU64,
    /// How many more direct tells of that batch may use `seen`; the
    /// batch's first sets it to 0 (`Direct::read`).
    reuses: AtomicU32,
}

/// How many direct tells of one batch share a clock read: the first,
/// then one read per this many. A tell's lease check may use a reading
/// up to this many tells old (a few microseconds of the inbox's work);
/// the lease's margin (twice the coarse clock's resolution, milliseconds)
/// covers that as it covers the time between a fresh read and the
/// delivery. A read per tell was 4 ns of the inbox's ~60 ns per entity
/// tell on this VM.
const CLOCK_REUSE: u32 = 32;

impl<A: Actor> Table<A> {
    /// Inbox, inside the batch that holds the read side: the clock,
    /// read afresh at the batch's first direct tell and then once per
    /// [`CLOCK_REUSE`] tells. The inbox loop (one task) is the only
    /// caller: loads and stores, no locked operation.
    fn recent_now(&self, clock: &Clock) -> u64 {
        let left = self.reuses.load(Ordering::Relaxed);
        if left == 0 {
            let now = clock.now();
            self.seen.store(now, Ordering::Relaxed);
            self.reuses.store(CLOCK_REUSE - 1, Ordering::Relaxed);
            return now;
        }
        self.reuses.store(left - 1, Ordering::Relaxed);
        self.seen.load(Ordering::Relaxed)
    }
}

impl<A: Actor> BatchHold for Table<A> {
    fn release(&self) {
        // SAFETY: the batch took the read lock once, in `Direct::read`
        // (`hold_in_batch` ran `take`, which forgot a read guard), and
        // releases each take once: here, at its end or on `let_go`.
        unsafe { self.map.force_unlock_read() };
    }
}

/// The map as the inbox reads it: under the read lock its batch holds,
/// or under a guard of its own.
enum Read<'a, A: Actor> {
    Held(&'a Map<A>),
    Guard(RwLockReadGuard<'a, Map<A>>),
}

impl<A: Actor> std::ops::Deref for Read<'_, A> {
    type Target = Map<A>;
    fn deref(&self) -> &Map<A> {
        match self {
            Read::Held(s) => s,
            Read::Guard(g) => g,
        }
    }
}

/// The entities the inbox may tell directly, with the lease.
pub(crate) struct Direct<A: Actor> {
    table: Arc<Table<A>>,
    /// The lease's end on `clock`, less its margin; 0: no lease.
    lease_until: AtomicU64,
    clock: Clock,
    /// Envelopes the inbox handed to the region, not yet routed there.
    inflight: AtomicUsize,
}

impl<A: Actor> Direct<A> {
    pub(crate) fn new() -> Self {
        Direct {
            table: Arc::new(Table {
                map: RwLock::new(Map::new()),
                wanted: AtomicBool::new(false),
                seen: AtomicU64::new(0),
                reuses: AtomicU32::new(0),
            }),
            lease_until: AtomicU64::new(0),
            clock: Clock::new(),
            inflight: AtomicUsize::new(0),
        }
    }

    /// Region (the only writer): the write lock, once no batch holds the
    /// read side (a holding batch lets go at its next direct tell, or at
    /// its end).
    fn write(&self) -> RwLockWriteGuard<'_, Map<A>> {
        self.table.wanted.store(true, Ordering::Relaxed);
        let guard = self.table.map.write();
        self.table.wanted.store(false, Ordering::Relaxed);
        guard
    }

    /// Inbox: the map, read-locked. Inside an inbox batch
    /// (`troupe::batch_wakes`) the batch takes the read lock at its first
    /// direct tell and keeps it until it ends, so a batch of tells pays
    /// for one lock, not one per tell; if the region waits for the write
    /// lock, the batch lets go first and this tell locks for itself
    /// (waiting for the region's write).
    fn read(&self) -> Read<'_, A> {
        let t = &self.table;
        let take = || {
            std::mem::forget(t.map.read());
            // The batch's first direct tell reads the clock afresh.
            t.reuses.store(0, Ordering::Relaxed);
        };
        if hold_in_batch(t, take) {
            if !t.wanted.load(Ordering::Relaxed) {
                // This thread's open batch holds the read lock
                // (`hold_in_batch`) and releases it only when the batch
                // ends or on `let_go_in_batch`: both after this call,
                // which runs inside the batch (the inbox's tell handler)
                // and never lets go while the reference lives.
                // SAFETY: the read lock is held while `held` lives (above).
                let held = unsafe { &*t.map.data_ptr() };
                return Read::Held(held);
            }
            let_go_in_batch(t);
        }
        Read::Guard(t.map.read())
    }

    /// Region: `actor` (entity `id`) may be told directly.
    pub(super) fn insert(&self, id: &str, actor: &ActorRef<A>) {
        let entry = Entry {
            id: SmallVec::from_slice(id.as_bytes()),
            actor: actor.clone(),
            touched: AtomicBool::new(false),
        };
        self.write().insert(entry);
    }

    /// Region: calls `f` with the id of each entity told directly since
    /// the last call, and clears its mark. Under a read lock of its own:
    /// the inbox goes on telling meanwhile (a tell after its entity's mark
    /// was read marks it for the next call).
    pub(super) fn touched(&self, mut f: impl FnMut(&str)) {
        let map = self.table.map.read();
        for e in map.entries.iter() {
            if e.touched.load(Ordering::Relaxed) && e.touched.swap(false, Ordering::Relaxed) {
                // Every id kept came from a `&str`.
                if let Ok(id) = std::str::from_utf8(&e.id) {
                    f(id);
                }
            }
        }
    }

    /// Region: whether entity `id` was told directly since its mark was
    /// last read (here or by [`touched`](Self::touched)); clears it.
    pub(super) fn take_touched(&self, id: &str) -> bool {
        let map = self.table.map.read();
        map.get(id.as_bytes()).is_some_and(|e| {
            e.touched.load(Ordering::Relaxed) && e.touched.swap(false, Ordering::Relaxed)
        })
    }

    /// Region: entity `id` is no longer told directly; once this returns,
    /// no direct tell to it is under way.
    pub(super) fn remove(&self, id: &str) {
        self.write().remove(id.as_bytes());
    }

    /// Region: nothing is told directly any more (the region stopped).
    pub(super) fn clear(&self) {
        self.write().clear();
        self.lease_until.store(0, Ordering::Release);
    }

    /// Region: the lease now ends at `until`.
    pub(super) fn set_lease(&self, until: Instant) {
        self.lease_until
            .store(self.clock.deadline(until).max(1), Ordering::Release);
    }

    /// The inbox, or an entity reference on this node: one envelope is
    /// handed to the region (`RegionMsg::Inbound`), its place in the
    /// buffer reserved; the region calls [`routed`](Self::routed) once it
    /// has routed it.
    pub(crate) fn handing(&self) {
        self.inflight.fetch_add(1, Ordering::AcqRel);
    }

    /// Region (or the hander, if the region did not take it): one envelope
    /// handed over has been routed.
    pub(crate) fn routed(&self) {
        self.inflight.fetch_sub(1, Ordering::Release);
    }

    /// Envelopes the inbox handed to the region, not yet routed there.
    pub(crate) fn inflight(&self) -> usize {
        self.inflight.load(Ordering::Acquire)
    }

    /// Whether the direct path is open: nothing of the inbox's waits in
    /// the region, the buffer is empty, and there is a lease (whether it
    /// holds now: [`lease_holds`](Self::lease_holds)).
    fn open(&self, pending: &AtomicUsize) -> bool {
        self.inflight.load(Ordering::Acquire) == 0
            && pending.load(Ordering::Acquire) == 0
            && self.lease_until.load(Ordering::Acquire) != 0
    }

    /// Whether the lease holds now, `map` read: inside a batch that holds
    /// the map, on the batch's recent clock read ([`Table::recent_now`]),
    /// else on a fresh one.
    fn lease_holds(&self, map: &Read<'_, A>) -> bool {
        let until = self.lease_until.load(Ordering::Acquire);
        let now = match map {
            Read::Held(_) => self.table.recent_now(&self.clock),
            Read::Guard(_) => self.clock.now(),
        };
        until != 0 && now < until
    }
}

/// The inbox's handler for a remote [`ShardTell`](crate::envelope::ShardTell)
/// to `region` (a region's forward, hops counted): the direct path when
/// it may, else the region's.
pub(crate) fn inbound<A: Actor>(
    shared: &Shared<A>,
    region: &ActorRef<Region<A>>,
    body: &[u8],
) -> TellOutcome {
    let Some(env) = ShardTellView::parse(body) else {
        return TellOutcome::Undecodable;
    };
    let direct = &shared.direct;
    if check(env.entity, env.hops) && direct.open(&shared.pending) {
        let map = direct.read();
        if let (Some(entry), Some(d)) = (map.get(env.entity), shared.tells.get(&env.tag)) {
            // An expired lease, unknown types, undecodable payloads and a
            // full or stopped mailbox go on to the region, which counts
            // them.
            if direct.lease_holds(&map)
                && (d.f)(env.payload, &entry.actor, Hand::Try) == Handed::Delivered
            {
                return delivered(shared, entry);
            }
        }
    }
    to_region(shared, region, || env.to_tell())
}

/// The inbox's handler for a remote [`EntityTell<M>`](crate::envelope::EntityTell)
/// to `region` (an entity reference's tell): as [`inbound`], with the
/// message type known from the frame's type (no tag to look up) and the
/// message decoded here, in `M`'s own code.
pub(crate) fn inbound_typed<A: Actor, M: RemoteMessage>(
    shared: &Shared<A>,
    region: &ActorRef<Region<A>>,
    body: &[u8],
) -> TellOutcome
where
    A::Msg: From<M>,
{
    let Some(env) = EntityTellView::parse(body) else {
        return TellOutcome::Undecodable;
    };
    let direct = &shared.direct;
    if check(env.entity, 0) && direct.open(&shared.pending) {
        let map = direct.read();
        if let Some(entry) = map.get(env.entity) {
            // As in `inbound`: what fails here goes on to the region.
            if direct.lease_holds(&map) {
                if let Ok(m) = decode_body::<M>(env.msg) {
                    if entry.actor.try_tell(A::Msg::from(m)).is_ok() {
                        return delivered(shared, entry);
                    }
                }
            }
        }
    }
    to_region(shared, region, || env.to_tell::<M>())
}

/// Counts a direct delivery to `entry`'s entity and marks it touched.
fn delivered<A: Actor>(shared: &Shared<A>, entry: &Entry<A>) -> TellOutcome {
    // Written only when the region has cleared it: the line is not
    // bounced on every message.
    if !entry.touched.load(Ordering::Relaxed) {
        entry.touched.store(true, Ordering::Relaxed);
    }
    // Counted in `delivered` too (stats.rs). The node's inbox loop (one
    // task) is the only writer.
    Counters::add_single_writer(&shared.stats.delivered_direct);
    TellOutcome::Delivered
}

/// The region's path for an envelope the direct path did not deliver:
/// `tell` builds the owned envelope (`None`: the id is not UTF-8).
fn to_region<A: Actor>(
    shared: &Shared<A>,
    region: &ActorRef<Region<A>>,
    tell: impl FnOnce() -> Option<ShardTell>,
) -> TellOutcome {
    // The region may have to buffer it: confirm it only if the buffer can
    // take it, so that the sender hears of every refusal.
    if shared.buffer_held() >= shared.config.buffer {
        Counters::add(&shared.stats.buffer_full);
        return TellOutcome::Refused;
    }
    let Some(env) = tell() else {
        return TellOutcome::Undecodable;
    };
    let direct = &shared.direct;
    direct.handing();
    match region.try_tell(RegionMsg::Inbound(env)) {
        Ok(()) => TellOutcome::Delivered,
        Err(_) => {
            direct.routed();
            TellOutcome::Refused
        }
    }
}

/// The direct path's clock, in nanoseconds. On Linux the kernel's coarse
/// monotonic clock (`CLOCK_MONOTONIC_COARSE`: the same time base as
/// `Instant`, updated once a jiffy, read without touching the hardware
/// clock; a precise read costs 8% of the inbox thread at two million
/// tells a second on a VM). It lags the precise clock by less than its
/// resolution, so a deadline is moved earlier by twice the resolution:
/// `now() < deadline(t)` implies the precise time is before `t`.
/// Elsewhere, or if the coarse clock is missing or coarser than 20 ms,
/// `Instant` with no margin.
struct Clock {
    #[cfg(target_os = "linux")]
    margin: Option<u64>,
    base: Instant,
}

impl Clock {
    fn new() -> Self {
        Clock {
            #[cfg(target_os = "linux")]
            margin: coarse::resolution()
                .filter(|&r| r <= 20_000_000)
                .map(|r| 2 * r.max(1)),
            base: Instant::now(),
        }
    }

    /// `until` on this clock, less the margin.
    fn deadline(&self, until: Instant) -> u64 {
        let ahead = until.saturating_duration_since(Instant::now()).as_nanos();
        let ahead = u64::try_from(ahead).unwrap_or(u64::MAX);
        #[cfg(target_os = "linux")]
        if let Some(margin) = self.margin {
            return coarse::precise_now()
                .saturating_add(ahead)
                .saturating_sub(margin);
        }
        let now = u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX);
        now.saturating_add(ahead)
    }

    #[inline]
    fn now(&self) -> u64 {
        #[cfg(target_os = "linux")]
        if self.margin.is_some() {
            return coarse::now();
        }
        u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

#[cfg(target_os = "linux")]
mod coarse {
    fn read(clock: libc::clockid_t) -> Option<u64> {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec owned by this frame;
        // clock_gettime writes only it.
        let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
        let secs = u64::try_from(ts.tv_sec).ok()?;
        let nanos = u64::try_from(ts.tv_nsec).ok()?;
        (rc == 0).then(|| secs.saturating_mul(1_000_000_000).saturating_add(nanos))
    }

    /// The coarse clock's resolution in nanoseconds.
    pub(super) fn resolution() -> Option<u64> {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: as in `read`; clock_getres writes only `ts`.
        let rc = unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
        let secs = u64::try_from(ts.tv_sec).ok()?;
        let nanos = u64::try_from(ts.tv_nsec).ok()?;
        (rc == 0).then(|| secs.saturating_mul(1_000_000_000).saturating_add(nanos))
    }

    pub(super) fn now() -> u64 {
        // 0 reads as expired.
        read(libc::CLOCK_MONOTONIC_COARSE).unwrap_or(u64::MAX)
    }

    pub(super) fn precise_now() -> u64 {
        read(libc::CLOCK_MONOTONIC).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    struct Nop;
    impl Actor for Nop {
        type Msg = ();
        fn handle(&mut self, _: (), _: &mut troupe::Context<'_, Self>) {}
    }

    #[test]
    fn ids_are_compared_byte_for_byte() {
        for n in 0..40usize {
            let a: Vec<u8> = (0..n as u8).collect();
            assert!(same_id(&a, &a.clone()), "{n}");
            for i in 0..n {
                let mut b = a.clone();
                b[i] ^= 0x80;
                assert!(!same_id(&a, &b), "{n} differ at {i}");
            }
            let mut longer = a.clone();
            longer.push(0);
            assert!(!same_id(&a, &longer));
            assert!(!same_id(&longer, &a));
        }
    }

    /// The region's removal waits while an inbox batch holds the read
    /// side; the batch lets go at its next read, which then waits for the
    /// removal and sees the entity gone. (With the hold not taken, the
    /// removal returns at once and the first assertion fails.)
    #[test]
    fn a_removal_waits_for_the_batch_that_holds_the_map() {
        let system = troupe::ActorSystem::new();
        let actor = system.spawn(Nop);
        let direct = Arc::new(Direct::<Nop>::new());
        direct.insert("e", &actor);
        let (held_tx, held_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let inbox = {
            let direct = direct.clone();
            std::thread::spawn(move || {
                troupe::batch_wakes(|| {
                    assert!(direct.read().get(b"e").is_some());
                    held_tx.send(()).unwrap();
                    go_rx.recv().unwrap();
                    // The region waits: let go, and read after its write.
                    direct.read().get(b"e").is_some()
                })
            })
        };
        held_rx.recv().unwrap();
        let removed = Arc::new(AtomicBool::new(false));
        let region = {
            let (direct, removed) = (direct.clone(), removed.clone());
            std::thread::spawn(move || {
                direct.remove("e");
                removed.store(true, Ordering::SeqCst);
            })
        };
        std::thread::sleep(Duration::from_millis(100));
        assert!(
            !removed.load(Ordering::SeqCst),
            "removed while a batch held the map"
        );
        go_tx.send(()).unwrap();
        assert!(
            !inbox.join().unwrap(),
            "the batch read the entity after its removal"
        );
        region.join().unwrap();
        assert!(removed.load(Ordering::SeqCst));
        // No batch: each read locks for itself, and a write never waits.
        direct.insert("f", &actor);
        assert!(direct.read().get(b"f").is_some());
        direct.remove("f");
        assert_eq!(direct.read().len(), 0);
    }

    /// Inside a batch the lease check reads the clock at the batch's
    /// first direct tell and then once per [`CLOCK_REUSE`] tells: a lease
    /// that ends during a batch is seen ended within that many checks,
    /// and a batch never starts from the last batch's reading. (One
    /// reading for a whole batch fails the first part; a batch that does
    /// not read afresh at its start, the second.)
    #[test]
    fn a_batch_sees_its_lease_end() {
        let direct = Direct::<Nop>::new();
        let lease = Duration::from_millis(60);
        let past = Duration::from_millis(100);
        direct.set_lease(Instant::now() + lease);
        troupe::batch_wakes(|| {
            let map = direct.read();
            assert!(matches!(map, Read::Held(_)), "the batch holds the map");
            assert!(direct.lease_holds(&map));
            std::thread::sleep(past);
            let mut stale = 0;
            while direct.lease_holds(&map) {
                stale += 1;
                assert!(stale < CLOCK_REUSE, "the batch never read the clock again");
            }
        });
        direct.set_lease(Instant::now() + lease);
        troupe::batch_wakes(|| assert!(direct.lease_holds(&direct.read())));
        std::thread::sleep(past);
        troupe::batch_wakes(|| {
            assert!(
                !direct.lease_holds(&direct.read()),
                "a batch used the last batch's clock reading"
            );
        });
        // Outside a batch every check reads the clock.
        direct.set_lease(Instant::now() + lease);
        assert!(direct.lease_holds(&direct.read()));
        std::thread::sleep(past);
        assert!(!direct.lease_holds(&direct.read()));
    }

    #[test]
    fn the_clock_never_says_valid_past_the_deadline() {
        let clock = Clock::new();
        let until = Instant::now() + Duration::from_millis(200);
        let deadline = clock.deadline(until);
        assert!(clock.now() < deadline, "valid at first");
        loop {
            // The precise time first: a delay before the coarse read only
            // makes that read later.
            let precise = Instant::now();
            if clock.now() >= deadline {
                break;
            }
            assert!(precise < until, "valid after the deadline");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(
            clock.now() >= clock.deadline(Instant::now()),
            "a lease ending now is over"
        );
    }
}
