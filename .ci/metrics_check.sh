#!/usr/bin/env bash
# Scrapes the fps_estimator example's metrics endpoint over HTTP and checks
# the exposition with `promtool check metrics` (Debian package `prometheus`);
# then the distributed layers' counters (NodeStats, ClusterStats,
# ShardingStats of two nodes on the memory transport), written by
# troupe-sharding's stats_export test, through promtool too.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v promtool >/dev/null; then
  (apt-get install -y prometheus >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y prometheus >/dev/null; }) \
    || { echo "promtool unavailable and could not be installed" >&2; exit 1; }
fi
cargo build -q -p troupe --features metrics-http --example fps_estimator
addr=127.0.0.1:${TROUPE_CI_METRICS_PORT:-9477}
TROUPE_METRICS_ADDR=$addr ./target/debug/examples/fps_estimator 50 500 4 30 >target/fps_ci.out 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do
  curl -sf "http://$addr/metrics" >target/scrape.txt 2>/dev/null && grep -q face_detector target/scrape.txt && break
  sleep 0.1
done
sleep 1.5
curl -sf "http://$addr/metrics" >target/scrape.txt
promtool check metrics <target/scrape.txt
grep -q '^troupe_actor_messages_handled_total{actor="face_detector",type="FaceDetector"} [1-9]' target/scrape.txt
grep -q '^troupe_actor_mailbox_time_seconds_bucket{actor="face_detector"' target/scrape.txt
echo "metrics endpoint: $(grep -c '^troupe_' target/scrape.txt) series, promtool clean"

TROUPE_STATS_EXPOSITION=$PWD/target/stats-exposition.txt \
  cargo test -q -p troupe-sharding --features otel --test stats_export
promtool check metrics <target/stats-exposition.txt
for prefix in troupe_remote troupe_cluster troupe_sharding; do
  grep -q "^${prefix}_[a-z_]*{node=\"a\"" target/stats-exposition.txt
done
echo "distributed counters: $(grep -c '^troupe_\(remote\|cluster\|sharding\)_' target/stats-exposition.txt) series, promtool clean"
