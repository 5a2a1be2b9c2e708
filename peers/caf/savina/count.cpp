// savina_count (--increments N): a producer sends N `increment` messages to a counter, then
// asks it for the total with `request(..).then(..)`; the counter answers by returning its
// count. Check: total == N.

#include "savina.hpp"

using namespace caf;

namespace savina {

namespace {

using increment_atom = atom_constant<atom("increment")>;

struct counter_state {
  uint64_t count = 0;
};

behavior counter_actor(stateful_actor<counter_state>* self) {
  return {
    [](ready_atom) { return ready_atom::value; },
    [=](increment_atom) { ++self->state.count; },
    [=](get_atom) { return self->state.count; },
  };
}

behavior producer_actor(event_based_actor* self, uint64_t n, actor counter, actor sink) {
  return {
    [](ready_atom) { return ready_atom::value; },
    [=](go_atom) {
      for (uint64_t i = 0; i < n; ++i)
        self->send(counter, increment_atom::value);
      self->request(counter, infinite, get_atom::value)
        .then([=](uint64_t total) { self->send(sink, done_atom::value, total); },
              on_error("savina_count: the total"));
    },
  };
}

}  // namespace

void count(actor_system& sys, const args& a) {
  uint64_t n = a.get("increments");
  scoped_actor self{sys};
  auto counter = sys.spawn(counter_actor);
  auto producer = sys.spawn(producer_actor, n, counter, actor{self});
  await_started(self, {counter, producer});
  auto start = peer::clk::now();
  anon_send(producer, go_atom::value);
  uint64_t total = 0;
  self->receive([&](done_atom, uint64_t t) { total = t; });
  double secs = peer::seconds_since(start);
  expect(a, "total", total, n);
  report(a, secs);
  anon_send_exit(producer, exit_reason::user_shutdown);
  anon_send_exit(counter, exit_reason::user_shutdown);
}

}  // namespace savina
