//! The second actor kind: a shared actor, whose thread-safe handlers run
//! in parallel (the public API, and its module docs, are
//! [`crate::parallel`]). It has its own cell and its own task (`Job`, one
//! per message) instead of the ordinary cell's mailbox and turn, because
//! several of its handlers run at once; it shares everything else with
//! ordinary actors: the lifecycle (`lifecycle.rs`: exit record, watchers,
//! stop reasons, the panic guard), the runtime reference, the actor table,
//! and the join methods (`lifecycle::join_methods!`).
//!
use super::lifecycle::{guard, ExitRecord, StopListener, StopRequest, Stoppable, Watcher};
use super::runtime::Admission;
use super::runtime_ref::RuntimeRef;
use super::{ActorId, SendError, StopReason, WatchId, Watchable};
use crate::engine::dispatcher::Dispatcher;
use crate::engine::scheduler::{Pool, Runnable, Task, WorkerLocal};
use parking_lot::Mutex;
use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// An actor with thread-safe handlers. See the module docs.
///
/// ```
/// use troupe::parallel::{Fifo, SharedActor};
/// use troupe::ActorSystem;
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// struct Resizer { frames: AtomicU64, config: u32 }
/// enum Msg { Frame(Vec<u8>), SetScale(u32) }
///
/// impl SharedActor for Resizer {
///     type Msg = Msg;
///     fn is_thread_safe(msg: &Msg) -> bool { matches!(msg, Msg::Frame(_)) }
///     fn handle_shared(&self, msg: Msg) {
///         if let Msg::Frame(_pixels) = msg { self.frames.fetch_add(1, Ordering::Relaxed); }
///     }
///     fn handle_exclusive(&mut self, msg: Msg) {
///         if let Msg::SetScale(s) = msg { self.config = s; }
///     }
/// }
///
/// let system = ActorSystem::builder().threads(2).build();
/// let pool = system.work_stealing_pool("resize", 2);
/// let r = system.spawn_shared(Resizer { frames: AtomicU64::new(0), config: 1 }, &pool, Fifo::PerActor);
/// r.tell(Msg::Frame(vec![0; 16])).unwrap();
/// r.tell(Msg::SetScale(2)).unwrap();
/// r.stop();
/// r.join();
/// ```
pub trait SharedActor: Send + Sync + Sized + 'static {
    /// The messages this actor handles.
    type Msg: Send + 'static;

    /// Whether `msg` is handled by `handle_shared` (in parallel).
    fn is_thread_safe(msg: &Self::Msg) -> bool;

    /// A thread-safe handler: may run concurrently with other
    /// `handle_shared` calls of this actor.
    fn handle_shared(&self, msg: Self::Msg);

    /// An exclusive handler: runs alone.
    fn handle_exclusive(&mut self, msg: Self::Msg);
}

/// Which messages keep their relative order.
#[derive(Clone, Debug)]
pub enum Fifo {
    /// Each actor's messages start in the order they arrived.
    PerActor,
    /// The messages of every actor spawned with this group start in one
    /// order (SObjectizer's fifo::cooperation).
    Group(Coordinator),
}

/// The queue that orders a group of shared actors' messages
/// ([`Fifo::Group`]). Create one per group and pass clones.
#[derive(Clone, Debug, Default)]
pub struct Coordinator {
    inner: Arc<Mutex<CoordState>>,
}

impl Coordinator {
    /// A new, empty coordinator.
    pub fn new() -> Self {
        Self::default()
    }
}

/// A message waiting for its turn, erased to a job.
struct Pending {
    actor: usize,
    exclusive: bool,
    job: Box<dyn FnOnce() + Send>,
    pool: Arc<Pool>,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Pending(actor {}, exclusive {})",
            self.actor, self.exclusive
        )
    }
}

#[derive(Default, Debug)]
struct Running {
    shared: usize,
    exclusive: bool,
}

#[derive(Default, Debug)]
struct CoordState {
    queue: VecDeque<Pending>,
    /// Per exclusion key (the actor, or the group): what runs now.
    running: Vec<(usize, Running)>,
}

impl CoordState {
    fn running_mut(&mut self, actor: usize) -> &mut Running {
        if let Some(i) = self.running.iter().position(|(k, _)| *k == actor) {
            return &mut self.running[i].1;
        }
        self.running.push((actor, Running::default()));
        &mut self.running.last_mut().expect("just pushed").1
    }

    /// Starts every message at the head of the queue that may start.
    fn start_ready(&mut self, coord: &Arc<Mutex<CoordState>>) {
        while let Some(head) = self.queue.front() {
            let (actor, exclusive) = (head.actor, head.exclusive);
            let r = self.running_mut(actor);
            let may = if exclusive {
                r.shared == 0 && !r.exclusive
            } else {
                !r.exclusive
            };
            if !may {
                break;
            }
            if exclusive {
                r.exclusive = true;
            } else {
                r.shared += 1;
            }
            let p = self.queue.pop_front().expect("front exists");
            let job = Arc::new(Job {
                work: UnsafeCell::new(Some(p.job)),
                coord: coord.clone(),
                actor,
                exclusive,
            });
            let pool = p.pool;
            // The task carries one strong count, returned by `run` to be
            // dropped once the job is done (see `Runnable::run`).
            let raw: *const Job = Arc::into_raw(job);
            // SAFETY: `raw` came from `Arc::into_raw` just above and the
            // count it holds keeps the job alive until `run` returns it.
            pool.schedule(Task::new(unsafe { &*raw }));
        }
    }

    fn finish(&mut self, actor: usize, exclusive: bool) {
        let r = self.running_mut(actor);
        if exclusive {
            r.exclusive = false;
        } else {
            r.shared -= 1;
        }
        if !r.exclusive && r.shared == 0 {
            self.running.retain(|(k, _)| *k != actor);
        }
    }
}

/// One message's handler call, as a scheduler task.
struct Job {
    work: UnsafeCell<Option<Box<dyn FnOnce() + Send>>>,
    coord: Arc<Mutex<CoordState>>,
    actor: usize,
    exclusive: bool,
}

// SAFETY: `work` is taken exactly once, by the single worker that runs the
// job's task; everything else is `Sync`.
unsafe impl Sync for Job {}

impl Runnable for Job {
    fn run(&self, _worker: &WorkerLocal) -> Option<Arc<dyn Runnable>> {
        // SAFETY: only the task holder runs this, once.
        if let Some(work) = unsafe { (*self.work.get()).take() } {
            work(); // catches its own panics (see `SharedRef::tell`)
        }
        {
            let mut st = self.coord.lock();
            st.finish(self.actor, self.exclusive);
            st.start_ready(&self.coord);
        }
        // SAFETY: the task's strong count was leaked by `start_ready`; we
        // hand it back so `Task::run` drops it after this call.
        Some(unsafe { Arc::from_raw(self as *const Job) })
    }
}

/// `SharedCell::table_key` before the spawner has stored it.
const KEY_UNSET: u64 = u64::MAX;

/// The state of one shared actor.
struct SharedCell<A: SharedActor> {
    actor: UnsafeCell<Option<A>>,
    coord: Arc<Mutex<CoordState>>,
    /// Exclusion key: this cell's address, or the group coordinator's.
    exclusion: usize,
    pool: Arc<Pool>,
    rt: RuntimeRef,
    id: ActorId,
    /// Set once at spawn, right after the actor enters the table. A shutdown
    /// that closes the actor in between makes `finalize` wait for it.
    table_key: AtomicU64,
    life: Mutex<Life>,
    exit: ExitRecord,
}

#[derive(Debug)]
struct Life {
    /// Messages accepted and not yet finished.
    in_flight: usize,
    closed: bool,
    /// The stop reason, once decided (the first one wins).
    reason: Option<StopReason>,
    finished: bool,
}

// SAFETY: the coordinator guarantees `handle_exclusive` (`&mut A`) never runs
// concurrently with any other access, and `handle_shared` (`&A`) only with
// other `&A` accesses; `A: Send + Sync` covers both.
unsafe impl<A: SharedActor> Sync for SharedCell<A> {}
// SAFETY: as above.
unsafe impl<A: SharedActor> Send for SharedCell<A> {}

impl<A: SharedActor> SharedCell<A> {
    fn key(&self) -> usize {
        if self.exclusion == 0 {
            self as *const Self as usize
        } else {
            self.exclusion
        }
    }

    /// A job finished (or was dropped): account for it; finalize if closed
    /// and nothing is left.
    fn done(self: &Arc<Self>, panicked: Option<String>) {
        let finalize = {
            let mut life = self.life.lock();
            life.in_flight -= 1;
            if let Some(msg) = panicked {
                if life.reason.is_none() {
                    tracing::error!(actor = %self.id, panic = %msg, "shared actor panicked and was stopped");
                    life.reason = Some(StopReason::Panicked(msg));
                }
                life.closed = true;
            }
            let f = life.closed && life.in_flight == 0 && !life.finished;
            if f {
                life.finished = true;
            }
            f
        };
        if finalize {
            self.finalize();
        }
    }

    fn finalize(self: &Arc<Self>) {
        // SAFETY: `finished` was set under the lock with nothing in flight and
        // the actor closed: no handler runs or will run.
        let actor = unsafe { (*self.actor.get()).take() };
        let dropped = guard(move || drop(actor));
        let reason = {
            let mut life = self.life.lock();
            if let Err(r) = dropped {
                self.rt.count_panics(1);
                life.reason.get_or_insert(r);
            }
            life.reason.get_or_insert(StopReason::Normal).clone()
        };
        let watcher_panics = self.exit.publish(self.id, reason);
        self.rt.count_panics(watcher_panics);
        let key = loop {
            let k = self.table_key.load(Ordering::Acquire);
            if k != KEY_UNSET {
                break k;
            }
            // The spawner is between `enroll` and its store: a few
            // instructions away.
            std::thread::yield_now();
        };
        drop(self.rt.host.retire(key, false));
    }

    fn close(self: &Arc<Self>, reason: Option<StopReason>) {
        let finalize = {
            let mut life = self.life.lock();
            life.closed = true;
            if life.reason.is_none() {
                life.reason = reason;
            }
            let f = life.in_flight == 0 && !life.finished;
            if f {
                life.finished = true;
            }
            f
        };
        if finalize {
            self.finalize();
        }
    }
}

impl<A: SharedActor> Runnable for SharedCell<A> {
    fn run(&self, _worker: &WorkerLocal) -> Option<Arc<dyn Runnable>> {
        None
    }
}

impl<A: SharedActor> Stoppable for SharedCell<A> {
    fn request_stop(&self, kind: StopRequest) {
        let reason = match kind {
            StopRequest::Shutdown | StopRequest::ShutdownNow => StopReason::Shutdown,
            StopRequest::Kill => StopReason::Killed,
            StopRequest::Drain => StopReason::Normal,
        };
        // SAFETY: every SharedCell lives in an Arc (see `spawn_shared`).
        let me = unsafe {
            Arc::increment_strong_count(self as *const Self);
            Arc::from_raw(self as *const Self)
        };
        me.close(Some(reason));
    }
}

/// A handle to a [`SharedActor`]: cheap to clone, `Send + Sync`.
pub struct SharedRef<A: SharedActor> {
    cell: Arc<SharedCell<A>>,
}

impl<A: SharedActor> Clone for SharedRef<A> {
    fn clone(&self) -> Self {
        SharedRef {
            cell: self.cell.clone(),
        }
    }
}

impl<A: SharedActor> SharedRef<A> {
    /// Sends a message; it starts when its turn comes (module docs). A
    /// stopped actor hands the message back.
    pub fn tell(&self, msg: A::Msg) -> Result<(), SendError<A::Msg>> {
        let cell = &self.cell;
        {
            let mut life = cell.life.lock();
            if life.closed {
                return Err(SendError::Stopped(msg));
            }
            life.in_flight += 1;
        }
        let exclusive = !A::is_thread_safe(&msg);
        let me = cell.clone();
        let job: Box<dyn FnOnce() + Send> = Box::new(move || {
            let dead = me
                .life
                .lock()
                .reason
                .as_ref()
                .is_some_and(|r| r.is_failure());
            let panicked = if dead {
                // The actor failed earlier: this message is dropped, counted.
                me.rt.count_dropped(1);
                if let Err(r) = guard(move || crate::actor::ask::drop_undelivered(msg)) {
                    me.rt.caught_panic("dropping an undelivered message", &r);
                }
                None
            } else {
                let result = guard(|| {
                    // SAFETY: the coordinator started this job under the module
                    // rules (exclusive = sole access; shared = shared only), and
                    // the actor is dropped only when nothing is in flight.
                    unsafe {
                        if exclusive {
                            if let Some(a) = (*me.actor.get()).as_mut() {
                                a.handle_exclusive(msg);
                            }
                        } else if let Some(a) = (*me.actor.get()).as_ref() {
                            a.handle_shared(msg);
                        }
                    }
                });
                match result {
                    Err(StopReason::Panicked(m)) => {
                        me.rt.count_panics(1);
                        Some(m)
                    }
                    _ => None,
                }
            };
            me.done(panicked);
        });
        let mut st = cell.coord.lock();
        st.queue.push_back(Pending {
            actor: cell.key(),
            exclusive,
            job,
            pool: cell.pool.clone(),
        });
        st.start_ready(&cell.coord);
        Ok(())
    }

    /// Refuse new messages; stop once those accepted are handled (`Normal`).
    pub fn stop(&self) {
        self.cell.close(Some(StopReason::Normal));
    }

    /// Refuse new messages and drop what has not started; stop once the
    /// running handlers return (`Killed`).
    pub fn kill(&self) {
        self.cell.close(Some(StopReason::Killed));
    }

    super::lifecycle::join_methods!();

    /// Whether the actor still accepts messages.
    pub fn is_alive(&self) -> bool {
        !self.cell.life.lock().closed
    }

    /// Tells `listener` (with `token`) when this actor stops; see
    /// [`ActorRef::listen`](crate::ActorRef::listen).
    pub fn listen(&self, listener: Arc<dyn StopListener>, token: u64) -> bool {
        self.cell.exit.add_listener(listener, token)
    }
}

impl<A: SharedActor> Watchable for SharedRef<A> {
    fn id(&self) -> ActorId {
        self.cell.id
    }

    fn on_stop(&self, f: impl FnOnce(ActorId, &StopReason) + Send + 'static) -> WatchId {
        self.cell.exit.add_watcher(self.cell.id, Watcher::new(f))
    }

    fn demonitor(&self, watch: WatchId) -> bool {
        self.cell.exit.remove_watcher(watch)
    }

    fn kill(&self) {
        SharedRef::kill(self)
    }
}

/// Spawns a shared actor on `dispatcher` (`SystemHandle::spawn_shared`).
pub(crate) fn spawn_shared_cell<A: SharedActor>(
    rt: &RuntimeRef,
    actor: A,
    dispatcher: &Dispatcher,
    fifo: Fifo,
) -> SharedRef<A> {
    let (coord, exclusion) = match fifo {
        Fifo::PerActor => (Arc::new(Mutex::new(CoordState::default())), 0),
        Fifo::Group(c) => {
            let key = Arc::as_ptr(&c.inner) as usize;
            (c.inner, key)
        }
    };
    let cell = Arc::new(SharedCell {
        actor: UnsafeCell::new(Some(actor)),
        coord,
        exclusion,
        pool: dispatcher.pool.clone(),
        id: ActorId::next(),
        table_key: AtomicU64::new(KEY_UNSET),
        life: Mutex::new(Life {
            in_flight: 0,
            closed: false,
            reason: None,
            finished: false,
        }),
        exit: ExitRecord::new(),
        // SAFETY: enrolled right below, with nothing in between that can
        // unwind; the enrolment counts this reference (or we take it).
        rt: unsafe { rt.for_enrolment() },
    });
    let (key, admission) = rt.enroll(cell.clone());
    // A shutdown may already close (and finalize) the actor from another
    // thread: `finalize` waits for this store (see `table_key`).
    cell.table_key.store(key, Ordering::Release);
    if admission != Admission::Open {
        cell.close(Some(StopReason::Shutdown));
    }
    SharedRef { cell }
}
