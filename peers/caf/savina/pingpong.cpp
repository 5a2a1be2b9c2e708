// savina_pingpong (--pings N): Ping sends `ping` to Pong, Pong answers `pong` by returning it
// from its handler (CAF's answer to whoever sent the message); after N pongs Ping reports
// done to the driver. Check: N pongs.

#include "savina.hpp"

using namespace caf;

namespace savina {

namespace {

behavior pong_actor(event_based_actor*) {
  return {
    [](ready_atom) { return ready_atom::value; },
    [](ping_atom) { return pong_atom::value; },
  };
}

struct ping_state {
  uint64_t pongs = 0;
};

behavior ping_actor(stateful_actor<ping_state>* self, uint64_t n, actor pong, actor sink) {
  return {
    [](ready_atom) { return ready_atom::value; },
    [=](go_atom) { self->send(pong, ping_atom::value); },
    [=](pong_atom) {
      if (++self->state.pongs == n)
        self->send(sink, done_atom::value, self->state.pongs);
      else
        self->send(pong, ping_atom::value);
    },
  };
}

}  // namespace

void pingpong(actor_system& sys, const args& a) {
  uint64_t n = a.get("pings");
  scoped_actor self{sys};
  auto po = sys.spawn(pong_actor);
  auto pi = sys.spawn(ping_actor, n, po, actor{self});
  await_started(self, {po, pi});
  auto start = peer::clk::now();
  anon_send(pi, go_atom::value);
  uint64_t pongs = 0;
  self->receive([&](done_atom, uint64_t k) { pongs = k; });
  double secs = peer::seconds_since(start);
  expect(a, "pongs", pongs, n);
  report(a, secs);
  anon_send_exit(pi, exit_reason::user_shutdown);
  anon_send_exit(po, exit_reason::user_shutdown);
}

}  // namespace savina
