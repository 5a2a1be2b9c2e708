//! The coordinator: one thread per node and sharding type that follows
//! membership and moves shards, through the ownership store.
//!
//! Ticks start at a fixed rate: `tick` after the last one began, or at
//! once when it took longer (and at once when the cluster declares a node
//! down). Each tick:
//! 1. takes the live nodes: this node and those of `cluster.peers()` that
//!    host the sharding type (the type's member list in the store, which
//!    each node joins at start and leaves on a graceful leave), less the
//!    operators' controls ([`controls`](crate::controls): a node drained
//!    or marked down is not among them, a node marked down is not alive;
//!    while rebalancing is paused a shard whose owner is among them
//!    stays with it, and a shard that must move goes to one of them that
//!    holds shards already, so a node joining during the pause stays
//!    empty);
//! 2. reads every shard's owner record;
//! 3. rewrites the routing table: a shard owned by another live node routes
//!    to that node's region, any other to this node's region (which owns it
//!    or buffers for it);
//! 4. for each shard, compares the record with the desired owner
//!    ([`desired_owner`] over the live nodes):
//!    - owned here but desired elsewhere: **hand-over**. The region stops
//!      the shard's entities and buffers what arrives; once all have
//!      stopped the coordinator releases the record (revision-checked
//!      against its token). The desired owner claims it on its next tick;
//!    - free (released, never claimed, or held by a node the cluster does
//!      not hold alive (a node that left the member list but runs still
//!      owns its shards until it releases them),
//!      where that node was seen live by this coordinator before or this
//!      node has run longer than the takeover grace: a node just started
//!      has not heard its peers yet and must not take their shards) and
//!      desired here: **claim**, revision-checked against the revision
//!      just read; the new revision is the shard's fencing token, handed to
//!      the region with `Owned` (at once for a released or never claimed
//!      shard, after the wait below for one taken over);
//!    - a record names a node *and its incarnation* (`node/incarnation`,
//!      [`crate::ownership`]): one of an earlier incarnation of a live
//!      node, this node's own included (a restart, or a rejoin after a
//!      false down), names a process that is gone: free, and claimed
//!      anew (no grace for this node's own), with the wait below. The
//!      earlier process, if it still runs cut off, then reads a record
//!      that is not its own and loses the shard;
//!    - owned here by the record (this name and incarnation) but not
//!      known to this coordinator: adopted with the record's revision,
//!      after the same wait;
//!    - known to this coordinator but owned by another in the record:
//!      the region is told `Lost` and kills the shard's entities.
//! 5. sends the region `Verified` (the time the reads began, which renews
//!    its delivery lease) and a `Tick` (passivation, buffer retries). A
//!    tick whose reads fail renews nothing.
//!
//! # Taking over
//!
//! A node out of the cluster's quorum (`Cluster::in_quorum`: the losing
//! side of a partition, with a split-brain strategy set) only refreshes
//! the routing table: it gives up every shard at once (the region kills
//! their entities), claims none and renews no lease, until it is in the
//! quorum again.
//!
//! A shard claimed from a node that is not alive here, or adopted from an
//! earlier incarnation, may still be delivered to by that node: declared
//! down is not dead (a partition, a paused process), and its region
//! delivers until its lease runs out, [`LEASE_TICKS`] ticks after the
//! start of its last read of the records. That read saw its own record,
//! so it began before this claim; the old owner's lease therefore ends
//! before `claim + LEASE_TICKS * tick`. The coordinator tells its region
//! `Owned` only at its first tick after `claim + (LEASE_TICKS + 1) *
//! tick` (the extra tick for what the old owner's entities had in their
//! mailboxes at the lease's end); meanwhile the shard routes here and the
//! region buffers its envelopes, and the shard does not count as
//! settled. This holds whatever the heartbeat and the down detection, as
//! long as every node has the same tick (measured with a real partition,
//! `tests/proxy_partition.rs`: at a 200 ms heartbeat and a 500 ms tick the
//! two owners handled one entity's messages at once for 787-982 ms
//! without the wait, and 0 with it). A released shard needs no wait: its
//! old owner stopped its entities before releasing it.
//!
//! On a graceful leave ([`Sharding::leave`](crate::Sharding::leave), or a
//! drop) it leaves the type's member list, hands over every shard it owns
//! (a shard whose entities do not stop within the hand-over timeout has
//! them killed, then is released: a departed region must not keep it),
//! then runs three more ticks that only refresh the routing table, so the
//! region forwards what senders with an older table still send here. A node
//! killed outright releases nothing: its shards are claimed by the
//! survivors once the cluster declares it down. Two nodes never hold one
//! record revision; a node that is declared down but still runs (a
//! partition, a paused process) keeps its entities until its next tick
//! reads the record and finds it lost, but its region delivers nothing to
//! them once its lease has run out (see [`region`](crate::region)).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use troupe::{Actor, ActorRef};
use troupe_cluster::Cluster;
use troupe_remote::RemoteRef;

use crate::envelope::{ShardAsk, ShardTell};
use crate::ownership::{update_members, ShardOwner, StoreError};
use crate::placement::desired_owner;
use crate::region::{Region, RegionMsg, LEASE_TICKS};
use crate::shared::{Route, Shared};
use crate::stats::Counters;

/// What the coordinator thread is asked to do.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Command {
    Run,
    /// Tick now (a node went down).
    Wake,
    /// Hand over every shard, then stop.
    Leave,
    /// Stop at once, releasing nothing (as if the process died).
    Halt,
}

pub(crate) struct Control {
    pub command: Mutex<Command>,
    pub cv: Condvar,
    /// Whether ownership matched placement at the last tick.
    pub settled: AtomicBool,
    /// Hand-overs in progress, as this coordinator last published them
    /// (`moving.rs`; read by `Sharding::handovers`).
    pub moving: Mutex<Vec<crate::moving::Row>>,
}

impl Control {
    pub fn new() -> Self {
        Control {
            command: Mutex::new(Command::Run),
            cv: Condvar::new(),
            settled: AtomicBool::new(false),
            moving: Mutex::new(Vec::new()),
        }
    }

    pub fn set(&self, c: Command) {
        let mut cmd = self.command.lock();
        if *cmd == Command::Run || *cmd == Command::Wake {
            *cmd = c;
        }
        self.cv.notify_all();
    }
}

pub(crate) struct Coordinator<A: Actor> {
    pub shared: Arc<Shared<A>>,
    pub region: ActorRef<Region<A>>,
    pub region_name: String,
    pub cluster: Arc<Cluster>,
    pub control: Arc<Control>,
    /// Shards this node holds, with their tokens.
    pub owned: HashMap<u32, u64>,
    /// Remote regions by node.
    pub refs: HashMap<String, (RemoteRef<ShardTell>, RemoteRef<ShardAsk>)>,
    /// Nodes this coordinator has seen live (bounded).
    pub seen: HashSet<String>,
    /// The live nodes at the last tick.
    pub last_live: Vec<String>,
    /// Shards claimed from another owner (or adopted from an earlier
    /// incarnation of this node) whose region is told `Owned` only once
    /// this instant has passed: the previous owner's lease has run out by
    /// then (see the module docs, "Taking over").
    pub deferred: HashMap<u32, Instant>,
    pub started: Instant,
    /// This process's incarnation at the last tick
    /// ([`Cluster::incarnation`]; a rejoin renews it).
    pub incarnation: u64,
    /// The peers held alive at the last tick, with their incarnations.
    pub alive_inc: HashMap<String, u64>,
    /// Set once this node has handed its shards over: ticks only refresh
    /// the routing table.
    pub leaving: bool,
}

/// Ticks a leaving node keeps forwarding after its hand-overs.
const LEAVE_DRAIN_TICKS: u32 = 3;
/// The longest of those ticks (a node with a long tick still leaves soon).
const LEAVE_DRAIN_TICK_MAX: Duration = Duration::from_millis(500);

impl<A: Actor> Coordinator<A> {
    pub fn run(mut self) {
        // Ticks start at a fixed rate (`tick` after the last one began, or
        // at once if it took longer), not `tick` after the last one ended:
        // each tick's `Verified` renews the lease from the time its reads
        // began, so a gap of a whole tick plus the reads' time between two
        // starts let a lease of 3 ticks lapse whenever reads took a tick
        // (a node flooded with tells, 2026-11-27).
        // The first tick runs at once: a starting node claims what
        // placement gives it without waiting a tick.
        let mut next = Instant::now();
        loop {
            let cmd = {
                let mut cmd = self.control.command.lock();
                if *cmd == Command::Run {
                    self.control.cv.wait_until(&mut cmd, next);
                }
                let c = *cmd;
                if c == Command::Wake {
                    *cmd = Command::Run;
                }
                c
            };
            match cmd {
                Command::Run | Command::Wake => {
                    next = Instant::now() + self.shared.config.tick;
                    self.tick();
                }
                Command::Leave => {
                    self.leave();
                    break;
                }
                Command::Halt => break,
            }
        }
        self.control.settled.store(false, Ordering::Relaxed);
    }

    fn me(&self) -> &str {
        &self.shared.node
    }

    fn store_error(&self, e: &StoreError) {
        match e {
            StoreError::Conflict => Counters::add(&self.shared.stats.conflicts),
            StoreError::Unavailable(why) => {
                Counters::add(&self.shared.stats.store_errors);
                tracing::warn!(error = %why, kind = %self.shared.kind, "ownership store call failed");
            }
        }
    }

    fn remote(&mut self, node: &str) -> Option<Route> {
        if !self.refs.contains_key(node) {
            let name = format!("{}@{node}", self.region_name);
            let tell = self.cluster.node().lookup::<ShardTell>(&name).ok()?;
            let ask = tell.retype::<ShardAsk>().ok()?;
            self.refs.insert(node.to_string(), (tell, ask));
        }
        let (tell, ask) = self.refs.get(node)?.clone();
        Some(Route::Remote { tell, ask })
    }

    fn tick(&mut self) {
        let sh = self.shared.clone();
        let n = sh.config.shards;
        let began = Instant::now();
        let members = match sh.store.members(&sh.kind) {
            Ok((m, _)) => m,
            Err(e) => {
                self.store_error(&e);
                self.control.settled.store(false, Ordering::Relaxed);
                let _ = self.region.tell(RegionMsg::Tick);
                return;
            }
        };
        // The operators' controls (`controls.rs`): a node drained or down
        // is not among placement's nodes, a node down is not alive, and a
        // pause keeps owned shards where they are.
        let controls = match crate::controls::read(&*sh.store, &sh.kind) {
            Ok(c) => c,
            Err(e) => {
                self.store_error(&e);
                self.control.settled.store(false, Ordering::Relaxed);
                let _ = self.region.tell(RegionMsg::Tick);
                return;
            }
        };
        // `alive`: the nodes the cluster holds alive (and this one): a
        // shard owned by one of them is not free, whatever it hosts.
        // `live`: those of them that host this type, among which
        // placement chooses.
        // Incarnations too: a record names one process (`ownership`).
        // A node an operator marked down is treated as dead.
        let incarnations: Vec<(String, u64)> = self
            .cluster
            .peer_incarnations()
            .into_iter()
            .filter(|(p, _)| !controls.is_down(p))
            .collect();
        self.incarnation = self.cluster.incarnation();
        self.alive_inc = incarnations.iter().cloned().collect();
        let mut alive: Vec<String> = incarnations.into_iter().map(|(n, _)| n).collect();
        alive.push(self.me().to_string());
        alive.sort();
        alive.dedup();
        let live: Vec<String> = alive
            .iter()
            .filter(|p| (*p == self.me() || members.contains(p)) && controls.serves(p))
            .cloned()
            .collect();
        self.refs.retain(|k, _| alive.contains(k));
        for l in &alive {
            if !self.seen.contains(l) && self.seen.len() < crate::ownership::MAX_MEMBERS {
                self.seen.insert(l.clone());
            }
        }
        let same_view = live == self.last_live;
        self.last_live.clone_from(&live);
        let records = match sh.store.owners(&sh.kind, n) {
            Ok(r) => r,
            Err(e) => {
                self.store_error(&e);
                self.control.settled.store(false, Ordering::Relaxed);
                let _ = self.region.tell(RegionMsg::Tick);
                return;
            }
        };
        let mut routes = Vec::with_capacity(n as usize);
        for r in &records {
            let route = match r.node.as_deref() {
                Some(o) if o != self.me() && self.holder_alive(r) => {
                    self.remote(o).unwrap_or(Route::Local)
                }
                _ => Route::Local,
            };
            routes.push(route);
        }
        sh.routes.set(routes);
        if self.leaving {
            let _ = self.region.tell(RegionMsg::Tick);
            return;
        }
        // Out of the quorum (the losing side of a partition, see
        // troupe-cluster's `split_brain`): every shard given up at once,
        // none claimed, no lease renewed; the other side takes them over
        // after its takeover wait.
        if !self.cluster.in_quorum() {
            self.give_up_all();
            self.control.settled.store(false, Ordering::Relaxed);
            let _ = self.region.tell(RegionMsg::Tick);
            return;
        }
        // While paused, a shard that must move (free, or its owner is
        // drained, down or gone) goes to a live node that holds shards
        // already, so a node that joins during the pause stays empty until
        // the resume; only when no live node holds any (every holder gone,
        // or nothing claimed yet) does placement choose among all of them.
        let holders: Vec<String> = if controls.paused {
            let held: HashSet<&str> = records
                .iter()
                .filter(|r| self.holder_alive(r))
                .filter_map(|r| r.node.as_deref())
                .collect();
            live.iter()
                .filter(|l| held.contains(l.as_str()))
                .cloned()
                .collect()
        } else {
            Vec::new()
        };
        let movers = if holders.is_empty() { &live } else { &holders };
        let mut settled = true;
        // Shards this process owns that placement wants elsewhere (for
        // the operator's view, `moving.rs`).
        let mut releasing: Vec<(u32, Option<String>)> = Vec::new();
        for (s, r) in records.iter().enumerate() {
            let s = s as u32;
            let desired = match r.node.as_deref() {
                Some(o) if controls.paused && live.iter().any(|l| l == o) => Some(o),
                _ => desired_owner(movers, s),
            };
            let mine = r.node.as_deref() == Some(self.me()) && r.incarnation == self.incarnation;
            if mine && desired != Some(self.me()) {
                releasing.push((s, desired.map(str::to_string)));
            }
            if !self.step(s, r, desired) {
                settled = false;
            }
        }
        self.publish_moving(releasing);
        sh.stats
            .shards_owned
            .store(self.owned.len() as u64, Ordering::Relaxed);
        self.control
            .settled
            .store(settled && same_view, Ordering::Relaxed);
        // After every `Owned` and `Lost` of this read: renews the region's
        // lease.
        let _ = self.region.tell(RegionMsg::Verified { at: began });
        let _ = self.region.tell(RegionMsg::Tick);
    }

    /// Moves shard `s` one step toward `desired`; `true` if it was
    /// already where it should be.
    /// Whether the process `r` names runs, as far as this node knows:
    /// this process itself, or a peer held alive in that incarnation (a
    /// record of incarnation 0, written before incarnations were stored,
    /// matches any). A record of an earlier incarnation of a live node,
    /// this one's included, names a process that is gone.
    fn holder_alive(&self, r: &ShardOwner) -> bool {
        match r.node.as_deref() {
            None => false,
            Some(o) if o == self.me() => r.incarnation == self.incarnation,
            Some(o) => self
                .alive_inc
                .get(o)
                .is_some_and(|&i| r.incarnation == 0 || r.incarnation == i),
        }
    }

    fn step(&mut self, s: u32, r: &ShardOwner, desired: Option<&str>) -> bool {
        let me = self.me().to_string();
        let sh = self.shared.clone();
        match r.node.as_deref() {
            // This process's record: name and incarnation.
            Some(o) if o == me && r.incarnation == self.incarnation => {
                if self.owned.get(&s) != Some(&r.revision) {
                    // Adopted: a record under this node's name that this
                    // coordinator did not write (an earlier incarnation's,
                    // which may still deliver within its lease).
                    self.owned.insert(s, r.revision);
                    self.deferred
                        .insert(s, Instant::now() + self.takeover_wait());
                }
                let waiting = !self.tell_owned_when_due(s, r.revision);
                if desired == Some(me.as_str()) {
                    return !waiting;
                }
                self.hand_over(s, r.revision, false);
                false
            }
            owner => {
                self.deferred.remove(&s);
                if self.owned.remove(&s).is_some() {
                    let _ = self.region.tell(RegionMsg::Lost { shard: s });
                }
                if desired != Some(me.as_str()) {
                    return owner.is_some() && owner == desired;
                }
                // A node that is not live is taken over only if this node
                // saw it alive before, or has run longer than the grace: a
                // node just started has not heard its peers yet.
                // An earlier incarnation of this node is gone (this
                // process holds the name): no grace for it.
                let grace_over = self.started.elapsed() >= sh.config.takeover_grace;
                let free = owner.is_none_or(|o| {
                    !self.holder_alive(r) && (grace_over || o == me || self.seen.contains(o))
                });
                if free {
                    let id = crate::ownership::owner_id(&me, self.incarnation);
                    match sh.store.claim(&sh.kind, s, &id, r.revision) {
                        Ok(token) => {
                            Counters::add(&sh.stats.claims);
                            self.owned.insert(s, token);
                            sh.routes.set_local(s);
                            if owner.is_some() {
                                // Taken from a node that may still run,
                                // cut off: it delivers until its lease
                                // ends, so this region waits that long.
                                Counters::add(&sh.stats.takeovers);
                                self.deferred
                                    .insert(s, Instant::now() + self.takeover_wait());
                                return false;
                            }
                            let _ = self.region.tell(RegionMsg::Owned { shard: s, token });
                            return true;
                        }
                        Err(e) => self.store_error(&e),
                    }
                }
                false
            }
        }
    }

    /// Gives up every shard this node holds: the region kills their
    /// entities (`Lost`); the records stay, for the other side to take
    /// over.
    fn give_up_all(&mut self) {
        self.deferred.clear();
        self.control.moving.lock().clear();
        for (s, _) in self.owned.drain() {
            let _ = self.region.tell(RegionMsg::Lost { shard: s });
        }
        self.shared.stats.shards_owned.store(0, Ordering::Relaxed);
    }

    /// How long a taken-over shard waits before its region is told
    /// `Owned`: the previous owner's lease ([`LEASE_TICKS`] ticks from the
    /// start of a read that saw its record, hence made before the claim)
    /// and one tick more, for what its entities had in their mailboxes
    /// when the lease ran out. Every node has the same tick.
    fn takeover_wait(&self) -> Duration {
        self.shared.config.tick * (LEASE_TICKS + 1)
    }

    /// Tells the region `Owned { s, token }` if `s` waits no more (or
    /// never waited); `false` while it waits.
    fn tell_owned_when_due(&mut self, s: u32, token: u64) -> bool {
        match self.deferred.get(&s) {
            None => true,
            Some(due) if Instant::now() < *due => false,
            Some(_) => {
                self.deferred.remove(&s);
                let _ = self.region.tell(RegionMsg::Owned { shard: s, token });
                true
            }
        }
    }

    /// Publishes the shards moving to or from this node (`moving.rs`):
    /// `releasing` (those still owned here) and the deferred takeovers.
    fn publish_moving(&self, releasing: Vec<(u32, Option<String>)>) {
        use crate::moving::{since, Phase, Row};
        let now = Instant::now();
        let mut list = self.control.moving.lock();
        let mut rows: Vec<Row> = Vec::new();
        for (s, to) in releasing {
            if self.owned.contains_key(&s) && !self.deferred.contains_key(&s) {
                rows.push(Row {
                    shard: s,
                    phase: Phase::Releasing,
                    to,
                    since: since(&list, s, Phase::Releasing, now),
                    due: None,
                });
            }
        }
        for (&s, &due) in &self.deferred {
            rows.push(Row {
                shard: s,
                phase: Phase::TakingOver,
                to: Some(self.me().to_string()),
                since: since(&list, s, Phase::TakingOver, now),
                due: Some(due),
            });
        }
        *list = rows;
    }

    /// Stops the shard's entities through the region (kills them with
    /// `kill`), then releases the record; `true` if released.
    fn hand_over(&mut self, s: u32, token: u64, kill: bool) -> bool {
        // A shard still waiting was never the region's: nothing to stop.
        self.deferred.remove(&s);
        let sh = self.shared.clone();
        {
            // Seen as releasing while the region stops its entities.
            let mut list = self.control.moving.lock();
            list.retain(|r| r.shard != s || r.phase == crate::moving::Phase::Releasing);
            if !list.iter().any(|r| r.shard == s) {
                list.push(crate::moving::Row {
                    shard: s,
                    phase: crate::moving::Phase::Releasing,
                    to: None,
                    since: Instant::now(),
                    due: None,
                });
            }
        }
        let stopped = self.region.ask(
            |done| RegionMsg::Release {
                shard: s,
                done,
                kill,
            },
            sh.config.handover_timeout,
        );
        if stopped != Ok(true) {
            if kill {
                tracing::error!(
                    shard = s,
                    "leave: the shard's entities did not stop even when killed \
                     (a handler that does not return); the shard stays owned here"
                );
            } else {
                tracing::warn!(
                    shard = s,
                    "hand-over: entities did not stop in time; retrying"
                );
            }
            return false;
        }
        self.owned.remove(&s);
        self.control.moving.lock().retain(|r| r.shard != s);
        match sh.store.release(&sh.kind, s, token) {
            Ok(_) => {
                Counters::add(&sh.stats.handovers);
                true
            }
            Err(e) => {
                self.store_error(&e);
                false
            }
        }
    }

    fn leave(&mut self) {
        if let Err(e) = update_members(&*self.shared.store, &self.shared.kind, self.me(), false) {
            self.store_error(&e);
        }
        let owned: Vec<(u32, u64)> = self.owned.iter().map(|(s, t)| (*s, *t)).collect();
        for (s, t) in owned {
            // A leave does not come back for a second try: entities that
            // did not drain within the hand-over timeout are killed, so
            // that the record is released and the shard moves on, rather
            // than stay with a region that has left.
            if !self.hand_over(s, t, false) && self.owned.contains_key(&s) {
                tracing::warn!(
                    shard = s,
                    "leave: entities did not stop in time; killing them"
                );
                self.hand_over(s, t, true);
            }
        }
        self.shared.stats.shards_owned.store(0, Ordering::Relaxed);
        // Drain: a few more ticks that only follow the records, so that the
        // region forwards what still arrives here to the new owners.
        self.leaving = true;
        for _ in 0..LEAVE_DRAIN_TICKS {
            std::thread::sleep(self.shared.config.tick.min(LEAVE_DRAIN_TICK_MAX));
            self.tick();
        }
    }
}

/// How long a coordinator's thread may take to stop.
pub(crate) const STOP_WAIT: Duration = Duration::from_secs(30);
