#!/bin/sh
# mailbox_performance pinned to cores 0,1 at 1 and 2 worker threads, alternating binaries.
# Usage: pinned.sh OLD NEW OUTDIR [ROUNDS]
set -u
old=$1; new=$2; out=$3; rounds=${4:-3}
mkdir -p "$out"
for i in $(seq 1 "$rounds"); do
  for t in 1 2; do
    for side in old new; do
      eval bin=\$$side
      taskset -c 0,1 "$bin" mailbox_performance --senders 32 --messages 200000 --threads $t \
        --warmup 1 --samples 3 > "$out/pin-t$t-$side-$i.log" 2>&1
      printf 'threads=%s %s %s %s\n' "$t" "$side" "$i" \
        "$(grep -E '^mailbox_performance' "$out/pin-t$t-$side-$i.log" | head -1 | awk '{print $2, $3}')"
    done
  done
done
