#!/usr/bin/env bash
# The user guide and the examples it walks through, as CI runs them:
# every Rust snippet of README.md and book/src (troupe-guide's doctests),
# the HTML book (mdbook; required with TROUPE_REQUIRE_MDBOOK=1, as in CI), and every example the README's
# map names that CI runs nowhere else (fps_estimator runs in
# .ci/metrics_check.sh, async_db in its own step of .ci/run, remote_ping
# in troupe-remote's tests). The metrics example serves its endpoint for a few
# seconds; this scrapes it and, where tmux is installed, looks at it
# through troupe-top, which must flag the slow stage as buffering.
set -euo pipefail
cd "$(dirname "$0")/../.."
target="${CARGO_TARGET_DIR:-target}"
say() { printf -- '--- %s\n' "$*"; }

say "guide snippets: cargo test -p troupe-guide --doc"
cargo test -q -p troupe-guide --doc

if command -v mdbook >/dev/null 2>&1; then
    say "mdbook build book ($(mdbook --version))"
    timeout 300 mdbook build book
elif [ "${TROUPE_REQUIRE_MDBOOK:-0}" = 1 ]; then
    echo "mdbook is not installed and TROUPE_REQUIRE_MDBOOK=1 (.ci/run installs it)" >&2
    exit 1
else
    say "mdbook is not installed: the HTML build is skipped (cargo install mdbook --locked --version 0.5.4)"
fi

say "examples the README's map names: each runs to its end (under a second each)"
cargo build -q -p troupe --examples
for e in hello ask supervision registry dispatcher_pools dispatcher_dedicated \
    dispatcher_pinned dispatcher_blocking dispatcher_parallel; do
    timeout 60 "$target/debug/examples/$e" >"$target/guide_example_$e.out" 2>&1 \
        || { cat "$target/guide_example_$e.out"; echo "example $e failed" >&2; exit 1; }
    echo "$e: ok"
done

say "example: testkit (a timer-driven actor on the virtual clock)"
"$target/debug/examples/testkit"

say "example: cluster (3 nodes, one killed, Down seen; nats-server -js)"
timeout 180 cargo run -q -p troupe-cluster --example cluster | tee "$target/guide_cluster.out"
# Where nats-server is missing the example skips (a failure under
# TROUPE_REQUIRE_NATS=1, as in CI).
grep -q "Down seen\|skipped" "$target/guide_cluster.out"

say "example: shop (sharded persistent carts on 3 nodes, one SIGKILLed; nats-server -js)"
timeout 180 cargo run -q -p troupe-sharding --example shop | tee "$target/guide_shop.out"
# The example exits non-zero on any lost item; it skips without nats-server
# (a failure under TROUPE_REQUIRE_NATS=1).
grep -q "shop: ok\|shop: skipped" "$target/guide_shop.out"

say "example: metrics (served, scraped, watched in troupe-top)"
cargo build -q -p troupe --features metrics-http --example metrics
cargo build -q -p troupe-top
addr=127.0.0.1:${TROUPE_CI_GUIDE_METRICS_PORT:-9479}
session=troupe-guide-top-$$
TROUPE_METRICS_ADDR=$addr "$target/debug/examples/metrics" 6 >"$target/guide_metrics.out" 2>&1 &
pid=$!
cleanup() { tmux kill-session -t "$session" 2>/dev/null || true; kill "$pid" 2>/dev/null || true; }
trap cleanup EXIT
for _ in $(seq 1 50); do
    curl -sf "http://$addr/metrics" >"$target/guide_scrape.txt" 2>/dev/null && break
    sleep 0.1
done
sleep 2.5
curl -sf "http://$addr/metrics" >"$target/guide_scrape.txt"
grep -q '^troupe_actor_messages_handled_total{actor="thumbnailer",type="Thumbnailer"} [1-9]' "$target/guide_scrape.txt"
if command -v tmux >/dev/null 2>&1; then
    tmux new-session -d -s "$session" -x 120 -y 30 "$target/debug/troupe-top http://$addr/metrics --interval 300"
    sleep 1.5
    tmux capture-pane -p -t "$session" >"$target/guide_top.txt"
    cat "$target/guide_top.txt"
    grep -qE '^! +thumbnailer' "$target/guide_top.txt" || { echo "troupe-top did not flag the thumbnailer" >&2; exit 1; }
    tmux send-keys -t "$session" q
else
    say "tmux is not installed: the troupe-top view is skipped"
fi
wait "$pid"
trap - EXIT
cat "$target/guide_metrics.out"
grep -q "thumbnailer was seen buffering" "$target/guide_metrics.out"
say "guide and examples: ok"
