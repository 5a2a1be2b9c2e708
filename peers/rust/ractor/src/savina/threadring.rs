//! `savina_threadring`: Savina's Thread Ring. N ractor actors in a ring (built back to front,
//! each spawned knowing its successor; the last learns the first by `SetNext` before the
//! measured phase) cast a `Token(R)` along, each hop decrementing it; the actor that gets 0
//! tells the driver. Each actor counts the hops it made; the driver sums them with `call!`
//! afterwards and checks R.

use std::time::Instant;

use ractor::{call, Actor, ActorRef, RpcReplyPort};
use tokio::sync::mpsc;
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::report;
use crate::{spawn, stop_all, Res};

struct Node;

enum NodeMsg {
    SetNext(ActorRef<NodeMsg>),
    Token(u64),
    Hops(RpcReplyPort<u64>),
}

struct NodeState {
    next: Option<ActorRef<NodeMsg>>,
    hops: u64,
    done: mpsc::UnboundedSender<()>,
}

impl Actor for Node {
    type Msg = NodeMsg;
    type State = NodeState;
    type Arguments = NodeState;

    async fn pre_start(&self, _: ActorRef<NodeMsg>, args: NodeState) -> Res<NodeState> {
        Ok(args)
    }

    async fn handle(&self, _: ActorRef<NodeMsg>, msg: NodeMsg, st: &mut NodeState) -> Res<()> {
        match msg {
            NodeMsg::SetNext(next) => st.next = Some(next),
            NodeMsg::Token(0) => {
                let _ = st.done.send(());
            }
            NodeMsg::Token(t) => {
                st.hops += 1;
                match &st.next {
                    Some(next) => next.cast(NodeMsg::Token(t - 1))?,
                    None => fail("savina_threadring: ring not closed"),
                }
            }
            NodeMsg::Hops(reply) => {
                let _ = reply.send(st.hops);
            }
        }
        Ok(())
    }
}

pub async fn run(rep: &Reporter, w: &Args) {
    let actors = w.usize("actors");
    let passes = w.u64("passes");
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let mut nodes = Vec::with_capacity(actors);
    let mut next = None;
    for _ in 0..actors {
        let state = NodeState {
            next: next.clone(),
            hops: 0,
            done: done_tx.clone(),
        };
        let node = spawn(Node, state).await;
        next = Some(node.0.clone());
        nodes.push(node);
    }
    drop(done_tx);
    nodes.reverse();
    let first = nodes[0].0.clone();
    let last = &nodes[actors - 1].0;
    last.cast(NodeMsg::SetNext(first.clone()))
        .unwrap_or_else(|_| fail("savina_threadring: node died"));
    let start = Instant::now();
    first
        .cast(NodeMsg::Token(passes))
        .unwrap_or_else(|_| fail("savina_threadring: node died"));
    done_rx
        .recv()
        .await
        .unwrap_or_else(|| fail("savina_threadring: the token was lost"));
    let secs = seconds_since(start);
    let mut hops = 0;
    for (node, _) in &nodes {
        hops +=
            call!(node, NodeMsg::Hops).unwrap_or_else(|e| fail(format!("savina_threadring: {e}")));
    }
    if hops != passes {
        fail(format!("savina_threadring: {hops} hops, expected {passes}"));
    }
    report(rep, w, secs, &[]);
    stop_all(nodes).await;
}
