#!/bin/sh
# Alternating A/B of two troupe-bench binaries on the no-regression workloads.
# Usage: ab.sh OLD NEW OUTDIR [ROUNDS]
set -u
old=$1; new=$2; out=$3; rounds=${4:-3}
mkdir -p "$out"
for i in $(seq 1 "$rounds"); do
  for w in ring pingpong mailbox_performance spawn_and_await actor_creation; do
    for side in old new; do
      eval bin=\$$side
      "$bin" "$w" --quick --warmup 1 --samples 5 > "$out/ab-$w-$side-$i.log" 2>&1
      printf '%s %s %s %s\n' "$w" "$side" "$i" \
        "$(grep -E "^$w|^(pingpong|ring|actor_creation|spawn_and_await|mailbox_performance) " "$out/ab-$w-$side-$i.log" | head -1 | awk '{for(i=1;i<=NF;i++) if($i=="ns"){print $(i-1); exit}}')"
    done
  done
done
