//! `savina_big` on actix: W actors round robin on the arbiters, each with its own `Rng`. An
//! actor `do_send`s `Ping(own Addr)` to a random peer (itself included) and sends the next
//! one when the `Pong` comes back (a `do_send` to the address in the ping); after N pongs it
//! reports its count to the sink (the driver's channel). Every actor answers every `Ping`.

use actix::prelude::*;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc;
use troupe_bench_contract::savina::Rng;
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{lifecycle, on, ready, report, stop_all};

struct Node {
    peers: Arc<[Addr<Node>]>,
    rng: Rng,
    pings: u64,
    pongs: u64,
    sink: mpsc::UnboundedSender<u64>,
}

impl Actor for Node {
    type Context = Context<Self>;
}

lifecycle!(Node);

#[derive(Message)]
#[rtype(result = "()")]
struct Peers(Arc<[Addr<Node>]>);

#[derive(Message)]
#[rtype(result = "()")]
struct Start;

#[derive(Message)]
#[rtype(result = "()")]
struct Ping(Addr<Node>);

#[derive(Message)]
#[rtype(result = "()")]
struct Pong;

impl Node {
    fn ping(&mut self, ctx: &Context<Self>) {
        let peer = self.rng.below(self.peers.len() as u64) as usize;
        self.peers[peer].do_send(Ping(ctx.address()));
    }
}

impl Handler<Peers> for Node {
    type Result = ();

    fn handle(&mut self, Peers(peers): Peers, _: &mut Context<Self>) {
        self.peers = peers;
    }
}

impl Handler<Start> for Node {
    type Result = ();

    fn handle(&mut self, _: Start, ctx: &mut Context<Self>) {
        self.ping(ctx);
    }
}

impl Handler<Ping> for Node {
    type Result = ();

    fn handle(&mut self, Ping(from): Ping, _: &mut Context<Self>) {
        from.do_send(Pong);
    }
}

impl Handler<Pong> for Node {
    type Result = ();

    fn handle(&mut self, _: Pong, ctx: &mut Context<Self>) {
        self.pongs += 1;
        if self.pongs < self.pings {
            self.ping(ctx);
        } else {
            let _ = self.sink.send(self.pongs);
        }
    }
}

pub async fn run(rep: &Reporter, w: &Args, arbs: &[ArbiterHandle]) {
    let actors = w.usize("actors");
    let pings = w.u64("pings");
    let (sink_tx, mut sink_rx) = mpsc::unbounded_channel();
    let nodes: Vec<_> = (0..actors)
        .map(|i| {
            let sink = sink_tx.clone();
            Node::start_in_arbiter(on(arbs, i), move |_| Node {
                peers: Arc::from([]),
                rng: Rng::new(i as u64 + 1),
                pings,
                pongs: 0,
                sink,
            })
        })
        .collect();
    let peers: Arc<[Addr<Node>]> = nodes.clone().into();
    for node in &nodes {
        node.do_send(Peers(peers.clone()));
    }
    drop(peers);
    ready(&nodes).await;
    let start = Instant::now();
    for node in &nodes {
        node.do_send(Start);
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
