#!/usr/bin/env bash
# Installs and builds every peer benchmark program; idempotent, safe to rerun.
#   peers/setup.sh            # everything
#   SKIP_APT=1 peers/setup.sh # do not touch Debian packages (already installed)
# Honours CARGO_TARGET_DIR for the Rust peers (default: the workspace's target/).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"

# 1. Debian packages: CAF 0.17 (libcaf-dev), Erlang/OTP (erlang-nox), a C++ toolchain.
packages=(libcaf-dev erlang-nox g++ make)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})) && [[ -z "${SKIP_APT:-}" ]]; then
    sudo=""
    [[ $(id -u) -eq 0 ]] || sudo="sudo"
    echo "setup: installing ${missing[*]}" >&2
    $sudo apt-get update
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y "${missing[@]}"
fi

# 2. CAF peer -> peers/caf/build/peer-caf
echo "setup: building the CAF peer" >&2
make -C "$here/caf" >&2

# 3. Erlang peer -> peers/erlang/ebin/*.beam (the launcher also recompiles when needed)
echo "setup: compiling the Erlang peer" >&2
mkdir -p "$here/erlang/ebin"
erlc +warnings_as_errors -o "$here/erlang/ebin" "$here"/erlang/*.erl

# 4. Rust peers -> $CARGO_TARGET_DIR/release/peer-{actix,xtra,ractor,kameo}
echo "setup: building the Rust peers" >&2
(cd "$root" && cargo build --release -p peer-actix -p peer-xtra -p peer-ractor -p peer-kameo)

target="${CARGO_TARGET_DIR:-$root/target}"
echo "setup: done. Peer programs:" >&2
for p in "$target"/release/peer-{actix,xtra,ractor,kameo} "$here/caf/build/peer-caf" \
    "$here/erlang/peer-erlang"; do
    echo "  $p" >&2
done
