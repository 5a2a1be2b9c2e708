#!/bin/sh
# Alternating A/B of troupe-bench binaries, pinned to cores 0,1, on the
# no-regression workloads (issue 39). Usage: ab.sh OUTDIR ROUNDS LABEL=BIN...
# Prints: workload label round ns-per-op (the figure's median).
set -u
out=$1; rounds=$2; shift 2
mkdir -p "$out"
for i in $(seq 1 "$rounds"); do
  for w in pingpong ring mailbox_performance spawn_and_await actor_creation; do
    for pair in "$@"; do
      label=${pair%%=*}; bin=${pair#*=}
      log="$out/$w-$label-$i.log"
      taskset -c 0,1 "$bin" "$w" --warmup 1 --samples 3 > "$log" 2>&1
      printf '%s %s %s %s\n' "$w" "$label" "$i" \
        "$(grep -E "^$w " "$log" | head -1 | awk '{for(j=1;j<=NF;j++) if($j ~ /^ns/ || $j=="ns"){print $(j-1); exit}}')"
    done
  done
done
