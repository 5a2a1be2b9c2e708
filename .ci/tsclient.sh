#!/usr/bin/env bash
# The TypeScript client (clients/ts): npm ci from the committed lock, tsc
# type check and build, the shared vectors and the end-to-end tests against
# a real nats-server and the Rust cart_node example under Node's test runner.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
(cd "$root" && timeout 900 cargo build -q -p troupe-remote --example cart_node \
  && timeout 900 cargo build -q -p troupe-sharding --example cart_gateway)
cd "$root/clients/ts"
timeout 180 npm ci --no-audit --no-fund
timeout 120 npx tsc --noEmit -p .
TROUPE_CART_NODE="${CARGO_TARGET_DIR:-$root/target}/debug/examples/cart_node" \
  TROUPE_CART_GATEWAY="${CARGO_TARGET_DIR:-$root/target}/debug/examples/cart_gateway" TROUPE_REQUIRE_NATS=1 \
  timeout 240 npm test
