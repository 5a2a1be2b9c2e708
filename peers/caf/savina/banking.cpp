// savina_banking (--accounts A, --transfers T), after CAF's savina_15_banking (its
// REQUEST_THEN variant): A accounts start with 1,000,000 each. The teller draws from rng(42)
// per transfer src = below(A), dst = below(A - 1) (plus one if >= src), amount =
// below(1000) + 1, and sends `debit(dst, amount)` to account src, all T at once (a plain
// `send`, as CAF's port does: CAF 0.17 keeps an actor's pending requests in a flat map searched
// linearly, so T requests outstanding at once would make the teller quadratic). The source
// subtracts the amount, asks the destination `request(dst, credit, amount).then(..)`, and when
// the destination's `ok` comes back answers the teller `ok` through the response promise it
// took for the debit. The measured phase ends with T answers; then the teller asks each
// account for its balance. Check: T answers, balances sum to A * 1,000,000.

#include "savina.hpp"

using namespace caf;

namespace savina {

namespace {

using debit_atom = atom_constant<atom("debit")>;
using credit_atom = atom_constant<atom("credit")>;
using balance_atom = atom_constant<atom("balance")>;

struct account_state {
  int64_t balance = bank_initial;
};

behavior account(stateful_actor<account_state>* self) {
  return {
    [](ready_atom) { return ready_atom::value; },
    [=](debit_atom, const actor& dst, int64_t amount) {
      self->state.balance -= amount;
      auto rp = self->make_response_promise();
      self->request(dst, infinite, credit_atom::value, amount)
        .then([=](ok_atom) mutable { rp.deliver(ok_atom::value); },
              on_error("savina_banking: credit"));
    },
    [=](credit_atom, int64_t amount) {
      self->state.balance += amount;
      return ok_atom::value;
    },
    [=](balance_atom) { return self->state.balance; },
  };
}

struct teller_state {
  std::vector<actor> accounts;
  uint64_t replies = 0;
  uint64_t balances = 0;
  int64_t total = 0;
};

void ask_balances(stateful_actor<teller_state>* self, const actor& driver) {
  for (auto& acc : self->state.accounts)
    self->request(acc, infinite, balance_atom::value)
      .then(
        [=](int64_t b) {
          auto& s = self->state;
          s.total += b;
          if (++s.balances == s.accounts.size())
            self->send(driver, balance_atom::value, s.total);
        },
        on_error("savina_banking: balance"));
}

behavior teller(stateful_actor<teller_state>* self, std::vector<actor> accounts,
                uint64_t transfers, actor driver) {
  self->state.accounts = std::move(accounts);
  return {
    [](ready_atom) { return ready_atom::value; },
    [=](go_atom) {
      const auto& accs = self->state.accounts;
      rng random{42};
      uint64_t n = accs.size();
      for (uint64_t t = 0; t < transfers; ++t) {
        uint64_t src = random.below(n);
        uint64_t dst = random.below(n - 1);
        if (dst >= src)
          ++dst;
        int64_t amount = int64_t(random.below(1000) + 1);
        self->send(accs[src], debit_atom::value, accs[dst], amount);
      }
    },
    [=](ok_atom) {
      if (++self->state.replies == transfers) {
        self->send(driver, done_atom::value, self->state.replies);
        ask_balances(self, driver);
      }
    },
  };
}

}  // namespace

void banking(actor_system& sys, const args& a) {
  uint64_t n = a.get("accounts");
  uint64_t transfers = a.get("transfers");
  if (n < 2)
    peer::fail("savina_banking: needs at least 2 accounts");
  scoped_actor self{sys};
  std::vector<actor> accounts;
  accounts.reserve(n);
  for (uint64_t i = 0; i < n; ++i)
    accounts.push_back(sys.spawn(account));
  auto t = sys.spawn(teller, accounts, transfers, actor{self});
  await_started(self, accounts);
  await_started(self, {t});
  auto start = peer::clk::now();
  anon_send(t, go_atom::value);
  uint64_t replies = 0;
  self->receive([&](done_atom, uint64_t r) { replies = r; });
  double secs = peer::seconds_since(start);
  int64_t total = 0;
  self->receive([&](balance_atom, int64_t b) { total = b; });
  expect(a, "replies", replies, transfers);
  expect(a, "balances sum to", uint64_t(total), n * uint64_t(bank_initial));
  report(a, secs);
  anon_send_exit(t, exit_reason::user_shutdown);
  for (auto& x : accounts)
    anon_send_exit(x, exit_reason::user_shutdown);
}

}  // namespace savina
