//! `savina_bndbuffer`: Savina's Producer-Consumer with a bounded buffer. A manager actor
//! owns the buffer, the idle consumers and the producers held back by a full buffer; all
//! messages are casts carrying the sender's `ActorRef` where Savina uses `sender()`
//! (`Data` from a producer, `ConsumerAvailable`). The manager tells the driver when every
//! producer is done, the buffer is empty and every consumer is idle; the driver then asks
//! each consumer for its sum (`call!`) and checks the total.

use std::collections::VecDeque;
use std::time::Instant;

use ractor::{call, Actor, ActorRef, RpcReplyPort};
use tokio::sync::oneshot;
use troupe_bench_contract::savina::{bndbuffer_sum, busy};
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{finished, report};
use crate::{spawn, stop_all, Res};

struct Manager;
struct Producer;
struct Consumer;

enum ManagerMsg {
    Consumers(Vec<ActorRef<ConsumerMsg>>),
    Data(u64, ActorRef<ProducerMsg>),
    ConsumerAvailable(ActorRef<ConsumerMsg>),
    ProducerDone,
}

enum ProducerMsg {
    ProduceMore,
}

enum ConsumerMsg {
    Data(u64),
    Sum(RpcReplyPort<u64>),
}

struct ManagerState {
    capacity: usize,
    buffer: VecDeque<u64>,
    idle: VecDeque<ActorRef<ConsumerMsg>>,
    consumers: usize,
    held_back: VecDeque<ActorRef<ProducerMsg>>,
    producers: usize,
    producers_done: usize,
    done: Option<oneshot::Sender<()>>,
}

impl ManagerState {
    fn try_exit(&mut self) {
        if self.producers_done == self.producers
            && self.buffer.is_empty()
            && self.idle.len() == self.consumers
        {
            if let Some(done) = self.done.take() {
                let _ = done.send(());
            }
        }
    }
}

impl Actor for Manager {
    type Msg = ManagerMsg;
    type State = ManagerState;
    type Arguments = ManagerState;

    async fn pre_start(&self, _: ActorRef<ManagerMsg>, args: ManagerState) -> Res<ManagerState> {
        Ok(args)
    }

    async fn handle(
        &self,
        _: ActorRef<ManagerMsg>,
        msg: ManagerMsg,
        st: &mut ManagerState,
    ) -> Res<()> {
        match msg {
            ManagerMsg::Consumers(all) => {
                st.consumers = all.len();
                st.idle.extend(all);
            }
            ManagerMsg::Data(item, producer) => {
                match st.idle.pop_front() {
                    Some(consumer) => consumer.cast(ConsumerMsg::Data(item))?,
                    None => st.buffer.push_back(item),
                }
                if st.buffer.len() >= st.capacity {
                    st.held_back.push_back(producer);
                } else {
                    producer.cast(ProducerMsg::ProduceMore)?;
                }
            }
            ManagerMsg::ConsumerAvailable(consumer) => match st.buffer.pop_front() {
                Some(item) => {
                    consumer.cast(ConsumerMsg::Data(item))?;
                    if let Some(producer) = st.held_back.pop_front() {
                        producer.cast(ProducerMsg::ProduceMore)?;
                    }
                }
                None => {
                    st.idle.push_back(consumer);
                    st.try_exit();
                }
            },
            ManagerMsg::ProducerDone => {
                st.producers_done += 1;
                st.try_exit();
            }
        }
        Ok(())
    }
}

struct ProducerState {
    next: u64,
    end: u64,
    cost: u64,
    manager: ActorRef<ManagerMsg>,
}

impl Actor for Producer {
    type Msg = ProducerMsg;
    type State = ProducerState;
    type Arguments = ProducerState;

    async fn pre_start(&self, _: ActorRef<ProducerMsg>, args: ProducerState) -> Res<ProducerState> {
        Ok(args)
    }

    async fn handle(
        &self,
        me: ActorRef<ProducerMsg>,
        msg: ProducerMsg,
        st: &mut ProducerState,
    ) -> Res<()> {
        let ProducerMsg::ProduceMore = msg;
        if st.next < st.end {
            let item = st.next;
            st.next += 1;
            busy(st.cost, item);
            st.manager.cast(ManagerMsg::Data(item, me))?;
        } else {
            st.manager.cast(ManagerMsg::ProducerDone)?;
        }
        Ok(())
    }
}

struct ConsumerState {
    sum: u64,
    cost: u64,
    manager: ActorRef<ManagerMsg>,
}

impl Actor for Consumer {
    type Msg = ConsumerMsg;
    type State = ConsumerState;
    type Arguments = ConsumerState;

    async fn pre_start(&self, _: ActorRef<ConsumerMsg>, args: ConsumerState) -> Res<ConsumerState> {
        Ok(args)
    }

    async fn handle(
        &self,
        me: ActorRef<ConsumerMsg>,
        msg: ConsumerMsg,
        st: &mut ConsumerState,
    ) -> Res<()> {
        match msg {
            ConsumerMsg::Data(item) => {
                busy(st.cost, item);
                st.sum += item;
                st.manager.cast(ManagerMsg::ConsumerAvailable(me))?;
            }
            ConsumerMsg::Sum(reply) => {
                let _ = reply.send(st.sum);
            }
        }
        Ok(())
    }
}

pub async fn run(rep: &Reporter, w: &Args) {
    let capacity = w.usize("buffer");
    let producers = w.usize("producers");
    let consumers = w.usize("consumers");
    let items = w.u64("items");
    let cost = w.u64("cost");
    let (done_tx, done_rx) = oneshot::channel();
    let manager = spawn(
        Manager,
        ManagerState {
            capacity,
            buffer: VecDeque::with_capacity(capacity),
            idle: VecDeque::with_capacity(consumers),
            consumers,
            held_back: VecDeque::with_capacity(producers),
            producers,
            producers_done: 0,
            done: Some(done_tx),
        },
    )
    .await;
    let mut consumer_actors = Vec::with_capacity(consumers);
    for _ in 0..consumers {
        let state = ConsumerState {
            sum: 0,
            cost,
            manager: manager.0.clone(),
        };
        consumer_actors.push(spawn(Consumer, state).await);
    }
    manager
        .0
        .cast(ManagerMsg::Consumers(
            consumer_actors.iter().map(|(c, _)| c.clone()).collect(),
        ))
        .unwrap_or_else(|_| fail("savina_bndbuffer: manager died"));
    let mut producer_actors = Vec::with_capacity(producers);
    for j in 0..producers as u64 {
        let state = ProducerState {
            next: j * items,
            end: (j + 1) * items,
            cost,
            manager: manager.0.clone(),
        };
        producer_actors.push(spawn(Producer, state).await);
    }
    let start = Instant::now();
    for (producer, _) in &producer_actors {
        producer
            .cast(ProducerMsg::ProduceMore)
            .unwrap_or_else(|_| fail("savina_bndbuffer: producer died"));
    }
    finished(done_rx, "savina_bndbuffer").await;
    let secs = seconds_since(start);
    let mut sum = 0;
    for (consumer, _) in &consumer_actors {
        sum += call!(consumer, ConsumerMsg::Sum)
            .unwrap_or_else(|e| fail(format!("savina_bndbuffer: {e}")));
    }
    let expected = bndbuffer_sum(producers as u64, items);
    if sum != expected {
        fail(format!(
            "savina_bndbuffer: consumers summed {sum}, expected {expected}"
        ));
    }
    report(rep, w, secs, &[]);
    stop_all(producer_actors).await;
    stop_all(consumer_actors).await;
    stop_all(vec![manager]).await;
}
