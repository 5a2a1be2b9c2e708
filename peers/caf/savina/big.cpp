// savina_big (--actors W, --pings N): actor i draws its peers from rng(i + 1): it asks peer
// below(W) (itself included) with `request(peer, ping).then(..)`, and on the `pong` asks the
// next one, until N pongs came back; then it reports done to the driver. Every actor answers
// every `ping` by returning `pong` (the reply to the request), also while its own request is
// outstanding (`then` does not suspend the actor). Check: W reports, W*N pongs in all.

#include "savina.hpp"

using namespace caf;

namespace savina {

namespace {

struct big_state {
  rng random;
  uint64_t pongs = 0;
  std::vector<actor> peers;
};

void ping_next(stateful_actor<big_state>* self, uint64_t n, const actor& sink) {
  auto& s = self->state;
  const auto& peer = s.peers[s.random.below(s.peers.size())];
  self->request(peer, infinite, ping_atom::value)
    .then(
      [=](pong_atom) {
        if (++self->state.pongs == n)
          self->send(sink, done_atom::value, self->state.pongs);
        else
          ping_next(self, n, sink);
      },
      on_error("savina_big: ping"));
}

behavior big_actor(stateful_actor<big_state>* self, uint64_t index, uint64_t n, actor sink) {
  self->state.random = rng(index + 1);
  return {
    [=](init_atom, const std::vector<actor>& peers) { self->state.peers = peers; },
    [=](go_atom) { ping_next(self, n, sink); },
    [](ping_atom) { return pong_atom::value; },
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
