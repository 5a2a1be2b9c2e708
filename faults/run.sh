#!/usr/bin/env bash
# The fault-injection suite: 3 Troupe nodes on a 3-server NATS cluster
# under a nemesis (crates/troupe-faults), then the history checked by
# faults/checker (porcupine). Exits non-zero on an anomaly.
#
#   faults/run.sh --short            # each fault kind once, ~2 minutes (CI)
#   faults/run.sh --long [--minutes M] [--cycles N] [--seed S]
#
# Uses the toxiproxy-server on PATH, or installs one with `go install`
# (Go module proxy) into target/faults/bin; the run's directory is
# target/faults/run-<mode> unless FAULTS_DIR says otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
TOXIPROXY_VERSION=v2.5.0
mode="${1:?say --short or --long}"
shift || true
bin=$PWD/target/faults/bin
mkdir -p "$bin"
# A toxiproxy-server on PATH is used as it is; otherwise one is installed.
toxiproxy="$(command -v toxiproxy-server || true)"
if [ -z "$toxiproxy" ]; then
    toxiproxy="$bin/toxiproxy-server"
    if [ ! -x "$toxiproxy" ]; then
        GOBIN="$bin" go install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION"
        mv "$bin/server" "$toxiproxy"
    fi
fi
nats_bin="$(command -v nats-server || echo /usr/sbin/nats-server)"
# --short builds the dev profile (CI has built it for `cargo test`);
# --long the release one. FAULTS_PROFILE overrides.
default_profile=$([ "$mode" = --long ] && echo release || echo dev)
profile="${FAULTS_PROFILE:-$default_profile}"
cargo build -q --profile "$profile" -p troupe-faults
target_dir=target/$([ "$profile" = dev ] && echo debug || echo "$profile")
(cd faults/checker && go build -o "$bin/faults-checker" .)
dir="${FAULTS_DIR:-$PWD/target/faults/run-${mode#--}}"
rm -rf "$dir"
mkdir -p "$dir"
start=$(date +%s)
"$target_dir/troupe-faults" "$mode" --dir "$dir" --nats "$nats_bin" \
    --toxiproxy "$toxiproxy" "$@" 2>"$dir/driver.log" | tee "$dir/driver.out"
"$bin/faults-checker" -dir "$dir" | tee "$dir/checker.out"
echo "faults $mode: $(( $(date +%s) - start )) s (run and check)"
