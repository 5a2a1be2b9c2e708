//! The Troupe benchmark workloads on kameo (0.22), written the way kameo's docs do it.
//!
//! Runtime: one tokio multi-thread runtime with `worker_threads = --threads`; the driver of
//! each workload runs as a task on that runtime (not on the `block_on` thread), so exactly
//! `--threads` threads run actors. Actors are `#[derive(Actor)]` structs spawned with
//! `Spawn::spawn` (kameo's default bounded mailbox of 64, which gives backpressure: a full
//! mailbox makes `tell(..).await` wait), with one `impl Message<M>` per message; they talk by
//! `tell` and `ask`, and the DB actor of `reader_db` hands requests to its readers with
//! `Context::forward`, so the reader answers the client's ask directly. The registry
//! workload uses kameo's local registry (`ActorRef::register` / `ActorRef::lookup`) for
//! find, and a `kameo_actors::pubsub::PubSub` actor per group (kameo's own utility crate;
//! kameo has no process groups of its own) for dispatch_group.

mod async_actors;
mod savina;

use std::sync::Arc;
use std::time::Instant;

use kameo::prelude::*;
use kameo_actors::pubsub::{PubSub, Publish, Subscribe};
use kameo_actors::DeliveryStrategy;
use tokio::sync::{mpsc, oneshot};
use troupe_bench_contract::customers::{self, drive_reads, Customer};
use troupe_bench_contract::{
    fail, payload_sum, pingpong_finish, ring_finish, seconds_since, shares, tokio_main, Args, Cli,
    Params, Reporter, Workload,
};

fn main() {
    tokio_main("kameo", run);
}

async fn run(cli: Cli, rep: Reporter) {
    let w = &cli.args;
    for sample in cli.rounds() {
        eprintln!("kameo {} round {}", w.name(), sample + 1);
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
            Workload::Savina(name) => savina::run(name, &rep, w).await,
        }
    }
}

async fn stop_all<A: Actor>(actors: &[ActorRef<A>]) {
    for actor in actors {
        let _ = actor.stop_gracefully().await;
    }
    for actor in actors {
        actor.wait_for_shutdown().await;
    }
}

// ---------------------------------------------------------------- ring

#[derive(Actor)]
struct RingNode {
    ring: usize,
    index: usize,
    next: Option<ActorRef<RingNode>>,
    done: mpsc::UnboundedSender<(usize, usize)>,
}

struct SetNext(ActorRef<RingNode>);
struct Token(u64);

impl Message<SetNext> for RingNode {
    type Reply = ();

    async fn handle(&mut self, SetNext(next): SetNext, _: &mut Context<Self, ()>) {
        self.next = Some(next);
    }
}

impl Message<Token> for RingNode {
    type Reply = ();

    async fn handle(&mut self, Token(n): Token, _: &mut Context<Self, ()>) {
        if n == 0 {
            let _ = self.done.send((self.ring, self.index));
        } else if let Some(next) = &self.next {
            if next.tell(Token(n - 1)).await.is_err() {
                fail("ring: next node is gone");
            }
        }
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
        let mut next: Option<ActorRef<RingNode>> = None;
        let first = all.len();
        for index in (0..actors).rev() {
            let node = RingNode::spawn(RingNode {
                ring: r,
                index,
                next: next.clone(),
                done: done_tx.clone(),
            });
            next = Some(node.clone());
            all.push(node);
        }
        let head = next.unwrap_or_else(|| fail("empty ring"));
        all[first]
            .tell(SetNext(head.clone()))
            .await
            .unwrap_or_else(|_| fail("ring node died"));
        heads.push(head);
    }
    // `spawn` returns before the actor ran `on_start`; count creation until all have.
    for node in &all {
        node.wait_for_startup().await;
    }
    let creation = seconds_since(created);

    let hops = (actors * laps) as u64;
    let start = Instant::now();
    for head in &heads {
        head.tell(Token(hops))
            .await
            .unwrap_or_else(|_| fail("ring head died"));
    }
    ring_finish(rep, w, &mut done_rx, (rings, actors, laps), start, creation).await;
    stop_all(&all).await;
}

// ---------------------------------------------------------------- pingpong

#[derive(Actor)]
struct Ping {
    pong: ActorRef<Pong>,
    round_trips: u64,
    done: Option<oneshot::Sender<u64>>,
}

#[derive(Actor)]
/// Learns its ping once ([`Link`]), before the balls fly, so no ball carries an address.
struct Pong {
    ping: Option<ActorRef<Ping>>,
}

struct Ball(u64);

/// Gives pong the address it answers to.
struct Link(ActorRef<Ping>);

impl Message<Ball> for Ping {
    type Reply = ();

    async fn handle(&mut self, Ball(n): Ball, _: &mut Context<Self, ()>) {
        if n >= self.round_trips {
            if let Some(done) = self.done.take() {
                let _ = done.send(n);
            }
            return;
        }
        if self.pong.tell(Ball(n + 1)).await.is_err() {
            fail("pong is gone");
        }
    }
}

impl Message<Link> for Pong {
    type Reply = ();

    async fn handle(&mut self, Link(ping): Link, _: &mut Context<Self, ()>) {
        self.ping = Some(ping);
    }
}

impl Message<Ball> for Pong {
    type Reply = ();

    async fn handle(&mut self, ball: Ball, _: &mut Context<Self, ()>) {
        let Some(ping) = &self.ping else {
            fail("pong got a ball before its ping");
        };
        if ping.tell(ball).await.is_err() {
            fail("ping is gone");
        }
    }
}

async fn pingpong(rep: &Reporter, w: &Args, round_trips: usize) {
    let (n, secs) = bounce(round_trips).await;
    pingpong_finish(rep, &w.params(), n, round_trips, secs);
}

/// Runs ping and pong for `round_trips`; the last ball's count and the seconds it took.
/// Also `async_pingpong`'s round: kameo handlers are async already.
async fn bounce(round_trips: usize) -> (u64, f64) {
    let (done_tx, done_rx) = oneshot::channel();
    let pong = Pong::spawn(Pong { ping: None });
    let ping = Ping::spawn(Ping {
        pong: pong.clone(),
        round_trips: round_trips as u64,
        done: Some(done_tx),
    });
    pong.ask(Link(ping.clone()))
        .await
        .unwrap_or_else(|_| fail("pong died"));
    let start = Instant::now();
    ping.tell(Ball(0))
        .await
        .unwrap_or_else(|_| fail("ping died"));
    let n = done_rx
        .await
        .unwrap_or_else(|_| fail("ping never finished"));
    let secs = seconds_since(start);
    stop_all(&[ping]).await;
    stop_all(&[pong]).await;
    (n, secs)
}

// ---------------------------------------------------------------- mailbox_performance

#[derive(Actor)]
struct Receiver {
    count: u64,
    sum: u64,
    expected: u64,
    done: Option<oneshot::Sender<u64>>,
}

#[derive(Actor)]
struct Sender;

/// One payload; the receiver sums them.
struct Inc(u64);

struct SendAll {
    to: ActorRef<Receiver>,
    messages: usize,
}

impl Message<Inc> for Receiver {
    type Reply = ();

    async fn handle(&mut self, Inc(x): Inc, ctx: &mut Context<Self, ()>) {
        self.count += 1;
        self.sum += x;
        if self.count == self.expected {
            if let Some(done) = self.done.take() {
                let _ = done.send(self.sum);
            }
            ctx.stop();
        }
    }
}

impl Message<SendAll> for Sender {
    type Reply = ();

    async fn handle(&mut self, msg: SendAll, ctx: &mut Context<Self, ()>) {
        for i in 1..=msg.messages as u64 {
            if msg.to.tell(Inc(i)).await.is_err() {
                fail("receiver is gone");
            }
        }
        ctx.stop();
    }
}

async fn mailbox_performance(rep: &Reporter, w: &Args, senders: usize, messages: usize) {
    let expected = (senders * messages) as u64;
    let (done_tx, done_rx) = oneshot::channel();
    let receiver = Receiver::spawn(Receiver {
        count: 0,
        sum: 0,
        expected,
        done: Some(done_tx),
    });
    let all: Vec<_> = (0..senders).map(|_| Sender::spawn(Sender)).collect();
    let start = Instant::now();
    for sender in &all {
        sender
            .tell(SendAll {
                to: receiver.clone(),
                messages,
            })
            .await
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
    for sender in &all {
        sender.wait_for_shutdown().await;
    }
    receiver.wait_for_shutdown().await;
}

// ---------------------------------------------------------------- actor_creation

enum Parent {
    Actor(ActorRef<Tree>),
    Root(oneshot::Sender<u64>),
}

struct Tree {
    parent: Option<Parent>,
    pending: u32,
    sum: u64,
}

struct Sum(u64);

impl Tree {
    async fn answer(&mut self, n: u64) {
        match self.parent.take() {
            Some(Parent::Actor(parent)) => {
                let _ = parent.tell(Sum(n)).await;
            }
            Some(Parent::Root(tx)) => {
                let _ = tx.send(n);
            }
            None => {}
        }
    }
}

impl Actor for Tree {
    type Args = (u32, Parent);
    type Error = kameo::error::Infallible;

    async fn on_start(
        (depth, parent): Self::Args,
        me: ActorRef<Self>,
    ) -> Result<Self, Self::Error> {
        let mut tree = Tree {
            parent: Some(parent),
            pending: 2,
            sum: 0,
        };
        if depth == 1 {
            tree.answer(1).await;
            let _ = me.stop_gracefully().await;
        } else {
            for _ in 0..2 {
                Tree::spawn((depth - 1, Parent::Actor(me.clone())));
            }
        }
        Ok(tree)
    }
}

impl Message<Sum> for Tree {
    type Reply = ();

    async fn handle(&mut self, Sum(n): Sum, ctx: &mut Context<Self, ()>) {
        self.sum += n;
        self.pending -= 1;
        if self.pending == 0 {
            self.answer(1 + self.sum).await;
            ctx.stop();
        }
    }
}

async fn actor_creation(rep: &Reporter, w: &Args, pow: u32) {
    let actors = (1u64 << pow) - 1;
    let rss = troupe_bench_contract::RssBaseline::settle();
    let (tx, rx) = oneshot::channel();
    let start = Instant::now();
    let root = Tree::spawn((pow, Parent::Root(tx)));
    let answer = rx.await.unwrap_or_else(|_| fail("root never answered"));
    let secs = seconds_since(start);
    if answer != actors {
        fail(format!(
            "actor_creation: root answered {answer}, expected {actors}"
        ));
    }
    root.wait_for_shutdown().await;
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
    type Args = ();
    type Error = kameo::error::Infallible;

    async fn on_start(_: (), me: ActorRef<Self>) -> Result<Self, Self::Error> {
        let _ = me.stop_gracefully().await;
        Ok(Noop)
    }
}

async fn spawn_and_await(rep: &Reporter, w: &Args, count: usize) {
    let start = Instant::now();
    for _ in 0..count {
        let actor = Noop::spawn(());
        actor.wait_for_shutdown().await;
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

#[derive(Actor)]
struct Reader {
    table: Arc<Vec<Row>>,
}

/// The writer owns the table; the workload is read-only, so it only holds it.
#[derive(Actor)]
#[allow(dead_code)]
struct Writer {
    table: Arc<Vec<Row>>,
}

#[derive(Actor)]
struct Db {
    readers: Vec<ActorRef<Reader>>,
    next: usize,
}

#[derive(Actor)]
struct Client;

struct Read(u32);

impl Message<Read> for Reader {
    type Reply = Option<Row>;

    async fn handle(&mut self, Read(id): Read, _: &mut Context<Self, Self::Reply>) -> Option<Row> {
        self.table.get((id as usize).wrapping_sub(1)).cloned()
    }
}

impl Message<Read> for Db {
    type Reply = ForwardedReply<Read, Option<Row>>;

    /// Reads go to the readers round robin; the reader answers the client's ask.
    async fn handle(&mut self, msg: Read, ctx: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let reader = &self.readers[self.next];
        self.next = (self.next + 1) % self.readers.len();
        ctx.forward(reader, msg).await
    }
}

struct RunClient {
    db: ActorRef<Db>,
    first: usize,
    reads: usize,
    outstanding: usize,
}

impl Message<RunClient> for Client {
    type Reply = Result<usize, String>;

    async fn handle(&mut self, msg: RunClient, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let db = &msg.db;
        drive_reads(msg.first, msg.reads, msg.outstanding, |id| async move {
            db.ask(Read(id)).await
        })
        .await
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
    let writer = Writer::spawn(Writer {
        table: table.clone(),
    });
    let reader_actors: Vec<_> = (0..readers)
        .map(|_| {
            Reader::spawn(Reader {
                table: table.clone(),
            })
        })
        .collect();
    let db = Db::spawn(Db {
        readers: reader_actors.clone(),
        next: 0,
    });
    let client_actors: Vec<_> = (0..clients).map(|_| Client::spawn(Client)).collect();
    let start = Instant::now();
    let mut first = 0;
    let mut runs = Vec::with_capacity(clients);
    for (client, share) in client_actors.iter().zip(shares(reads, clients)) {
        let run = RunClient {
            db: db.clone(),
            first,
            reads: share,
            outstanding,
        };
        let client = client.clone();
        runs.push(tokio::spawn(async move { client.ask(run).await }));
        first += share;
    }
    let mut total = 0;
    for run in runs {
        match run.await {
            Ok(Ok(n)) => total += n,
            Ok(Err(e)) => fail(format!("reader_db: {e}")),
            Err(e) => fail(format!("reader_db: client task failed: {e}")),
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
    stop_all(&client_actors).await;
    stop_all(&[db]).await;
    stop_all(&reader_actors).await;
    stop_all(&[writer]).await;
}

// ---------------------------------------------------------------- registry

#[derive(Actor)]
struct Member {
    ack: mpsc::UnboundedSender<()>,
}

#[derive(Clone)]
struct Poke;

impl Message<Poke> for Member {
    type Reply = ();

    async fn handle(&mut self, _: Poke, _: &mut Context<Self, ()>) {
        let _ = self.ack.send(());
    }
}

const GROUPS: usize = 10;

async fn registry_size(rep: &Reporter, sample: usize, size: usize) {
    let prefix = format!("s{sample}-k{size}");
    let names: Vec<String> = (0..size).map(|i| format!("{prefix}-actor-{i}")).collect();
    let (ack_tx, mut ack_rx) = mpsc::unbounded_channel();
    let groups: Vec<_> = (0..GROUPS)
        .map(|_| PubSub::<Poke>::spawn(PubSub::new(DeliveryStrategy::Guaranteed)))
        .collect();
    let mut members = Vec::with_capacity(size);
    for (i, name) in names.iter().enumerate() {
        let member = Member::spawn(Member {
            ack: ack_tx.clone(),
        });
        member
            .register(name.clone())
            .unwrap_or_else(|e| fail(format!("register {name}: {e}")));
        groups[i % GROUPS]
            .tell(Subscribe(member.clone()))
            .await
            .unwrap_or_else(|_| fail("registry: group actor died"));
        members.push(member);
    }

    // find(name): many lookups cycling through every name.
    let lookups = (200_000 / size).max(2) * size;
    let start = Instant::now();
    for i in 0..lookups {
        let name = &names[i % size];
        match ActorRef::<Member>::lookup(name.as_str()) {
            Ok(Some(found)) if found.id() == members[i % size].id() => {}
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

    // dispatch_group: publish to one group, until every member got it.
    let group_size = size.div_ceil(GROUPS);
    let reps = (100_000 / group_size).clamp(10, 10_000);
    let start = Instant::now();
    for _ in 0..reps {
        groups[0]
            .tell(Publish(Poke))
            .await
            .unwrap_or_else(|_| fail("registry: group actor died"));
        for _ in 0..group_size {
            ack_rx
                .recv()
                .await
                .unwrap_or_else(|| fail("registry: ack channel closed"));
        }
    }
    let secs = seconds_since(start);
    if ack_rx.try_recv().is_ok() {
        fail("registry: a member got a dispatch meant for another group");
    }
    rep.figure(
        "registry",
        &Params::new()
            .int("size", size as u64)
            .str("op", "dispatch_group"),
        secs,
        secs * 1e9 / (reps * group_size) as f64,
        "ns/op",
        &[],
    );
    for name in &names {
        kameo::registry::ACTOR_REGISTRY
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name.as_str());
    }
    stop_all(&groups).await;
    stop_all(&members).await;
}
