#!/bin/sh
# mailbox_performance at 1 and 2 workers, pinned to cores 0,1, alternating
# 1 and 2 workers (and binaries, if several) in one session, with the
# tail baseline (tail_baseline.rs) between rounds.
# Usage: pinned.sh OUTDIR ROUNDS "SENDERS MESSAGES" LABEL=BIN...
set -u
out=$1; rounds=$2; shape=$3; shift 3
set -- "$@"
s=${shape% *}; m=${shape#* }
mkdir -p "$out"
for i in $(seq 1 "$rounds"); do
  for t in 1 2; do
    for pair in "$@"; do
      label=${pair%%=*}; bin=${pair#*=}
      log="$out/mp-${s}x$m-t$t-$label-$i.log"
      taskset -c 0,1 "$bin" mailbox_performance --senders "$s" --messages "$m" --threads "$t" --warmup 1 --samples 5 > "$log" 2>&1
      printf '%sx%s threads=%s %s round %s: %s\n' "$s" "$m" "$t" "$label" "$i" "$(grep -E '^  mailbox_performance ' "$log" | head -1 | sed 's/^ *//')"
    done
  done
  [ -x /tmp/tail_baseline ] && taskset -c 0,1 /tmp/tail_baseline 20000000 1 | sed "s/^/tail_baseline after round $i: /"
done
