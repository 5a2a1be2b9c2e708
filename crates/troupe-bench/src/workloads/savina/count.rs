//! `savina_count` (Savina micro 2): a producer sends N `Increment` messages
//! to a counter, then asks it for the total.
//!
//! On Troupe: the producer is an actor that tells N increments in one
//! handler, then asks the counter with `Context::ask` (non-blocking: the
//! total comes back to the producer as a message, through the counter's
//! `ReplyTo`), and hands the total to the waiting thread. Check: total == N.

use super::super::{verify, Workload};
use super::{measure, recv, sample, timed};
use crossbeam_channel::{bounded, Sender};
use troupe::{Actor, ActorRef, AskError, Context, ReplyTo};
use troupe_bench_contract::savina;

pub struct Counter {
    total: u64,
}

pub enum CounterMsg {
    Increment,
    Total(ReplyTo<u64>),
}

impl Actor for Counter {
    type Msg = CounterMsg;
    #[inline]
    fn handle(&mut self, msg: CounterMsg, _ctx: &mut Context<'_, Self>) {
        match msg {
            CounterMsg::Increment => self.total += 1,
            CounterMsg::Total(r) => {
                r.reply(self.total);
            }
        }
    }
}

pub struct Producer {
    counter: ActorRef<Counter>,
    n: u64,
    done: Sender<Result<u64, AskError>>,
}

pub enum ProducerMsg {
    Start,
    Total(Result<u64, AskError>),
}

impl From<Result<u64, AskError>> for ProducerMsg {
    fn from(r: Result<u64, AskError>) -> Self {
        ProducerMsg::Total(r)
    }
}

impl Actor for Producer {
    type Msg = ProducerMsg;
    fn handle(&mut self, msg: ProducerMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            ProducerMsg::Start => {
                for _ in 0..self.n {
                    let _ = self.counter.tell(CounterMsg::Increment);
                }
                if let Err(e) = ctx.ask(&self.counter, CounterMsg::Total) {
                    let _ = self.done.send(Err(e));
                }
            }
            ProducerMsg::Total(t) => {
                let _ = self.done.send(t);
            }
        }
    }
}

pub const WORKLOAD: Workload = Workload {
    spec: &savina::COUNT,
    peers: true,
    run: |cfg, a| {
        let n = a.u64("increments");
        measure(cfg, a, |system| {
            let (tx, rx) = bounded(1);
            let counter = system.spawn(Counter { total: 0 });
            let producer = system.spawn(Producer {
                counter,
                n,
                done: tx,
            });
            let (s, total) = timed(
                || producer.tell(ProducerMsg::Start).map_err(|e| e.to_string()),
                || recv(&rx),
            )?;
            let total = total.map_err(|e| format!("savina_count: ask failed: {e}"))?;
            verify(total == n, || {
                format!("savina_count: total {total}, expected {n}")
            })?;
            Ok(sample(s))
        })
    },
    plot: None,
};
