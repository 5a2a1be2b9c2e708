// savina_fjthrput (--messages N, --actors A): the main thread sends N messages to each of A
// actors, interleaved (message i to actor 0, 1, ..., A-1, then i+1), with `anon_send`; each
// actor reports done to the driver after its N-th. Check: every actor counted exactly N
// (each is asked for its count once the run is over).

#include "savina.hpp"

using namespace caf;

namespace savina {

namespace {

using msg_atom = atom_constant<atom("msg")>;

struct throughput_state {
  uint64_t count = 0;
};

behavior throughput_actor(stateful_actor<throughput_state>* self, uint64_t n, actor sink) {
  return {
    [](ready_atom) { return ready_atom::value; },
    [=](msg_atom) {
      if (++self->state.count == n)
        self->send(sink, done_atom::value);
    },
    [=](get_atom) { return self->state.count; },
  };
}

}  // namespace

void fjthrput(actor_system& sys, const args& a) {
  uint64_t n = a.get("messages");
  uint64_t actors = a.get("actors");
  scoped_actor self{sys};
  std::vector<actor> all;
  all.reserve(actors);
  for (uint64_t i = 0; i < actors; ++i)
    all.push_back(sys.spawn(throughput_actor, n, actor{self}));
  await_started(self, all);
  auto start = peer::clk::now();
  for (uint64_t i = 0; i < n; ++i)
    for (auto& x : all)
      anon_send(x, msg_atom::value);
  for (uint64_t i = 0; i < actors; ++i)
    self->receive([](done_atom) {});
  double secs = peer::seconds_since(start);
  for (auto& x : all)
    self->request(x, infinite, get_atom::value)
      .receive([&](uint64_t c) { expect(a, "an actor counted", c, n); },
               [](error& e) { peer::fail("savina_fjthrput: count: " + to_string(e)); });
  report(a, secs);
  for (auto& x : all)
    anon_send_exit(x, exit_reason::user_shutdown);
}

}  // namespace savina
