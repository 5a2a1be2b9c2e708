#!/usr/bin/env bash
# Erlang distribution between two nodes on this host (erl -sname), for
# troupe-remote-bench --erlang: peer_erlang_dist.sh MESSAGES ASKS
# Prints peer_erlang_dist's JSON lines. Both nodes run with the VM's default
# schedulers; node b is stopped when this script exits, whatever happens.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
messages="${1:-1000000}" asks="${2:-20000}"
ebin="$here/ebin"
mkdir -p "$ebin"
src="$here/peer_erlang_dist.erl" beam="$ebin/peer_erlang_dist.beam"
if [[ ! -f "$beam" || "$src" -nt "$beam" ]]; then
    erlc +warnings_as_errors -o "$ebin" "$src" >&2
fi
epmd -daemon
host="$(hostname -s)"
b="troupe_dist_b_$$" a="troupe_dist_a_$$" cookie="troupe_$$_$RANDOM"
erl -sname "$b" -setcookie "$cookie" -noshell -noinput -pa "$ebin" -s peer_erlang_dist serve >&2 &
bpid=$!
trap 'kill "$bpid" 2>/dev/null || true' EXIT
timeout 600 erl -sname "$a" -setcookie "$cookie" -noshell -noinput -pa "$ebin" \
    -run peer_erlang_dist run "$b@$host" "$messages" "$asks"
