// savina_barber (--haircuts N, --seats S, --arrival-cost A, --haircut-cost H): the sleeping
// barber. The N customers are actors made before the measured phase. The customer factory
// (random numbers from rng(7)) sends them, customer i after busy(below(A) + 1, i), as
// `enter(customer, i)` to the waiting room, all from one handler as Savina's factory does. A
// room with S customers waiting sends the newcomer back (`full`), and the factory sends it
// again at once. The room hands the first waiting customer to the barber whenever the barber
// is asleep; the barber (rng(11)) cuts with busy(below(H) + 1, i), tells the customer
// (`served`) and asks the room for the `next`. Each customer tells the factory it is done; the
// factory tells the driver once all N are. Check: N haircuts, each customer served once; the
// returns are reported as extra `rejections`.

#include "savina.hpp"

#include <deque>

using namespace caf;

namespace savina {

namespace {

using enter_atom = atom_constant<atom("enter")>;
using full_atom = atom_constant<atom("full")>;
using cut_atom = atom_constant<atom("cut")>;
using served_atom = atom_constant<atom("served")>;

behavior customer(event_based_actor* self, uint64_t id, actor factory) {
  return {
    [](ready_atom) { return ready_atom::value; },
    [=](served_atom) { self->send(factory, served_atom::value, id); },
  };
}

struct barber_state {
  rng random{11};
};

behavior barber_actor(stateful_actor<barber_state>* self, uint64_t haircut_cost, actor room) {
  return {
    [](ready_atom) { return ready_atom::value; },
    [=](cut_atom, const actor& c, uint64_t id) {
      busy(self->state.random.below(haircut_cost) + 1, id);
      self->send(c, served_atom::value);
      self->send(room, next_atom::value);
    },
  };
}

struct room_state {
  actor barber;
  std::deque<std::pair<actor, uint64_t>> waiting;
  bool barber_asleep = true;
};

behavior waiting_room(stateful_actor<room_state>* self, uint64_t seats, actor factory) {
  return {
    [](ready_atom) { return ready_atom::value; },
    [=](init_atom, const actor& b) { self->state.barber = b; },
    [=](enter_atom, const actor& c, uint64_t id) {
      auto& s = self->state;
      if (s.waiting.size() >= seats) {
        self->send(factory, full_atom::value, c, id);
      } else if (s.barber_asleep) {
        s.barber_asleep = false;
        self->send(s.barber, cut_atom::value, c, id);
      } else {
        s.waiting.emplace_back(c, id);
      }
    },
    [=](next_atom) {
      auto& s = self->state;
      if (s.waiting.empty()) {
        s.barber_asleep = true;
        return;
      }
      auto& front = s.waiting.front();
      self->send(s.barber, cut_atom::value, front.first, front.second);
      s.waiting.pop_front();
    },
  };
}

struct factory_state {
  actor room;
  std::vector<actor> customers;
  std::vector<bool> served;
  uint64_t haircuts = 0;
  uint64_t rejections = 0;
  rng random{7};
};

behavior factory(stateful_actor<factory_state>* self, uint64_t arrival_cost, actor driver) {
  return {
    [](ready_atom) { return ready_atom::value; },
    [=](init_atom, const actor& room, const std::vector<actor>& customers) {
      auto& s = self->state;
      s.room = room;
      s.customers = customers;
      s.served.assign(customers.size(), false);
    },
    [=](go_atom) {
      auto& s = self->state;
      for (uint64_t i = 0; i < s.customers.size(); ++i) {
        busy(s.random.below(arrival_cost) + 1, i);
        self->send(s.room, enter_atom::value, s.customers[i], i);
      }
    },
    [=](full_atom, const actor& c, uint64_t id) {
      ++self->state.rejections;
      self->send(self->state.room, enter_atom::value, c, id);
    },
    [=](served_atom, uint64_t id) {
      auto& s = self->state;
      if (s.served[id])
        peer::fail("savina_barber: customer " + std::to_string(id) + " served twice");
      s.served[id] = true;
      if (++s.haircuts == s.customers.size())
        self->send(driver, done_atom::value, s.haircuts, s.rejections);
    },
  };
}

}  // namespace

void barber(actor_system& sys, const args& a) {
  uint64_t n = a.get("haircuts");
  uint64_t seats = a.get("seats");
  uint64_t arrival = a.get("arrival-cost");
  uint64_t haircut = a.get("haircut-cost");
  scoped_actor self{sys};
  auto fac = sys.spawn(factory, arrival, actor{self});
  auto room = sys.spawn(waiting_room, seats, fac);
  auto bar = sys.spawn(barber_actor, haircut, room);
  anon_send(room, init_atom::value, bar);
  std::vector<actor> customers;
  customers.reserve(n);
  for (uint64_t i = 0; i < n; ++i)
    customers.push_back(sys.spawn(customer, i, fac));
  anon_send(fac, init_atom::value, room, customers);
  await_started(self, customers);
  await_started(self, {fac, room, bar});
  auto start = peer::clk::now();
  anon_send(fac, go_atom::value);
  uint64_t haircuts = 0, rejections = 0;
  self->receive([&](done_atom, uint64_t h, uint64_t r) {
    haircuts = h;
    rejections = r;
  });
  double secs = peer::seconds_since(start);
  expect(a, "haircuts", haircuts, n);
  report(a, secs, {{"rejections", double(rejections)}});
  for (auto& x : customers)
    anon_send_exit(x, exit_reason::user_shutdown);
  anon_send_exit(bar, exit_reason::user_shutdown);
  anon_send_exit(room, exit_reason::user_shutdown);
  anon_send_exit(fac, exit_reason::user_shutdown);
}

}  // namespace savina
