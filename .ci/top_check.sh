#!/usr/bin/env bash
# troupe-top against a running example, through tmux: the seed 000 pipeline
# (fps_estimator, producer at 50 fps, face detector taking 30 ms a frame)
# serves its metrics; troupe-top must list the stages, flag the detector as
# buffering, re-sort on a key, and quit on `q`.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v tmux >/dev/null || apt-get install -y tmux >/dev/null
cargo build -q -p troupe --features metrics-http --example fps_estimator
cargo build -q -p troupe-top
addr=127.0.0.1:${TROUPE_CI_TOP_PORT:-9478}
session=troupe-top-ci-$$
TROUPE_METRICS_ADDR=$addr ./target/debug/examples/fps_estimator 50 500 8 30 >target/top_ci_example.out 2>&1 &
pid=$!
cleanup() { tmux kill-session -t "$session" 2>/dev/null || true; kill "$pid" 2>/dev/null || true; }
trap cleanup EXIT
sleep 1
tmux new-session -d -s "$session" -x 120 -y 30 "./target/debug/troupe-top http://$addr/metrics --interval 300"
sleep 3
tmux capture-pane -p -t "$session" >target/top_ci_1.txt
cat target/top_ci_1.txt
grep -q "face_detector" target/top_ci_1.txt
grep -q "producer" target/top_ci_1.txt
grep -qE '^! +face_detector' target/top_ci_1.txt || { echo "face_detector not flagged as buffering" >&2; exit 1; }
grep -q "troupe-worker-0" target/top_ci_1.txt
# Sort by depth: the buffering detector comes first.
tmux send-keys -t "$session" d
sleep 0.7
tmux capture-pane -p -t "$session" >target/top_ci_2.txt
grep -q "sorted by DEPTH" target/top_ci_2.txt
first=$(grep -A1 -E '^ +ACTOR' target/top_ci_2.txt | tail -1)
echo "first row by depth: $first"
echo "$first" | grep -q face_detector
# Sort by name: fps_estimator before producer.
tmux send-keys -t "$session" n
sleep 0.7
tmux capture-pane -p -t "$session" >target/top_ci_3.txt
test "$(grep -n fps_estimator target/top_ci_3.txt | head -1 | cut -d: -f1)" -lt "$(grep -n producer target/top_ci_3.txt | head -1 | cut -d: -f1)"
tmux send-keys -t "$session" q
sleep 0.5
if tmux has-session -t "$session" 2>/dev/null; then echo "troupe-top did not quit on q" >&2; exit 1; fi
echo "troupe-top: ok"
