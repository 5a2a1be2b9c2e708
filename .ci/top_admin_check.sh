#!/usr/bin/env bash
# troupe-top --admin against a live management API, through tmux: two
# admin_node processes (troupe-admin's example) on a nats-server with
# JetStream; troupe-top attached to n1's API must show the node's name
# and its cluster's two members in its title, n1's actors (the ping-pong
# pair of --load, the sluggish actor of --stall) and its workers, re-sort
# on a key, and quit on `q`. Bounded: every wait has a limit.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v tmux >/dev/null || apt-get install -y tmux >/dev/null
command -v nats-server >/dev/null || { [ "${TROUPE_REQUIRE_NATS:-}" = 1 ] && { echo "top_admin_check: no nats-server, and TROUPE_REQUIRE_NATS=1"; exit 1; }; echo "top_admin_check: no nats-server, skipped"; exit 0; }
cargo build -q -p troupe-admin --example admin_node
cargo build -q -p troupe-top
base=${TROUPE_CI_TOP_ADMIN_PORT:-9480}
nats_port=$((base + 2)); api1=$((base)); api2=$((base + 1))
dir=$(mktemp -d)
session=troupe-top-admin-ci-$$
export TROUPE_ADMIN_TOKEN=top-admin-check-token-0123456789
nats-server -a 127.0.0.1 -p "$nats_port" -js -sd "$dir/js" >"$dir/nats.log" 2>&1 &
nats=$!
pids=()
cleanup() {
  tmux kill-session -t "$session" 2>/dev/null || true
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  kill "$nats" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
for _ in $(seq 50); do (echo >/dev/tcp/127.0.0.1/$nats_port) 2>/dev/null && break; sleep 0.1; done
url=nats://127.0.0.1:$nats_port
./target/debug/examples/admin_node "$url" n1 "$api1" --load --stall >"$dir/n1.out" 2>&1 &
pids+=($!)
./target/debug/examples/admin_node "$url" n2 "$api2" >"$dir/n2.out" 2>&1 &
pids+=($!)
for _ in $(seq 300); do grep -q '^ready' "$dir/n1.out" && grep -q '^ready' "$dir/n2.out" && break; sleep 0.1; done
grep -q '^ready' "$dir/n1.out" || { cat "$dir/n1.out" >&2; echo "n1 did not start" >&2; exit 1; }
# Both members seen by n1 (bounded).
for _ in $(seq 100); do
  curl -sf -H "Authorization: Bearer $TROUPE_ADMIN_TOKEN" "http://127.0.0.1:$api1/api/v1/members" \
    | grep -q '"n2"' && break
  sleep 0.1
done
tmux new-session -d -s "$session" -x 140 -y 32 \
  "TROUPE_ADMIN_TOKEN=$TROUPE_ADMIN_TOKEN ./target/debug/troupe-top --admin http://127.0.0.1:$api1 --interval 300"
ok=
for _ in $(seq 30); do
  sleep 0.5
  tmux capture-pane -p -t "$session" >target/top_admin_ci_1.txt
  grep -q "node n1 (2 members)" target/top_admin_ci_1.txt && grep -q "sluggish" target/top_admin_ci_1.txt && ok=1 && break
done
cat target/top_admin_ci_1.txt
test -n "$ok" || { echo "troupe-top --admin: no title with n1 and 2 members, or no sluggish actor" >&2; exit 1; }
grep -q "ping" target/top_admin_ci_1.txt || { echo "the ping actor is not listed" >&2; exit 1; }
grep -q "pong" target/top_admin_ci_1.txt || { echo "the pong actor is not listed" >&2; exit 1; }
grep -qi "workers" target/top_admin_ci_1.txt || { echo "no workers block" >&2; exit 1; }
# Sort by name: ping before pong, and before sluggish.
tmux send-keys -t "$session" n
sleep 1
tmux capture-pane -p -t "$session" >target/top_admin_ci_2.txt
grep -q "sorted by ACTOR" target/top_admin_ci_2.txt || { cat target/top_admin_ci_2.txt >&2; echo "no re-sort by name" >&2; exit 1; }
test "$(grep -n ' ping ' target/top_admin_ci_2.txt | head -1 | cut -d: -f1)" -lt "$(grep -n sluggish target/top_admin_ci_2.txt | head -1 | cut -d: -f1)"
tmux send-keys -t "$session" q
sleep 0.5
if tmux has-session -t "$session" 2>/dev/null; then echo "troupe-top did not quit on q" >&2; exit 1; fi
echo "troupe-top --admin: ok"
