#!/bin/sh
# Instructions per operation by the difference of two sizes (start-up and
# shutdown cancel), one worker thread, troupe-bench workloads.
# Usage: callgrind-bench.sh LABEL=BIN...
set -u
ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" --threads 1 --warmup 0 --samples 1 2>&1 | awk '/Collected/ {print $NF}'; }
for pair in "$@"; do
  side=${pair%%=*}; bin=${pair#*=}
  a=$(ir $bin ring --rings 2 --actors 1000 --laps 10); b=$(ir $bin ring --rings 2 --actors 1000 --laps 30)
  echo "ring $side $a $b per-hop $(echo "($b - $a) / 40000" | bc -l)"
  a=$(ir $bin mailbox_performance --senders 4 --messages 20000); b=$(ir $bin mailbox_performance --senders 4 --messages 60000)
  echo "mailbox_performance $side $a $b per-message $(echo "($b - $a) / 160000" | bc -l)"
  a=$(ir $bin actor_creation --pow 12); b=$(ir $bin actor_creation --pow 14)
  echo "actor_creation $side $a $b per-actor $(echo "($b - $a) / (16383 - 4095)" | bc -l)"
  a=$(ir $bin spawn_and_await --count 10000); b=$(ir $bin spawn_and_await --count 30000)
  echo "spawn_and_await $side $a $b per-spawn $(echo "($b - $a) / 20000" | bc -l)"
done
