//! `savina_big` on kameo: W actors, each with its own `Rng`. An actor `tell`s `Ping(own
//! ActorRef)` to a random peer (itself included) and sends the next one when the `Pong` comes
//! back (a `tell` to the ref in the ping); after N pongs it reports its count to the sink (the
//! driver's channel). Every actor answers every `Ping`. Every actor both sends and answers, so
//! with bounded mailboxes two of them (or one, to itself) could wait on each other's full
//! mailbox: they get `mailbox::unbounded()` (the protocol keeps at most 2W messages in flight).

use kameo::prelude::*;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc;
use troupe_bench_contract::savina::Rng;
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{report, sent, started, stop_all};

#[derive(Actor)]
struct Node {
    peers: Arc<[ActorRef<Node>]>,
    rng: Rng,
    pings: u64,
    pongs: u64,
    sink: mpsc::UnboundedSender<u64>,
}

struct Peers(Arc<[ActorRef<Node>]>);
struct Start;
struct Ping(ActorRef<Node>);
struct Pong;

const WHAT: &str = "savina_big";

impl Node {
    async fn ping(&mut self, me: &ActorRef<Self>) {
        let peer = self.rng.below(self.peers.len() as u64) as usize;
        sent(self.peers[peer].tell(Ping(me.clone())).await, WHAT);
    }
}

impl Message<Peers> for Node {
    type Reply = ();

    async fn handle(&mut self, Peers(peers): Peers, _: &mut Context<Self, ()>) {
        self.peers = peers;
    }
}

impl Message<Start> for Node {
    type Reply = ();

    async fn handle(&mut self, _: Start, ctx: &mut Context<Self, ()>) {
        self.ping(ctx.actor_ref()).await;
    }
}

impl Message<Ping> for Node {
    type Reply = ();

    async fn handle(&mut self, Ping(from): Ping, _: &mut Context<Self, ()>) {
        sent(from.tell(Pong).await, WHAT);
    }
}

impl Message<Pong> for Node {
    type Reply = ();

    async fn handle(&mut self, _: Pong, ctx: &mut Context<Self, ()>) {
        self.pongs += 1;
        if self.pongs < self.pings {
            self.ping(ctx.actor_ref()).await;
        } else {
            let _ = self.sink.send(self.pongs);
        }
    }
}

pub async fn run(rep: &Reporter, w: &Args) {
    let actors = w.usize("actors");
    let pings = w.u64("pings");
    let (sink_tx, mut sink_rx) = mpsc::unbounded_channel();
    let nodes: Vec<_> = (0..actors)
        .map(|i| {
            let node = Node {
                peers: Arc::from([]),
                rng: Rng::new(i as u64 + 1),
                pings,
                pongs: 0,
                sink: sink_tx.clone(),
            };
            Node::spawn_with_mailbox(node, kameo::mailbox::unbounded())
        })
        .collect();
    let peers: Arc<[ActorRef<Node>]> = nodes.clone().into();
    for node in &nodes {
        sent(node.ask(Peers(peers.clone())).await, WHAT);
    }
    drop(peers);
    started(&nodes).await;
    let start = Instant::now();
    for node in &nodes {
        sent(node.tell(Start).await, WHAT);
    }
    let mut pongs = 0;
    for _ in 0..actors {
        pongs += sink_rx
            .recv()
            .await
            .unwrap_or_else(|| fail("savina_big: sink closed"));
    }
    let secs = seconds_since(start);
    if pongs != actors as u64 * pings {
        fail(format!(
            "savina_big: {pongs} pongs, expected {}",
            actors as u64 * pings
        ));
    }
    report(rep, w, secs, &[]);
    stop_all(&nodes).await;
}
