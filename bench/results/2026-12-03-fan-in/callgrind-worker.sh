#!/bin/sh
# Instructions inside the worker loop only (WorkerLocal::run), so that the
# crossbeam-thread baseline of troupe-bench's pingpong is left out.
set -u
side=$1; bin=$2
ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect='*WorkerLocal::run' "$@" --threads 1 --warmup 0 --samples 1 2>&1 | awk '/Collected/ {print $NF}'; }
a=$(ir $bin pingpong --round-trips 20000); b=$(ir $bin pingpong --round-trips 60000)
echo "pingpong-worker $side $a $b per-round-trip $(echo "($b - $a) / 40000" | bc -l)"
a=$(ir $bin ring --rings 2 --actors 1000 --laps 10); b=$(ir $bin ring --rings 2 --actors 1000 --laps 30)
echo "ring-worker $side $a $b per-hop $(echo "($b - $a) / 40000" | bc -l)"
