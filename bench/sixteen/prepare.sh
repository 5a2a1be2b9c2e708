#!/usr/bin/env bash
# Builds what bench/sixteen/run.sh needs into target/sixteen/ (an ignored
# path the device tool carries: `carry: ["target/sixteen"]`), on the 2-core
# machine, where the crate registry is reachable: the suite (release), the
# suite under AddressSanitizer (nightly, -Zbuild-std), and the actix and
# ractor peers. Stripped, so the four fit the carry limit (64 MiB).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=target/sixteen
mkdir -p "$out"
cargo build --release -p troupe-bench -p peer-actix -p peer-ractor
cp target/release/troupe-bench target/release/peer-actix target/release/peer-ractor "$out/"
rustup toolchain install nightly --profile minimal --component rust-src >/dev/null
RUSTFLAGS="-Zsanitizer=address" CARGO_TARGET_DIR=target/asan-bench \
    cargo +nightly build -Zbuild-std --target x86_64-unknown-linux-gnu --release -p troupe-bench
cp target/asan-bench/x86_64-unknown-linux-gnu/release/troupe-bench "$out/troupe-bench-asan"
strip "$out"/*
du -ch "$out"/* | tail -1
git rev-parse --short HEAD > "$out/commit"
