#!/usr/bin/env bash
# Every JSON answer of a live management API matches openapi.yaml: two
# admin_node processes (troupe-admin's example, with entities and a
# stalling actor) on a nats-server with JetStream, then
# .ci/admin_schema_check.py against n1 (Python jsonschema, PyYAML).
# Bounded: every wait has a limit.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v nats-server >/dev/null || { [ "${TROUPE_REQUIRE_NATS:-}" = 1 ] && { echo "admin_schema_check: no nats-server, and TROUPE_REQUIRE_NATS=1"; exit 1; }; echo "admin_schema_check: no nats-server, skipped"; exit 0; }
python3 -c 'import jsonschema, yaml' 2>/dev/null || pip install -q 'jsonschema==4.26.0' 'PyYAML==6.0.3'
cargo build -q -p troupe-admin --example admin_node
base=${TROUPE_CI_SCHEMA_PORT:-9484}
nats_port=$((base + 2)); api1=$base; api2=$((base + 1))
dir=$(mktemp -d)
export TROUPE_ADMIN_TOKEN=schema-check-token-0123456789
nats-server -a 127.0.0.1 -p "$nats_port" -js -sd "$dir/js" >"$dir/nats.log" 2>&1 &
nats=$!
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  kill "$nats" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
for _ in $(seq 50); do (echo >/dev/tcp/127.0.0.1/$nats_port) 2>/dev/null && break; sleep 0.1; done
url=nats://127.0.0.1:$nats_port
./target/debug/examples/admin_node "$url" n1 "$api1" --entities 40 --peers 1 --stall >"$dir/n1.out" 2>&1 &
pids+=($!)
./target/debug/examples/admin_node "$url" n2 "$api2" --entities 40 --first 40 --peers 1 >"$dir/n2.out" 2>&1 &
pids+=($!)
for _ in $(seq 300); do grep -q '^ready' "$dir/n1.out" && grep -q '^ready' "$dir/n2.out" && break; sleep 0.1; done
grep -q '^ready' "$dir/n1.out" || { cat "$dir/n1.out" >&2; echo "n1 did not start" >&2; exit 1; }
for _ in $(seq 150); do
  curl -sf -H "Authorization: Bearer $TROUPE_ADMIN_TOKEN" "http://127.0.0.1:$api1/api/v1/members" \
    | grep -q '"n2"' && break
  sleep 0.1
done
sleep 2   # the entities start once the nodes see each other
python3 .ci/admin_schema_check.py "http://127.0.0.1:$api1" n2
