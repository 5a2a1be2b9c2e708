//! `savina_bndbuffer` (Savina concurrency 2): P producers and C consumers
//! through a manager with a buffer of B items. Producer j makes item
//! `j * I + k` after `busy(K, item)`, sends it to the manager and waits for
//! `ProduceMore`. The manager hands the item to an idle consumer if there is
//! one, else buffers it, and answers `ProduceMore` at once unless the buffer
//! is full (then when an item leaves it). A consumer runs `busy(K, item)`,
//! adds the item to its sum and tells the manager it is available again.
//! Producers say when they are done; the run ends when all are done, the
//! buffer is empty and every consumer is idle.
//!
//! On Troupe: producers and consumers are named by their index (the manager
//! holds their `ActorRef`s), so every message is a couple of integers; the
//! buffer and the queues of idle consumers and waiting producers are
//! preallocated `VecDeque`s. At the end the manager asks every consumer for
//! its sum (sent to the waiting thread). Check: the sums add up to
//! `sum(0..P*I)`.

use super::super::{verify, Workload};
use super::{measure, recv, sample, timed};
use crossbeam_channel::{bounded, Sender};
use std::collections::VecDeque;
use troupe::{Actor, ActorRef, Context};
use troupe_bench_contract::savina::{self, bndbuffer_sum, busy};

pub struct Manager {
    capacity: usize,
    buffer: VecDeque<u64>,
    idle: VecDeque<u32>,
    blocked: VecDeque<u32>,
    producers: Vec<ActorRef<Producer>>,
    consumers: Vec<ActorRef<Consumer>>,
    producers_done: usize,
}

pub enum ManagerMsg {
    Link(Vec<ActorRef<Producer>>, Vec<ActorRef<Consumer>>),
    /// (item, producer)
    Data(u64, u32),
    /// (consumer)
    Available(u32),
    ProducerDone,
}

impl Manager {
    fn maybe_finish(&mut self) {
        if self.producers_done == self.producers.len()
            && self.buffer.is_empty()
            && self.idle.len() == self.consumers.len()
        {
            for c in self.consumers.drain(..) {
                let _ = c.tell(ConsumerMsg::Exit);
            }
            self.producers.clear();
        }
    }
}

impl Actor for Manager {
    type Msg = ManagerMsg;
    #[inline]
    fn handle(&mut self, msg: ManagerMsg, _ctx: &mut Context<'_, Self>) {
        match msg {
            ManagerMsg::Data(item, producer) => {
                if let Some(c) = self.idle.pop_front() {
                    let _ = self.consumers[c as usize].tell(ConsumerMsg::Item(item));
                } else {
                    self.buffer.push_back(item);
                }
                if self.buffer.len() >= self.capacity {
                    self.blocked.push_back(producer);
                } else {
                    let _ = self.producers[producer as usize].tell(ProducerMsg::ProduceMore);
                }
            }
            ManagerMsg::Available(c) => {
                if let Some(item) = self.buffer.pop_front() {
                    let _ = self.consumers[c as usize].tell(ConsumerMsg::Item(item));
                    if let Some(p) = self.blocked.pop_front() {
                        let _ = self.producers[p as usize].tell(ProducerMsg::ProduceMore);
                    }
                } else {
                    self.idle.push_back(c);
                    self.maybe_finish();
                }
            }
            ManagerMsg::ProducerDone => {
                self.producers_done += 1;
                self.maybe_finish();
            }
            ManagerMsg::Link(p, c) => {
                self.idle.extend(0..c.len() as u32);
                self.producers = p;
                self.consumers = c;
            }
        }
    }
}

pub struct Producer {
    id: u32,
    next: u64,
    end: u64,
    cost: u64,
    manager: ActorRef<Manager>,
}

pub enum ProducerMsg {
    ProduceMore,
}

impl Actor for Producer {
    type Msg = ProducerMsg;
    #[inline]
    fn handle(&mut self, _msg: ProducerMsg, _ctx: &mut Context<'_, Self>) {
        if self.next == self.end {
            return;
        }
        let item = self.next;
        std::hint::black_box(busy(self.cost, item));
        self.next += 1;
        let _ = self.manager.tell(ManagerMsg::Data(item, self.id));
        if self.next == self.end {
            let _ = self.manager.tell(ManagerMsg::ProducerDone);
        }
    }
}

pub struct Consumer {
    id: u32,
    sum: u64,
    cost: u64,
    manager: ActorRef<Manager>,
    done: Sender<u64>,
}

pub enum ConsumerMsg {
    Item(u64),
    Exit,
}

impl Actor for Consumer {
    type Msg = ConsumerMsg;
    #[inline]
    fn handle(&mut self, msg: ConsumerMsg, ctx: &mut Context<'_, Self>) {
        match msg {
            ConsumerMsg::Item(item) => {
                std::hint::black_box(busy(self.cost, item));
                self.sum += item;
                let _ = self.manager.tell(ManagerMsg::Available(self.id));
            }
            ConsumerMsg::Exit => {
                let _ = self.done.send(self.sum);
                ctx.stop();
            }
        }
    }
}

pub const WORKLOAD: Workload = Workload {
    spec: &savina::BNDBUFFER,
    peers: true,
    run: |cfg, a| {
        let (b, np, nc) = (
            a.usize("buffer"),
            a.usize("producers"),
            a.usize("consumers"),
        );
        let (items, cost) = (a.u64("items"), a.u64("cost"));
        measure(cfg, a, |system| {
            let (tx, rx) = bounded(nc);
            let manager = system.spawn(Manager {
                capacity: b,
                buffer: VecDeque::with_capacity(b + np),
                idle: VecDeque::with_capacity(nc),
                blocked: VecDeque::with_capacity(np),
                producers: Vec::new(),
                consumers: Vec::new(),
                producers_done: 0,
            });
            let producers: Vec<ActorRef<Producer>> = (0..np)
                .map(|j| {
                    system.spawn(Producer {
                        id: j as u32,
                        next: j as u64 * items,
                        end: (j as u64 + 1) * items,
                        cost,
                        manager: manager.clone(),
                    })
                })
                .collect();
            let consumers: Vec<ActorRef<Consumer>> = (0..nc)
                .map(|i| {
                    system.spawn(Consumer {
                        id: i as u32,
                        sum: 0,
                        cost,
                        manager: manager.clone(),
                        done: tx.clone(),
                    })
                })
                .collect();
            manager
                .tell(ManagerMsg::Link(producers.clone(), consumers))
                .map_err(|e| e.to_string())?;
            while manager.mailbox_len() > 0 {
                std::thread::yield_now();
            }
            let (s, sums) = timed(
                || {
                    for p in &producers {
                        p.tell(ProducerMsg::ProduceMore)
                            .map_err(|e| e.to_string())?;
                    }
                    Ok(())
                },
                || (0..nc).map(|_| recv(&rx)).collect::<Result<Vec<_>, _>>(),
            )?;
            let total: u64 = sums.iter().sum();
            let expected = bndbuffer_sum(np as u64, items);
            verify(total == expected, || {
                format!("savina_bndbuffer: consumers summed {total}, expected {expected}")
            })?;
            Ok(sample(s))
        })
    },
    plot: None,
};
