// The Troupe benchmark workloads on CAF 0.17 (the C++ Actor Framework, Debian's libcaf-dev),
// written the way CAF's manual and its own benchmarks (caf-benchmarks: mailbox_performance,
// actor_creation, mixed_case) do it: event-based actors given as functions returning a
// `behavior`, state in `stateful_actor<State>`, atoms as message tags, `send` to tell,
// `request(..).then(..)` to ask, `delegate` to hand a request on, `spawn<monitored>` and
// `down_msg` to await a stop. The main thread drives each workload through a
// `scoped_actor` and blocks in `receive`.
//
// Threads: `caf.scheduler.max-threads` is set to --threads, so the work-stealing scheduler
// runs actors on exactly that many workers (CAF also keeps its own timer and printer threads,
// and main() blocks in the scoped actor).
//
// Registry: CAF 0.17 ships a name registry (`actor_system::registry()`, keyed by atoms of at
// most 10 characters) and local groups (`actor_system::groups().get_local(name)`, actors
// `join` them, a `send` to the group reaches every member), so `registry` is expressed with
// those.
//
// Rounds: --warmup W unprinted rounds, then --samples K printed ones; every line carries
// other_cpu_s (other processes' CPU time during the round) and window_s, read from /proc as
// troupe-bench-contract does, and the next round starts once every actor of the previous one
// is gone (`await_all_actors_done`).
//
// The Savina workloads (savina_pingpong, ...) live in savina/, one file each, and share the
// plumbing (plumbing.hpp): /proc probes, rounds, JSON lines.
//
// Usage: peer-caf <workload> [--threads N] [--samples K] [--warmup W] [params]  (see ../README.md)

#include <caf/all.hpp>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <malloc.h>
#include <memory>
#include <thread>
#include <vector>

#include "plumbing.hpp"
#include "savina/savina.hpp"

using namespace caf;

namespace {

using namespace peer;

// ------------------------------------------------------------------ atoms

using token_atom = atom_constant<atom("token")>;
using next_atom = atom_constant<atom("next")>;
using done_atom = atom_constant<atom("done")>;
using ready_atom = atom_constant<atom("ready")>;
using ball_atom = atom_constant<atom("ball")>;
using go_atom = atom_constant<atom("go")>;
using msg_atom = atom_constant<atom("msg")>;
using result_atom = atom_constant<atom("result")>;
using read_atom = atom_constant<atom("read")>;
using ping_atom = atom_constant<atom("ping")>;
using ack_atom = atom_constant<atom("ack")>;

// ------------------------------------------------------------------ ring

struct ring_node_state {
  actor next;
};

behavior ring_node(stateful_actor<ring_node_state>* self, int32_t ring, int32_t index,
                   actor next, actor sink) {
  self->state.next = std::move(next);
  return {
    [=](next_atom, const actor& n) { self->state.next = n; },
    [=](ready_atom) { return ready_atom::value; },
    [=](token_atom, uint64_t n) {
      if (n == 0)
        self->send(sink, done_atom::value, ring, index);
      else
        self->send(self->state.next, token_atom::value, n - 1);
    },
  };
}

void ring(actor_system& sys, uint64_t rings, uint64_t actors, uint64_t laps) {
  scoped_actor self{sys};
  auto created = clk::now();
  std::vector<actor> all;
  all.reserve(rings * actors);
  std::vector<actor> heads;
  for (uint64_t r = 0; r < rings; ++r) {
    // Back to front, so each node is spawned knowing its successor; the last node learns
    // the first one afterwards.
    actor next;
    size_t first = all.size();
    for (uint64_t i = actors; i-- > 0;) {
      next = sys.spawn(ring_node, int32_t(r), int32_t(i), next, actor{self});
      all.push_back(next);
    }
    anon_send(all[first], next_atom::value, next);
    heads.push_back(next);
  }
  for (auto& head : heads)
    self->request(head, infinite, ready_atom::value).receive(
      [](ready_atom) {}, [](error& e) { fail("ring head: " + to_string(e)); });
  double creation = seconds_since(created);

  uint64_t hops = actors * laps;
  auto start = clk::now();
  for (auto& head : heads)
    self->send(head, token_atom::value, hops);
  std::vector<bool> finished(rings, false);
  for (uint64_t i = 0; i < rings; ++i)
    self->receive([&](done_atom, int32_t r, int32_t index) {
      if (uint64_t(index) != hops % actors || finished[r])
        fail("ring " + std::to_string(r) + ": token ended at node " + std::to_string(index));
      finished[r] = true;
    });
  double secs = seconds_since(start);
  std::ostringstream params;
  params << "{\"rings\":" << rings << ",\"actors\":" << actors << ",\"laps\":" << laps << "}";
  figure("ring", params.str(), secs, double(rings * actors * laps) / secs, "hops/s",
         {{"creation_seconds", creation}});
  for (auto& a : all)
    anon_send_exit(a, exit_reason::user_shutdown);
}

// ------------------------------------------------------------------ pingpong

behavior pong(event_based_actor*) {
  // The value a handler returns goes back to the sender.
  return {
    [](ball_atom, uint64_t n) { return make_message(ball_atom::value, n); },
  };
}

behavior ping(event_based_actor* self, uint64_t round_trips, actor sink) {
  return {
    [=](go_atom, const actor& p) { self->send(p, ball_atom::value, uint64_t{1}); },
    [=](ball_atom, uint64_t n) -> result<message> {
      if (n >= round_trips) {
        self->send(sink, done_atom::value, n);
        self->quit();
        return message{};
      }
      return make_message(ball_atom::value, n + 1);
    },
  };
}

void pingpong(actor_system& sys, uint64_t round_trips) {
  scoped_actor self{sys};
  auto po = sys.spawn(pong);
  auto pi = sys.spawn(ping, round_trips, actor{self});
  auto start = clk::now();
  self->send(pi, go_atom::value, po);
  uint64_t got = 0;
  self->receive([&](done_atom, uint64_t n) { got = n; });
  double secs = seconds_since(start);
  if (got != round_trips)
    fail("pingpong: " + std::to_string(got) + " round trips, expected "
         + std::to_string(round_trips));
  figure("pingpong", "{\"round_trips\":" + std::to_string(round_trips) + "}", secs,
         double(round_trips) / secs, "round-trips/s", {{"ns_per_op", secs * 1e9 / round_trips}});
  anon_send_exit(po, exit_reason::user_shutdown);
}

// ------------------------------------------------------------------ mailbox_performance

struct receiver_state {
  uint64_t count = 0;
  uint64_t sum = 0;
};

// Counts and sums the payloads; reports the sum when it has all of them.
behavior receiver(stateful_actor<receiver_state>* self, uint64_t expected, actor sink) {
  return {
    [=](msg_atom, uint64_t x) {
      self->state.sum += x;
      if (++self->state.count == expected) {
        self->send(sink, done_atom::value, self->state.sum);
        self->quit();
      }
    },
  };
}

behavior sender(event_based_actor* self, actor dest, uint64_t messages) {
  return {
    [=](go_atom) {
      for (uint64_t i = 1; i <= messages; ++i)
        self->send(dest, msg_atom::value, i);
      self->quit();
    },
  };
}

void mailbox_performance(actor_system& sys, uint64_t senders, uint64_t messages) {
  scoped_actor self{sys};
  uint64_t expected = senders * messages;
  auto recv = sys.spawn(receiver, expected, actor{self});
  std::vector<actor> all;
  for (uint64_t i = 0; i < senders; ++i)
    all.push_back(sys.spawn(sender, recv, messages));
  auto start = clk::now();
  for (auto& s : all)
    self->send(s, go_atom::value);
  uint64_t sum = 0;
  self->receive([&](done_atom, uint64_t n) { sum = n; });
  double secs = seconds_since(start);
  uint64_t expected_sum = senders * (messages * (messages + 1) / 2);
  if (sum != expected_sum)
    fail("receiver summed " + std::to_string(sum) + ", expected " + std::to_string(expected_sum));
  figure("mailbox_performance",
         "{\"senders\":" + std::to_string(senders) + ",\"messages\":" + std::to_string(messages)
           + "}",
         secs, double(expected) / secs, "msgs/s");
}

// ------------------------------------------------------------------ actor_creation

struct tree_state {
  int pending = 2;
  uint64_t sum = 0;
};

// actor(x) spawns its two children when it starts (no extra message per node, as on every
// other side); actor(1) answers 1 and quits at once.
behavior tree(stateful_actor<tree_state>* self, actor parent, int32_t x) {
  if (x == 1) {
    self->send(parent, result_atom::value, uint64_t{1});
    self->quit();
    return {};
  }
  for (int i = 0; i < 2; ++i)
    self->spawn(tree, actor_cast<actor>(self), x - 1);
  return {
    [=](result_atom, uint64_t r) {
      self->state.sum += r;
      if (--self->state.pending == 0) {
        self->send(parent, result_atom::value, 1 + self->state.sum);
        self->quit();
      }
    },
  };
}

void actor_creation(actor_system& sys, int32_t pow) {
  scoped_actor self{sys};
  uint64_t actors = (uint64_t{1} << pow) - 1;
  rss_baseline rss;
  auto start = clk::now();
  self->spawn(tree, actor{self}, pow);
  uint64_t answer = 0;
  self->receive([&](result_atom, uint64_t r) { answer = r; });
  double secs = seconds_since(start);
  if (answer != actors)
    fail("actor_creation: root answered " + std::to_string(answer) + ", expected "
         + std::to_string(actors));
  uint64_t grown = rss.growth();
  figure("actor_creation", "{\"pow\":" + std::to_string(pow) + "}", secs,
         double(actors) / secs, "actors/s", {{"bytes_per_actor", double(grown) / actors}});
}

// ------------------------------------------------------------------ spawn_and_await

behavior noop(event_based_actor* self) {
  self->quit();
  return {};
}

struct spawner_state {
  uint64_t stopped = 0;
  clk::time_point start;
};

behavior spawner(stateful_actor<spawner_state>* self, uint64_t count, actor sink) {
  self->set_down_handler([=](down_msg&) {
    if (++self->state.stopped == count) {
      self->send(sink, done_atom::value, seconds_since(self->state.start));
      self->quit();
    } else {
      self->spawn<monitored>(noop);
    }
  });
  return {
    [=](go_atom) {
      self->state.start = clk::now();
      self->spawn<monitored>(noop);
    },
  };
}

void spawn_and_await(actor_system& sys, uint64_t count) {
  scoped_actor self{sys};
  auto s = sys.spawn(spawner, count, actor{self});
  self->send(s, go_atom::value);
  double secs = 0;
  self->receive([&](done_atom, double t) { secs = t; });
  figure("spawn_and_await", "{\"count\":" + std::to_string(count) + "}", secs,
         double(count) / secs, "ops/s", {{"ns_per_op", secs * 1e9 / count}});
}

// ------------------------------------------------------------------ reader_db

struct customer {
  int32_t id;
  std::string name;
  std::string city;
  std::string country;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, customer& x) {
  return f(meta::type_name("customer"), x.id, x.name, x.city, x.country);
}

// A row as every side holds it: a shared, immutable customer; a reply copies the pointer
// (one reference-count increment), like the Rust sides' `Arc<Customer>` clone.
using row = std::shared_ptr<const customer>;

}  // namespace

// A row only travels between local actors, never serialized.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(row)

namespace {

const std::vector<row>& customer_table() {
  static const std::vector<row> table = [] {
    const char* rows[29][3] = {
      {"Alfreds Futterkiste", "Berlin", "Germany"},
      {"Ana Trujillo Emparedados y helados", "Mexico D.F.", "Mexico"},
      {"Antonio Moreno Taqueria", "Mexico D.F.", "Mexico"},
      {"Around the Horn", "London", "UK"},
      {"Berglunds snabbkop", "Lulea", "Sweden"},
      {"Blauer See Delikatessen", "Mannheim", "Germany"},
      {"Blondel pere et fils", "Strasbourg", "France"},
      {"Bolido Comidas preparadas", "Madrid", "Spain"},
      {"Bon app'", "Marseille", "France"},
      {"Bottom-Dollar Markets", "Tsawassen", "Canada"},
      {"B's Beverages", "London", "UK"},
      {"Cactus Comidas para llevar", "Buenos Aires", "Argentina"},
      {"Centro comercial Moctezuma", "Mexico D.F.", "Mexico"},
      {"Chop-suey Chinese", "Bern", "Switzerland"},
      {"Comercio Mineiro", "Sao Paulo", "Brazil"},
      {"Consolidated Holdings", "London", "UK"},
      {"Drachenblut Delikatessen", "Aachen", "Germany"},
      {"Du monde entier", "Nantes", "France"},
      {"Eastern Connection", "London", "UK"},
      {"Ernst Handel", "Graz", "Austria"},
      {"Familia Arquibaldo", "Sao Paulo", "Brazil"},
      {"FISSA Fabrica Inter. Salchichas S.A.", "Madrid", "Spain"},
      {"Folies gourmandes", "Lille", "France"},
      {"Folk och fa HB", "Bracke", "Sweden"},
      {"Frankenversand", "Munchen", "Germany"},
      {"France restauration", "Nantes", "France"},
      {"Franchi S.p.A.", "Torino", "Italy"},
      {"Furia Bacalhau e Frutos do Mar", "Lisboa", "Portugal"},
      {"Galeria del gastronomo", "Barcelona", "Spain"},
    };
    std::vector<row> t;
    for (int i = 0; i < 29; ++i)
      t.push_back(std::make_shared<const customer>(customer{i + 1, rows[i][0], rows[i][1], rows[i][2]}));
    return t;
  }();
  return table;
}

behavior reader(event_based_actor*) {
  return {
    [](read_atom, int32_t id) -> result<row> {
      const auto& table = customer_table();
      if (id < 1 || size_t(id) > table.size())
        return sec::invalid_argument;
      return table[id - 1];
    },
  };
}

// The writer owns the table; the workload is read-only, so it only holds it.
behavior writer(event_based_actor*) {
  return {
    [](ready_atom) { return ready_atom::value; },
  };
}

struct db_state {
  std::vector<actor> readers;
  size_t next = 0;
};

behavior db(stateful_actor<db_state>* self, std::vector<actor> readers) {
  self->state.readers = std::move(readers);
  return {
    // Reads go to the readers round robin; the reader answers the client directly.
    [=](read_atom r, int32_t id) {
      auto& st = self->state;
      auto& rd = st.readers[st.next];
      st.next = (st.next + 1) % st.readers.size();
      return self->delegate(rd, r, id);
    },
  };
}

struct client_state {
  uint64_t next = 0;
  uint64_t end = 0;
  uint64_t good = 0;
  uint64_t reads = 0;
};

void client_ask(stateful_actor<client_state>* self, const actor& dbh, const actor& sink) {
  auto& st = self->state;
  int32_t id = int32_t(st.next % 29) + 1;
  ++st.next;
  self->request(dbh, infinite, read_atom::value, id)
    .then(
      [=](const row& c) {
        auto& st = self->state;
        if (!c || c->id != id)
          fail("reader_db: asked for " + std::to_string(id) + ", got another row");
        ++st.good;
        if (st.next < st.end)
          client_ask(self, dbh, sink);
        if (st.good == st.reads) {
          self->send(sink, done_atom::value, st.good);
          self->quit();
        }
      },
      [=](error& e) { fail("reader_db: read of " + std::to_string(id) + ": " + to_string(e)); });
}

behavior client(stateful_actor<client_state>* self, actor dbh, uint64_t first, uint64_t reads,
                uint64_t outstanding, actor sink) {
  self->state.next = first;
  self->state.end = first + reads;
  self->state.reads = reads;
  return {
    [=](go_atom) {
      for (uint64_t i = 0; i < outstanding && self->state.next < self->state.end; ++i)
        client_ask(self, dbh, sink);
    },
  };
}

void reader_db(actor_system& sys, uint64_t reads, uint64_t clients, uint64_t readers,
               uint64_t outstanding) {
  scoped_actor self{sys};
  customer_table();
  auto w = sys.spawn(writer);
  std::vector<actor> rds;
  for (uint64_t i = 0; i < readers; ++i)
    rds.push_back(sys.spawn(reader));
  auto d = sys.spawn(db, rds);
  std::vector<actor> cls;
  uint64_t first = 0;
  for (uint64_t i = 0; i < clients; ++i) {
    uint64_t share = reads / clients + (i < reads % clients ? 1 : 0);
    cls.push_back(sys.spawn(client, d, first, share, outstanding, actor{self}));
    first += share;
  }
  auto start = clk::now();
  for (auto& c : cls)
    self->send(c, go_atom::value);
  uint64_t total = 0;
  for (uint64_t i = 0; i < clients; ++i)
    self->receive([&](done_atom, uint64_t n) { total += n; });
  double secs = seconds_since(start);
  if (total != reads)
    fail("reader_db: " + std::to_string(total) + " good reads, expected "
         + std::to_string(reads));
  std::ostringstream params;
  params << "{\"reads\":" << reads << ",\"clients\":" << clients << ",\"readers\":" << readers
         << ",\"outstanding\":" << outstanding << "}";
  figure("reader_db", params.str(), secs, double(reads) / secs, "reads/s",
         {{"ns_per_read", secs * 1e9 / reads}});
  anon_send_exit(d, exit_reason::user_shutdown);
  anon_send_exit(w, exit_reason::user_shutdown);
  for (auto& r : rds)
    anon_send_exit(r, exit_reason::user_shutdown);
}

// ------------------------------------------------------------------ registry

behavior member(event_based_actor* self, group g) {
  self->join(g);
  return {
    [=](ready_atom) { return ready_atom::value; },
    // The answer goes back to whoever sent the ping to the group.
    [=](ping_atom) { return ack_atom::value; },
  };
}

struct dispatcher_state {
  uint64_t acks = 0;
  uint64_t rep = 0;
  clk::time_point start;
};

// Sends to every member of `g` and waits for every answer, `reps` times over.
behavior dispatcher(stateful_actor<dispatcher_state>* self, group g, uint64_t group_size,
                    uint64_t reps, actor sink) {
  return {
    [=](go_atom) {
      self->state.start = clk::now();
      self->send(g, ping_atom::value);
    },
    [=](ack_atom) {
      auto& st = self->state;
      if (++st.acks < group_size)
        return;
      st.acks = 0;
      if (++st.rep < reps) {
        self->send(g, ping_atom::value);
        return;
      }
      self->send(sink, done_atom::value, seconds_since(st.start), st.rep * group_size);
      self->quit();
    },
  };
}

constexpr uint64_t groups_n = 10;

void registry(actor_system& sys, uint64_t size) {
  scoped_actor self{sys};
  // Fresh group names every round, so no member of an earlier round (stopped
  // asynchronously) can still be in a group.
  static uint64_t round = 0;
  auto prefix = "r" + std::to_string(round++) + "-k" + std::to_string(size) + "-g";
  std::vector<group> groups;
  for (uint64_t g = 0; g < groups_n; ++g)
    groups.push_back(sys.groups().get_local(prefix + std::to_string(g)));
  std::vector<atom_value> names;
  std::vector<actor> members;
  for (uint64_t i = 0; i < size; ++i) {
    auto m = sys.spawn(member, groups[i % groups_n]);
    names.push_back(atom_from_string("m" + std::to_string(i)));
    sys.registry().put(names.back(), m);
    members.push_back(m);
  }
  // Members join their group when they start: wait until all have.
  for (auto& m : members)
    self->request(m, infinite, ready_atom::value).receive(
      [](ready_atom) {}, [](error& e) { fail("registry: member: " + to_string(e)); });

  uint64_t lookups = std::max<uint64_t>(200000 / size, 2) * size;
  auto start = clk::now();
  for (uint64_t i = 0; i < lookups; ++i) {
    auto found = sys.registry().get<actor>(names[i % size]);
    if (found != members[i % size])
      fail("registry: find(m" + std::to_string(i % size) + ") failed");
  }
  double secs = seconds_since(start);
  figure("registry", "{\"size\":" + std::to_string(size) + ",\"op\":\"find\"}", secs,
         secs * 1e9 / lookups, "ns/op");

  uint64_t group_size = (size + groups_n - 1) / groups_n;
  uint64_t reps = std::min<uint64_t>(std::max<uint64_t>(100000 / group_size, 10), 10000);
  auto d = sys.spawn(dispatcher, groups[0], group_size, reps, actor{self});
  self->send(d, go_atom::value);
  uint64_t delivered = 0;
  self->receive(
    [&](done_atom, double t, uint64_t n) {
      secs = t;
      delivered = n;
    },
    after(std::chrono::seconds(120)) >> [] { fail("registry: a dispatch was lost"); });
  if (delivered != reps * group_size)
    fail("registry: " + std::to_string(delivered) + " deliveries, expected "
         + std::to_string(reps * group_size));
  figure("registry", "{\"size\":" + std::to_string(size) + ",\"op\":\"dispatch_group\"}", secs,
         secs * 1e9 / double(delivered), "ns/op");
  for (auto& n : names)
    sys.registry().erase(n);
  for (auto& m : members)
    anon_send_exit(m, exit_reason::user_shutdown);
}

// ------------------------------------------------------------------ command line

const char* usage =
  "usage: peer-caf <workload> [--threads N] [--samples K] [--warmup W] [params]\n"
  "  ring --rings 10 --actors 10000 --laps 100 | pingpong --round-trips 1000000\n"
  "  mailbox_performance --senders 100 --messages 1000000 | actor_creation --pow 20\n"
  "  spawn_and_await --count 100000\n"
  "  reader_db --reads 3100000 --clients 2 --readers 2 --outstanding 64\n"
  "  registry --sizes 10,100,1000,10000\n"
  "  savina_<name> ... (the Savina workloads: peer-caf savina_ lists them)\n";

[[noreturn]] void bad_usage(const std::string& msg) {
  std::cerr << "error: " << msg << "\n" << usage;
  std::exit(2);
}

uint64_t parse_num(const std::string& flag, const std::string& v) {
  if (v.empty() || v.find_first_not_of("0123456789_") != std::string::npos)
    bad_usage("--" + flag + " wants a non-negative integer, got `" + v + "`");
  std::string digits;
  for (char c : v)
    if (c != '_')
      digits += c;
  return std::stoull(digits);
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2)
    bad_usage("missing workload");
  std::string workload = argv[1];
  // The Savina workloads (savina_*) have their own files and command line: savina/.
  if (workload.compare(0, 7, "savina_") == 0)
    return savina::run(argc, argv);
  // The async actor workloads of issue 27 are not ported to CAF.
  if (workload == "async_pingpong" || workload == "async_ask_chain" || workload == "async_io") {
    std::cout << "{\"framework\":\"caf\",\"workload\":\"" << workload
              << "\",\"unsupported\":\"not ported to CAF: issue 27's async workloads compare "
                 "kameo, ractor and actix\"}"
              << std::endl;
    return 0;
  }
  std::map<std::string, std::string> flags;
  {
    std::vector<std::pair<std::string, std::string>> given;
    std::string why;
    if (!peer::parse_flags(argc, argv, given, why))
      bad_usage(why);
    for (auto& kv : given)
      flags[kv.first] = kv.second;  // the last value of a repeated flag wins
  }
  auto take = [&](const std::string& k, uint64_t dflt) {
    auto it = flags.find(k);
    if (it == flags.end())
      return dflt;
    auto v = parse_num(k, it->second);
    flags.erase(it);
    if (v == 0)
      bad_usage("--" + k + " must be at least 1");
    return v;
  };
  threads = int(take("threads", 2));
  uint64_t samples = take("samples", 1);
  uint64_t warmup = 0;
  if (flags.count("warmup")) {
    warmup = parse_num("warmup", flags["warmup"]);
    flags.erase("warmup");
  }
  std::map<std::string, uint64_t> p;
  std::vector<uint64_t> sizes;
  if (workload == "ring") {
    p["rings"] = take("rings", 10);
    p["actors"] = take("actors", 10000);
    p["laps"] = take("laps", 100);
  } else if (workload == "pingpong") {
    p["round-trips"] = take("round-trips", 1000000);
  } else if (workload == "mailbox_performance") {
    p["senders"] = take("senders", 100);
    p["messages"] = take("messages", 1000000);
  } else if (workload == "actor_creation") {
    p["pow"] = take("pow", 20);
    if (p["pow"] > 40)
      bad_usage("--pow must be within 1..=40");
  } else if (workload == "spawn_and_await") {
    p["count"] = take("count", 100000);
  } else if (workload == "reader_db") {
    p["reads"] = take("reads", 3100000);
    p["clients"] = take("clients", 2);
    p["readers"] = take("readers", 2);
    p["outstanding"] = take("outstanding", 64);
  } else if (workload == "registry") {
    std::string list = "10,100,1000,10000";
    if (flags.count("sizes")) {
      list = flags["sizes"];
      flags.erase("sizes");
    }
    std::stringstream ss(list);
    std::string item;
    while (std::getline(ss, item, ','))
      sizes.push_back(parse_num("sizes", item));
    for (auto s : sizes)
      if (s == 0)
        bad_usage("registry sizes must be at least 1");
    if (sizes.empty())
      bad_usage("--sizes is empty");
  } else {
    bad_usage("unknown workload `" + workload + "`");
  }
  if (!flags.empty())
    bad_usage("unknown flag `--" + flags.begin()->first + "` for workload `" + workload + "`");

  actor_system_config cfg;
  cfg.set("scheduler.max-threads", size_t(threads));
  actor_system sys{cfg};
  for (uint64_t s = 0; s < warmup + samples; ++s) {
    std::cerr << "caf " << workload << " round " << s + 1 << std::endl;
    open_round(s < warmup);
    if (workload == "ring")
      ring(sys, p["rings"], p["actors"], p["laps"]);
    else if (workload == "pingpong")
      pingpong(sys, p["round-trips"]);
    else if (workload == "mailbox_performance")
      mailbox_performance(sys, p["senders"], p["messages"]);
    else if (workload == "actor_creation")
      actor_creation(sys, int32_t(p["pow"]));
    else if (workload == "spawn_and_await")
      spawn_and_await(sys, p["count"]);
    else if (workload == "reader_db")
      reader_db(sys, p["reads"], p["clients"], p["readers"], p["outstanding"]);
    else if (workload == "registry")
      for (auto size : sizes)
        registry(sys, size);
    // The previous round's actors are gone before the next round starts.
    sys.await_all_actors_done();
  }
  return 0;
}
