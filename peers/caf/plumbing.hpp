// What every peer-caf workload shares, read the way troupe-bench-contract reads it: the
// measured rounds (warm-up rounds print nothing), the JSON line of a figure, the /proc probes
// (peak RSS, RSS growth from a settled baseline, other processes' CPU time during the round)
// and `fail` (exit 1 with `FAILED: ...`). Used by peer_caf.cpp and the Savina workloads.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <malloc.h>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace peer {

using clk = std::chrono::steady_clock;

// The flags after the workload name (argv[2..]): `--key value` or
// `--key=value`, `_` in a key read as `-`, in the order given (a caller that
// keeps the last value of a repeated flag gets the contract's rule). Returns
// false, with `why` set, on a malformed command line.
inline bool parse_flags(int argc, char** argv,
                        std::vector<std::pair<std::string, std::string>>& out,
                        std::string& why) {
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a.compare(0, 2, "--") != 0) {
      why = "unexpected argument `" + a + "`";
      return false;
    }
    a = a.substr(2);
    std::string v;
    auto eq = a.find('=');
    if (eq != std::string::npos) {
      v = a.substr(eq + 1);
      a = a.substr(0, eq);
    } else if (i + 1 < argc) {
      v = argv[++i];
    } else {
      why = "flag `--" + a + "` needs a value";
      return false;
    }
    for (auto& c : a)
      if (c == '_')
        c = '-';
    out.emplace_back(a, v);
  }
  return true;
}

inline double seconds_since(clk::time_point start) {
  return std::chrono::duration<double>(clk::now() - start).count();
}

inline uint64_t status_kb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  size_t n = strlen(field);
  while (std::getline(in, line))
    if (line.compare(0, n, field) == 0)
      return std::strtoull(line.c_str() + n, nullptr, 10);
  return 0;
}

inline uint64_t peak_rss_bytes() { return status_kb("VmHWM:") * 1024; }
inline uint64_t current_rss_bytes() { return status_kb("VmRSS:") * 1024; }

// RSS growth from a settled baseline, read the way troupe-bench-contract's probe does:
// settle 50 ms, give the allocator's free memory back (malloc_trim), reset the peak
// (clear_refs 5), take VmRSS; the growth is VmHWM minus that.
struct rss_baseline {
  uint64_t bytes;
  rss_baseline() {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    malloc_trim(0);
    std::ofstream("/proc/self/clear_refs") << "5";
    bytes = current_rss_bytes();
  }
  uint64_t growth() const {
    uint64_t peak = peak_rss_bytes();
    return peak > bytes ? peak - bytes : 0;
  }
};

// Interference, as troupe-bench-contract's probe reads it: busy CPU ticks of the machine
// (/proc/stat, all but idle and iowait) minus this process's (utime + stime).
inline uint64_t machine_busy_ticks() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  uint64_t v[8] = {0};
  in >> cpu;
  for (auto& x : v)
    in >> x;
  uint64_t busy = 0;
  for (int i = 0; i < 8; ++i)
    if (i != 3 && i != 4)
      busy += v[i];
  return busy;
}

inline uint64_t own_ticks() {
  std::ifstream in("/proc/self/stat");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = all.rfind(')');
  if (close == std::string::npos)
    return 0;
  std::istringstream rest(all.substr(close + 2));
  std::string field;
  uint64_t utime = 0, stime = 0;
  for (int i = 0; i < 13 && rest >> field; ++i) {
    if (i == 11)
      utime = std::strtoull(field.c_str(), nullptr, 10);
    if (i == 12)
      stime = std::strtoull(field.c_str(), nullptr, 10);
  }
  return utime + stime;
}

// The round in progress: a warm-up round prints nothing; every round opens a CPU window.
inline bool warming_up = false;
inline uint64_t window_machine = 0, window_own = 0;
inline clk::time_point window_start;

inline void open_round(bool warmup) {
  warming_up = warmup;
  window_machine = machine_busy_ticks();
  window_own = own_ticks();
  window_start = clk::now();
}

[[noreturn]] inline void fail(const std::string& msg) {
  std::cerr << "FAILED: " << msg << std::endl;
  std::_Exit(1);
}

inline std::string num(double x) {
  char buf[64];
  snprintf(buf, sizeof buf, "%.12g", x);
  return buf;
}

inline int threads = 2;

inline void figure(const std::string& workload, const std::string& params, double secs,
            double rate, const std::string& unit,
            const std::vector<std::pair<std::string, double>>& extras = {}) {
  if (warming_up)
    return;
  uint64_t machine = machine_busy_ticks() - window_machine;
  uint64_t own = own_ticks() - window_own;
  double other = machine > own ? double(machine - own) / 100.0 : 0.0;
  std::ostringstream out;
  out << "{\"framework\":\"caf\",\"workload\":\"" << workload << "\",\"params\":" << params
      << ",\"seconds\":" << num(secs) << ",\"rate\":" << num(rate) << ",\"unit\":\"" << unit
      << "\",\"rss_mb\":" << num(peak_rss_bytes() / 1e6) << ",\"threads\":" << threads
      << ",\"other_cpu_s\":" << num(other) << ",\"window_s\":" << num(seconds_since(window_start));
  for (auto& kv : extras)
    out << ",\"" << kv.first << "\":" << num(kv.second);
  out << "}\n";
  std::cout << out.str() << std::flush;
}

}  // namespace peer
