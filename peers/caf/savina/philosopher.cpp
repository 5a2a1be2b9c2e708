// savina_philosopher (--philosophers N, --rounds M), after CAF's savina_11_philosopher:
// philosopher i asks the arbitrator `request(arbitrator, hungry, i).then(..)`; the
// arbitrator answers `eat` when forks i and (i+1) % N are both free (and takes them), else
// `denied`, and the philosopher asks again at once. After eating it sends `done(i)` (the
// forks are freed) and, until it ate M times, is hungry again; then it sends `exit(meals)`.
// The arbitrator tells the driver once all N exited. Check: N*M meals (granted and eaten);
// the denials are reported as extra `denials`.

#include "savina.hpp"

using namespace caf;

namespace savina {

namespace {

using hungry_atom = atom_constant<atom("hungry")>;
using eat_atom = atom_constant<atom("eat")>;
using denied_atom = atom_constant<atom("denied")>;

struct arbitrator_state {
  std::vector<bool> forks;
  uint64_t granted = 0;
  uint64_t denials = 0;
  uint64_t eaten = 0;
  uint64_t exited = 0;
};

behavior arbitrator(stateful_actor<arbitrator_state>* self, uint64_t n, actor driver) {
  self->state.forks.assign(n, false);
  return {
    [](ready_atom) { return ready_atom::value; },
    [=](hungry_atom, uint64_t i) -> atom_value {
      auto& s = self->state;
      auto left = i, right = (i + 1) % n;
      if (s.forks[left] || s.forks[right]) {
        ++s.denials;
        return denied_atom::value;
      }
      s.forks[left] = s.forks[right] = true;
      ++s.granted;
      return eat_atom::value;
    },
    [=](done_atom, uint64_t i) {
      auto& s = self->state;
      s.forks[i] = s.forks[(i + 1) % n] = false;
    },
    [=](exit_atom, uint64_t meals) {
      auto& s = self->state;
      s.eaten += meals;
      if (++s.exited == n)
        self->send(driver, done_atom::value, s.granted, s.eaten, s.denials);
    },
  };
}

struct philosopher_state {
  uint64_t meals = 0;
};

void get_hungry(stateful_actor<philosopher_state>* self, uint64_t i, uint64_t rounds,
                const actor& arb) {
  self->request(arb, infinite, hungry_atom::value, i)
    .then(
      [=](atom_value answer) {
        if (answer != eat_atom::value) {
          get_hungry(self, i, rounds, arb);
          return;
        }
        self->send(arb, done_atom::value, i);
        if (++self->state.meals == rounds)
          self->send(arb, exit_atom::value, self->state.meals);
        else
          get_hungry(self, i, rounds, arb);
      },
      on_error("savina_philosopher: hungry"));
}

behavior philosopher_actor(stateful_actor<philosopher_state>* self, uint64_t i,
                           uint64_t rounds, actor arb) {
  return {
    [](ready_atom) { return ready_atom::value; },
    [=](go_atom) { get_hungry(self, i, rounds, arb); },
  };
}

}  // namespace

void philosopher(actor_system& sys, const args& a) {
  uint64_t n = a.get("philosophers");
  uint64_t m = a.get("rounds");
  scoped_actor self{sys};
  auto arb = sys.spawn(arbitrator, n, actor{self});
  std::vector<actor> all;
  for (uint64_t i = 0; i < n; ++i)
    all.push_back(sys.spawn(philosopher_actor, i, m, arb));
  await_started(self, all);
  await_started(self, {arb});
  auto start = peer::clk::now();
  for (auto& x : all)
    anon_send(x, go_atom::value);
  uint64_t granted = 0, eaten = 0, denials = 0;
  self->receive([&](done_atom, uint64_t g, uint64_t e, uint64_t d) {
    granted = g;
    eaten = e;
    denials = d;
  });
  double secs = peer::seconds_since(start);
  expect(a, "meals granted", granted, n * m);
  expect(a, "meals eaten", eaten, n * m);
  report(a, secs, {{"denials", double(denials)}});
  for (auto& x : all)
    anon_send_exit(x, exit_reason::user_shutdown);
  anon_send_exit(arb, exit_reason::user_shutdown);
}

}  // namespace savina
