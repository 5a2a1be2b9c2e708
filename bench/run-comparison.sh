#!/usr/bin/env bash
# Reproduces the Troupe-vs-peers comparison of bench/results/README.md in one command:
#   bench/run-comparison.sh            # build everything, run, write bench/results/<date>-<commit>-peers.*
#   SKIP_BUILD=1 bench/run-comparison.sh
# Every workload the peers run, at the suite's default parameters except mailbox_performance
# (20 senders x 500,000 messages instead of 100 x 1,000,000, which queues 5-6 GB per
# unbounded-mailbox peer), 2 worker threads, the same warm-up (1) and samples (5) for every
# framework. Each sample records the CPU time other processes used meanwhile; the summary
# says how many samples were disturbed. Extra troupe-bench flags are passed through ("$@").
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${SKIP_BUILD:-}" ]]; then
    SKIP_APT=1 peers/setup.sh
    cargo build --release -p troupe-bench
fi
stamp="$(date -u +%Y-%m-%d)-$(git rev-parse --short HEAD)"
out="bench/results/$stamp-peers"
./target/release/troupe-bench \
    ring pingpong mailbox_performance actor_creation spawn_and_await reader_db registry \
    --peers --threads 2 --warmup 1 --samples 5 --peer-timeout 900 \
    --senders 20 --messages 500000 \
    --json "$out.jsonl" "$@" | tee "$out.txt"
python3 bench/summarize.py "$out.jsonl" > "$out-summary.md"
echo "wrote $out.jsonl, $out.txt and $out-summary.md" >&2
