//! `savina_threadring` on actix: one ring of N actors, all on one arbiter (as this peer places
//! each ring of the `ring` workload: the token is passed one hop at a time, so the ring shares
//! a thread). The ring is built back to front (each actor starts knowing its successor, the
//! last learns the first); the token carries the passes left and each hop `do_send`s it on,
//! minus one; the actor receiving 0 reports its position. Every actor counts its forwards.

use actix::prelude::*;
use std::time::Instant;
use tokio::sync::mpsc;
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{gone, lifecycle, ready, report};

struct Node {
    index: usize,
    next: Option<Addr<Node>>,
    forwards: u64,
    done: mpsc::UnboundedSender<usize>,
}

impl Actor for Node {
    type Context = Context<Self>;
}

lifecycle!(Node);

#[derive(Message)]
#[rtype(result = "()")]
struct SetNext(Addr<Node>);

#[derive(Message)]
#[rtype(result = "()")]
struct Token(u64);

/// Stops the node; answered with its forwards.
#[derive(Message)]
#[rtype(result = "u64")]
struct Finish;

impl Handler<SetNext> for Node {
    type Result = ();

    fn handle(&mut self, SetNext(next): SetNext, _: &mut Context<Self>) {
        self.next = Some(next);
    }
}

impl Handler<Token> for Node {
    type Result = ();

    fn handle(&mut self, Token(left): Token, _: &mut Context<Self>) {
        if left == 0 {
            let _ = self.done.send(self.index);
        } else if let Some(next) = &self.next {
            self.forwards += 1;
            next.do_send(Token(left - 1));
        }
    }
}

impl Handler<Finish> for Node {
    type Result = u64;

    fn handle(&mut self, _: Finish, ctx: &mut Context<Self>) -> u64 {
        // Dropping the successor's address lets the ring go.
        self.next = None;
        ctx.stop();
        self.forwards
    }
}

pub async fn run(rep: &Reporter, w: &Args, arbs: &[ArbiterHandle]) {
    let actors = w.usize("actors");
    let passes = w.u64("passes");
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let mut nodes = Vec::with_capacity(actors);
    let mut next: Option<Addr<Node>> = None;
    for index in (0..actors).rev() {
        let node = Node {
            index,
            next: next.clone(),
            forwards: 0,
            done: done_tx.clone(),
        };
        let node = Node::start_in_arbiter(&arbs[0], move |_| node);
        next = Some(node.clone());
        nodes.push(node);
    }
    nodes.reverse();
    let last = nodes.len() - 1;
    nodes[last].do_send(SetNext(nodes[0].clone()));
    // The token ends at position passes % actors.
    let ender = (passes % actors as u64) as usize;
    ready(&nodes).await;
    let start = Instant::now();
    nodes[0].do_send(Token(passes));
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
        hops += node
            .send(Finish)
            .await
            .unwrap_or_else(|_| fail("savina_threadring: a node died"));
    }
    if hops != passes {
        fail(format!("savina_threadring: {hops} hops, expected {passes}"));
    }
    report(rep, w, secs, &[]);
    gone(&nodes).await;
}
