// savina_threadring (--actors N, --passes R): a ring of N actors, built back to front (each
// spawned knowing its successor, the last one told the first), passes a token carrying R;
// each hop forwards it minus one, and the actor that receives 0 reports its position to the
// driver. Check: the token stopped at position R % N, and the actors forwarded R times in
// total (each is asked for its count once the run is over).

#include "savina.hpp"

using namespace caf;

namespace savina {

namespace {

using token_atom = atom_constant<atom("token")>;

struct node_state {
  actor next;
  uint64_t forwarded = 0;
};

behavior ring_node(stateful_actor<node_state>* self, uint64_t index, actor next, actor sink) {
  self->state.next = std::move(next);
  return {
    [](ready_atom) { return ready_atom::value; },
    [=](next_atom, const actor& n) { self->state.next = n; },
    [=](token_atom, uint64_t r) {
      if (r == 0) {
        self->send(sink, done_atom::value, index);
      } else {
        ++self->state.forwarded;
        self->send(self->state.next, token_atom::value, r - 1);
      }
    },
    [=](get_atom) { return self->state.forwarded; },
  };
}

}  // namespace

void threadring(actor_system& sys, const args& a) {
  uint64_t n = a.get("actors");
  uint64_t passes = a.get("passes");
  scoped_actor self{sys};
  std::vector<actor> ring(n);
  actor next;
  for (uint64_t i = n; i-- > 0;) {
    next = sys.spawn(ring_node, i, next, actor{self});
    ring[i] = next;
  }
  anon_send(ring[n - 1], next_atom::value, ring[0]);
  await_started(self, ring);
  auto start = peer::clk::now();
  anon_send(ring[0], token_atom::value, passes);
  uint64_t last = 0;
  self->receive([&](done_atom, uint64_t index) { last = index; });
  double secs = peer::seconds_since(start);
  expect(a, "the token stopped at position", last, passes % n);
  uint64_t hops = 0;
  for (auto& x : ring)
    self->request(x, infinite, get_atom::value)
      .receive([&](uint64_t c) { hops += c; },
               [](error& e) { peer::fail("savina_threadring: count: " + to_string(e)); });
  expect(a, "hops", hops, passes);
  report(a, secs);
  for (auto& x : ring)
    anon_send_exit(x, exit_reason::user_shutdown);
}

}  // namespace savina
