//! `savina_barber` (Savina concurrency 4, the sleeping barber): a customer
//! factory (random numbers from `Rng::new(7)`) sends N customers, each after
//! `busy(below(A) + 1, i)`, to a waiting room of S seats; a full room sends
//! the customer back to the factory, which sends it again at once. The room
//! hands the first waiting customer to the barber whenever the barber is
//! asleep; the barber (`Rng::new(11)`) cuts with `busy(below(H) + 1, id)`,
//! tells the customer, and asks the room for the next. Each customer tells
//! the factory it is done.
//!
//! On Troupe: the N customers are actors created before the run; everyone
//! names a customer by its index (the barber holds the customers'
//! `ActorRef`s), so every message is an integer. The factory hands
//! (haircuts, rejections) to the waiting thread after N customers are done.
//! Check: N haircuts; the returns are reported as extra `rejections`.

use super::super::{verify, Workload};
use super::{measure, recv, sample, timed};
use crossbeam_channel::{bounded, Sender};
use std::collections::VecDeque;
use std::sync::Arc;
use troupe::{Actor, ActorRef, Context};
use troupe_bench_contract::savina::{self, busy, Rng};

pub struct Factory {
    room: ActorRef<Room>,
    rng: Rng,
    n: u64,
    arrival_cost: u64,
    done_count: u64,
    rejections: u64,
    done: Sender<(u64, u64)>,
}

pub enum FactoryMsg {
    Start,
    Returned(u32),
    Done,
}

impl Actor for Factory {
    type Msg = FactoryMsg;
    #[inline]
    fn handle(&mut self, msg: FactoryMsg, _ctx: &mut Context<'_, Self>) {
        match msg {
            FactoryMsg::Start => {
                for i in 0..self.n {
                    let cost = self.rng.below(self.arrival_cost) + 1;
                    std::hint::black_box(busy(cost, i));
                    let _ = self.room.tell(RoomMsg::Enter(i as u32));
                }
            }
            FactoryMsg::Returned(id) => {
                self.rejections += 1;
                let _ = self.room.tell(RoomMsg::Enter(id));
            }
            FactoryMsg::Done => {
                self.done_count += 1;
                if self.done_count == self.n {
                    let _ = self.done.send((self.done_count, self.rejections));
                }
            }
        }
    }
}

pub struct Room {
    seats: usize,
    waiting: VecDeque<u32>,
    barber_asleep: bool,
    barber: ActorRef<Barber>,
    factory: Option<ActorRef<Factory>>,
}

pub enum RoomMsg {
    Link(ActorRef<Factory>),
    Enter(u32),
    Next,
}

impl Actor for Room {
    type Msg = RoomMsg;
    #[inline]
    fn handle(&mut self, msg: RoomMsg, _ctx: &mut Context<'_, Self>) {
        match msg {
            RoomMsg::Enter(id) => {
                if self.waiting.len() >= self.seats {
                    if let Some(f) = &self.factory {
                        let _ = f.tell(FactoryMsg::Returned(id));
                    }
                    return;
                }
                self.waiting.push_back(id);
                if self.barber_asleep {
                    self.barber_asleep = false;
                    if let Some(c) = self.waiting.pop_front() {
                        let _ = self.barber.tell(BarberMsg::Cut(c));
                    }
                }
            }
            RoomMsg::Next => match self.waiting.pop_front() {
                Some(c) => {
                    let _ = self.barber.tell(BarberMsg::Cut(c));
                }
                None => self.barber_asleep = true,
            },
            RoomMsg::Link(f) => self.factory = Some(f),
        }
    }
}

pub struct Barber {
    rng: Rng,
    haircut_cost: u64,
    customers: Arc<[ActorRef<Customer>]>,
    room: Option<ActorRef<Room>>,
}

pub enum BarberMsg {
    Link(ActorRef<Room>, Arc<[ActorRef<Customer>]>),
    Cut(u32),
}

impl Actor for Barber {
    type Msg = BarberMsg;
    #[inline]
    fn handle(&mut self, msg: BarberMsg, _ctx: &mut Context<'_, Self>) {
        match msg {
            BarberMsg::Cut(id) => {
                let cost = self.rng.below(self.haircut_cost) + 1;
                std::hint::black_box(busy(cost, id as u64));
                let _ = self.customers[id as usize].tell(());
                if let Some(room) = &self.room {
                    let _ = room.tell(RoomMsg::Next);
                }
            }
            BarberMsg::Link(room, customers) => {
                self.room = Some(room);
                self.customers = customers;
            }
        }
    }
}

pub struct Customer {
    factory: ActorRef<Factory>,
}

impl Actor for Customer {
    type Msg = ();
    #[inline]
    fn handle(&mut self, _msg: (), ctx: &mut Context<'_, Self>) {
        let _ = self.factory.tell(FactoryMsg::Done);
        ctx.stop();
    }
}

pub const WORKLOAD: Workload = Workload {
    spec: &savina::BARBER,
    peers: true,
    run: |cfg, a| {
        let (n, seats) = (a.u64("haircuts"), a.usize("seats"));
        let (arrival, haircut) = (a.u64("arrival-cost"), a.u64("haircut-cost"));
        measure(cfg, a, |system| {
            let (tx, rx) = bounded(1);
            let barber = system.spawn(Barber {
                rng: Rng::new(11),
                haircut_cost: haircut,
                customers: Arc::new([]),
                room: None,
            });
            let room = system.spawn(Room {
                seats,
                waiting: VecDeque::with_capacity(seats),
                barber_asleep: true,
                barber: barber.clone(),
                factory: None,
            });
            let factory = system.spawn(Factory {
                room: room.clone(),
                rng: Rng::new(7),
                n,
                arrival_cost: arrival,
                done_count: 0,
                rejections: 0,
                done: tx,
            });
            let customers: Arc<[ActorRef<Customer>]> = (0..n)
                .map(|_| {
                    system.spawn(Customer {
                        factory: factory.clone(),
                    })
                })
                .collect();
            room.tell(RoomMsg::Link(factory.clone()))
                .map_err(|e| e.to_string())?;
            barber
                .tell(BarberMsg::Link(room.clone(), customers))
                .map_err(|e| e.to_string())?;
            while room.mailbox_len() > 0 || barber.mailbox_len() > 0 {
                std::thread::yield_now();
            }
            let (s, (haircuts, rejections)) = timed(
                || factory.tell(FactoryMsg::Start).map_err(|e| e.to_string()),
                || recv(&rx),
            )?;
            verify(haircuts == n, || {
                format!("savina_barber: {haircuts} haircuts, expected {n}")
            })?;
            // Break the reference cycles (room <-> factory, barber <-> room).
            let _ = barber.tell(BarberMsg::Link(room.clone(), Arc::new([])));
            Ok(sample(s).with("rejections", rejections))
        })
    },
    plot: None,
};
