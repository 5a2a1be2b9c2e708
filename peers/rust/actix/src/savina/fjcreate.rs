//! `savina_fjcreate` on actix: N times the driver starts an actor with `start_in_arbiter`
//! (round robin over the arbiters) and `do_send`s it one message; the actor reports to the
//! sink (the driver's channel) when it handles it and stops itself. Creation is timed.

use actix::prelude::*;
use std::time::Instant;
use tokio::sync::mpsc;
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{gone, on, report};

struct Leaf {
    sink: mpsc::UnboundedSender<()>,
}

impl Actor for Leaf {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "()")]
struct Hello;

impl Handler<Hello> for Leaf {
    type Result = ();

    fn handle(&mut self, _: Hello, ctx: &mut Context<Self>) {
        let _ = self.sink.send(());
        ctx.stop();
    }
}

pub async fn run(rep: &Reporter, w: &Args, arbs: &[ArbiterHandle]) {
    let actors = w.usize("actors");
    let (sink_tx, mut sink_rx) = mpsc::unbounded_channel();
    let mut leaves = Vec::with_capacity(actors);
    let start = Instant::now();
    for i in 0..actors {
        let sink = sink_tx.clone();
        let leaf = Leaf::start_in_arbiter(on(arbs, i), move |_| Leaf { sink });
        leaf.do_send(Hello);
        leaves.push(leaf);
    }
    for _ in 0..actors {
        sink_rx
            .recv()
            .await
            .unwrap_or_else(|| fail("savina_fjcreate: sink closed"));
    }
    let secs = seconds_since(start);
    report(rep, w, secs, &[]);
    gone(&leaves).await;
}
