#!/usr/bin/env bash
# The 16-core check (issue 24), one script under 8 minutes on a 16-core
# machine. Binaries come from bench/sixteen/prepare.sh (target/sixteen/).
#
#   bench/sixteen/run.sh OUT          # the full check, 16 threads
#   bench/sixteen/run.sh OUT --smoke  # seconds, any machine: checks the script
#
# 1. chaos: 20 runs of 10 s at 16 threads and 16 drivers, seeds 1..10, each
#    seed once plain and once under AddressSanitizer; a run that prints no
#    figure within 40 s is a hang, a non-zero exit a crash or a broken
#    invariant. 2. stress: 10^8 messages from 16 senders on 16 workers.
# 3. scaling: ring, mailbox_performance, reader_db, spawn_and_await,
#    actor_creation and the Savina parallel group at 1, 2, 4, 8 and 16
#    threads; actix and ractor beside them at 16 (and at 2, for the ratio
#    the 2-core figures quote). 4. scaling.py: the table and the plot.
# Every step writes its output under OUT; summary.txt says what passed.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: run.sh OUT [--smoke]}
smoke=${2:-}
bin=target/sixteen
mkdir -p "$out"
summary="$out/summary.txt"
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
{ nproc; lscpu | grep -E 'Model name|^CPU\(s\)|NUMA node\(s\)'; uname -r; cat "$bin/commit" 2>/dev/null; } > "$out/machine.txt"

if [ -n "$smoke" ]; then
    runs=2; secs=1; threads_list="1 2"; top=2; stress_msgs=1000000
    scale=(--quick --samples 1 --warmup 0 --senders 4 --messages 20000)
else
    runs=10; secs=10; threads_list="1 2 4 8 16"; top=16; stress_msgs=100000000
    scale=(--samples 3 --warmup 1 --senders 32 --messages 200000 --rings 32 --actors 1000 --laps 100)
fi

# 1. chaos, plain and under ASan, alternating.
crashes=0; hangs=0
for seed in $(seq 1 "$runs"); do
    for kind in plain asan; do
        exe="$bin/troupe-bench"; env=()
        if [ "$kind" = asan ]; then
            exe="$bin/troupe-bench-asan"
            env=(ASAN_OPTIONS=detect_leaks=0 RUST_BACKTRACE=0)
        fi
        log="$out/chaos-$kind-$seed.txt"
        start=$(date +%s%N)
        env "${env[@]}" timeout -s KILL $((secs + 30)) "$exe" chaos --threads "$top" --drivers "$top" \
            --seconds "$secs" --seed "$seed" --samples 1 --warmup 0 --json "$out/chaos-$kind-$seed.jsonl" \
            > "$log" 2>&1
        rc=$?
        took=$(( ($(date +%s%N) - start) / 1000000000 ))
        if [ "$rc" = 137 ]; then hangs=$((hangs + 1)); verdict=HANG
        elif [ "$rc" != 0 ]; then crashes=$((crashes + 1)); verdict="FAIL rc=$rc"
        else verdict=ok; fi
        say "chaos $kind seed $seed: $verdict (${took} s)"
    done
done
say "chaos: $((runs * 2)) runs, $crashes failed, $hangs hung"

# 2. stress at 16 workers.
start=$(date +%s%N)
timeout -s KILL 120 "$bin/troupe-bench" stress --threads "$top" --messages "$stress_msgs" \
    --samples 1 --warmup 0 --json "$out/stress.jsonl" > "$out/stress.txt" 2>&1
rc=$?
say "stress $stress_msgs messages, $top workers: rc=$rc, $(( ($(date +%s%N) - start) / 1000000 )) ms wall"

# 3. scaling, then the peers.
work=(ring mailbox_performance reader_db spawn_and_await actor_creation savina-parallel)
for t in $threads_list; do
    timeout -s KILL 150 "$bin/troupe-bench" "${work[@]}" --threads "$t" "${scale[@]}" \
        --json "$out/scaling-$t.jsonl" > "$out/scaling-$t.txt" 2>&1
    say "scaling at $t threads: rc=$?"
done
for t in 2 "$top"; do
    timeout -s KILL 200 "$bin/troupe-bench" ring mailbox_performance spawn_and_await actor_creation \
        --threads "$t" --peers "${scale[@]}" --json "$out/peers-$t.jsonl" > "$out/peers-$t.txt" 2>&1
    say "peers at $t threads: rc=$?"
done

# 4. the table and the plot.
python3 bench/sixteen/scaling.py "$out" > "$out/scaling.md" && say "scaling table: $out/scaling.md"
