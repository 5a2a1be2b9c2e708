//! The Troupe benchmark workloads on ractor (0.16), written the way ractor's docs do it.
//!
//! Runtime: one tokio multi-thread runtime with `worker_threads = --threads`; the driver of
//! each workload runs as a task on that runtime (not on the `block_on` thread), so exactly
//! `--threads` threads run actors. Actors implement `ractor::Actor` with their state in
//! `State`, talk by `cast` (tell) and `call` (ask, an `RpcReplyPort` in the message), and
//! stop themselves with `myself.stop(None)`. The registry workload uses ractor's named
//! registry (`Actor::spawn(Some(name), ..)`, `registry::where_is`) and process groups
//! (`ractor::pg`).

use std::sync::Arc;
use std::time::Instant;

use ractor::rpc::CallResult;
use ractor::{pg, registry, Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use troupe_bench_contract::customers::{self, drive_reads, Customer};
use troupe_bench_contract::{
    fail, payload_sum, pingpong_finish, ring_finish, seconds_since, shares, tokio_main, Args, Cli,
    Params, Reporter, Workload,
};

mod async_actors;
mod savina;

type Res<T> = Result<T, ActorProcessingErr>;

fn main() {
    tokio_main("ractor", run);
}

async fn run(cli: Cli, rep: Reporter) {
    let w = &cli.args;
    for sample in cli.rounds() {
        eprintln!("ractor {} round {}", w.name(), sample + 1);
        match cli.workload {
            Workload::Ring {
                rings,
                actors,
                laps,
            } => ring(&rep, w, rings, actors, laps).await,
            Workload::Pingpong { round_trips } => pingpong(&rep, w, round_trips).await,
            Workload::MailboxPerformance { senders, messages } => {
                mailbox_performance(&rep, w, senders, messages).await
            }
            Workload::ActorCreation { pow } => actor_creation(&rep, w, pow).await,
            Workload::SpawnAndAwait { count } => spawn_and_await(&rep, w, count).await,
            Workload::ReaderDb {
                reads,
                clients,
                readers,
                outstanding,
            } => reader_db(&rep, w, reads, clients, readers, outstanding).await,
            Workload::Registry { ref sizes } => {
                for &size in sizes {
                    registry_size(&rep, sample, size).await;
                }
            }
            Workload::AsyncPingpong { round_trips } => {
                async_actors::pingpong(&rep, round_trips).await
            }
            Workload::AsyncAskChain { asks } => async_actors::ask_chain(&rep, asks).await,
            Workload::AsyncIo {
                actors,
                messages,
                sleep_us,
            } => async_actors::io(&rep, actors, messages, sleep_us).await,
            Workload::Savina(name) => savina::run(&rep, w, name).await,
        }
    }
}

async fn spawn<A: Actor>(actor: A, args: A::Arguments) -> (ActorRef<A::Msg>, JoinHandle<()>) {
    Actor::spawn(None, actor, args)
        .await
        .unwrap_or_else(|e| fail(format!("spawn failed: {e}")))
}

async fn stop_all<M>(actors: Vec<(ActorRef<M>, JoinHandle<()>)>) {
    for (actor, _) in &actors {
        actor.stop(None);
    }
    for (_, handle) in actors {
        let _ = handle.await;
    }
}

// ---------------------------------------------------------------- ring

struct RingNode;

enum RingMsg {
    SetNext(ActorRef<RingMsg>),
    Token(u64),
}

struct RingNodeState {
    ring: usize,
    index: usize,
    next: Option<ActorRef<RingMsg>>,
    done: mpsc::UnboundedSender<(usize, usize)>,
}

impl Actor for RingNode {
    type Msg = RingMsg;
    type State = RingNodeState;
    type Arguments = RingNodeState;

    async fn pre_start(&self, _: ActorRef<RingMsg>, args: RingNodeState) -> Res<RingNodeState> {
        Ok(args)
    }

    async fn handle(&self, _: ActorRef<RingMsg>, msg: RingMsg, st: &mut RingNodeState) -> Res<()> {
        match msg {
            RingMsg::SetNext(next) => st.next = Some(next),
            RingMsg::Token(0) => {
                let _ = st.done.send((st.ring, st.index));
            }
            RingMsg::Token(n) => {
                if let Some(next) = &st.next {
                    next.cast(RingMsg::Token(n - 1))?;
                }
            }
        }
        Ok(())
    }
}

async fn ring(rep: &Reporter, w: &Args, rings: usize, actors: usize, laps: usize) {
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let created = Instant::now();
    let mut all = Vec::with_capacity(rings * actors);
    let mut heads = Vec::with_capacity(rings);
    for r in 0..rings {
        // Build the ring back to front so each node is spawned knowing its successor;
        // the last node learns the first one afterwards.
        let mut next: Option<ActorRef<RingMsg>> = None;
        let mut nodes = Vec::with_capacity(actors);
        for index in (0..actors).rev() {
            let state = RingNodeState {
                ring: r,
                index,
                next: next.clone(),
                done: done_tx.clone(),
            };
            let (node, handle) = spawn(RingNode, state).await;
            next = Some(node.clone());
            nodes.push((node, handle));
        }
        let head = next.unwrap_or_else(|| fail("empty ring"));
        nodes[0]
            .0
            .cast(RingMsg::SetNext(head.clone()))
            .unwrap_or_else(|_| fail("ring node died"));
        heads.push(head);
        all.extend(nodes);
    }
    let creation = seconds_since(created);

    let hops = (actors * laps) as u64;
    let start = Instant::now();
    for head in &heads {
        head.cast(RingMsg::Token(hops))
            .unwrap_or_else(|_| fail("ring head died"));
    }
    ring_finish(rep, w, &mut done_rx, (rings, actors, laps), start, creation).await;
    stop_all(all).await;
}

// ---------------------------------------------------------------- pingpong

struct Ping;
struct Pong;

enum PingMsg {
    Start(ActorRef<PongMsg>),
    Ball(u64),
}

/// A ball; pong knows ping from its arguments, so no message carries an address.
struct PongMsg(u64);

struct PingState {
    pong: Option<ActorRef<PongMsg>>,
    round_trips: u64,
    done: Option<oneshot::Sender<u64>>,
}

impl Actor for Ping {
    type Msg = PingMsg;
    type State = PingState;
    type Arguments = PingState;

    async fn pre_start(&self, _: ActorRef<PingMsg>, args: PingState) -> Res<PingState> {
        Ok(args)
    }

    async fn handle(&self, _: ActorRef<PingMsg>, msg: PingMsg, st: &mut PingState) -> Res<()> {
        match msg {
            PingMsg::Start(pong) => {
                pong.cast(PongMsg(1))?;
                st.pong = Some(pong);
            }
            PingMsg::Ball(n) if n >= st.round_trips => {
                if let Some(done) = st.done.take() {
                    let _ = done.send(n);
                }
            }
            PingMsg::Ball(n) => {
                if let Some(pong) = &st.pong {
                    pong.cast(PongMsg(n + 1))?;
                }
            }
        }
        Ok(())
    }
}

impl Actor for Pong {
    type Msg = PongMsg;
    type State = ActorRef<PingMsg>;
    type Arguments = ActorRef<PingMsg>;

    async fn pre_start(
        &self,
        _: ActorRef<PongMsg>,
        ping: ActorRef<PingMsg>,
    ) -> Res<ActorRef<PingMsg>> {
        Ok(ping)
    }

    async fn handle(
        &self,
        _: ActorRef<PongMsg>,
        PongMsg(n): PongMsg,
        ping: &mut ActorRef<PingMsg>,
    ) -> Res<()> {
        ping.cast(PingMsg::Ball(n))?;
        Ok(())
    }
}

async fn pingpong(rep: &Reporter, w: &Args, round_trips: usize) {
    let (n, secs) = bounce(round_trips).await;
    pingpong_finish(rep, &w.params(), n, round_trips, secs);
}

/// Runs ping and pong for `round_trips`; the last ball's count and the seconds it took.
/// Also `async_pingpong`'s round: ractor handlers are async already.
async fn bounce(round_trips: usize) -> (u64, f64) {
    let (done_tx, done_rx) = oneshot::channel();
    let ping = spawn(
        Ping,
        PingState {
            pong: None,
            round_trips: round_trips as u64,
            done: Some(done_tx),
        },
    )
    .await;
    let pong = spawn(Pong, ping.0.clone()).await;
    let start = Instant::now();
    ping.0
        .cast(PingMsg::Start(pong.0.clone()))
        .unwrap_or_else(|_| fail("ping died"));
    let n = done_rx
        .await
        .unwrap_or_else(|_| fail("ping never finished"));
    let secs = seconds_since(start);
    stop_all(vec![ping]).await;
    stop_all(vec![pong]).await;
    (n, secs)
}

// ---------------------------------------------------------------- mailbox_performance

struct Receiver;
struct Sender;

/// One payload; the receiver sums them.
struct Inc(u64);

struct ReceiverState {
    count: u64,
    sum: u64,
    expected: u64,
    done: Option<oneshot::Sender<u64>>,
}

impl Actor for Receiver {
    type Msg = Inc;
    type State = ReceiverState;
    type Arguments = ReceiverState;

    async fn pre_start(&self, _: ActorRef<Inc>, args: ReceiverState) -> Res<ReceiverState> {
        Ok(args)
    }

    async fn handle(&self, me: ActorRef<Inc>, Inc(x): Inc, st: &mut ReceiverState) -> Res<()> {
        st.count += 1;
        st.sum += x;
        if st.count == st.expected {
            if let Some(done) = st.done.take() {
                let _ = done.send(st.sum);
            }
            me.stop(None);
        }
        Ok(())
    }
}

struct SendAll {
    to: ActorRef<Inc>,
    messages: usize,
}

impl Actor for Sender {
    type Msg = SendAll;
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<SendAll>, _: ()) -> Res<()> {
        Ok(())
    }

    async fn handle(&self, me: ActorRef<SendAll>, msg: SendAll, _: &mut ()) -> Res<()> {
        for i in 1..=msg.messages as u64 {
            msg.to.cast(Inc(i))?;
        }
        me.stop(None);
        Ok(())
    }
}

async fn mailbox_performance(rep: &Reporter, w: &Args, senders: usize, messages: usize) {
    let expected = (senders * messages) as u64;
    let (done_tx, done_rx) = oneshot::channel();
    let receiver = spawn(
        Receiver,
        ReceiverState {
            count: 0,
            sum: 0,
            expected,
            done: Some(done_tx),
        },
    )
    .await;
    let mut all = Vec::with_capacity(senders);
    for _ in 0..senders {
        all.push(spawn(Sender, ()).await);
    }
    let start = Instant::now();
    for (sender, _) in &all {
        sender
            .cast(SendAll {
                to: receiver.0.clone(),
                messages,
            })
            .unwrap_or_else(|_| fail("sender died"));
    }
    let sum = done_rx
        .await
        .unwrap_or_else(|_| fail("receiver never finished"));
    let secs = seconds_since(start);
    if sum != payload_sum(senders, messages) {
        fail(format!(
            "receiver summed {sum}, expected {}",
            payload_sum(senders, messages)
        ));
    }
    rep.figure(
        w.name(),
        &w.params(),
        secs,
        expected as f64 / secs,
        "msgs/s",
        &[],
    );
    stop_all(all).await;
    let _ = receiver.1.await;
}

// ---------------------------------------------------------------- actor_creation

struct Tree;

enum Parent {
    Actor(ActorRef<u64>),
    Root(oneshot::Sender<u64>),
}

impl Parent {
    fn reply(self, n: u64) {
        match self {
            Parent::Actor(parent) => {
                let _ = parent.cast(n);
            }
            Parent::Root(tx) => {
                let _ = tx.send(n);
            }
        }
    }
}

struct TreeState {
    depth: u32,
    parent: Option<Parent>,
    pending: u32,
    sum: u64,
}

impl Actor for Tree {
    type Msg = u64;
    type State = TreeState;
    type Arguments = (u32, Parent);

    async fn pre_start(&self, _: ActorRef<u64>, (depth, parent): (u32, Parent)) -> Res<TreeState> {
        Ok(TreeState {
            depth,
            parent: Some(parent),
            pending: 2,
            sum: 0,
        })
    }

    async fn post_start(&self, me: ActorRef<u64>, st: &mut TreeState) -> Res<()> {
        if st.depth == 1 {
            if let Some(parent) = st.parent.take() {
                parent.reply(1);
            }
            me.stop(None);
        } else {
            for _ in 0..2 {
                Actor::spawn(None, Tree, (st.depth - 1, Parent::Actor(me.clone()))).await?;
            }
        }
        Ok(())
    }

    async fn handle(&self, me: ActorRef<u64>, n: u64, st: &mut TreeState) -> Res<()> {
        st.sum += n;
        st.pending -= 1;
        if st.pending == 0 {
            if let Some(parent) = st.parent.take() {
                parent.reply(1 + st.sum);
            }
            me.stop(None);
        }
        Ok(())
    }
}

async fn actor_creation(rep: &Reporter, w: &Args, pow: u32) {
    let actors = (1u64 << pow) - 1;
    let rss = troupe_bench_contract::RssBaseline::settle();
    let (tx, rx) = oneshot::channel();
    let start = Instant::now();
    let root = spawn(Tree, (pow, Parent::Root(tx))).await;
    let answer = rx.await.unwrap_or_else(|_| fail("root never answered"));
    let secs = seconds_since(start);
    if answer != actors {
        fail(format!(
            "actor_creation: root answered {answer}, expected {actors}"
        ));
    }
    let _ = root.1.await;
    let grown = rss.growth();
    rep.figure(
        w.name(),
        &w.params(),
        secs,
        actors as f64 / secs,
        "actors/s",
        &[("bytes_per_actor", grown as f64 / actors as f64)],
    );
}

// ---------------------------------------------------------------- spawn_and_await

struct Noop;

impl Actor for Noop {
    type Msg = ();
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<()>, _: ()) -> Res<()> {
        Ok(())
    }

    async fn post_start(&self, me: ActorRef<()>, _: &mut ()) -> Res<()> {
        me.stop(None);
        Ok(())
    }
}

async fn spawn_and_await(rep: &Reporter, w: &Args, count: usize) {
    let start = Instant::now();
    for _ in 0..count {
        let (_actor, handle) = spawn(Noop, ()).await;
        handle
            .await
            .unwrap_or_else(|e| fail(format!("noop actor failed: {e}")));
    }
    let secs = seconds_since(start);
    rep.figure(
        w.name(),
        &w.params(),
        secs,
        count as f64 / secs,
        "ops/s",
        &[("ns_per_op", secs * 1e9 / count as f64)],
    );
}

// ---------------------------------------------------------------- reader_db

type Row = Arc<Customer>;

struct Reader;
struct Writer;
struct Db;
struct Client;

enum DbMsg {
    Read(u32, RpcReplyPort<Row>),
}

impl Actor for Reader {
    type Msg = DbMsg;
    type State = Arc<Vec<Row>>;
    type Arguments = Arc<Vec<Row>>;

    async fn pre_start(&self, _: ActorRef<DbMsg>, table: Arc<Vec<Row>>) -> Res<Arc<Vec<Row>>> {
        Ok(table)
    }

    async fn handle(&self, _: ActorRef<DbMsg>, msg: DbMsg, table: &mut Arc<Vec<Row>>) -> Res<()> {
        let DbMsg::Read(id, reply) = msg;
        if let Some(row) = table.get(id as usize - 1) {
            let _ = reply.send(row.clone());
        }
        Ok(())
    }
}

/// The writer owns the table; the workload is read-only, so it only holds it.
impl Actor for Writer {
    type Msg = ();
    type State = Arc<Vec<Row>>;
    type Arguments = Arc<Vec<Row>>;

    async fn pre_start(&self, _: ActorRef<()>, table: Arc<Vec<Row>>) -> Res<Arc<Vec<Row>>> {
        Ok(table)
    }
}

struct DbState {
    readers: Vec<ActorRef<DbMsg>>,
    next: usize,
}

impl Actor for Db {
    type Msg = DbMsg;
    type State = DbState;
    type Arguments = DbState;

    async fn pre_start(&self, _: ActorRef<DbMsg>, args: DbState) -> Res<DbState> {
        Ok(args)
    }

    /// Reads go to the readers round robin; the reply port travels with the message.
    async fn handle(&self, _: ActorRef<DbMsg>, msg: DbMsg, st: &mut DbState) -> Res<()> {
        let reader = &st.readers[st.next];
        st.next = (st.next + 1) % st.readers.len();
        reader.cast(msg)?;
        Ok(())
    }
}

struct RunClient {
    db: ActorRef<DbMsg>,
    first: usize,
    reads: usize,
    outstanding: usize,
    done: oneshot::Sender<Result<usize, String>>,
}

impl Actor for Client {
    type Msg = RunClient;
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<RunClient>, _: ()) -> Res<()> {
        Ok(())
    }

    async fn handle(&self, _: ActorRef<RunClient>, msg: RunClient, _: &mut ()) -> Res<()> {
        let db = &msg.db;
        let result = drive_reads(msg.first, msg.reads, msg.outstanding, |id| async move {
            match db.call(|port| DbMsg::Read(id, port), None).await {
                Ok(CallResult::Success(row)) => Ok(Some(row)),
                Ok(_) => Err("no answer".to_string()),
                Err(e) => Err(e.to_string()),
            }
        })
        .await;
        let _ = msg.done.send(result);
        Ok(())
    }
}

async fn reader_db(
    rep: &Reporter,
    w: &Args,
    reads: usize,
    clients: usize,
    readers: usize,
    outstanding: usize,
) {
    let table = customers::table();
    let writer = spawn(Writer, table.clone()).await;
    let mut reader_actors = Vec::with_capacity(readers);
    for _ in 0..readers {
        reader_actors.push(spawn(Reader, table.clone()).await);
    }
    let db = spawn(
        Db,
        DbState {
            readers: reader_actors.iter().map(|(r, _)| r.clone()).collect(),
            next: 0,
        },
    )
    .await;
    let mut client_actors = Vec::with_capacity(clients);
    for _ in 0..clients {
        client_actors.push(spawn(Client, ()).await);
    }
    let start = Instant::now();
    let mut waits = Vec::with_capacity(clients);
    let mut first = 0;
    for ((client, _), share) in client_actors.iter().zip(shares(reads, clients)) {
        let (tx, rx) = oneshot::channel();
        client
            .cast(RunClient {
                db: db.0.clone(),
                first,
                reads: share,
                outstanding,
                done: tx,
            })
            .unwrap_or_else(|_| fail("client died"));
        first += share;
        waits.push(rx);
    }
    let mut total = 0;
    for rx in waits {
        match rx.await {
            Ok(Ok(n)) => total += n,
            Ok(Err(e)) => fail(format!("reader_db: {e}")),
            Err(_) => fail("reader_db: client never finished"),
        }
    }
    let secs = seconds_since(start);
    if total != reads {
        fail(format!("reader_db: {total} good reads, expected {reads}"));
    }
    rep.figure(
        w.name(),
        &w.params(),
        secs,
        reads as f64 / secs,
        "reads/s",
        &[("ns_per_read", secs * 1e9 / reads as f64)],
    );
    stop_all(client_actors).await;
    stop_all(vec![db]).await;
    stop_all(reader_actors).await;
    stop_all(vec![writer]).await;
}

// ---------------------------------------------------------------- registry

struct Member;

enum MemberMsg {
    Ping,
}

/// A member holds the driver's ack sender from its start, so a ping carries nothing.
impl Actor for Member {
    type Msg = MemberMsg;
    type State = mpsc::UnboundedSender<()>;
    type Arguments = mpsc::UnboundedSender<()>;

    async fn pre_start(
        &self,
        _: ActorRef<MemberMsg>,
        ack: mpsc::UnboundedSender<()>,
    ) -> Res<mpsc::UnboundedSender<()>> {
        Ok(ack)
    }

    async fn handle(
        &self,
        _: ActorRef<MemberMsg>,
        msg: MemberMsg,
        ack: &mut mpsc::UnboundedSender<()>,
    ) -> Res<()> {
        let MemberMsg::Ping = msg;
        let _ = ack.send(());
        Ok(())
    }
}

const GROUPS: usize = 10;

async fn registry_size(rep: &Reporter, sample: usize, size: usize) {
    let prefix = format!("s{sample}-k{size}");
    let names: Vec<String> = (0..size).map(|i| format!("{prefix}-actor-{i}")).collect();
    let groups: Vec<String> = (0..GROUPS).map(|g| format!("{prefix}-group-{g}")).collect();
    let mut members = Vec::with_capacity(size);
    let (ack_tx, mut ack_rx) = mpsc::unbounded_channel();
    for (i, name) in names.iter().enumerate() {
        let (actor, handle) = Actor::spawn(Some(name.clone()), Member, ack_tx.clone())
            .await
            .unwrap_or_else(|e| fail(format!("spawn {name}: {e}")));
        pg::join(groups[i % GROUPS].clone(), vec![actor.get_cell()]);
        members.push((actor, handle));
    }

    // find(name): many lookups cycling through every name.
    let lookups = (200_000 / size).max(2) * size;
    let start = Instant::now();
    for i in 0..lookups {
        let name = &names[i % size];
        match registry::where_is(name.as_str()) {
            Some(cell) if cell.get_id() == members[i % size].0.get_id() => {}
            _ => fail(format!("registry: find({name}) failed")),
        }
    }
    let secs = seconds_since(start);
    rep.figure(
        "registry",
        &Params::new().int("size", size as u64).str("op", "find"),
        secs,
        secs * 1e9 / lookups as f64,
        "ns/op",
        &[],
    );

    // dispatch_group: send to every member of one group, until every member got it.
    let group_size = pg::get_members(&groups[0]).len();
    let expected = size.div_ceil(GROUPS);
    if group_size != expected {
        fail(format!(
            "registry: group has {group_size} members, expected {expected}"
        ));
    }
    let reps = (100_000 / group_size).clamp(10, 10_000);
    let start = Instant::now();
    for _ in 0..reps {
        let group = pg::get_members(&groups[0]);
        for member in &group {
            member
                .send_message(MemberMsg::Ping)
                .unwrap_or_else(|_| fail("registry: member died"));
        }
        for _ in 0..group.len() {
            ack_rx
                .recv()
                .await
                .unwrap_or_else(|| fail("registry: ack channel closed"));
        }
    }
    let secs = seconds_since(start);
    let delivered = (reps * group_size) as f64;
    rep.figure(
        "registry",
        &Params::new()
            .int("size", size as u64)
            .str("op", "dispatch_group"),
        secs,
        secs * 1e9 / delivered,
        "ns/op",
        &[],
    );
    for g in &groups {
        pg::leave(g.clone(), pg::get_members(g));
    }
    stop_all(members).await;
}
