// savina_concdict (--workers W, --requests M, --write-percent P): a dictionary actor holds
// an unordered_map prefilled with keys 0..1024 (value = key). Worker i draws from
// rng(i + 1): per request key = below(1024), then a write (`put key -> key`, answered `ok`)
// when below(100) < P, else a read (`get key`, answered with the value); each is a
// `request(..).then(..)` and the next request goes out from the reply's handler. Each worker
// reports its reply count to the driver. Check: W*M replies, every read returned its key.

#include "savina.hpp"

#include <unordered_map>

using namespace caf;

namespace savina {

namespace {

struct dict_state {
  std::unordered_map<uint64_t, uint64_t> map;
};

behavior dictionary(stateful_actor<dict_state>* self) {
  for (uint64_t k = 0; k < concdict_keys; ++k)
    self->state.map.emplace(k, k);
  return {
    [](ready_atom) { return ready_atom::value; },
    [=](put_atom, uint64_t key, uint64_t value) {
      self->state.map[key] = value;
      return ok_atom::value;
    },
    [=](get_atom, uint64_t key) -> uint64_t {
      auto it = self->state.map.find(key);
      return it == self->state.map.end() ? ~uint64_t{0} : it->second;
    },
  };
}

struct worker_state {
  rng random;
  uint64_t replies = 0;
};

void next_request(stateful_actor<worker_state>* self, uint64_t m, uint64_t p, const actor& dict,
                  const actor& sink) {
  auto& s = self->state;
  if (s.replies == m) {
    self->send(sink, done_atom::value, s.replies);
    return;
  }
  uint64_t key = s.random.below(concdict_keys);
  if (s.random.below(100) < p) {
    self->request(dict, infinite, put_atom::value, key, key)
      .then(
        [=](ok_atom) {
          ++self->state.replies;
          next_request(self, m, p, dict, sink);
        },
        on_error("savina_concdict: write"));
  } else {
    self->request(dict, infinite, get_atom::value, key)
      .then(
        [=](uint64_t value) {
          if (value != key)
            peer::fail("savina_concdict: read of " + std::to_string(key) + " returned "
                       + std::to_string(value));
          ++self->state.replies;
          next_request(self, m, p, dict, sink);
        },
        on_error("savina_concdict: read"));
  }
}

behavior worker(stateful_actor<worker_state>* self, uint64_t index, uint64_t m, uint64_t p,
                actor dict, actor sink) {
  self->state.random = rng(index + 1);
  return {
    [](ready_atom) { return ready_atom::value; },
    [=](go_atom) { next_request(self, m, p, dict, sink); },
  };
}

}  // namespace

void concdict(actor_system& sys, const args& a) {
  uint64_t w = a.get("workers");
  uint64_t m = a.get("requests");
  uint64_t p = a.get("write-percent");
  scoped_actor self{sys};
  auto dict = sys.spawn(dictionary);
  std::vector<actor> workers;
  workers.reserve(w);
  for (uint64_t i = 0; i < w; ++i)
    workers.push_back(sys.spawn(worker, i, m, p, dict, actor{self}));
  await_started(self, workers);
  await_started(self, {dict});
  auto start = peer::clk::now();
  for (auto& x : workers)
    anon_send(x, go_atom::value);
  uint64_t replies = 0;
  for (uint64_t i = 0; i < w; ++i)
    self->receive([&](done_atom, uint64_t r) { replies += r; });
  double secs = peer::seconds_since(start);
  expect(a, "replies", replies, w * m);
  report(a, secs);
  for (auto& x : workers)
    anon_send_exit(x, exit_reason::user_shutdown);
  anon_send_exit(dict, exit_reason::user_shutdown);
}

}  // namespace savina
