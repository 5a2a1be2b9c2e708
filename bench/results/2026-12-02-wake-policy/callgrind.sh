#!/bin/sh
# Instructions (callgrind Ir, whole process) per workload, one worker thread,
# for two binaries. Usage: callgrind.sh OLD NEW OUTDIR
set -u
old=$1; new=$2; out=$3
mkdir -p "$out"
ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 | awk '/Collected/ {print $NF}'; }
while read -r name args; do
  for side in old new; do
    eval bin=\$$side
    printf '%s %s %s\n' "$name" "$side" "$(ir $bin $args --threads 1 --warmup 0 --samples 1)"
  done
done <<LIST
ring ring --rings 2 --actors 1000 --laps 10
pingpong pingpong --round-trips 20000
mailbox_performance mailbox_performance --senders 4 --messages 20000
spawn_and_await spawn_and_await --count 5000
actor_creation actor_creation --pow 12
LIST
