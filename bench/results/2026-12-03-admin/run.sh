#!/usr/bin/env bash
# The management endpoint under load, in one run: three admin_node
# processes (release) on one nats-server with JetStream, 10,000 entities
# spread over them, n1 running a local ping-pong as fast as it can.
#  1. n1's message throughput with and without a dashboard's polling
#     (the page's eight reads, once a second, on one kept-alive
#     connection), in alternating 10 s phases: off, on, four times;
#  2. wrk against n1's cluster view (GET /api/v1/shards: 64 owner records
#     from the store, n1's ~3,300 entities counted per shard, n2's and
#     n3's asked of them through the cluster), then
#     /api/v1/members, each 15 s on 2 connections, while the ping-pong runs.
# Every step is bounded in time. Usage: bench/results/2026-12-03-admin/run.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=bench/results/2026-12-03-admin
bin=${CARGO_TARGET_DIR:-target}/release/examples/admin_node
[ -x "$bin" ] || cargo build -q --release -p troupe-admin --example admin_node
export TROUPE_ADMIN_TOKEN=load-run-token-0123456789
H="Authorization: Bearer $TROUPE_ADMIN_TOKEN"
nats_bin="$(command -v nats-server || echo /usr/sbin/nats-server)"
dir=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT
"$nats_bin" -js -a 127.0.0.1 -p 14333 -sd "$dir/js" >"$dir/nats.log" 2>&1 & pids+=($!)
sleep 1
url=nats://127.0.0.1:14333
"$bin" $url n1 19481 --load --rate 1000000 --entities 3334 --first 0 --peers 2 >"$dir/n1.log" 2>&1 & pids+=($!)
"$bin" $url n2 19482 --rate 1000000 --entities 3333 --first 3334 --peers 2 >"$dir/n2.log" 2>&1 & pids+=($!)
"$bin" $url n3 19483 --rate 1000000 --entities 3333 --first 6667 --peers 2 >"$dir/n3.log" 2>&1 & pids+=($!)
count() {
    local n=0
    for p in 19481 19482 19483; do
        c=$(curl -s -m 10 -H "$H" "http://127.0.0.1:$p/api/v1/entities" | python3 -c 'import json,sys; print(json.load(sys.stdin)["kinds"][0]["count"])' 2>/dev/null || echo 0)
        n=$((n + c))
    done
    echo $n
}
for _ in $(seq 120); do
    [ "$(count)" = 10000 ] && break
    sleep 1
done
echo "entities on the three nodes: $(count)"
curl -s -H "$H" http://127.0.0.1:19481/api/v1/members | python3 -c 'import json,sys; print("members seen by n1:", [m["name"] for m in json.load(sys.stdin)["members"]])'
sz=$(curl -s -H "$H" http://127.0.0.1:19481/api/v1/shards | wc -c)
echo "cluster view: $sz bytes"
curl -s -H "$H" http://127.0.0.1:19481/api/v1/shards | python3 -c 'import json,sys; k=json.load(sys.stdin)["kinds"][0]; print("cluster view: owners asked", k["owners_asked"], "answered", k["owners_answered"], "entities in the map", sum(r["entities"] or 0 for r in k["map"]), "from", sorted(set(r["entities_from"] for r in k["map"])))'


poll() { # the dashboard's eight reads, once a second, on one kept-alive
    # connection from one light process (as a browser tab would), until killed
    exec python3 - "$TROUPE_ADMIN_TOKEN" <<'PY'
import http.client, sys, time
c = http.client.HTTPConnection("127.0.0.1", 19481, timeout=10)
h = {"Authorization": "Bearer " + sys.argv[1]}
while True:
    t = time.monotonic()
    for r in ["node", "members", "shards", "controls", "actors?top=10", "stats", "workers", "registry"]:
        c.request("GET", "/api/v1/" + r, headers=h)
        c.getresponse().read()
    time.sleep(max(0.0, 1.0 - (time.monotonic() - t)))
PY
}
phase() { # $1 = off|on: 10 s; prints the mean of n1's rate lines of seconds 2..10
    local from to
    [ "$1" = on ] && { poll & echo $! >"$dir/poll.pid"; }
    from=$(date +%s%3N); sleep 10; to=$(date +%s%3N)
    if [ "$1" = on ]; then kill "$(cat "$dir/poll.pid")"; wait "$(cat "$dir/poll.pid")" 2>/dev/null || true; fi
    awk -v a=$((from + 1500)) -v b="$to" -v p="$1" '$1=="rate" && $2>a && $2<=b {s+=$3; n++} END {printf "%s %.0f %d\n", p, s/n, n}' "$dir/n1.log"
}
echo "== throughput of n1 (messages/s), polling off/on"
: >"$dir/phases"
for p in off on off on off on off on; do phase $p | tee -a "$dir/phases"; done
awk '{s[$1]+=$2; n[$1]++} END {off=s["off"]/n["off"]; on=s["on"]/n["on"]; printf "mean off %.0f, on %.0f, change %+.2f%%\n", off, on, (on-off)/off*100}' "$dir/phases"
# Each on phase against the mean of the off phases beside it.
awk '{v[NR]=$2} END {for (i=2; i<=NR; i+=2) {o=(i<NR)?(v[i-1]+v[i+1])/2:v[i-1]; printf "pair %d: on/off %+.2f%%\n", i/2, (v[i]-o)/o*100}}' "$dir/phases"

echo "== wrk: the cluster view under load"
timeout 60 wrk -t1 -c2 -d15s --latency -H "$H" http://127.0.0.1:19481/api/v1/shards
echo "== wrk: members"
timeout 60 wrk -t1 -c2 -d15s --latency -H "$H" http://127.0.0.1:19481/api/v1/members
echo "== the nodes still serve: $(count) entities"
