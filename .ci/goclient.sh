#!/usr/bin/env bash
# The Go client (clients/go): gofmt, go vet, and go test, which reads the
# shared vectors in clients/vectors/frames.json and runs the end-to-end
# tests against a real nats-server and the Rust cart_node example (built
# here). Modules come from the Go module proxy (go.sum pins them).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
timeout 900 cargo build -q -p troupe-remote --example cart_node
timeout 900 cargo build -q -p troupe-sharding --example cart_gateway
cd "$root/clients/go"
unformatted="$(gofmt -l .)"
if [ -n "$unformatted" ]; then
  echo "gofmt: $unformatted" >&2
  exit 1
fi
timeout 300 go vet ./...
TROUPE_CART_NODE="$root/target/debug/examples/cart_node" \
  TROUPE_CART_GATEWAY="$root/target/debug/examples/cart_gateway" TROUPE_REQUIRE_NATS=1 \
  timeout 300 go test -count=1 ./...
