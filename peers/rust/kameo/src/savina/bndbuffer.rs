//! `savina_bndbuffer` on kameo: a manager actor, P producers and C consumers, all messages
//! `tell` (as in Savina, `ProduceMore` may come much later than the item it answers, so it is
//! a message, not an ask's reply). The manager hands an item to an idle consumer or buffers it,
//! answers `ProduceMore` at once unless the buffer is full (then when an item leaves it), and
//! once every producer is done, the buffer empty and every consumer idle, tells the consumers
//! to exit; each reports its sum to the driver. (The manager only waits on producer and
//! consumer mailboxes, which hold at most two messages, so the default bounded mailboxes
//! cannot make actors wait on each other.)

use kameo::prelude::*;
use std::collections::VecDeque;
use std::time::Instant;
use tokio::sync::mpsc;
use troupe_bench_contract::savina::{bndbuffer_sum, busy};
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{gone, report, sent, started, stop_all};

#[derive(Actor)]
struct Manager {
    capacity: usize,
    producers: Vec<ActorRef<Producer>>,
    consumers: Vec<ActorRef<Consumer>>,
    idle: Vec<usize>,
    buffer: VecDeque<u64>,
    blocked: VecDeque<usize>,
    producers_done: usize,
}

#[derive(Actor)]
struct Producer {
    id: usize,
    manager: ActorRef<Manager>,
    next: u64,
    end: u64,
    cost: u64,
}

#[derive(Actor)]
struct Consumer {
    id: usize,
    manager: ActorRef<Manager>,
    cost: u64,
    sum: u64,
    sums: mpsc::UnboundedSender<u64>,
}

/// Gives the manager its producers and consumers (before the measured phase).
struct Wire {
    producers: Vec<ActorRef<Producer>>,
    consumers: Vec<ActorRef<Consumer>>,
}

/// An item from producer `from`.
struct Data {
    item: u64,
    from: usize,
}

/// Consumer `.0` is idle again.
struct Available(usize);
struct ProducerDone;
struct ProduceMore;
struct Item(u64);
struct Exit;

const WHAT: &str = "savina_bndbuffer";

impl Manager {
    async fn check_end(&mut self) {
        if self.producers_done == self.producers.len()
            && self.buffer.is_empty()
            && self.idle.len() == self.consumers.len()
        {
            for consumer in &self.consumers {
                sent(consumer.tell(Exit).await, WHAT);
            }
        }
    }
}

impl Message<Wire> for Manager {
    type Reply = ();

    async fn handle(&mut self, wire: Wire, _: &mut Context<Self, ()>) {
        self.idle = (0..wire.consumers.len()).rev().collect();
        self.producers = wire.producers;
        self.consumers = wire.consumers;
    }
}

impl Message<Data> for Manager {
    type Reply = ();

    async fn handle(&mut self, Data { item, from }: Data, _: &mut Context<Self, ()>) {
        match self.idle.pop() {
            Some(consumer) => sent(self.consumers[consumer].tell(Item(item)).await, WHAT),
            None => self.buffer.push_back(item),
        }
        if self.buffer.len() >= self.capacity {
            self.blocked.push_back(from);
        } else {
            sent(self.producers[from].tell(ProduceMore).await, WHAT);
        }
    }
}

impl Message<Available> for Manager {
    type Reply = ();

    async fn handle(&mut self, Available(consumer): Available, _: &mut Context<Self, ()>) {
        match self.buffer.pop_front() {
            Some(item) => {
                sent(self.consumers[consumer].tell(Item(item)).await, WHAT);
                if let Some(producer) = self.blocked.pop_front() {
                    sent(self.producers[producer].tell(ProduceMore).await, WHAT);
                }
            }
            None => {
                self.idle.push(consumer);
                self.check_end().await;
            }
        }
    }
}

impl Message<ProducerDone> for Manager {
    type Reply = ();

    async fn handle(&mut self, _: ProducerDone, _: &mut Context<Self, ()>) {
        self.producers_done += 1;
        self.check_end().await;
    }
}

impl Message<ProduceMore> for Producer {
    type Reply = ();

    /// The first `ProduceMore` (from the driver) starts the producer.
    async fn handle(&mut self, _: ProduceMore, ctx: &mut Context<Self, ()>) {
        if self.next == self.end {
            sent(self.manager.tell(ProducerDone).await, WHAT);
            ctx.stop();
            return;
        }
        let item = self.next;
        self.next += 1;
        busy(self.cost, item);
        let data = Data {
            item,
            from: self.id,
        };
        sent(self.manager.tell(data).await, WHAT);
    }
}

impl Message<Item> for Consumer {
    type Reply = ();

    async fn handle(&mut self, Item(item): Item, _: &mut Context<Self, ()>) {
        busy(self.cost, item);
        self.sum += item;
        sent(self.manager.tell(Available(self.id)).await, WHAT);
    }
}

impl Message<Exit> for Consumer {
    type Reply = ();

    async fn handle(&mut self, _: Exit, ctx: &mut Context<Self, ()>) {
        let _ = self.sums.send(self.sum);
        ctx.stop();
    }
}

pub async fn run(rep: &Reporter, w: &Args) {
    let capacity = w.usize("buffer");
    let producers = w.usize("producers");
    let consumers = w.usize("consumers");
    let items = w.u64("items");
    let cost = w.u64("cost");
    let manager = Manager::spawn(Manager {
        capacity,
        producers: Vec::new(),
        consumers: Vec::new(),
        idle: Vec::new(),
        buffer: VecDeque::new(),
        blocked: VecDeque::new(),
        producers_done: 0,
    });
    let producer_actors: Vec<_> = (0..producers)
        .map(|id| {
            Producer::spawn(Producer {
                id,
                manager: manager.clone(),
                next: id as u64 * items,
                end: (id as u64 + 1) * items,
                cost,
            })
        })
        .collect();
    let (sums_tx, mut sums_rx) = mpsc::unbounded_channel();
    let consumer_actors: Vec<_> = (0..consumers)
        .map(|id| {
            Consumer::spawn(Consumer {
                id,
                manager: manager.clone(),
                cost,
                sum: 0,
                sums: sums_tx.clone(),
            })
        })
        .collect();
    let wire = Wire {
        producers: producer_actors.clone(),
        consumers: consumer_actors.clone(),
    };
    sent(manager.ask(wire).await, WHAT);
    started(&producer_actors).await;
    started(&consumer_actors).await;
    let start = Instant::now();
    for producer in &producer_actors {
        sent(producer.tell(ProduceMore).await, WHAT);
    }
    let mut sum = 0;
    for _ in 0..consumers {
        sum += sums_rx
            .recv()
            .await
            .unwrap_or_else(|| fail("savina_bndbuffer: sums channel closed"));
    }
    let secs = seconds_since(start);
    let expected = bndbuffer_sum(producers as u64, items);
    if sum != expected {
        fail(format!(
            "savina_bndbuffer: consumers summed {sum}, expected {expected}"
        ));
    }
    report(rep, w, secs, &[]);
    gone(&producer_actors).await;
    gone(&consumer_actors).await;
    stop_all(&[manager]).await;
}
