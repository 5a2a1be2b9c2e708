#!/bin/sh
# Wall clock, binaries alternating, 2 workers: median ns per op per figure.
# Usage: ab.sh OUTFILE ROUNDS label=BIN ...
set -u
out=$1; rounds=$2; shift 2
for r in $(seq 1 "$rounds"); do
  for pair in "$@"; do
    side=${pair%%=*}; bin=${pair#*=}
    for w in "ring" "pingpong --round-trips 100000" "spawn_and_await" "actor_creation" "mailbox_performance"; do
      $bin $w --samples 3 --warmup 1 2>&1 | grep -E "^(ring|pingpong|spawn_and_await|actor_creation|mailbox_performance) " | grep -v "^  " | sed "s/^/round $r $side: /" >> "$out"
    done
  done
done
