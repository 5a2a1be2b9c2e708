// CAF 0.17's binary serializer on the shapes troupe-remote-bench measures
// (seed 004's serialization micro-benchmarks): foo {a: 10, b: 20},
// bar {a: foo{1, 2}, b: "three"}, a message of two integers, and byte
// payloads of 64 B, 1 KiB, 16 KiB and 64 KiB. Each figure is ns per save
// (binary_serializer into a reused buffer) and per load (binary_deserializer
// into a fresh value), timed over a loop calibrated to ~100 ms; every load
// is checked against the value saved. One JSON line per figure, as
// troupe-remote-bench prints (framework "caf", workload "remote_serialize").
// Build: make -f Makefile.serialize
#include <caf/all.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace caf;

struct foo {
  int32_t a;
  int32_t b;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, foo& x) {
  return f(meta::type_name("foo"), x.a, x.b);
}

bool operator==(const foo& x, const foo& y) {
  return x.a == y.a && x.b == y.b;
}

struct bar {
  foo a;
  std::string b;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, bar& x) {
  return f(meta::type_name("bar"), x.a, x.b);
}

bool operator==(const bar& x, const bar& y) {
  return x.a == y.a && x.b == y.b;
}

namespace {

template <class F>
double ns_per_op(F&& f) {
  using clock = std::chrono::steady_clock;
  for (uint64_t iters = 1;; iters *= 4) {
    auto start = clock::now();
    for (uint64_t i = 0; i < iters; ++i)
      f();
    auto ns = std::chrono::duration<double, std::nano>(clock::now() - start).count();
    if (ns > 1e8)
      return ns / iters;
  }
}

void report(const std::string& label, const std::string& shape, size_t bytes, double ns) {
  std::printf("{\"framework\":\"caf\",\"workload\":\"remote_serialize\",\"label\":\"%s\","
              "\"params\":{\"shape\":\"%s\",\"frame_bytes\":%zu},\"seconds\":%.9f,"
              "\"rate\":%.1f,\"unit\":\"ops/s\",\"rss_mb\":0,\"threads\":1,\"ns_per_op\":%.1f}\n",
              label.c_str(), shape.c_str(), bytes, ns / 1e9, 1e9 / ns, ns);
}

volatile size_t sink_size = 0;

template <class T>
void measure(actor_system& sys, const std::string& shape, const T& value) {
  std::vector<char> buf;
  {
    binary_serializer out{sys, buf};
    T copy = value;
    if (auto err = out(copy)) {
      std::fprintf(stderr, "save %s failed\n", shape.c_str());
      std::exit(1);
    }
  }
  auto bytes = buf.size();
  // inspect() takes a mutable reference but saving does not change the value,
  // so one copy made up front is saved again and again.
  T saved = value;
  auto save = ns_per_op([&] {
    buf.clear();
    binary_serializer out{sys, buf};
    out(saved);
    sink_size = buf.size();
  });
  buf.clear();
  {
    binary_serializer out{sys, buf};
    T copy = value;
    out(copy);
  }
  T loaded;
  auto load = ns_per_op([&] {
    binary_deserializer in{sys, buf};
    T fresh;
    in(fresh);
    sink_size = sizeof(fresh);
  });
  {
    binary_deserializer in{sys, buf};
    in(loaded);
  }
  if (!(loaded == value)) {
    std::fprintf(stderr, "load %s gave a different value\n", shape.c_str());
    std::exit(1);
  }
  report("caf save " + shape, shape, bytes, save);
  report("caf load " + shape, shape, bytes, load);
}

} // namespace

int main() {
  actor_system_config cfg;
  cfg.add_message_type<foo>("foo");
  cfg.add_message_type<bar>("bar");
  actor_system sys{cfg};
  measure(sys, "foo", foo{10, 20});
  measure(sys, "bar", bar{foo{1, 2}, "three"});
  // A message of two integers, as CAF's save_msg_2int / load_msg_2int.
  {
    std::vector<char> buf;
    auto msg = make_message(int32_t{1}, int32_t{2});
    auto save = ns_per_op([&] {
      buf.clear();
      binary_serializer out{sys, buf};
      out(msg);
      sink_size = buf.size();
    });
    auto bytes = buf.size();
    auto load = ns_per_op([&] {
      binary_deserializer in{sys, buf};
      message m;
      in(m);
      sink_size = m.size();
    });
    message check;
    binary_deserializer in{sys, buf};
    in(check);
    if (!check.match_elements<int32_t, int32_t>() || check.get_as<int32_t>(0) != 1
        || check.get_as<int32_t>(1) != 2) {
      std::fprintf(stderr, "load msg_2int gave a different value\n");
      return 1;
    }
    report("caf save msg_2int", "msg_2int", bytes, save);
    report("caf load msg_2int", "msg_2int", bytes, load);
  }
  for (size_t size : {size_t{64}, size_t{1024}, size_t{16 * 1024}, size_t{64 * 1024}})
    measure(sys, "bytes_" + std::to_string(size), std::vector<char>(size, 7));
  return 0;
}
