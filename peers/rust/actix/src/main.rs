//! The Troupe benchmark workloads on actix (0.13), written the way actix's docs do it.
//!
//! Threads: an actix `System` runs its actors on one thread, its arbiter. To use `--threads`
//! threads, as the other peers do, this program starts `--threads` extra `Arbiter`s (one OS
//! thread and event loop each, actix's own way to run actors on several threads) and spreads
//! the actors across them with `Actor::start_in_arbiter`, round robin: ring `r` lives on
//! arbiter `r % threads`; ping and pong on one arbiter (actix's figure: two chatty actors
//! share an arbiter), and again on arbiters 0 and 1 as a second row labelled
//! `placement: cross-arbiter`; the senders of
//! `mailbox_performance` round robin, the receiver on arbiter 0; the subtrees of
//! `actor_creation` are split across the arbiters near the root, and below that a node starts
//! its children on its own arbiter with `Actor::start`; the readers and clients of `reader_db`
//! round robin, the DB actor on arbiter 0; `spawn_and_await` runs as a future on arbiter 0.
//! The System's own thread only drives the workload and waits for it; no actor runs there.
//!
//! Messages are `#[derive(Message)]` structs with one `impl Handler<M>` each; a message whose
//! answer nobody waits for goes with `do_send` (which ignores the mailbox capacity, as actix
//! documents), an ask with `send(..)` (a future of the handler's result). In `reader_db` the DB
//! actor's answer is a custom `MessageResponse` that hands the client's reply sender to the next
//! reader (no future or second request per read), and a client drives its outstanding reads
//! from one future, a `FuturesUnordered` of `db.send(..)`, spawned on its own context. Ping and
//! pong know each other's address from the start, so no message carries one.
//! actix has no name registry (its `Registry`/`SystemRegistry` hold one service actor per
//! type) and no process groups, so `registry` is reported unsupported.

use std::sync::Arc;
use std::time::Instant;

mod async_actors;
mod savina;

use actix::dev::{MessageResponse, OneshotSender};
use actix::prelude::*;
use tokio::sync::{mpsc, oneshot};
use troupe_bench_contract::customers::{self, drive_reads, Customer};
use troupe_bench_contract::{
    fail, payload_sum, pingpong_finish, ring_finish, seconds_since, shares, Args, Cli, Reporter,
    Workload,
};

fn main() {
    let cli = Cli::from_env();
    let rep = Reporter::new("actix", cli.threads);
    if let Workload::Registry { .. } = cli.workload {
        rep.unsupported(
            "registry",
            "actix 0.13 has no name registry and no process groups: its Registry and \
             SystemRegistry hold one service actor per type (ArbiterService/SystemService)",
        );
        return;
    }
    let system = System::new();
    let arbiters = system.block_on(async move {
        let arbiters: Vec<Arbiter> = (0..cli.threads).map(|_| Arbiter::new()).collect();
        let handles: Vec<ArbiterHandle> = arbiters.iter().map(Arbiter::handle).collect();
        run(&cli, &rep, &handles).await;
        arbiters
    });
    for arbiter in arbiters {
        arbiter.stop();
        let _ = arbiter.join();
    }
}

async fn run(cli: &Cli, rep: &Reporter, arbs: &[ArbiterHandle]) {
    let w = &cli.args;
    for sample in cli.rounds() {
        eprintln!("actix {} round {}", w.name(), sample + 1);
        match cli.workload {
            Workload::Ring {
                rings,
                actors,
                laps,
            } => ring(rep, w, arbs, rings, actors, laps).await,
            Workload::Pingpong { round_trips } => pingpong(rep, w, arbs, round_trips).await,
            Workload::MailboxPerformance { senders, messages } => {
                mailbox_performance(rep, w, arbs, senders, messages).await
            }
            Workload::ActorCreation { pow } => actor_creation(rep, w, arbs, pow).await,
            Workload::SpawnAndAwait { count } => spawn_and_await(rep, w, arbs, count).await,
            Workload::ReaderDb {
                reads,
                clients,
                readers,
                outstanding,
            } => reader_db(rep, w, arbs, reads, clients, readers, outstanding).await,
            Workload::Registry { .. } => {}
            Workload::AsyncPingpong { round_trips } => {
                async_actors::pingpong(rep, arbs, round_trips).await
            }
            Workload::AsyncAskChain { asks } => async_actors::ask_chain(rep, arbs, asks).await,
            Workload::AsyncIo {
                actors,
                messages,
                sleep_us,
            } => async_actors::io(rep, arbs, actors, messages, sleep_us).await,
            Workload::Savina(name) => savina::run(name, rep, w, arbs).await,
        }
    }
}

/// Asks an actor to stop itself.
#[derive(Message)]
#[rtype(result = "()")]
struct Stop;

macro_rules! stoppable {
    ($($actor:ty),*) => {$(
        impl Handler<Stop> for $actor {
            type Result = ();

            fn handle(&mut self, _: Stop, ctx: &mut Context<Self>) {
                ctx.stop();
            }
        }
    )*};
}

stoppable!(RingNode, Ping, Reader, Writer, Db, Client);

/// Waits until actors that stop by themselves are gone (their mailboxes closed).
async fn gone<A: Actor>(actors: &[Addr<A>]) {
    for actor in actors {
        while actor.connected() {
            actix::clock::sleep(std::time::Duration::from_micros(100)).await;
        }
    }
}

async fn stop_all<A: Actor<Context = Context<A>> + Handler<Stop>>(actors: &[Addr<A>]) {
    for actor in actors {
        // `send` resolves once the actor handled it, so the actor is gone afterwards.
        let _ = actor.send(Stop).await;
    }
}

// ---------------------------------------------------------------- ring

struct RingNode {
    ring: usize,
    index: usize,
    next: Option<Addr<RingNode>>,
    done: mpsc::UnboundedSender<(usize, usize)>,
}

impl Actor for RingNode {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "()")]
struct SetNext(Addr<RingNode>);

#[derive(Message)]
#[rtype(result = "()")]
struct Token(u64);

/// Answered once the node has started.
#[derive(Message)]
#[rtype(result = "()")]
struct Ready;

impl Handler<Ready> for RingNode {
    type Result = ();

    fn handle(&mut self, _: Ready, _: &mut Context<Self>) {}
}

impl Handler<Ready> for Ping {
    type Result = ();

    fn handle(&mut self, _: Ready, _: &mut Context<Self>) {}
}

impl Handler<SetNext> for RingNode {
    type Result = ();

    fn handle(&mut self, SetNext(next): SetNext, _: &mut Context<Self>) {
        self.next = Some(next);
    }
}

impl Handler<Token> for RingNode {
    type Result = ();

    fn handle(&mut self, Token(n): Token, _: &mut Context<Self>) {
        if n == 0 {
            let _ = self.done.send((self.ring, self.index));
        } else if let Some(next) = &self.next {
            next.do_send(Token(n - 1));
        }
    }
}

async fn ring(
    rep: &Reporter,
    w: &Args,
    arbs: &[ArbiterHandle],
    rings: usize,
    actors: usize,
    laps: usize,
) {
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let created = Instant::now();
    let mut all = Vec::with_capacity(rings * actors);
    let mut heads = Vec::with_capacity(rings);
    for r in 0..rings {
        let arbiter = &arbs[r % arbs.len()];
        // Build the ring back to front so each node starts knowing its successor;
        // the last node learns the first one afterwards.
        let mut next: Option<Addr<RingNode>> = None;
        let first = all.len();
        for index in (0..actors).rev() {
            let node = RingNode {
                ring: r,
                index,
                next: next.clone(),
                done: done_tx.clone(),
            };
            let node = RingNode::start_in_arbiter(arbiter, move |_| node);
            next = Some(node.clone());
            all.push(node);
        }
        let head = next.unwrap_or_else(|| fail("empty ring"));
        all[first].do_send(SetNext(head.clone()));
        heads.push(head);
    }
    // An arbiter starts its actors in order: once the last one answers, the ring is built.
    for head in &heads {
        head.send(Ready)
            .await
            .unwrap_or_else(|_| fail("ring head died"));
    }
    let creation = seconds_since(created);

    let hops = (actors * laps) as u64;
    let start = Instant::now();
    for head in &heads {
        head.do_send(Token(hops));
    }
    ring_finish(rep, w, &mut done_rx, (rings, actors, laps), start, creation).await;
    stop_all(&all).await;
}

// ---------------------------------------------------------------- pingpong

struct Ping {
    pong: Addr<Pong>,
    round_trips: u64,
    done: Option<oneshot::Sender<u64>>,
}

/// Knows its ping from the start (actix's `Actor::create` idiom for two
/// actors that address each other), so no message carries a reply address.
struct Pong {
    ping: Addr<Ping>,
}

impl Actor for Ping {
    type Context = Context<Self>;
}

impl Actor for Pong {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "()")]
struct Ball(u64);

impl Handler<Ball> for Ping {
    type Result = ();

    fn handle(&mut self, Ball(n): Ball, _: &mut Context<Self>) {
        if n >= self.round_trips {
            if let Some(done) = self.done.take() {
                let _ = done.send(n);
            }
            return;
        }
        self.pong.do_send(Ball(n + 1));
    }
}

impl Handler<Ball> for Pong {
    type Result = ();

    fn handle(&mut self, ball: Ball, _: &mut Context<Self>) {
        self.ping.do_send(ball);
    }
}

/// Two rows: ping and pong on one arbiter (actix's default for two chatty
/// actors, and its figure), then on two arbiters (every hop crosses threads),
/// labelled `placement: cross-arbiter`.
async fn pingpong(rep: &Reporter, w: &Args, arbs: &[ArbiterHandle], round_trips: usize) {
    for cross in [false, true] {
        let (done_tx, done_rx) = oneshot::channel();
        let pong_arbiter = arbs[usize::from(cross) % arbs.len()].clone();
        let ping = Ping::start_in_arbiter(&arbs[0], move |ctx| {
            let me = ctx.address();
            let pong = if cross {
                Pong::start_in_arbiter(&pong_arbiter, move |_| Pong { ping: me })
            } else {
                // On this arbiter: `start` runs the actor where it is called.
                Pong { ping: me }.start()
            };
            Ping {
                pong,
                round_trips: round_trips as u64,
                done: Some(done_tx),
            }
        });
        // Both are running once ping answers.
        ping.send(Ready).await.unwrap_or_else(|_| fail("ping died"));
        let start = Instant::now();
        ping.do_send(Ball(0));
        let n = done_rx
            .await
            .unwrap_or_else(|_| fail("ping never finished"));
        let secs = seconds_since(start);
        let params = if cross {
            w.params().str("placement", "cross-arbiter")
        } else {
            w.params()
        };
        pingpong_finish(rep, &params, n, round_trips, secs);
        // Ping's Stop returns once ping is gone; pong goes with the last
        // address to it (held by ping).
        stop_all(&[ping]).await;
    }
}

// ---------------------------------------------------------------- mailbox_performance

struct Receiver {
    count: u64,
    sum: u64,
    expected: u64,
    done: Option<oneshot::Sender<u64>>,
}

impl Actor for Receiver {
    type Context = Context<Self>;
}

struct Sender;

impl Actor for Sender {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "()")]
/// One payload; the receiver sums them.
struct Inc(u64);

#[derive(Message)]
#[rtype(result = "()")]
struct SendAll {
    to: Addr<Receiver>,
    messages: usize,
}

impl Handler<Inc> for Receiver {
    type Result = ();

    fn handle(&mut self, Inc(x): Inc, ctx: &mut Context<Self>) {
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

impl Handler<SendAll> for Sender {
    type Result = ();

    fn handle(&mut self, msg: SendAll, ctx: &mut Context<Self>) {
        for i in 1..=msg.messages as u64 {
            msg.to.do_send(Inc(i));
        }
        ctx.stop();
    }
}

async fn mailbox_performance(
    rep: &Reporter,
    w: &Args,
    arbs: &[ArbiterHandle],
    senders: usize,
    messages: usize,
) {
    let expected = (senders * messages) as u64;
    let (done_tx, done_rx) = oneshot::channel();
    let receiver = Receiver {
        count: 0,
        sum: 0,
        expected,
        done: Some(done_tx),
    };
    let receiver = Receiver::start_in_arbiter(&arbs[0], move |_| receiver);
    let all: Vec<_> = (0..senders)
        .map(|i| Sender::start_in_arbiter(&arbs[i % arbs.len()], |_| Sender))
        .collect();
    let start = Instant::now();
    for sender in &all {
        sender.do_send(SendAll {
            to: receiver.clone(),
            messages,
        });
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
    // The next round starts once the senders and the receiver are gone.
    gone(&all).await;
    gone(&[receiver]).await;
}

// ---------------------------------------------------------------- actor_creation

enum Parent {
    Actor(Addr<Tree>),
    Root(oneshot::Sender<u64>),
}

struct Tree {
    depth: u32,
    parent: Option<Parent>,
    pending: u32,
    sum: u64,
    /// The arbiters this subtree may spread over; with one left, children start locally.
    arbiters: Arc<[ArbiterHandle]>,
}

#[derive(Message)]
#[rtype(result = "()")]
struct Sum(u64);

impl Tree {
    fn answer(&mut self, n: u64) {
        match self.parent.take() {
            Some(Parent::Actor(parent)) => parent.do_send(Sum(n)),
            Some(Parent::Root(tx)) => {
                let _ = tx.send(n);
            }
            None => {}
        }
    }
}

impl Actor for Tree {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if self.depth == 1 {
            self.answer(1);
            ctx.stop();
            return;
        }
        let me = ctx.address();
        let child = |arbiters: Arc<[ArbiterHandle]>| Tree {
            depth: self.depth - 1,
            parent: Some(Parent::Actor(me.clone())),
            pending: 2,
            sum: 0,
            arbiters,
        };
        if self.arbiters.len() > 1 {
            let (left, right) = self.arbiters.split_at(self.arbiters.len() / 2);
            for half in [left, right] {
                let node = child(half.into());
                Tree::start_in_arbiter(&half[0], move |_| node);
            }
        } else {
            for _ in 0..2 {
                child(self.arbiters.clone()).start();
            }
        }
    }
}

impl Handler<Sum> for Tree {
    type Result = ();

    fn handle(&mut self, Sum(n): Sum, ctx: &mut Context<Self>) {
        self.sum += n;
        self.pending -= 1;
        if self.pending == 0 {
            self.answer(1 + self.sum);
            ctx.stop();
        }
    }
}

async fn actor_creation(rep: &Reporter, w: &Args, arbs: &[ArbiterHandle], pow: u32) {
    let actors = (1u64 << pow) - 1;
    let rss = troupe_bench_contract::RssBaseline::settle();
    let (tx, rx) = oneshot::channel();
    let start = Instant::now();
    let root = Tree {
        depth: pow,
        parent: Some(Parent::Root(tx)),
        pending: 2,
        sum: 0,
        arbiters: arbs.into(),
    };
    let root = Tree::start_in_arbiter(&arbs[0], move |_| root);
    let answer = rx.await.unwrap_or_else(|_| fail("root never answered"));
    let secs = seconds_since(start);
    if answer != actors {
        fail(format!(
            "actor_creation: root answered {answer}, expected {actors}"
        ));
    }
    let grown = rss.growth();
    rep.figure(
        w.name(),
        &w.params(),
        secs,
        actors as f64 / secs,
        "actors/s",
        &[("bytes_per_actor", grown as f64 / actors as f64)],
    );
    // The root stops last (it answers once both subtrees have answered and stopped).
    gone(&[root]).await;
}

// ---------------------------------------------------------------- spawn_and_await

/// Stops as soon as it has started, and says so from its `stopped` hook.
struct Noop {
    stopped: Option<oneshot::Sender<()>>,
}

impl Actor for Noop {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.stop();
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        if let Some(tx) = self.stopped.take() {
            let _ = tx.send(());
        }
    }
}

async fn spawn_and_await(rep: &Reporter, w: &Args, arbs: &[ArbiterHandle], count: usize) {
    let (tx, rx) = oneshot::channel();
    let driver = async move {
        let start = Instant::now();
        for _ in 0..count {
            let (stopped_tx, stopped_rx) = oneshot::channel();
            Noop {
                stopped: Some(stopped_tx),
            }
            .start();
            if stopped_rx.await.is_err() {
                fail("noop actor vanished without stopping");
            }
        }
        let _ = tx.send(seconds_since(start));
    };
    if !arbs[0].spawn(driver) {
        fail("arbiter 0 is gone");
    }
    let secs = rx.await.unwrap_or_else(|_| fail("driver never finished"));
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

struct Reader {
    table: Arc<Vec<Row>>,
}

/// The writer owns the table; the workload is read-only, so it only holds it.
#[allow(dead_code)]
struct Writer {
    table: Arc<Vec<Row>>,
}

struct Db {
    readers: Vec<Addr<Reader>>,
    next: usize,
}

struct Client {
    db: Addr<Db>,
    first: usize,
    reads: usize,
    done: Option<oneshot::Sender<Result<usize, String>>>,
}

impl Actor for Reader {
    type Context = Context<Self>;
}

impl Actor for Writer {
    type Context = Context<Self>;
}

impl Actor for Db {
    type Context = Context<Self>;
}

impl Actor for Client {
    type Context = Context<Self>;
}

/// A client's read, asked of the DB actor.
#[derive(Message)]
#[rtype(result = "Option<Row>")]
struct Read(u32);

/// A read the DB actor hands to a reader, with the client's reply sender.
#[derive(Message)]
#[rtype(result = "()")]
struct ReadFor {
    id: u32,
    reply: Option<OneshotSender<Option<Row>>>,
}

impl Handler<ReadFor> for Reader {
    type Result = ();

    fn handle(&mut self, msg: ReadFor, _: &mut Context<Self>) {
        if let Some(reply) = msg.reply {
            let _ = reply.send(customers::read(&self.table, msg.id));
        }
    }
}

/// The DB actor's answer to a [`Read`]: not a value but the hand-off of the
/// asker's reply sender to a reader (actix's `MessageResponse` extension
/// point), so no future is spawned and no second request is made per read.
struct Forward {
    reader: Addr<Reader>,
    id: u32,
}

impl MessageResponse<Db, Read> for Forward {
    fn handle(self, _: &mut Context<Db>, reply: Option<OneshotSender<Option<Row>>>) {
        self.reader.do_send(ReadFor { id: self.id, reply });
    }
}

impl Handler<Read> for Db {
    type Result = Forward;

    /// Reads go to the readers round robin; the reader answers the client.
    fn handle(&mut self, Read(id): Read, _: &mut Context<Self>) -> Forward {
        let reader = self.readers[self.next].clone();
        self.next = (self.next + 1) % self.readers.len();
        Forward { reader, id }
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct RunClient {
    outstanding: usize,
}

impl Handler<RunClient> for Client {
    type Result = ();

    /// One future on the client's context keeps `outstanding` reads in flight
    /// (`drive_reads`: a `FuturesUnordered` of the DB's answers) and checks every row.
    fn handle(&mut self, msg: RunClient, ctx: &mut Context<Self>) {
        let db = self.db.clone();
        let (first, end) = (self.first, self.first + self.reads);
        let reads = async move {
            drive_reads(first, end - first, msg.outstanding, |id| db.send(Read(id))).await
        };
        ctx.spawn(reads.into_actor(self).map(|result, act, _| {
            if let Some(done) = act.done.take() {
                let _ = done.send(result);
            }
        }));
    }
}

async fn reader_db(
    rep: &Reporter,
    w: &Args,
    arbs: &[ArbiterHandle],
    reads: usize,
    clients: usize,
    readers: usize,
    outstanding: usize,
) {
    let on = |i: usize| &arbs[i % arbs.len()];
    let table = customers::table();
    let writer_table = table.clone();
    let writer = Writer::start_in_arbiter(on(0), move |_| Writer {
        table: writer_table,
    });
    let reader_actors: Vec<_> = (0..readers)
        .map(|i| {
            let table = table.clone();
            Reader::start_in_arbiter(on(i), move |_| Reader { table })
        })
        .collect();
    let db = Db {
        readers: reader_actors.clone(),
        next: 0,
    };
    let db = Db::start_in_arbiter(on(0), move |_| db);
    let mut waits = Vec::with_capacity(clients);
    let mut client_actors = Vec::with_capacity(clients);
    let mut first = 0;
    for (i, share) in shares(reads, clients).into_iter().enumerate() {
        let (tx, rx) = oneshot::channel();
        let client = Client {
            db: db.clone(),
            first,
            reads: share,
            done: Some(tx),
        };
        client_actors.push(Client::start_in_arbiter(on(i), move |_| client));
        waits.push(rx);
        first += share;
    }
    let start = Instant::now();
    for client in &client_actors {
        client.do_send(RunClient { outstanding });
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
    stop_all(&client_actors).await;
    stop_all(&[db]).await;
    stop_all(&reader_actors).await;
    stop_all(&[writer]).await;
}
