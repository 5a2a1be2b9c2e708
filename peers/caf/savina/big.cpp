// savina_big (--actors W, --pings N), after CAF's savina_07_big: actor i draws its peers from
// rng(i + 1): it sends `ping` to peer below(W) (itself included; CAF's envelope carries the
// sender) and on the `pong` pings the next one, until N pongs came back; then it reports done
// to the driver. Every actor answers every `ping` by returning `pong` from its handler (CAF's
// answer to the sender, as in savina_pingpong), also while its own ping is out.
// Check: W reports, W*N pongs in all.

#include "savina.hpp"

using namespace caf;

namespace savina {

namespace {

struct big_state {
  rng random;
  uint64_t pongs = 0;
  std::vector<actor> peers;
};

void ping_next(stateful_actor<big_state>* self) {
  auto& s = self->state;
  self->send(s.peers[s.random.below(s.peers.size())], ping_atom::value);
}

behavior big_actor(stateful_actor<big_state>* self, uint64_t index, uint64_t n, actor sink) {
  self->state.random = rng(index + 1);
  return {
    [](ready_atom) { return ready_atom::value; },
    [=](init_atom, const std::vector<actor>& peers) { self->state.peers = peers; },
    [=](go_atom) { ping_next(self); },
    // The returned value answers whoever sent the ping.
    [](ping_atom) { return pong_atom::value; },
    [=](pong_atom) {
      if (++self->state.pongs == n)
        self->send(sink, done_atom::value, self->state.pongs);
      else
        ping_next(self);
    },
  };
}

}  // namespace

void big(actor_system& sys, const args& a) {
  uint64_t w = a.get("actors");
  uint64_t n = a.get("pings");
  scoped_actor self{sys};
  std::vector<actor> all;
  all.reserve(w);
  for (uint64_t i = 0; i < w; ++i)
    all.push_back(sys.spawn(big_actor, i, n, actor{self}));
  for (auto& x : all)
    anon_send(x, init_atom::value, all);
  await_started(self, all);
  auto start = peer::clk::now();
  for (auto& x : all)
    anon_send(x, go_atom::value);
  uint64_t pongs = 0;
  for (uint64_t i = 0; i < w; ++i)
    self->receive([&](done_atom, uint64_t p) { pongs += p; });
  double secs = peer::seconds_since(start);
  expect(a, "pongs", pongs, w * n);
  report(a, secs);
  for (auto& x : all)
    anon_send_exit(x, exit_reason::user_shutdown);
}

}  // namespace savina
