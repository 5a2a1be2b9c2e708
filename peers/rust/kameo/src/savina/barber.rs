//! `savina_barber` on kameo: a customer factory, a waiting room, a barber and N customer
//! actors, all messages `tell`. The factory sends one customer per `Arrive` message it tells
//! itself (after its busy work), so customers the full room sends back are handled between
//! arrivals and sent again at once. The room hands the first waiting customer to a sleeping
//! barber; the barber cuts, tells the customer, and tells the room it is ready for the next;
//! each customer tells the factory it is done and stops. Factory and room send to each other
//! (and the factory to itself), so with bounded mailboxes they could wait on each other's full
//! mailbox: every actor here gets `mailbox::unbounded()`.

use kameo::mailbox;
use kameo::prelude::*;
use std::collections::VecDeque;
use std::time::Instant;
use tokio::sync::oneshot;
use troupe_bench_contract::savina::{busy, Rng};
use troupe_bench_contract::{fail, seconds_since, Args, Reporter};

use super::{gone, report, sent, started, stop_all};

/// A customer as it travels between factory, room and barber.
struct Visit {
    id: u64,
    customer: ActorRef<Customer>,
}

#[derive(Actor)]
struct Factory {
    rng: Rng,
    arrival_cost: u64,
    room: ActorRef<Room>,
    customers: Vec<ActorRef<Customer>>,
    next: usize,
    served: usize,
    rejections: u64,
    done: Option<oneshot::Sender<(usize, u64)>>,
}

#[derive(Actor)]
struct Room {
    seats: usize,
    waiting: VecDeque<Visit>,
    barber_asleep: bool,
    barber: Option<ActorRef<Barber>>,
    factory: Option<ActorRef<Factory>>,
}

#[derive(Actor)]
struct Barber {
    rng: Rng,
    haircut_cost: u64,
    room: ActorRef<Room>,
}

#[derive(Actor)]
struct Customer {
    factory: ActorRef<Factory>,
}

struct Wire {
    barber: ActorRef<Barber>,
    factory: ActorRef<Factory>,
}

struct Customers(Vec<ActorRef<Customer>>);
/// The factory's next arrival, sent to itself.
struct Arrive;
struct Enter(Visit);
/// The room was full.
struct Returned(Visit);
struct Cut(Visit);
/// The barber is ready for the next customer.
struct Next;
/// The haircut is done (barber to customer).
struct Served;
/// A customer leaves (customer to factory).
struct Left;

const WHAT: &str = "savina_barber";

impl Message<Customers> for Factory {
    type Reply = ();

    async fn handle(&mut self, Customers(customers): Customers, _: &mut Context<Self, ()>) {
        self.customers = customers;
    }
}

impl Message<Arrive> for Factory {
    type Reply = ();

    async fn handle(&mut self, _: Arrive, ctx: &mut Context<Self, ()>) {
        let id = self.next as u64;
        busy(self.rng.below(self.arrival_cost) + 1, id);
        let customer = self.customers[self.next].clone();
        sent(self.room.tell(Enter(Visit { id, customer })).await, WHAT);
        self.next += 1;
        if self.next < self.customers.len() {
            sent(ctx.actor_ref().tell(Arrive).await, WHAT);
        }
    }
}

impl Message<Returned> for Factory {
    type Reply = ();

    async fn handle(&mut self, Returned(visit): Returned, _: &mut Context<Self, ()>) {
        self.rejections += 1;
        sent(self.room.tell(Enter(visit)).await, WHAT);
    }
}

impl Message<Left> for Factory {
    type Reply = ();

    async fn handle(&mut self, _: Left, _: &mut Context<Self, ()>) {
        self.served += 1;
        if self.served == self.customers.len() {
            if let Some(done) = self.done.take() {
                let _ = done.send((self.served, self.rejections));
            }
        }
    }
}

impl Message<Wire> for Room {
    type Reply = ();

    async fn handle(&mut self, wire: Wire, _: &mut Context<Self, ()>) {
        self.barber = Some(wire.barber);
        self.factory = Some(wire.factory);
    }
}

impl Message<Enter> for Room {
    type Reply = ();

    async fn handle(&mut self, Enter(visit): Enter, _: &mut Context<Self, ()>) {
        let (Some(barber), Some(factory)) = (&self.barber, &self.factory) else {
            fail("savina_barber: the room was not wired");
        };
        if self.barber_asleep {
            self.barber_asleep = false;
            sent(barber.tell(Cut(visit)).await, WHAT);
        } else if self.waiting.len() >= self.seats {
            sent(factory.tell(Returned(visit)).await, WHAT);
        } else {
            self.waiting.push_back(visit);
        }
    }
}

impl Message<Next> for Room {
    type Reply = ();

    async fn handle(&mut self, _: Next, _: &mut Context<Self, ()>) {
        match (self.waiting.pop_front(), &self.barber) {
            (Some(visit), Some(barber)) => sent(barber.tell(Cut(visit)).await, WHAT),
            _ => self.barber_asleep = true,
        }
    }
}

impl Message<Cut> for Barber {
    type Reply = ();

    async fn handle(&mut self, Cut(visit): Cut, _: &mut Context<Self, ()>) {
        busy(self.rng.below(self.haircut_cost) + 1, visit.id);
        sent(visit.customer.tell(Served).await, WHAT);
        sent(self.room.tell(Next).await, WHAT);
    }
}

impl Message<Served> for Customer {
    type Reply = ();

    async fn handle(&mut self, _: Served, ctx: &mut Context<Self, ()>) {
        sent(self.factory.tell(Left).await, WHAT);
        ctx.stop();
    }
}

pub async fn run(rep: &Reporter, w: &Args) {
    let haircuts = w.usize("haircuts");
    let seats = w.usize("seats");
    let arrival_cost = w.u64("arrival-cost");
    let haircut_cost = w.u64("haircut-cost");
    let room = Room::spawn_with_mailbox(
        Room {
            seats,
            waiting: VecDeque::new(),
            barber_asleep: true,
            barber: None,
            factory: None,
        },
        mailbox::unbounded(),
    );
    let barber = Barber::spawn_with_mailbox(
        Barber {
            rng: Rng::new(11),
            haircut_cost,
            room: room.clone(),
        },
        mailbox::unbounded(),
    );
    let (done_tx, done_rx) = oneshot::channel();
    let factory = Factory::spawn_with_mailbox(
        Factory {
            rng: Rng::new(7),
            arrival_cost,
            room: room.clone(),
            customers: Vec::new(),
            next: 0,
            served: 0,
            rejections: 0,
            done: Some(done_tx),
        },
        mailbox::unbounded(),
    );
    let customers: Vec<_> = (0..haircuts)
        .map(|_| {
            let customer = Customer {
                factory: factory.clone(),
            };
            Customer::spawn_with_mailbox(customer, mailbox::unbounded())
        })
        .collect();
    let wire = Wire {
        barber: barber.clone(),
        factory: factory.clone(),
    };
    sent(room.ask(wire).await, WHAT);
    sent(factory.ask(Customers(customers.clone())).await, WHAT);
    started(std::slice::from_ref(&barber)).await;
    started(&customers).await;
    let start = Instant::now();
    sent(factory.tell(Arrive).await, WHAT);
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
