#!/usr/bin/env bash
# The Go client (clients/go): go vet and go test, which read the shared
# vectors in clients/vectors/frames.json. Standard library only so far, so
# nothing is fetched from the Go module proxy yet.
set -euo pipefail
cd "$(dirname "$0")/../clients/go"
timeout 300 go vet ./...
timeout 300 go test -count=1 ./...
