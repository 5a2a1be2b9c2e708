//! `savina_barber` on actix: the customer factory on arbiter 0, the barber and the waiting
//! room on arbiter 1 (modulo `--threads`: the barber asks the room for the next customer after
//! every haircut, the chattiest pair, so they share a thread, and the two busy actors, factory
//! and barber, get a thread each), and N customer actors round robin, all messages `do_send`. The factory sends one customer per `ctx.notify(Arrive)` (after its
//! busy work), so customers the full room sends back are handled between arrivals and sent
//! again at once. The room hands the first waiting customer to a sleeping barber; the barber
//! cuts, tells the customer, and tells the room it is ready for the next; each customer tells
//! the factory it is done and stops.

use actix::prelude::*;
use std::collections::VecDeque;
use std::time::Instant;
use tokio::sync::oneshot;
use troupe_bench_contract::savina::{busy, Rng};
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{gone, lifecycle, on, ready, report, stop_all};

/// A customer as it travels between factory, room and barber.
struct Visit {
    id: u64,
    customer: Addr<Customer>,
}

struct Factory {
    rng: Rng,
    arrival_cost: u64,
    room: Addr<Room>,
    customers: Vec<Addr<Customer>>,
    next: usize,
    served: usize,
    rejections: u64,
    done: Option<oneshot::Sender<(usize, u64)>>,
}

struct Room {
    seats: usize,
    waiting: VecDeque<Visit>,
    barber_asleep: bool,
    barber: Option<Addr<Barber>>,
    factory: Option<Addr<Factory>>,
}

struct Barber {
    rng: Rng,
    haircut_cost: u64,
    room: Addr<Room>,
}

struct Customer {
    factory: Addr<Factory>,
}

impl Actor for Factory {
    type Context = Context<Self>;
}

impl Actor for Room {
    type Context = Context<Self>;
}

impl Actor for Barber {
    type Context = Context<Self>;
}

impl Actor for Customer {
    type Context = Context<Self>;
}

lifecycle!(Factory, Room, Barber, Customer);

#[derive(Message)]
#[rtype(result = "()")]
struct Wire {
    barber: Addr<Barber>,
    factory: Addr<Factory>,
}

#[derive(Message)]
#[rtype(result = "()")]
struct Customers(Vec<Addr<Customer>>);

/// The factory's next arrival, sent to itself.
#[derive(Message)]
#[rtype(result = "()")]
struct Arrive;

#[derive(Message)]
#[rtype(result = "()")]
struct Enter(Visit);

/// The room was full.
#[derive(Message)]
#[rtype(result = "()")]
struct Returned(Visit);

#[derive(Message)]
#[rtype(result = "()")]
struct Cut(Visit);

/// The barber is ready for the next customer.
#[derive(Message)]
#[rtype(result = "()")]
struct Next;

/// The haircut is done (barber to customer).
#[derive(Message)]
#[rtype(result = "()")]
struct Served;

/// A customer leaves (customer to factory).
#[derive(Message)]
#[rtype(result = "()")]
struct Left;

impl Handler<Customers> for Factory {
    type Result = ();

    fn handle(&mut self, Customers(customers): Customers, _: &mut Context<Self>) {
        self.customers = customers;
    }
}

impl Handler<Arrive> for Factory {
    type Result = ();

    fn handle(&mut self, _: Arrive, ctx: &mut Context<Self>) {
        let id = self.next as u64;
        busy(self.rng.below(self.arrival_cost) + 1, id);
        let customer = self.customers[self.next].clone();
        self.room.do_send(Enter(Visit { id, customer }));
        self.next += 1;
        if self.next < self.customers.len() {
            ctx.notify(Arrive);
        }
    }
}

impl Handler<Returned> for Factory {
    type Result = ();

    fn handle(&mut self, Returned(visit): Returned, _: &mut Context<Self>) {
        self.rejections += 1;
        self.room.do_send(Enter(visit));
    }
}

impl Handler<Left> for Factory {
    type Result = ();

    fn handle(&mut self, _: Left, _: &mut Context<Self>) {
        self.served += 1;
        if self.served == self.customers.len() {
            if let Some(done) = self.done.take() {
                let _ = done.send((self.served, self.rejections));
            }
        }
    }
}

impl Handler<Wire> for Room {
    type Result = ();

    fn handle(&mut self, wire: Wire, _: &mut Context<Self>) {
        self.barber = Some(wire.barber);
        self.factory = Some(wire.factory);
    }
}

impl Handler<Enter> for Room {
    type Result = ();

    fn handle(&mut self, Enter(visit): Enter, _: &mut Context<Self>) {
        let (Some(barber), Some(factory)) = (&self.barber, &self.factory) else {
            fail("savina_barber: the room was not wired");
        };
        if self.barber_asleep {
            self.barber_asleep = false;
            barber.do_send(Cut(visit));
        } else if self.waiting.len() >= self.seats {
            factory.do_send(Returned(visit));
        } else {
            self.waiting.push_back(visit);
        }
    }
}

impl Handler<Next> for Room {
    type Result = ();

    fn handle(&mut self, _: Next, _: &mut Context<Self>) {
        match (self.waiting.pop_front(), &self.barber) {
            (Some(visit), Some(barber)) => barber.do_send(Cut(visit)),
            _ => self.barber_asleep = true,
        }
    }
}

impl Handler<Cut> for Barber {
    type Result = ();

    fn handle(&mut self, Cut(visit): Cut, _: &mut Context<Self>) {
        busy(self.rng.below(self.haircut_cost) + 1, visit.id);
        visit.customer.do_send(Served);
        self.room.do_send(Next);
    }
}

impl Handler<Served> for Customer {
    type Result = ();

    fn handle(&mut self, _: Served, ctx: &mut Context<Self>) {
        self.factory.do_send(Left);
        ctx.stop();
    }
}

pub async fn run(rep: &Reporter, w: &Args, arbs: &[ArbiterHandle]) {
    let haircuts = w.usize("haircuts");
    let seats = w.usize("seats");
    let arrival_cost = w.u64("arrival-cost");
    let haircut_cost = w.u64("haircut-cost");
    let room = Room::start_in_arbiter(on(arbs, 1), move |_| Room {
        seats,
        waiting: VecDeque::new(),
        barber_asleep: true,
        barber: None,
        factory: None,
    });
    let barber_room = room.clone();
    let barber = Barber::start_in_arbiter(on(arbs, 1), move |_| Barber {
        rng: Rng::new(11),
        haircut_cost,
        room: barber_room,
    });
    let (done_tx, done_rx) = oneshot::channel();
    let factory_room = room.clone();
    let factory = Factory::start_in_arbiter(on(arbs, 0), move |_| Factory {
        rng: Rng::new(7),
        arrival_cost,
        room: factory_room,
        customers: Vec::new(),
        next: 0,
        served: 0,
        rejections: 0,
        done: Some(done_tx),
    });
    let customers: Vec<_> = (0..haircuts)
        .map(|i| {
            let factory = factory.clone();
            Customer::start_in_arbiter(on(arbs, i), move |_| Customer { factory })
        })
        .collect();
    let wired = room.send(Wire {
        barber: barber.clone(),
        factory: factory.clone(),
    });
    let listed = factory.send(Customers(customers.clone()));
    if wired.await.is_err() || listed.await.is_err() {
        fail("savina_barber: the room or the factory died");
    }
    ready(std::slice::from_ref(&barber)).await;
    ready(&customers).await;
    let start = Instant::now();
    factory.do_send(Arrive);
    let (served, rejections) = done_rx
        .await
        .unwrap_or_else(|_| fail("savina_barber: the factory never finished"));
    let secs = seconds_since(start);
    if served != haircuts {
        fail(format!(
            "savina_barber: {served} haircuts, expected {haircuts}"
        ));
    }
    report(rep, w, secs, &[("rejections", rejections as f64)]);
    gone(&customers).await;
    stop_all(&[factory]).await;
    stop_all(&[barber]).await;
    stop_all(&[room]).await;
}
