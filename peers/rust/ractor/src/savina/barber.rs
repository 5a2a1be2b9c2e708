//! `savina_barber`: Savina's Sleeping Barber. Factory, waiting room, barber and the N
//! customers are ractor actors (the customers spawned before the measured phase and handed
//! to the factory in `Start`); all messages are casts, a customer travelling as
//! `(id, ActorRef)`. The factory sends customer i to the room after `busy(below(A)+1, i)`;
//! a full room casts the customer back to the factory, which resends it at once; the room
//! hands a customer to the barber whenever it sleeps; the barber cuts with
//! `busy(below(H)+1, id)`, casts `Done` to the customer and `Next` to the room; a customer
//! tells the factory, which hands `(done, rejections)` to the driver after N.

use std::collections::VecDeque;
use std::time::Instant;

use ractor::{call, Actor, ActorRef, RpcReplyPort};
use tokio::sync::oneshot;
use troupe_bench_contract::savina::{busy, Rng};
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{finished, report};
use crate::{spawn, stop_all, Res};

struct Factory;
struct Room;
struct Barber;
struct Customer;

type CustomerRef = (u64, ActorRef<CustomerMsg>);

enum FactoryMsg {
    Start(Vec<ActorRef<CustomerMsg>>),
    Returned(CustomerRef),
    CustomerDone,
}

enum RoomMsg {
    Setup {
        barber: ActorRef<BarberMsg>,
        factory: ActorRef<FactoryMsg>,
    },
    Enter(CustomerRef),
    Next,
}

enum BarberMsg {
    Cut(CustomerRef),
    Haircuts(RpcReplyPort<u64>),
}

enum CustomerMsg {
    Done,
}

struct FactoryState {
    rng: Rng,
    arrival_cost: u64,
    haircuts: u64,
    room: ActorRef<RoomMsg>,
    done_count: u64,
    rejections: u64,
    done: Option<oneshot::Sender<(u64, u64)>>,
}

impl Actor for Factory {
    type Msg = FactoryMsg;
    type State = FactoryState;
    type Arguments = FactoryState;

    async fn pre_start(&self, _: ActorRef<FactoryMsg>, args: FactoryState) -> Res<FactoryState> {
        Ok(args)
    }

    async fn handle(
        &self,
        _: ActorRef<FactoryMsg>,
        msg: FactoryMsg,
        st: &mut FactoryState,
    ) -> Res<()> {
        match msg {
            FactoryMsg::Start(customers) => {
                for (i, customer) in customers.into_iter().enumerate() {
                    busy(st.rng.below(st.arrival_cost) + 1, i as u64);
                    st.room.cast(RoomMsg::Enter((i as u64, customer)))?;
                }
            }
            FactoryMsg::Returned(customer) => {
                st.rejections += 1;
                st.room.cast(RoomMsg::Enter(customer))?;
            }
            FactoryMsg::CustomerDone => {
                st.done_count += 1;
                if st.done_count == st.haircuts {
                    if let Some(done) = st.done.take() {
                        let _ = done.send((st.done_count, st.rejections));
                    }
                }
            }
        }
        Ok(())
    }
}

/// The barber and the factory, cast to the room before the measured phase.
struct Links {
    barber: ActorRef<BarberMsg>,
    factory: ActorRef<FactoryMsg>,
}

struct RoomState {
    seats: usize,
    waiting: VecDeque<CustomerRef>,
    links: Option<Links>,
    barber_asleep: bool,
}

impl Actor for Room {
    type Msg = RoomMsg;
    type State = RoomState;
    type Arguments = usize;

    async fn pre_start(&self, _: ActorRef<RoomMsg>, seats: usize) -> Res<RoomState> {
        Ok(RoomState {
            seats,
            waiting: VecDeque::with_capacity(seats),
            links: None,
            barber_asleep: true,
        })
    }

    async fn handle(&self, _: ActorRef<RoomMsg>, msg: RoomMsg, st: &mut RoomState) -> Res<()> {
        let msg = match msg {
            RoomMsg::Setup { barber, factory } => {
                st.links = Some(Links { barber, factory });
                return Ok(());
            }
            other => other,
        };
        let Some(links) = &st.links else {
            fail("savina_barber: the room was not set up");
        };
        match msg {
            RoomMsg::Setup { .. } => {}
            RoomMsg::Enter(customer) if st.waiting.len() >= st.seats => {
                links.factory.cast(FactoryMsg::Returned(customer))?;
            }
            RoomMsg::Enter(customer) if st.barber_asleep => {
                st.barber_asleep = false;
                links.barber.cast(BarberMsg::Cut(customer))?;
            }
            RoomMsg::Enter(customer) => st.waiting.push_back(customer),
            RoomMsg::Next => match st.waiting.pop_front() {
                Some(customer) => links.barber.cast(BarberMsg::Cut(customer))?,
                None => st.barber_asleep = true,
            },
        }
        Ok(())
    }
}

struct BarberState {
    rng: Rng,
    haircut_cost: u64,
    haircuts: u64,
    room: ActorRef<RoomMsg>,
}

impl Actor for Barber {
    type Msg = BarberMsg;
    type State = BarberState;
    type Arguments = BarberState;

    async fn pre_start(&self, _: ActorRef<BarberMsg>, args: BarberState) -> Res<BarberState> {
        Ok(args)
    }

    async fn handle(
        &self,
        _: ActorRef<BarberMsg>,
        msg: BarberMsg,
        st: &mut BarberState,
    ) -> Res<()> {
        match msg {
            BarberMsg::Cut((id, customer)) => {
                busy(st.rng.below(st.haircut_cost) + 1, id);
                st.haircuts += 1;
                customer.cast(CustomerMsg::Done)?;
                st.room.cast(RoomMsg::Next)?;
            }
            BarberMsg::Haircuts(reply) => {
                let _ = reply.send(st.haircuts);
            }
        }
        Ok(())
    }
}

impl Actor for Customer {
    type Msg = CustomerMsg;
    type State = ActorRef<FactoryMsg>;
    type Arguments = ActorRef<FactoryMsg>;

    async fn pre_start(
        &self,
        _: ActorRef<CustomerMsg>,
        factory: ActorRef<FactoryMsg>,
    ) -> Res<ActorRef<FactoryMsg>> {
        Ok(factory)
    }

    async fn handle(
        &self,
        _: ActorRef<CustomerMsg>,
        msg: CustomerMsg,
        factory: &mut ActorRef<FactoryMsg>,
    ) -> Res<()> {
        let CustomerMsg::Done = msg;
        factory.cast(FactoryMsg::CustomerDone)?;
        Ok(())
    }
}

pub async fn run(rep: &Reporter, w: &Args) {
    let haircuts = w.u64("haircuts");
    let seats = w.usize("seats");
    let arrival_cost = w.u64("arrival-cost");
    let haircut_cost = w.u64("haircut-cost");
    let (done_tx, done_rx) = oneshot::channel();
    let room = spawn(Room, seats).await;
    let barber = spawn(
        Barber,
        BarberState {
            rng: Rng::new(11),
            haircut_cost,
            haircuts: 0,
            room: room.0.clone(),
        },
    )
    .await;
    let factory = spawn(
        Factory,
        FactoryState {
            rng: Rng::new(7),
            arrival_cost,
            haircuts,
            room: room.0.clone(),
            done_count: 0,
            rejections: 0,
            done: Some(done_tx),
        },
    )
    .await;
    room.0
        .cast(RoomMsg::Setup {
            barber: barber.0.clone(),
            factory: factory.0.clone(),
        })
        .unwrap_or_else(|_| fail("savina_barber: room died"));
    let mut customers = Vec::with_capacity(haircuts as usize);
    for _ in 0..haircuts {
        customers.push(spawn(Customer, factory.0.clone()).await);
    }
    let refs = customers.iter().map(|(c, _)| c.clone()).collect();
    let start = Instant::now();
    factory
        .0
        .cast(FactoryMsg::Start(refs))
        .unwrap_or_else(|_| fail("savina_barber: factory died"));
    let (done, rejections) = finished(done_rx, "savina_barber").await;
    let secs = seconds_since(start);
    let cut = call!(barber.0, BarberMsg::Haircuts)
        .unwrap_or_else(|e| fail(format!("savina_barber: {e}")));
    if done != haircuts || cut != haircuts {
        fail(format!(
            "savina_barber: {done} customers done, {cut} haircuts, expected {haircuts}"
        ));
    }
    report(rep, w, secs, &[("rejections", rejections as f64)]);
    stop_all(customers).await;
    stop_all(vec![factory]).await;
    stop_all(vec![barber]).await;
    stop_all(vec![room]).await;
}
