//! The Troupe benchmark workloads on xtra (0.6), written the way xtra's docs and examples do it.
//!
//! Runtime: one tokio multi-thread runtime with `worker_threads = --threads`; the driver of
//! each workload runs as a task on that runtime (not on the `block_on` thread), so exactly
//! `--threads` threads run actors. Actors are `#[derive(xtra::Actor)]` structs with one
//! `impl Handler<M>` per message, spawned with `xtra::spawn_tokio(actor, Mailbox::unbounded())`
//! as in xtra's examples. A message whose answer nobody waits for is sent with
//! `address.send(msg).detach().await` (it only waits until the message is queued); an ask is
//! `address.send(msg).await`. In `reader_db` the DB actor hands a read to a reader with
//! `detach()` and returns the reader's reply `Receiver`, so the reader answers the client.
//! xtra has no name registry and no process groups, so `registry` is reported unsupported.
//! The async workloads of issue 27 (`async_*`) are not ported to xtra (its handlers are
//! async, so it could express them): they answer `unsupported`.

use std::sync::Arc;
use std::time::Instant;

use futures::stream::{FuturesUnordered, StreamExt};
use tokio::sync::{mpsc, oneshot};
use troupe_bench_contract::customers::{self, drive_reads, Customer};
use troupe_bench_contract::{
    fail, payload_sum, pingpong_finish, ring_finish, seconds_since, shares, tokio_main, Args, Cli,
    Reporter, Workload,
};
use xtra::prelude::*;
use xtra::{Receiver as Reply, WeakAddress};

fn main() {
    tokio_main("xtra", run);
}

async fn run(cli: Cli, rep: Reporter) {
    let w = &cli.args;
    if let Workload::Savina(name) = cli.workload {
        rep.unsupported(
            name,
            "Savina is not ported to xtra: the suite's Savina peers are actix, ractor, kameo, CAF and Erlang",
        );
        return;
    }
    if let Workload::AsyncPingpong { .. }
    | Workload::AsyncAskChain { .. }
    | Workload::AsyncIo { .. } = cli.workload
    {
        rep.unsupported(
            w.name(),
            "not ported to xtra: issue 27's async workloads compare kameo, ractor and actix",
        );
        return;
    }
    if let Workload::Registry { .. } = cli.workload {
        rep.unsupported(
            "registry",
            "xtra 0.6 has no name registry and no process groups (Address::broadcast only \
             reaches actors sharing one mailbox)",
        );
        return;
    }
    for sample in cli.rounds() {
        eprintln!("xtra {} round {}", w.name(), sample + 1);
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
            Workload::Registry { .. } => {}
            Workload::Savina(_)
            | Workload::AsyncPingpong { .. }
            | Workload::AsyncAskChain { .. }
            | Workload::AsyncIo { .. } => {}
        }
    }
}

fn spawn<A: Actor<Stop = ()>>(actor: A) -> Address<A> {
    xtra::spawn_tokio(actor, Mailbox::unbounded())
}

/// Tells an actor to stop itself.
struct Stop;

macro_rules! stoppable {
    ($($actor:ty),*) => {$(
        impl Handler<Stop> for $actor {
            type Return = ();

            async fn handle(&mut self, _: Stop, ctx: &mut Context<Self>) {
                ctx.stop_self();
            }
        }
    )*};
}

stoppable!(RingNode, Ping, Pong, Sender, Reader, Writer, Db, Client);

async fn stop_all<A: Handler<Stop, Return = ()>>(actors: &[Address<A>]) {
    for actor in actors {
        let _ = actor.send(Stop).detach().await;
    }
    for actor in actors {
        actor.join().await;
    }
}

// ---------------------------------------------------------------- ring

#[derive(xtra::Actor)]
struct RingNode {
    ring: usize,
    index: usize,
    next: Option<Address<RingNode>>,
    done: mpsc::UnboundedSender<(usize, usize)>,
}

struct SetNext(Address<RingNode>);
struct Token(u64);

impl Handler<SetNext> for RingNode {
    type Return = ();

    async fn handle(&mut self, SetNext(next): SetNext, _: &mut Context<Self>) {
        self.next = Some(next);
    }
}

impl Handler<Token> for RingNode {
    type Return = ();

    async fn handle(&mut self, Token(n): Token, _: &mut Context<Self>) {
        if n == 0 {
            let _ = self.done.send((self.ring, self.index));
        } else if let Some(next) = &self.next {
            if next.send(Token(n - 1)).detach().await.is_err() {
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
        let mut next: Option<Address<RingNode>> = None;
        let first = all.len();
        for index in (0..actors).rev() {
            let node = spawn(RingNode {
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
            .send(SetNext(head.clone()))
            .await
            .unwrap_or_else(|_| fail("ring node died"));
        heads.push(head);
    }
    let creation = seconds_since(created);

    let hops = (actors * laps) as u64;
    let start = Instant::now();
    for head in &heads {
        if head.send(Token(hops)).detach().await.is_err() {
            fail("ring head died");
        }
    }
    ring_finish(rep, w, &mut done_rx, (rings, actors, laps), start, creation).await;
    stop_all(&all).await;
}

// ---------------------------------------------------------------- pingpong

#[derive(xtra::Actor)]
struct Ping {
    pong: Address<Pong>,
    round_trips: u64,
    done: Option<oneshot::Sender<u64>>,
}

#[derive(xtra::Actor)]
/// Learns its ping once ([`Link`]), before the balls fly, so no ball carries an address.
struct Pong {
    ping: Option<Address<Ping>>,
}

struct Ball(u64);

/// Gives pong the address it answers to.
struct Link(Address<Ping>);

impl Handler<Ball> for Ping {
    type Return = ();

    async fn handle(&mut self, Ball(n): Ball, _: &mut Context<Self>) {
        if n >= self.round_trips {
            if let Some(done) = self.done.take() {
                let _ = done.send(n);
            }
            return;
        }
        if self.pong.send(Ball(n + 1)).detach().await.is_err() {
            fail("pong is gone");
        }
    }
}

impl Handler<Link> for Pong {
    type Return = ();

    async fn handle(&mut self, Link(ping): Link, _: &mut Context<Self>) {
        self.ping = Some(ping);
    }
}

impl Handler<Ball> for Pong {
    type Return = ();

    async fn handle(&mut self, ball: Ball, _: &mut Context<Self>) {
        let Some(ping) = &self.ping else {
            fail("pong got a ball before its ping");
        };
        if ping.send(ball).detach().await.is_err() {
            fail("ping is gone");
        }
    }
}

async fn pingpong(rep: &Reporter, w: &Args, round_trips: usize) {
    let (done_tx, done_rx) = oneshot::channel();
    let pong = spawn(Pong { ping: None });
    let ping = spawn(Ping {
        pong: pong.clone(),
        round_trips: round_trips as u64,
        done: Some(done_tx),
    });
    if pong.send(Link(ping.clone())).await.is_err() {
        fail("pong died");
    }
    let start = Instant::now();
    if ping.send(Ball(0)).detach().await.is_err() {
        fail("ping died");
    }
    let n = done_rx
        .await
        .unwrap_or_else(|_| fail("ping never finished"));
    let secs = seconds_since(start);
    pingpong_finish(rep, &w.params(), n, round_trips, secs);
    stop_all(&[ping]).await;
    stop_all(&[pong]).await;
}

// ---------------------------------------------------------------- mailbox_performance

#[derive(xtra::Actor)]
struct Receiver {
    count: u64,
    sum: u64,
    expected: u64,
    done: Option<oneshot::Sender<u64>>,
}

#[derive(xtra::Actor)]
struct Sender;

/// One payload; the receiver sums them.
struct Inc(u64);

struct SendAll {
    to: Address<Receiver>,
    messages: usize,
}

impl Handler<Inc> for Receiver {
    type Return = ();

    async fn handle(&mut self, Inc(x): Inc, ctx: &mut Context<Self>) {
        self.count += 1;
        self.sum += x;
        if self.count == self.expected {
            if let Some(done) = self.done.take() {
                let _ = done.send(self.sum);
            }
            ctx.stop_self();
        }
    }
}

impl Handler<SendAll> for Sender {
    type Return = ();

    async fn handle(&mut self, msg: SendAll, ctx: &mut Context<Self>) {
        for i in 1..=msg.messages as u64 {
            if msg.to.send(Inc(i)).detach().await.is_err() {
                fail("receiver is gone");
            }
        }
        ctx.stop_self();
    }
}

async fn mailbox_performance(rep: &Reporter, w: &Args, senders: usize, messages: usize) {
    let expected = (senders * messages) as u64;
    let (done_tx, done_rx) = oneshot::channel();
    let receiver = spawn(Receiver {
        count: 0,
        sum: 0,
        expected,
        done: Some(done_tx),
    });
    let all: Vec<_> = (0..senders).map(|_| spawn(Sender)).collect();
    let start = Instant::now();
    for sender in &all {
        let send_all = SendAll {
            to: receiver.clone(),
            messages,
        };
        if sender.send(send_all).detach().await.is_err() {
            fail("sender died");
        }
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
        sender.join().await;
    }
    receiver.join().await;
}

// ---------------------------------------------------------------- actor_creation

enum Parent {
    Actor(WeakAddress<Tree>),
    Root(oneshot::Sender<u64>),
}

struct Tree {
    depth: u32,
    parent: Option<Parent>,
    pending: u32,
    sum: u64,
    /// The parent keeps its children's addresses: an xtra actor stops once no strong
    /// address to it is left.
    children: Vec<Address<Tree>>,
}

struct Sum(u64);

impl Tree {
    fn new(depth: u32, parent: Parent) -> Tree {
        Tree {
            depth,
            parent: Some(parent),
            pending: 2,
            sum: 0,
            children: Vec::new(),
        }
    }

    async fn answer(&mut self, n: u64) {
        match self.parent.take() {
            Some(Parent::Actor(parent)) => {
                let _ = parent.send(Sum(n)).detach().await;
            }
            Some(Parent::Root(tx)) => {
                let _ = tx.send(n);
            }
            None => {}
        }
    }
}

impl Handler<Sum> for Tree {
    type Return = ();

    async fn handle(&mut self, Sum(n): Sum, ctx: &mut Context<Self>) {
        self.sum += n;
        self.pending -= 1;
        if self.pending == 0 {
            self.answer(1 + self.sum).await;
            ctx.stop_self();
        }
    }
}

/// A tree node starts its children in `started`, as Troupe's and the other peers' do (no
/// extra message per node); a leaf answers and ends its `started` with `Err`, which stops it.
impl xtra::Actor for Tree {
    type Stop = ();

    async fn started(&mut self, mailbox: &xtra::Mailbox<Self>) -> Result<(), ()> {
        if self.depth == 1 {
            self.answer(1).await;
            return Err(());
        }
        for _ in 0..2 {
            let child = spawn(Tree::new(self.depth - 1, Parent::Actor(mailbox.address())));
            self.children.push(child);
        }
        Ok(())
    }

    async fn stopped(self) {}
}

async fn actor_creation(rep: &Reporter, w: &Args, pow: u32) {
    let actors = (1u64 << pow) - 1;
    let rss = troupe_bench_contract::RssBaseline::settle();
    let (tx, rx) = oneshot::channel();
    let start = Instant::now();
    let root = spawn(Tree::new(pow, Parent::Root(tx)));
    let answer = rx.await.unwrap_or_else(|_| fail("root never answered"));
    let secs = seconds_since(start);
    if answer != actors {
        fail(format!(
            "actor_creation: root answered {answer}, expected {actors}"
        ));
    }
    root.join().await;
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
    type Stop = ();

    /// Returning `Err` from `started` stops the actor before it handles any message.
    async fn started(&mut self, _: &Mailbox<Self>) -> Result<(), ()> {
        Err(())
    }

    async fn stopped(self) {}
}

async fn spawn_and_await(rep: &Reporter, w: &Args, count: usize) {
    let start = Instant::now();
    for _ in 0..count {
        let actor = spawn(Noop);
        actor.join().await;
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

#[derive(xtra::Actor)]
struct Reader {
    table: Arc<Vec<Row>>,
}

/// The writer owns the table; the workload is read-only, so it only holds it.
#[derive(xtra::Actor)]
#[allow(dead_code)]
struct Writer {
    table: Arc<Vec<Row>>,
}

#[derive(xtra::Actor)]
struct Db {
    readers: Vec<Address<Reader>>,
    next: usize,
}

#[derive(xtra::Actor)]
struct Client;

struct Read(u32);

impl Handler<Read> for Reader {
    type Return = Option<Row>;

    async fn handle(&mut self, Read(id): Read, _: &mut Context<Self>) -> Option<Row> {
        self.table.get((id as usize).wrapping_sub(1)).cloned()
    }
}

impl Handler<Read> for Db {
    type Return = Result<Reply<Option<Row>>, xtra::Error>;

    /// Reads go to the readers round robin; the client awaits the reader's reply.
    async fn handle(&mut self, msg: Read, _: &mut Context<Self>) -> Self::Return {
        let reader = &self.readers[self.next];
        self.next = (self.next + 1) % self.readers.len();
        reader.send(msg).detach().await
    }
}

struct RunClient {
    db: Address<Db>,
    first: usize,
    reads: usize,
    outstanding: usize,
}

impl Handler<RunClient> for Client {
    type Return = Result<usize, String>;

    async fn handle(&mut self, msg: RunClient, _: &mut Context<Self>) -> Self::Return {
        let db = &msg.db;
        drive_reads(msg.first, msg.reads, msg.outstanding, |id| async move {
            // The DB hands back the reader's reply `Receiver`, which the client awaits.
            match db.send(Read(id)).await {
                Ok(Ok(reply)) => reply.await.map_err(|e| e.to_string()),
                Ok(Err(e)) | Err(e) => Err(e.to_string()),
            }
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
    let writer = spawn(Writer {
        table: table.clone(),
    });
    let reader_actors: Vec<_> = (0..readers)
        .map(|_| {
            spawn(Reader {
                table: table.clone(),
            })
        })
        .collect();
    let db = spawn(Db {
        readers: reader_actors.clone(),
        next: 0,
    });
    let client_actors: Vec<_> = (0..clients).map(|_| spawn(Client)).collect();
    let start = Instant::now();
    let mut first = 0;
    let mut runs = FuturesUnordered::new();
    for (client, share) in client_actors.iter().zip(shares(reads, clients)) {
        runs.push(client.send(RunClient {
            db: db.clone(),
            first,
            reads: share,
            outstanding,
        }));
        first += share;
    }
    let mut total = 0;
    while let Some(run) = runs.next().await {
        match run {
            Ok(Ok(n)) => total += n,
            Ok(Err(e)) => fail(format!("reader_db: {e}")),
            Err(e) => fail(format!("reader_db: client failed: {e}")),
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
