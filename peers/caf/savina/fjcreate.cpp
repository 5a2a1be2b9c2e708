// savina_fjcreate (--actors N): N times, the main thread spawns an actor and sends it one
// message; the actor reports to a sink actor when it handles it and stops (`quit`). The sink
// tells the driver once it has N reports. Creation is inside the measured phase.
// Check: N reports.

#include "savina.hpp"

using namespace caf;

namespace savina {

namespace {

using msg_atom = atom_constant<atom("msg")>;

behavior forked_actor(event_based_actor* self, actor sink) {
  return {
    [=](msg_atom) {
      self->send(sink, done_atom::value);
      self->quit();
    },
  };
}

struct sink_state {
  uint64_t reports = 0;
};

behavior sink_actor(stateful_actor<sink_state>* self, uint64_t n, actor driver) {
  return {
    [](ready_atom) { return ready_atom::value; },
    [=](done_atom) {
      if (++self->state.reports == n)
        self->send(driver, done_atom::value, self->state.reports);
    },
  };
}

}  // namespace

void fjcreate(actor_system& sys, const args& a) {
  uint64_t n = a.get("actors");
  scoped_actor self{sys};
  auto sink = sys.spawn(sink_actor, n, actor{self});
  await_started(self, {sink});
  auto start = peer::clk::now();
  for (uint64_t i = 0; i < n; ++i)
    anon_send(sys.spawn(forked_actor, sink), msg_atom::value);
  uint64_t reports = 0;
  self->receive([&](done_atom, uint64_t r) { reports = r; });
  double secs = peer::seconds_since(start);
  expect(a, "reports", reports, n);
  report(a, secs);
  anon_send_exit(sink, exit_reason::user_shutdown);
}

}  // namespace savina
