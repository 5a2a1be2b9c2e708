#!/bin/sh
# Instructions per operation by the difference of two sizes (start-up and
# shutdown cancel), one worker thread, for two builds.
# Usage: callgrind.sh OLD_BENCH NEW_BENCH OLD_PINGPONG_AB NEW_PINGPONG_AB
# (troupe-bench binaries, then the pingpong_ab examples, no baseline thread).
set -u
ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 | awk '/Collected/ {print $NF}'; }
tb() { ir "$@" --threads 1 --warmup 0 --samples 1; }
for side in old new; do
  if [ $side = old ]; then bin=$1; pp=$3; else bin=$2; pp=$4; fi
  a=$(tb $bin ring --rings 2 --actors 1000 --laps 10); b=$(tb $bin ring --rings 2 --actors 1000 --laps 30)
  echo "ring $side $a $b per-hop $(echo "($b - $a) / 40000" | bc -l)"
  # pingpong_ab runs a warm-up and one sample: 2 x K round trips.
  a=$(ir $pp 20000 1 1); b=$(ir $pp 60000 1 1)
  echo "pingpong $side $a $b per-round-trip $(echo "($b - $a) / 80000" | bc -l)"
  a=$(tb $bin mailbox_performance --senders 4 --messages 20000); b=$(tb $bin mailbox_performance --senders 4 --messages 60000)
  echo "mailbox_performance $side $a $b per-message $(echo "($b - $a) / 160000" | bc -l)"
  a=$(tb $bin actor_creation --pow 12); b=$(tb $bin actor_creation --pow 14)
  echo "actor_creation $side $a $b per-actor $(echo "($b - $a) / (16383 - 4095)" | bc -l)"
  a=$(tb $bin spawn_and_await --count 10000); b=$(tb $bin spawn_and_await --count 30000)
  echo "spawn_and_await $side $a $b per-spawn $(echo "($b - $a) / 20000" | bc -l)"
done
