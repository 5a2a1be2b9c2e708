//! `savina_bndbuffer` on actix: the manager on arbiter 0, producers and consumers round robin
//! on the arbiters, all messages `do_send` (as in Savina, `ProduceMore` may come much later
//! than the item it answers, so it is a message, not an ask's reply). The manager hands an
//! item to an idle consumer or buffers it, answers `ProduceMore` at once unless the buffer is
//! full (then when an item leaves it), and once every producer is done, the buffer empty and
//! every consumer idle, tells the consumers to exit; each reports its sum to the driver.

use actix::prelude::*;
use std::collections::VecDeque;
use std::time::Instant;
use tokio::sync::mpsc;
use troupe_bench_contract::savina::{bndbuffer_sum, busy};
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{gone, lifecycle, on, ready, report, stop_all};

struct Manager {
    capacity: usize,
    producers: Vec<Addr<Producer>>,
    consumers: Vec<Addr<Consumer>>,
    idle: Vec<usize>,
    buffer: VecDeque<u64>,
    blocked: VecDeque<usize>,
    producers_done: usize,
}

struct Producer {
    id: usize,
    manager: Addr<Manager>,
    next: u64,
    end: u64,
    cost: u64,
}

struct Consumer {
    id: usize,
    manager: Addr<Manager>,
    cost: u64,
    sum: u64,
    sums: mpsc::UnboundedSender<u64>,
}

impl Actor for Manager {
    type Context = Context<Self>;
}

impl Actor for Producer {
    type Context = Context<Self>;
}

impl Actor for Consumer {
    type Context = Context<Self>;
}

lifecycle!(Manager, Producer, Consumer);

/// Gives the manager its producers and consumers (before the measured phase).
#[derive(Message)]
#[rtype(result = "()")]
struct Wire {
    producers: Vec<Addr<Producer>>,
    consumers: Vec<Addr<Consumer>>,
}

/// An item from producer `from`.
#[derive(Message)]
#[rtype(result = "()")]
struct Data {
    item: u64,
    from: usize,
}

/// Consumer `.0` is idle again.
#[derive(Message)]
#[rtype(result = "()")]
struct Available(usize);

#[derive(Message)]
#[rtype(result = "()")]
struct ProducerDone;

#[derive(Message)]
#[rtype(result = "()")]
struct ProduceMore;

#[derive(Message)]
#[rtype(result = "()")]
struct Item(u64);

#[derive(Message)]
#[rtype(result = "()")]
struct Exit;

impl Manager {
    fn check_end(&mut self) {
        if self.producers_done == self.producers.len()
            && self.buffer.is_empty()
            && self.idle.len() == self.consumers.len()
        {
            for consumer in &self.consumers {
                consumer.do_send(Exit);
            }
        }
    }
}

impl Handler<Wire> for Manager {
    type Result = ();

    fn handle(&mut self, wire: Wire, _: &mut Context<Self>) {
        self.idle = (0..wire.consumers.len()).rev().collect();
        self.producers = wire.producers;
        self.consumers = wire.consumers;
    }
}

impl Handler<Data> for Manager {
    type Result = ();

    fn handle(&mut self, Data { item, from }: Data, _: &mut Context<Self>) {
        match self.idle.pop() {
            Some(consumer) => self.consumers[consumer].do_send(Item(item)),
            None => self.buffer.push_back(item),
        }
        if self.buffer.len() >= self.capacity {
            self.blocked.push_back(from);
        } else {
            self.producers[from].do_send(ProduceMore);
        }
    }
}

impl Handler<Available> for Manager {
    type Result = ();

    fn handle(&mut self, Available(consumer): Available, _: &mut Context<Self>) {
        match self.buffer.pop_front() {
            Some(item) => {
                self.consumers[consumer].do_send(Item(item));
                if let Some(producer) = self.blocked.pop_front() {
                    self.producers[producer].do_send(ProduceMore);
                }
            }
            None => {
                self.idle.push(consumer);
                self.check_end();
            }
        }
    }
}

impl Handler<ProducerDone> for Manager {
    type Result = ();

    fn handle(&mut self, _: ProducerDone, _: &mut Context<Self>) {
        self.producers_done += 1;
        self.check_end();
    }
}

impl Handler<ProduceMore> for Producer {
    type Result = ();

    /// The first `ProduceMore` (from the driver) starts the producer.
    fn handle(&mut self, _: ProduceMore, ctx: &mut Context<Self>) {
        if self.next == self.end {
            self.manager.do_send(ProducerDone);
            ctx.stop();
            return;
        }
        let item = self.next;
        self.next += 1;
        busy(self.cost, item);
        self.manager.do_send(Data {
            item,
            from: self.id,
        });
    }
}

impl Handler<Item> for Consumer {
    type Result = ();

    fn handle(&mut self, Item(item): Item, _: &mut Context<Self>) {
        busy(self.cost, item);
        self.sum += item;
        self.manager.do_send(Available(self.id));
    }
}

impl Handler<Exit> for Consumer {
    type Result = ();

    fn handle(&mut self, _: Exit, ctx: &mut Context<Self>) {
        let _ = self.sums.send(self.sum);
        ctx.stop();
    }
}

pub async fn run(rep: &Reporter, w: &Args, arbs: &[ArbiterHandle]) {
    let capacity = w.usize("buffer");
    let producers = w.usize("producers");
    let consumers = w.usize("consumers");
    let items = w.u64("items");
    let cost = w.u64("cost");
    let manager = Manager::start_in_arbiter(&arbs[0], move |_| Manager {
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
            let manager = manager.clone();
            Producer::start_in_arbiter(on(arbs, id), move |_| Producer {
                id,
                manager,
                next: id as u64 * items,
                end: (id as u64 + 1) * items,
                cost,
            })
        })
        .collect();
    let (sums_tx, mut sums_rx) = mpsc::unbounded_channel();
    let consumer_actors: Vec<_> = (0..consumers)
        .map(|id| {
            let manager = manager.clone();
            let sums = sums_tx.clone();
            Consumer::start_in_arbiter(on(arbs, producers + id), move |_| Consumer {
                id,
                manager,
                cost,
                sum: 0,
                sums,
            })
        })
        .collect();
    let wire = Wire {
        producers: producer_actors.clone(),
        consumers: consumer_actors.clone(),
    };
    if manager.send(wire).await.is_err() {
        fail("savina_bndbuffer: the manager died");
    }
    ready(&producer_actors).await;
    ready(&consumer_actors).await;
    let start = Instant::now();
    for producer in &producer_actors {
        producer.do_send(ProduceMore);
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
