#!/usr/bin/env bash
# Sends the otel_three_nodes example's trace to a real Jaeger over OTLP/HTTP
# and checks, through Jaeger's query API, that it arrived as one trace of
# eight spans in one chain: checkout -> handle(frontend) -> receive(inventory)
# -> handle(inventory) -> receive(payments) -> handle(payments)
# -> receive(frontend) -> handle(frontend).
#
# Needs a Jaeger v2 binary: $JAEGER, or `jaeger` on PATH. Without docker,
# one builds from the Go module proxy:
#   mkdir j && cd j && go mod init j
#   go get -tool github.com/jaegertracing/jaeger/cmd/jaeger@v1.76.0
#   go build -o jaeger github.com/jaegertracing/jaeger/cmd/jaeger
# Not part of CI (that build takes minutes); run by hand:
#   JAEGER=/path/to/jaeger crates/troupe-remote/scripts/jaeger_check.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
jaeger="${JAEGER:-$(command -v jaeger || true)}"
[ -x "$jaeger" ] || { echo "no jaeger binary (set JAEGER)"; exit 2; }
if curl -sf http://localhost:16686/api/services >/dev/null; then
    echo "something already answers on :16686; stop it first (its traces would count)"; exit 2
fi
log="$(mktemp)"
"$jaeger" >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 100); do
    curl -sf http://localhost:16686/api/services >/dev/null && break
    sleep 0.2
done
cargo run -q -p troupe-remote --features otlp --example otel_three_nodes
# The batch exporter flushed at the example's end; give the collector a moment.
for _ in $(seq 50); do
    out="$(curl -sf 'http://localhost:16686/api/traces?service=troupe-example&limit=20' || true)"
    [ -n "$out" ] && [ "$(printf '%s' "$out" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["data"]))')" -ge 1 ] && break
    sleep 0.2
done
printf '%s' "$out" | python3 -c '
import json, sys
data = json.load(sys.stdin)["data"]
assert len(data) == 1, f"{len(data)} traces, expected one"
t = data[0]
spans = {s["spanID"]: s for s in t["spans"]}
def parent(s):
    refs = [r["spanID"] for r in s.get("references", []) if r["refType"] == "CHILD_OF"]
    return spans.get(refs[0]) if refs else None
def name(s):
    tags = {x["key"]: x["value"] for x in s["tags"]}
    dest = tags.get("messaging.destination.name")
    node = tags.get("node")
    where = (dest or "") + ("@" + node if node else "")
    return s["operationName"] + ("(" + where + ")" if where else "")
leaves = [s for s in t["spans"] if not any(parent(o) is s for o in t["spans"])]
assert len(leaves) == 1, f"{len(leaves)} leaves: the spans are not one chain"
chain, s = [], leaves[0]
while s is not None:
    chain.append(s); s = parent(s)
chain.reverse()
got = [c["operationName"] for c in chain]
want = ["checkout"] + ["handle", "receive"] * 3 + ["handle"]
assert got == want and len(chain) == len(spans), f"chain {got}"
for c in chain[1:]:
    tags = {x["key"]: x["value"] for x in c["tags"]}
    assert tags.get("messaging.system") == "troupe", c
print("jaeger: trace", t["traceID"] + ",", len(spans), "spans in one chain:")
print("  " + " -> ".join(name(c) for c in chain))
'
