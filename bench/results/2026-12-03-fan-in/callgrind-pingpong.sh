#!/bin/sh
# callgrind-bench.sh plus pingpong (troupe-bench's, with its thread baseline)
set -u
ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" --threads 1 --warmup 0 --samples 1 2>&1 | awk '/Collected/ {print $NF}'; }
for pair in "$@"; do
  side=${pair%%=*}; bin=${pair#*=}
  a=$(ir $bin pingpong --round-trips 20000); b=$(ir $bin pingpong --round-trips 60000)
  echo "pingpong $side $a $b per-round-trip $(echo "($b - $a) / 40000" | bc -l)"
done
