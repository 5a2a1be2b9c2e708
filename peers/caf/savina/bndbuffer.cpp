// savina_bndbuffer (--buffer B, --producers P, --consumers C, --items I, --cost K), after
// CAF's savina_10_bndbuffer: a manager with a buffer of at most B items. Producer j makes
// item j*I + k (k = 0..I) after busy(K, item), sends `data(item, self)` to the manager and
// waits for `produce` before the next (after its last item's `produce` it says `done`). The
// manager hands an item to an idle consumer if there is one, else buffers it; it answers
// `produce` at once unless the buffer is full, else parks the producer until an item leaves
// the buffer. A consumer runs busy(K, item), adds the item to its sum and sends
// `available(self)` to the manager, which gives it a buffered item if any. The run ends when
// all producers are done, the buffer is empty and every consumer idle: the manager tells the
// driver. Check: the consumers' sums (asked once the run is over) add up to sum(0..P*I).

#include "savina.hpp"

#include <deque>

using namespace caf;

namespace savina {

namespace {

using data_atom = atom_constant<atom("data")>;
using produce_atom = atom_constant<atom("produce")>;
using available_atom = atom_constant<atom("available")>;

struct producer_state {
  uint64_t made = 0;
};

behavior producer(stateful_actor<producer_state>* self, uint64_t j, uint64_t items,
                  uint64_t cost, actor manager) {
  auto produce = [=] {
    uint64_t item = j * items + self->state.made++;
    busy(cost, item);
    self->send(manager, data_atom::value, item, actor_cast<actor>(self));
  };
  return {
    [](ready_atom) { return ready_atom::value; },
    [=](go_atom) { produce(); },
    [=](produce_atom) {
      if (self->state.made == items)
        self->send(manager, done_atom::value);
      else
        produce();
    },
  };
}

struct consumer_state {
  uint64_t sum = 0;
};

behavior consumer(stateful_actor<consumer_state>* self, uint64_t cost, actor manager) {
  return {
    [](ready_atom) { return ready_atom::value; },
    [=](data_atom, uint64_t item) {
      busy(cost, item);
      self->state.sum += item;
      self->send(manager, available_atom::value, actor_cast<actor>(self));
    },
    [=](get_atom) { return self->state.sum; },
  };
}

struct manager_state {
  std::deque<uint64_t> buffer;
  std::deque<actor> idle;     // consumers waiting for an item
  std::deque<actor> parked;   // producers waiting for `produce`
  uint64_t producers_done = 0;
  bool finished = false;
};

behavior manager(stateful_actor<manager_state>* self, uint64_t capacity, uint64_t producers,
                 uint64_t consumers, actor driver) {
  auto try_finish = [=] {
    auto& s = self->state;
    if (!s.finished && s.producers_done == producers && s.buffer.empty()
        && s.idle.size() == consumers) {
      s.finished = true;
      self->send(driver, done_atom::value);
    }
  };
  return {
    [](ready_atom) { return ready_atom::value; },
    [=](init_atom, const std::vector<actor>& cs) {
      self->state.idle.assign(cs.begin(), cs.end());
    },
    [=](data_atom, uint64_t item, const actor& from) {
      auto& s = self->state;
      if (!s.idle.empty()) {
        self->send(s.idle.front(), data_atom::value, item);
        s.idle.pop_front();
      } else {
        s.buffer.push_back(item);
      }
      if (s.buffer.size() >= capacity)
        s.parked.push_back(from);
      else
        self->send(from, produce_atom::value);
    },
    [=](available_atom, const actor& from) {
      auto& s = self->state;
      if (s.buffer.empty()) {
        s.idle.push_back(from);
        try_finish();
        return;
      }
      self->send(from, data_atom::value, s.buffer.front());
      s.buffer.pop_front();
      if (!s.parked.empty()) {
        self->send(s.parked.front(), produce_atom::value);
        s.parked.pop_front();
      }
    },
    [=](done_atom) {
      ++self->state.producers_done;
      try_finish();
    },
  };
}

}  // namespace

void bndbuffer(actor_system& sys, const args& a) {
  uint64_t b = a.get("buffer");
  uint64_t p = a.get("producers");
  uint64_t c = a.get("consumers");
  uint64_t items = a.get("items");
  uint64_t cost = a.get("cost");
  scoped_actor self{sys};
  auto mgr = sys.spawn(manager, b, p, c, actor{self});
  std::vector<actor> consumers;
  for (uint64_t i = 0; i < c; ++i)
    consumers.push_back(sys.spawn(consumer, cost, mgr));
  anon_send(mgr, init_atom::value, consumers);
  std::vector<actor> producers;
  for (uint64_t j = 0; j < p; ++j)
    producers.push_back(sys.spawn(producer, j, items, cost, mgr));
  await_started(self, producers);
  await_started(self, consumers);
  await_started(self, {mgr});
  auto start = peer::clk::now();
  for (auto& x : producers)
    anon_send(x, go_atom::value);
  self->receive([](done_atom) {});
  double secs = peer::seconds_since(start);
  uint64_t sum = 0;
  for (auto& x : consumers)
    self->request(x, infinite, get_atom::value)
      .receive([&](uint64_t s) { sum += s; },
               [](error& e) { peer::fail("savina_bndbuffer: sum: " + to_string(e)); });
  uint64_t n = p * items;
  expect(a, "the consumers' sums add up to", sum, n * (n - 1) / 2);
  report(a, secs);
  for (auto& x : producers)
    anon_send_exit(x, exit_reason::user_shutdown);
  for (auto& x : consumers)
    anon_send_exit(x, exit_reason::user_shutdown);
  anon_send_exit(mgr, exit_reason::user_shutdown);
}

}  // namespace savina
