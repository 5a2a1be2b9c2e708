#!/bin/sh
# Instructions per hop/message by difference of two sizes (startup cancels),
# one worker thread. Usage: callgrind-delta.sh OLD NEW
set -u
old=$1; new=$2
ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" --threads 1 --warmup 0 --samples 1 2>&1 | awk '/Collected/ {print $NF}'; }
for side in old new; do
  eval bin=\$$side
  a=$(ir $bin ring --rings 2 --actors 1000 --laps 10); b=$(ir $bin ring --rings 2 --actors 1000 --laps 30)
  echo "ring $side $a $b per-hop $(echo "($b - $a) / 40000" | bc -l)"
  a=$(ir $bin pingpong --round-trips 20000); b=$(ir $bin pingpong --round-trips 60000)
  echo "pingpong $side $a $b per-round-trip $(echo "($b - $a) / 40000" | bc -l)"
  a=$(ir $bin mailbox_performance --senders 4 --messages 20000); b=$(ir $bin mailbox_performance --senders 4 --messages 60000)
  echo "mailbox_performance $side $a $b per-message $(echo "($b - $a) / 160000" | bc -l)"
done
