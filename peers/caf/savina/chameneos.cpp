// savina_chameneos (--chameneos C, --meetings M), after CAF's savina_06_chameneos: chameneo i
// starts with color i % 3 and sends `meet(color, self)` to the mall. The mall keeps at most
// one waiting request; when a second arrives and fewer than M meetings happened, it counts a
// meeting and forwards the waiting request to the newcomer. A chameneo receiving the other's
// `meet` takes the complement color, counts a meeting, sends `change(color)` to the other and
// `meet` to the mall again; one receiving `change` takes that color, counts a meeting and
// sends `meet` again. Once M meetings happened, the mall answers every `meet` (and the one
// waiting) with `exit`; a chameneo answers `exit` with its meeting count to the mall, which
// reports the sum to the driver once all C answered. Check: the counts sum to 2M.

#include "savina.hpp"

using namespace caf;

namespace savina {

namespace {

using meet_atom = atom_constant<atom("meet")>;
using change_atom = atom_constant<atom("change")>;
using count_atom = atom_constant<atom("count")>;

struct chameneo_state {
  int32_t color = 0;
  uint64_t meetings = 0;
};

behavior chameneo(stateful_actor<chameneo_state>* self, actor mall, int32_t color) {
  self->state.color = color;
  auto meet_mall = [=] {
    self->send(mall, meet_atom::value, self->state.color, actor_cast<actor>(self));
  };
  return {
    [](ready_atom) { return ready_atom::value; },
    [=](go_atom) { meet_mall(); },
    [=](meet_atom, int32_t other, const actor& who) {
      auto& s = self->state;
      s.color = complement(s.color, other);
      ++s.meetings;
      self->send(who, change_atom::value, s.color);
      meet_mall();
    },
    [=](change_atom, int32_t c) {
      self->state.color = c;
      ++self->state.meetings;
      meet_mall();
    },
    [=](exit_atom) { self->send(mall, count_atom::value, self->state.meetings); },
  };
}

struct mall_state {
  uint64_t meetings = 0;
  actor waiting;
  int32_t waiting_color = 0;
  uint64_t exited = 0;
  uint64_t sum = 0;
};

behavior mall(stateful_actor<mall_state>* self, uint64_t chameneos, uint64_t meetings,
              actor driver) {
  return {
    [](ready_atom) { return ready_atom::value; },
    [=](meet_atom, int32_t color, const actor& who) {
      auto& s = self->state;
      if (s.meetings < meetings) {
        if (!s.waiting) {
          s.waiting = who;
          s.waiting_color = color;
          return;
        }
        ++s.meetings;
        self->send(who, meet_atom::value, s.waiting_color, s.waiting);
        destroy(s.waiting);
        return;
      }
      if (s.waiting) {
        self->send(s.waiting, exit_atom::value);
        destroy(s.waiting);
      }
      self->send(who, exit_atom::value);
    },
    [=](count_atom, uint64_t n) {
      auto& s = self->state;
      s.sum += n;
      if (++s.exited == chameneos)
        self->send(driver, done_atom::value, s.sum);
    },
  };
}

}  // namespace

void chameneos(actor_system& sys, const args& a) {
  uint64_t c = a.get("chameneos");
  uint64_t m = a.get("meetings");
  if (c < 2)
    peer::fail("savina_chameneos: needs at least 2 chameneos to meet");
  scoped_actor self{sys};
  auto m_actor = sys.spawn(mall, c, m, actor{self});
  std::vector<actor> all;
  all.reserve(c);
  for (uint64_t i = 0; i < c; ++i)
    all.push_back(sys.spawn(chameneo, m_actor, int32_t(i % 3)));
  await_started(self, all);
  await_started(self, {m_actor});
  auto start = peer::clk::now();
  for (auto& x : all)
    anon_send(x, go_atom::value);
  uint64_t sum = 0;
  self->receive([&](done_atom, uint64_t s) { sum = s; });
  double secs = peer::seconds_since(start);
  expect(a, "meeting counts sum to", sum, 2 * m);
  report(a, secs);
  for (auto& x : all)
    anon_send_exit(x, exit_reason::user_shutdown);
  anon_send_exit(m_actor, exit_reason::user_shutdown);
}

}  // namespace savina
