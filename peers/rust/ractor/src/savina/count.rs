//! `savina_count`: Savina's Count. A producer actor casts N `Increment`s to a counter actor,
//! then asks it for the total with `call!` (an `RpcReplyPort` in `Total`); the producer has
//! nothing else to handle, so awaiting the call in its handler is ractor's ordinary ask.

use std::time::Instant;

use ractor::{call, Actor, ActorRef, RpcReplyPort};
use tokio::sync::oneshot;
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{finished, report};
use crate::{spawn, stop_all, Res};

struct Counter;
struct Producer;

enum CounterMsg {
    Increment,
    Total(RpcReplyPort<u64>),
}

impl Actor for Counter {
    type Msg = CounterMsg;
    type State = u64;
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<CounterMsg>, _: ()) -> Res<u64> {
        Ok(0)
    }

    async fn handle(&self, _: ActorRef<CounterMsg>, msg: CounterMsg, count: &mut u64) -> Res<()> {
        match msg {
            CounterMsg::Increment => *count += 1,
            CounterMsg::Total(reply) => {
                let _ = reply.send(*count);
            }
        }
        Ok(())
    }
}

/// Starts the producer; the total the counter answered goes to the driver.
struct Produce(oneshot::Sender<u64>);

impl Actor for Producer {
    type Msg = Produce;
    type State = (ActorRef<CounterMsg>, u64);
    type Arguments = (ActorRef<CounterMsg>, u64);

    async fn pre_start(
        &self,
        _: ActorRef<Produce>,
        args: (ActorRef<CounterMsg>, u64),
    ) -> Res<(ActorRef<CounterMsg>, u64)> {
        Ok(args)
    }

    async fn handle(
        &self,
        _: ActorRef<Produce>,
        Produce(done): Produce,
        (counter, increments): &mut (ActorRef<CounterMsg>, u64),
    ) -> Res<()> {
        for _ in 0..*increments {
            counter.cast(CounterMsg::Increment)?;
        }
        let total = call!(counter, CounterMsg::Total)?;
        let _ = done.send(total);
        Ok(())
    }
}

pub async fn run(rep: &Reporter, w: &Args) {
    let increments = w.u64("increments");
    let counter = spawn(Counter, ()).await;
    let producer = spawn(Producer, (counter.0.clone(), increments)).await;
    let (done_tx, done_rx) = oneshot::channel();
    let start = Instant::now();
    producer
        .0
        .cast(Produce(done_tx))
        .unwrap_or_else(|_| fail("savina_count: producer died"));
    let total = finished(done_rx, "savina_count").await;
    let secs = seconds_since(start);
    if total != increments {
        fail(format!(
            "savina_count: total {total}, expected {increments}"
        ));
    }
    report(rep, w, secs, &[]);
    stop_all(vec![producer]).await;
    stop_all(vec![counter]).await;
}
