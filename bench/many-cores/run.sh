#!/usr/bin/env bash
# The many-core check (issue 39): how Troupe's many-to-one path, the stress
# count and the ring scale from 1 thread to every core of this machine,
# beside the peers at the top thread count, with the contention counts and
# the syscall view, in one report. Any machine; no other tool than cargo
# (and perf, when it works, for the syscall view).
#
#   bench/many-cores/run.sh OUT            # the full check (minutes)
#   bench/many-cores/run.sh OUT --smoke    # under 2 minutes on 2 cores: checks the script (CI)
#
# Environment:
#   THREADS="1 2 16"  the thread counts (default: 1, 2, 4, ... below nproc, and nproc)
#   BIN=DIR           take troupe-bench and the peers from DIR instead of building
#   PEERS="actix ractor"  the peers beside Troupe at the top count
#
# Steps: 1. build (release; troupe-bench with its `contention` feature when
# the crate has it, else without, and the peers); 2. at each thread count,
# mailbox_performance (many-to-one), stress (plain threads into one actor)
# and ring, each with --contention when the build counts, mailbox_performance
# under `perf stat` (futex and sched_yield calls) when perf can; 3. the three
# workloads beside the peers at the top count; 4. report.py: OUT/report.md
# and OUT/scaling.svg. summary.txt says what each step gave.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: run.sh OUT [--smoke]}
smoke=${2:-}
mkdir -p "$out"
summary="$out/summary.txt"
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }

cores=$(nproc)
if [ -z "${THREADS:-}" ]; then
    THREADS=""
    t=1
    while [ "$t" -lt "$cores" ]; do THREADS="$THREADS $t"; t=$((t * 2)); done
    THREADS="$THREADS $cores"
fi
[ -n "$smoke" ] && THREADS="1 2"
top=$(for t in $THREADS; do echo "$t"; done | sort -n | tail -1)
peers=${PEERS:-actix ractor}

{
    echo "nproc: $cores"
    lscpu 2>/dev/null | grep -E 'Model name|^CPU\(s\)|NUMA node\(s\)|Thread\(s\) per core'
    echo "kernel: $(uname -r)"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "threads: $THREADS"
} > "$out/machine.txt"

# 1. Build.
features=()
if [ -z "${BIN:-}" ]; then
    if grep -q '^contention' crates/troupe-bench/Cargo.toml 2>/dev/null; then
        features=(--features contention)
    fi
    pkgs=(-p troupe-bench)
    [ -z "$smoke" ] && for p in $peers; do pkgs+=(-p "peer-$p"); done
    if ! cargo build -q --release "${pkgs[@]}" "${features[@]}" > "$out/build.txt" 2>&1; then
        say "build: FAILED (see build.txt)"
        exit 1
    fi
    BIN=target/release
fi
bench="$BIN/troupe-bench"
count=()
# The flag is always listed; a build without the feature refuses it (its
# exit status is not the test: pipefail would see it through `grep`).
probe=$("$bench" mailbox_performance --senders 1 --messages 1 --samples 1 --warmup 0 \
    --contention 2>&1)
if "$bench" --help 2>/dev/null | grep -q -- '--contention' &&
    ! printf '%s' "$probe" | grep -q 'needs a build'; then
    count=(--contention)
    say "contention counts: on"
else
    say "contention counts: off (troupe-bench built without its contention feature)"
fi
perf_ok=
if command -v perf >/dev/null 2>&1 &&
    perf stat -e syscalls:sys_enter_futex,syscalls:sys_enter_sched_yield true >/dev/null 2>&1; then
    perf_ok=1
fi

if [ -n "$smoke" ]; then
    run=(--quick --samples 1 --warmup 0)
    mailbox=(--senders 4 --messages 20000)
    stress=(--senders 4 --messages 1000000)
    ring=(--rings 2 --actors 100 --laps 10)
    limit=60
else
    run=(--samples 3 --warmup 1)
    mailbox=(--senders 32 --messages 200000)
    stress=(--senders 16 --messages 100000000)
    ring=(--rings 32 --actors 1000 --laps 100)
    limit=600
fi
# What mailbox_performance sends in one process (every warm-up and sample):
# the divisor of the syscall counts.
msgs=$(( ${mailbox[1]} * ${mailbox[3]} * (${run[-1]} + ${run[-3]}) ))
[ -n "$smoke" ] && msgs=$(( ${mailbox[1]} * ${mailbox[3]} ))
echo "$msgs" > "$out/mailbox-messages.txt"

# 2. Troupe at each thread count.
for t in $THREADS; do
    for w in mailbox_performance stress ring; do
        # stress is one run by its nature (10^8 tells take seconds).
        how=("${run[@]}")
        case $w in
            mailbox_performance) params=("${mailbox[@]}") ;;
            stress) params=("${stress[@]}"); how=(--samples 1 --warmup 0) ;;
            ring) params=("${ring[@]}") ;;
        esac
        pre=()
        if [ "$w" = mailbox_performance ] && [ -n "$perf_ok" ]; then
            pre=(perf stat -x, -o "$out/perf-$w-$t.txt" -e syscalls:sys_enter_futex,syscalls:sys_enter_sched_yield,context-switches --)
        fi
        start=$(date +%s%N)
        timeout -s KILL "$limit" "${pre[@]}" "$bench" "$w" --threads "$t" "${how[@]}" "${params[@]}" "${count[@]}" \
            --json "$out/troupe-$w-$t.jsonl" > "$out/troupe-$w-$t.txt" 2>&1
        rc=$?
        say "$w at $t threads: rc=$rc, $(( ($(date +%s%N) - start) / 1000000 )) ms"
    done
done

# 3. Beside the peers at the top count (Troupe runs again in the same process
# run, so the ratio is of one moment).
peer_flags=(--peers)
timeout -s KILL "$((limit * 3))" "$bench" mailbox_performance ring --threads "$top" "${peer_flags[@]}" \
    "${run[@]}" "${mailbox[@]}" "${ring[@]}" --json "$out/peers-$top.jsonl" > "$out/peers-$top.txt" 2>&1
say "peers at $top threads: rc=$?"

# 4. The report.
if python3 bench/many-cores/report.py "$out" > "$out/report.md"; then
    say "report: $out/report.md"
else
    say "report: FAILED"
    exit 1
fi
grep -q 'rc=[1-9]' "$summary" && exit 1
exit 0
