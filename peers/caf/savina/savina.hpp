// The Savina micro and concurrency workloads on CAF 0.17 (see
// crates/troupe-bench-contract/src/savina.rs, the contract: names, flags, defaults,
// protocols, random numbers, busy work, checks). One workload per file in this folder;
// main.cpp parses the command line, runs the rounds and dispatches to them.
//
// Idioms, as CAF's own Savina ports (actor-framework/benchmarks, src/caf/savina) write
// them: event-based actors given as functions returning a `behavior`, state in
// `stateful_actor<State>`, atoms as message tags, `send` to tell, a handler's return value
// as the answer to whoever sent the message, `request(..).then(..)` where the protocol
// waits for a reply (never a blocking wait on a worker), `make_response_promise` where an
// answer is given later. The main thread drives each round through a `scoped_actor`:
// creates the actors, waits until they have started (`await_started`), starts the clock,
// sends the first message and blocks in `receive` for the result (the main thread is not a
// CAF worker).
//
// Every figure is `"unit":"ms"`, `"rate"` the wall milliseconds of the measured phase.
#pragma once

#include <caf/all.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../plumbing.hpp"

namespace savina {

// ------------------------------------------------------------------ the contract's helpers

constexpr uint64_t lcg_mul = 6364136223846793005ULL;
constexpr uint64_t lcg_inc = 1442695040888963407ULL;

// The shared generator: 64-bit LCG (Knuth's MMIX constants), returns state >> 33.
struct rng {
  uint64_t state;
  explicit rng(uint64_t seed = 0) : state(seed) {}
  uint64_t next() {
    state = state * lcg_mul + lcg_inc;
    return state >> 33;
  }
  uint64_t below(uint64_t n) { return next() % n; }
};

// Savina's busy work: `iterations` steps of the generator from `seed`, each kept from being
// optimised away (the contract's `black_box`). Returns the last state.
inline uint64_t busy(uint64_t iterations, uint64_t seed) {
  uint64_t x = seed;
  for (uint64_t i = 0; i < iterations; ++i) {
    x = x * lcg_mul + lcg_inc;
    asm volatile("" : "+r"(x));
  }
  return x;
}

// Chameneos' color rule: the same color stays, two different ones give the third.
inline int32_t complement(int32_t own, int32_t other) {
  return own == other ? own : 3 - own - other;
}

constexpr uint64_t concdict_keys = 1024;
constexpr int64_t bank_initial = 1000000;

// ------------------------------------------------------------------ atoms

// CAF predefines ping_atom, pong_atom, get_atom, put_atom and ok_atom; the rest are ours.
using go_atom = caf::atom_constant<caf::atom("go")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using exit_atom = caf::atom_constant<caf::atom("exit")>;
using init_atom = caf::atom_constant<caf::atom("init")>;
using next_atom = caf::atom_constant<caf::atom("next")>;
using ready_atom = caf::atom_constant<caf::atom("ready")>;

// Every actor a round makes before its measured phase answers `ready` (a handler returning
// `ready_atom::value`); CAF runs an actor's initialization on a worker some time after `spawn`
// returns, so the driver asks each one and waits for the answers before it starts the clock.
inline void await_started(caf::scoped_actor& self, const std::vector<caf::actor>& xs) {
  for (auto& x : xs)
    self->request(x, caf::infinite, ready_atom::value)
      .receive([](ready_atom) {},
               [](caf::error& e) { peer::fail("an actor did not start: " + caf::to_string(e)); });
}

// ------------------------------------------------------------------ a run's parameters

struct args {
  std::string name;                                   // the workload, e.g. savina_count
  std::vector<std::pair<std::string, uint64_t>> values;  // flag -> value, in spec order

  uint64_t get(const std::string& flag) const {
    for (auto& kv : values)
      if (kv.first == flag)
        return kv.second;
    peer::fail(name + " declares no parameter `" + flag + "`");
  }

  // The JSON `params` object: keys are the flags in snake case.
  std::string params_json() const {
    std::string out = "{";
    for (size_t i = 0; i < values.size(); ++i) {
      std::string key = values[i].first;
      for (auto& c : key)
        if (c == '-')
          c = '_';
      out += (i ? ",\"" : "\"") + key + "\":" + std::to_string(values[i].second);
    }
    return out + "}";
  }
};

// One sample's line: the measured phase took `secs`; the rate is its milliseconds.
inline void report(const args& a, double secs,
                   const std::vector<std::pair<std::string, double>>& extras = {}) {
  peer::figure(a.name, a.params_json(), secs, secs * 1e3, "ms", extras);
}

// Fails the run unless `got == want`.
inline void expect(const args& a, const std::string& what, uint64_t got, uint64_t want) {
  if (got != want)
    peer::fail(a.name + ": " + what + " " + std::to_string(got) + ", expected "
               + std::to_string(want));
}

// The error handler of a `request(..).then(..)`: a lost or failed reply fails the run.
inline auto on_error(std::string what) {
  return [what](caf::error& e) { peer::fail(what + ": " + caf::to_string(e)); };
}

// ------------------------------------------------------------------ the workloads

// Each runs one round: creates its actors, measures, checks, prints (unless warming up) and
// stops its actors.
void pingpong(caf::actor_system& sys, const args& a);
void count(caf::actor_system& sys, const args& a);
void fjthrput(caf::actor_system& sys, const args& a);
void fjcreate(caf::actor_system& sys, const args& a);
void threadring(caf::actor_system& sys, const args& a);
void chameneos(caf::actor_system& sys, const args& a);
void big(caf::actor_system& sys, const args& a);
void concdict(caf::actor_system& sys, const args& a);
void bndbuffer(caf::actor_system& sys, const args& a);
void philosopher(caf::actor_system& sys, const args& a);
void barber(caf::actor_system& sys, const args& a);
void banking(caf::actor_system& sys, const args& a);

// peer-caf's entry for every workload named savina_*.
int run(int argc, char** argv);

}  // namespace savina
