//! `savina_threadring` on kameo: one ring of N actors built back to front (each is spawned
//! knowing its successor, the last learns the first); the token carries the passes left and
//! each hop `tell`s it on, minus one; the actor receiving 0 reports its position. Every actor
//! counts its forwards.

use kameo::prelude::*;
use std::time::Instant;
use tokio::sync::mpsc;
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{gone, report, sent, started};

#[derive(Actor)]
struct Node {
    index: usize,
    next: Option<ActorRef<Node>>,
    forwards: u64,
    done: mpsc::UnboundedSender<usize>,
}

struct SetNext(ActorRef<Node>);
struct Token(u64);
/// Stops the node; answered with its forwards.
struct Finish;

impl Message<SetNext> for Node {
    type Reply = ();

    async fn handle(&mut self, SetNext(next): SetNext, _: &mut Context<Self, ()>) {
        self.next = Some(next);
    }
}

impl Message<Token> for Node {
    type Reply = ();

    async fn handle(&mut self, Token(left): Token, _: &mut Context<Self, ()>) {
        if left == 0 {
            let _ = self.done.send(self.index);
        } else if let Some(next) = &self.next {
            self.forwards += 1;
            sent(next.tell(Token(left - 1)).await, "savina_threadring");
        }
    }
}

impl Message<Finish> for Node {
    type Reply = u64;

    async fn handle(&mut self, _: Finish, ctx: &mut Context<Self, u64>) -> u64 {
        self.next = None;
        ctx.stop();
        self.forwards
    }
}

pub async fn run(rep: &Reporter, w: &Args) {
    let actors = w.usize("actors");
    let passes = w.u64("passes");
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let mut nodes = Vec::with_capacity(actors);
    let mut next: Option<ActorRef<Node>> = None;
    for index in (0..actors).rev() {
        let node = Node::spawn(Node {
            index,
            next: next.clone(),
            forwards: 0,
            done: done_tx.clone(),
        });
        next = Some(node.clone());
        nodes.push(node);
    }
    nodes.reverse();
    let last = nodes.len() - 1;
    sent(
        nodes[last].ask(SetNext(nodes[0].clone())).await,
        "savina_threadring",
    );
    started(&nodes).await;
    let ender = (passes % actors as u64) as usize;
    let start = Instant::now();
    sent(nodes[0].tell(Token(passes)).await, "savina_threadring");
    let index = done_rx
        .recv()
        .await
        .unwrap_or_else(|| fail("savina_threadring: the token never ended"));
    let secs = seconds_since(start);
    if index != ender {
        fail(format!(
            "savina_threadring: token ended at {index}, expected {ender}"
        ));
    }
    let mut hops = 0;
    for node in &nodes {
        hops += sent(node.ask(Finish).await, "savina_threadring");
    }
    if hops != passes {
        fail(format!("savina_threadring: {hops} hops, expected {passes}"));
    }
    report(rep, w, secs, &[]);
    gone(&nodes).await;
}
