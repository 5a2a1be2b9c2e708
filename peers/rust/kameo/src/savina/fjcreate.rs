//! `savina_fjcreate` on kameo: N times the driver `spawn`s an actor and `tell`s it one
//! message; the actor reports to the sink (the driver's channel) when it handles it and stops
//! itself (`Context::stop`). Creation is timed. The driver keeps only a `WeakActorRef` of each
//! (to wait for its shutdown before the next round), so a stopped actor's mailbox is freed.

use kameo::prelude::*;
use std::time::Instant;
use tokio::sync::mpsc;
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{report, sent};

#[derive(Actor)]
struct Leaf {
    sink: mpsc::UnboundedSender<()>,
}

struct Hello;

impl Message<Hello> for Leaf {
    type Reply = ();

    async fn handle(&mut self, _: Hello, ctx: &mut Context<Self, ()>) {
        let _ = self.sink.send(());
        ctx.stop();
    }
}

pub async fn run(rep: &Reporter, w: &Args) {
    let actors = w.usize("actors");
    let (sink_tx, mut sink_rx) = mpsc::unbounded_channel();
    let mut leaves = Vec::with_capacity(actors);
    let start = Instant::now();
    for _ in 0..actors {
        let leaf = Leaf::spawn(Leaf {
            sink: sink_tx.clone(),
        });
        sent(leaf.tell(Hello).await, "savina_fjcreate");
        leaves.push(leaf.downgrade());
    }
    for _ in 0..actors {
        sink_rx
            .recv()
            .await
            .unwrap_or_else(|| fail("savina_fjcreate: sink closed"));
    }
    let secs = seconds_since(start);
    report(rep, w, secs, &[]);
    for leaf in &leaves {
        leaf.wait_for_shutdown().await;
    }
}
