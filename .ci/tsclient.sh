#!/usr/bin/env bash
# The TypeScript client (clients/ts): npm ci from the committed lock, tsc
# build, and the shared vectors under Node's test runner.
set -euo pipefail
cd "$(dirname "$0")/../clients/ts"
timeout 180 npm ci --no-audit --no-fund
timeout 120 npm test
