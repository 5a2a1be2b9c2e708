// The Savina workloads' command line and rounds, as troupe-bench-contract's Cli reads them:
//   peer-caf savina_<name> [--threads N] [--samples K] [--warmup W] [params]
// Params are the contract's (savina.rs): same flags, same defaults, positive integers
// (`_` separators allowed) within their bounds; `--flag value` and `--flag=value`, the last
// one given wins; an unknown workload or flag, or a bad value, exits 2.

#include "savina.hpp"

#include <iostream>
#include <limits>

using namespace caf;

namespace savina {

namespace {

struct param {
  const char* flag;
  const char* dflt;
  uint64_t max;
};

constexpr uint64_t unbounded = std::numeric_limits<uint64_t>::max();

struct workload {
  const char* name;
  void (*run)(actor_system&, const args&);
  std::vector<param> params;
};

const std::vector<workload>& workloads() {
  static const std::vector<workload> all = {
    {"savina_pingpong", pingpong, {{"pings", "40000", unbounded}}},
    {"savina_count", count, {{"increments", "1000000", unbounded}}},
    {"savina_fjthrput", fjthrput,
     {{"messages", "10000", unbounded}, {"actors", "60", unbounded}}},
    {"savina_fjcreate", fjcreate, {{"actors", "40000", unbounded}}},
    {"savina_threadring", threadring,
     {{"actors", "100", unbounded}, {"passes", "100000", unbounded}}},
    {"savina_chameneos", chameneos,
     {{"chameneos", "100", unbounded}, {"meetings", "200000", unbounded}}},
    {"savina_big", big, {{"actors", "120", unbounded}, {"pings", "20000", unbounded}}},
    {"savina_concdict", concdict,
     {{"workers", "20", unbounded},
      {"requests", "10000", unbounded},
      {"write-percent", "10", 100}}},
    {"savina_bndbuffer", bndbuffer,
     {{"buffer", "50", unbounded},
      {"producers", "40", unbounded},
      {"consumers", "40", unbounded},
      {"items", "1000", unbounded},
      {"cost", "25", unbounded}}},
    {"savina_philosopher", philosopher,
     {{"philosophers", "20", unbounded}, {"rounds", "10000", unbounded}}},
    {"savina_barber", barber,
     {{"haircuts", "5000", unbounded},
      {"seats", "1000", unbounded},
      {"arrival-cost", "1000", unbounded},
      {"haircut-cost", "1000", unbounded}}},
    {"savina_banking", banking,
     {{"accounts", "1000", uint64_t{1} << 31}, {"transfers", "50000", unbounded}}},
  };
  return all;
}

void usage(std::ostream& out) {
  out << "usage: peer-caf <workload> [--threads N] [--samples K] [--warmup W] [params]\n"
         "Savina workloads and params (defaults):\n";
  for (auto& w : workloads()) {
    out << "  " << w.name;
    for (auto& p : w.params)
      out << " --" << p.flag << " " << p.dflt;
    out << "\n";
  }
}

[[noreturn]] void bad_usage(const std::string& msg) {
  std::cerr << "error: " << msg << "\n";
  usage(std::cerr);
  std::exit(2);
}

// A count: digits with optional `_` separators, within 1..=max.
uint64_t parse_count(const std::string& name, const param& p, const std::string& raw) {
  auto bad = [&](const std::string& why) {
    bad_usage(name + ": `--" + p.flag + "`: " + why + ", got `" + raw + "`");
  };
  std::string digits;
  for (char c : raw)
    if (c != '_')
      digits += c;
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
    bad("wants a positive integer");
  uint64_t v = 0;
  for (char c : digits) {
    uint64_t d = uint64_t(c - '0');
    if (v > (unbounded - d) / 10)
      bad("wants a positive integer");
    v = v * 10 + d;
  }
  if (v == 0 || v > p.max)
    bad("must be within 1..=" + std::to_string(p.max));
  return v;
}

// --threads, --samples, --warmup: non-negative integers.
uint64_t parse_plain(const std::string& key, const std::string& v) {
  if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos)
    bad_usage("`--" + key + "` wants a non-negative integer, got `" + v + "`");
  return std::stoull(v);
}

}  // namespace

int run(int argc, char** argv) {
  std::string name = argv[1];
  const workload* w = nullptr;
  for (auto& x : workloads())
    if (name == x.name)
      w = &x;
  if (w == nullptr)
    bad_usage("unknown workload `" + name + "`");
  std::vector<std::pair<std::string, std::string>> flags;
  {
    std::string why;
    if (!peer::parse_flags(argc, argv, flags, why))
      bad_usage(why);
  }
  // The last value given for a flag wins; taking a flag removes every mention of it.
  auto take = [&](const std::string& key, std::string& out) {
    bool found = false;
    for (auto& kv : flags)
      if (kv.first == key) {
        out = kv.second;
        found = true;
      }
    std::vector<std::pair<std::string, std::string>> rest;
    for (auto& kv : flags)
      if (kv.first != key)
        rest.push_back(kv);
    flags.swap(rest);
    return found;
  };
  std::string raw;
  uint64_t threads = take("threads", raw) ? parse_plain("threads", raw) : 2;
  uint64_t samples = take("samples", raw) ? parse_plain("samples", raw) : 1;
  uint64_t warmup = take("warmup", raw) ? parse_plain("warmup", raw) : 0;
  if (threads == 0 || samples == 0)
    bad_usage("--threads and --samples must be at least 1");
  args a;
  a.name = w->name;
  for (auto& p : w->params) {
    raw = p.dflt;
    take(p.flag, raw);
    a.values.emplace_back(p.flag, parse_count(a.name, p, raw));
  }
  if (!flags.empty())
    bad_usage("unknown flag `--" + flags.front().first + "` for workload `" + name + "`");

  peer::threads = int(threads);
  actor_system_config cfg;
  cfg.set("scheduler.max-threads", size_t(threads));
  actor_system sys{cfg};
  for (uint64_t s = 0; s < warmup + samples; ++s) {
    std::cerr << "caf " << name << " round " << s + 1 << std::endl;
    peer::open_round(s < warmup);
    w->run(sys, a);
    // The previous round's actors are gone before the next round starts.
    sys.await_all_actors_done();
  }
  return 0;
}

}  // namespace savina
