#!/bin/sh
# Fan-in against actix in the same run, binaries alternating.
# Usage: fanin-ab.sh OUTDIR ROUNDS label=BIN ...  (peer-actix beside each BIN)
set -u
out=$1; rounds=$2; shift 2
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for pair in "$@"; do
    side=${pair%%=*}; bin=${pair#*=}
    log="$out/fanin-$side-$r.log"
    "$bin" mailbox_performance --senders 20 --messages 500000 --samples 3 --warmup 1 --peers --peer-timeout 120 > "$log" 2>&1
    t=$(awk '/^mailbox_performance 20x500000/ {print $3; exit}' "$log")
    a=$(awk '/actix/ && /ns/ {for(i=1;i<=NF;i++) if ($i=="ns") {print $(i-1); exit}}' "$log")
    echo "round $r $side troupe_ns=$t actix_line=$(grep -m1 actix "$log" | tr -s ' ')"
  done
done
