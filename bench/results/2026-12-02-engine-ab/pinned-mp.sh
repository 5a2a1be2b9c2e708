#!/bin/sh
# mailbox_performance at 1 and 2 workers, pinned to cores 0,1, alternating
# binaries. Usage: pinned-mp.sh OUTDIR ROUNDS LABEL=BIN...
set -u
out=$1; rounds=$2; shift 2
mkdir -p "$out"
for i in $(seq 1 "$rounds"); do
  for t in 1 2; do
    for pair in "$@"; do
      label=${pair%%=*}; bin=${pair#*=}
      log="$out/mp-t$t-$label-$i.log"
      taskset -c 0,1 "$bin" mailbox_performance --threads "$t" --warmup 1 --samples 3 > "$log" 2>&1
      printf 'threads=%s %s %s %s\n' "$t" "$label" "$i" "$(grep -E '^mailbox_performance ' "$log" | head -1)"
    done
  done
done
